package rmqgo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * Consumes with the RocketMQ 5.x Java client's PushConsumer (gRPC) from one
 * endpoint. The listener fails the first delivery of messages whose body
 * ends with &lt;fail&gt; (the client then makes them invisible for its
 * retry policy's first delay) and succeeds otherwise. It runs until
 * &lt;count&gt; distinct messages were consumed and each failed one came back
 * (at most 30 s), then &lt;quiet&gt; s more. The last stdout line is JSON:
 * {"ok":true,"got":[...]} listing every delivery in order as
 * {"id","body","tag","keys","color","attempt"}, or {"ok":false,"error":"..."}
 * (exit 1).
 *
 * Usage: GrpcPushConsumer &lt;endpoint&gt; &lt;topic&gt; &lt;group&gt; &lt;tls&gt; &lt;count&gt;
 * &lt;fail&gt; &lt;quiet s&gt; [&lt;access key&gt; &lt;secret key&gt;]: with the keys the
 * client signs its requests (StaticSessionCredentialsProvider, ACL 2.0).
 */
public final class GrpcPushConsumer {
    public static void main(String[] args) {
        if (args.length != 7 && args.length != 9) {
            System.err.println("usage: GrpcPushConsumer <endpoint> <topic> <group> <tls> <count> <fail> <quiet s> [<access key> <secret key>]");
            System.exit(2);
        }
        String endpoint = args[0], topic = args[1], group = args[2], fail = args[5];
        boolean tls = Boolean.parseBoolean(args[3]);
        int count = Integer.parseInt(args[4]);
        long quietMs = Long.parseLong(args[6]) * 1000;
        List<MessageView> got = Collections.synchronizedList(new ArrayList<>());
        try {
            ClientServiceProvider provider = ClientServiceProvider.loadService();
            ClientConfigurationBuilder b = ClientConfiguration.newBuilder().setEndpoints(endpoint)
                .enableSsl(tls).setRequestTimeout(Duration.ofSeconds(3));
            if (args.length == 9) {
                b.setCredentialProvider(new StaticSessionCredentialsProvider(args[7], args[8]));
            }
            ClientConfiguration cfg = b.build();
            try (PushConsumer consumer = provider.newPushConsumerBuilder().setClientConfiguration(cfg)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
                .setMessageListener(m -> {
                    got.add(m);
                    if (m.getDeliveryAttempt() == 1 && GrpcSimpleConsumer.body(m).endsWith(fail)) {
                        return ConsumeResult.FAILURE;
                    }
                    return ConsumeResult.SUCCESS;
                })
                .build()) {
                long end = System.currentTimeMillis() + 30_000;
                while (System.currentTimeMillis() < end && !done(got, count, fail)) {
                    Thread.sleep(50);
                }
                Thread.sleep(quietMs);
            }
        } catch (Throwable e) {
            GrpcSimpleConsumer.fail(e);
        }
        GrpcSimpleConsumer.succeed(got);
    }

    // done: count distinct messages, and every failed one delivered again.
    static boolean done(List<MessageView> got, int count, String fail) {
        Set<String> ids = new HashSet<>();
        Set<String> failed = new HashSet<>();
        Set<String> back = new HashSet<>();
        synchronized (got) {
            for (MessageView m : got) {
                String id = m.getMessageId().toString();
                ids.add(id);
                if (GrpcSimpleConsumer.body(m).endsWith(fail)) {
                    (m.getDeliveryAttempt() == 1 ? failed : back).add(id);
                }
            }
        }
        return ids.size() >= count && back.containsAll(failed);
    }
}
