package rmqgo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * A RocketMQ 5.x Java PushConsumer (gRPC, plaintext) for the admin tools:
 * it subscribes &lt;topic&gt; (every tag), prints {"ready":true} once
 * started, and consumes what it is given — also what the admin tools hand
 * it (mqadmin's consumeMessageDirectly, which the server relays as a
 * VerifyMessageCommand; the client runs this listener) — until it consumed
 * a message whose body is &lt;stop&gt; (at most 60 s). Thread stack trace
 * requests are answered by the client library itself. The last stdout line
 * is JSON: {"ok":true,"got":[...]} listing every delivery in order as
 * {"id","body","tag","keys","color","attempt"}, or {"ok":false,"error":"..."}
 * (exit 1).
 *
 * Usage: GrpcAdminConsumer &lt;endpoint&gt; &lt;topic&gt; &lt;group&gt; &lt;stop&gt;
 */
public final class GrpcAdminConsumer {
    public static void main(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: GrpcAdminConsumer <endpoint> <topic> <group> <stop>");
            System.exit(2);
        }
        String endpoint = args[0], topic = args[1], group = args[2], stop = args[3];
        List<MessageView> got = Collections.synchronizedList(new ArrayList<>());
        try {
            ClientServiceProvider provider = ClientServiceProvider.loadService();
            ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoint)
                .enableSsl(false).setRequestTimeout(Duration.ofSeconds(3)).build();
            try (PushConsumer consumer = provider.newPushConsumerBuilder().setClientConfiguration(cfg)
                .setConsumerGroup(group)
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
                .setMessageListener(m -> {
                    got.add(m);
                    return ConsumeResult.SUCCESS;
                })
                .build()) {
                System.out.println("{\"ready\":true}");
                System.out.flush();
                long end = System.currentTimeMillis() + 60_000;
                while (System.currentTimeMillis() < end && !done(got, stop)) {
                    Thread.sleep(50);
                }
            }
        } catch (Throwable e) {
            GrpcSimpleConsumer.fail(e);
        }
        GrpcSimpleConsumer.succeed(got);
    }

    static boolean done(List<MessageView> got, String stop) {
        synchronized (got) {
            for (MessageView m : got) {
                if (GrpcSimpleConsumer.body(m).equals(stop)) {
                    return true;
                }
            }
        }
        return false;
    }
}
