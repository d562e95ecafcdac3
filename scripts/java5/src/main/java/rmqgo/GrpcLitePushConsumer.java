package rmqgo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.LitePushConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * Consumes lite topics with the RocketMQ 5.x Java client's LitePushConsumer
 * (gRPC) from one endpoint: it binds &lt;bindTopic&gt;, subscribes each of the
 * comma-separated &lt;lites&gt; (subscribeLite), prints {"ready":true} and then
 * runs until &lt;count&gt; distinct messages were consumed (at most 30 s), then
 * &lt;quiet&gt; s more. The listener succeeds every message. The last stdout
 * line is JSON: {"ok":true,"got":[...]} listing every delivery in order as
 * {"id","body","lite","attempt"}, or {"ok":false,"error":"..."} (exit 1).
 *
 * Usage: GrpcLitePushConsumer &lt;endpoint&gt; &lt;bindTopic&gt; &lt;group&gt; &lt;tls&gt;
 * &lt;lites&gt; &lt;count&gt; &lt;quiet s&gt;
 */
public final class GrpcLitePushConsumer {
    public static void main(String[] args) {
        if (args.length != 7) {
            System.err.println("usage: GrpcLitePushConsumer <endpoint> <bindTopic> <group> <tls> <lites> <count> <quiet s>");
            System.exit(2);
        }
        String endpoint = args[0], bindTopic = args[1], group = args[2];
        boolean tls = Boolean.parseBoolean(args[3]);
        String[] lites = args[4].split(",");
        int count = Integer.parseInt(args[5]);
        long quietMs = Long.parseLong(args[6]) * 1000;
        List<MessageView> got = Collections.synchronizedList(new ArrayList<>());
        try {
            ClientServiceProvider provider = ClientServiceProvider.loadService();
            ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoint)
                .enableSsl(tls).setRequestTimeout(Duration.ofSeconds(3)).build();
            try (LitePushConsumer consumer = provider.newLitePushConsumerBuilder().setClientConfiguration(cfg)
                .bindTopic(bindTopic).setConsumerGroup(group)
                .setMessageListener(m -> {
                    got.add(m);
                    return ConsumeResult.SUCCESS;
                })
                .build()) {
                for (String lite : lites) {
                    consumer.subscribeLite(lite);
                }
                System.out.println("{\"ready\":true,\"lites\":" + consumer.getLiteTopicSet().size() + "}");
                System.out.flush();
                long end = System.currentTimeMillis() + 30_000;
                while (System.currentTimeMillis() < end && distinct(got) < count) {
                    Thread.sleep(50);
                }
                Thread.sleep(quietMs);
            }
        } catch (Throwable e) {
            GrpcSimpleConsumer.fail(e);
        }
        synchronized (got) {
            StringBuilder sb = new StringBuilder("[");
            for (MessageView m : got) {
                sb.append(sb.length() == 1 ? "" : ",").append("{\"id\":").append(GrpcSimpleConsumer.quote(m.getMessageId().toString()))
                    .append(",\"body\":").append(GrpcSimpleConsumer.quote(GrpcSimpleConsumer.body(m)))
                    .append(",\"lite\":").append(GrpcSimpleConsumer.quote(m.getLiteTopic().orElse("")))
                    .append(",\"attempt\":").append(m.getDeliveryAttempt()).append("}");
            }
            System.out.println("{\"ok\":true,\"got\":" + sb.append("]") + "}");
        }
        System.exit(0);
    }

    static int distinct(List<MessageView> got) {
        Set<String> ids = new HashSet<>();
        synchronized (got) {
            for (MessageView m : got) {
                ids.add(m.getMessageId().toString());
            }
        }
        return ids.size();
    }
}
