package rmqgo;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * Consumes with the RocketMQ 5.x Java client's SimpleConsumer (gRPC) from
 * one endpoint, in two phases:
 *
 * 1. receive until &lt;count&gt; distinct messages came (at most 20 s); ack
 *    each one except those whose body ends with &lt;keep&gt; (left un-acked);
 * 2. receive again until a message comes back (at most &lt;wait&gt; s), ack
 *    what comes back, then go on receiving for &lt;quiet&gt; s more.
 *
 * Every receive asks for an invisible duration of &lt;invisible&gt; s. The
 * last stdout line is JSON: {"ok":true,"first":[...],"again":[...]}, each
 * message as {"id","body","tag","keys","color","attempt"} ("again" lists
 * what phase 2 received, in order), or {"ok":false,"error":"..."} (exit 1).
 *
 * Usage: GrpcSimpleConsumer &lt;endpoint&gt; &lt;topic&gt; &lt;group&gt; &lt;tls&gt; &lt;count&gt;
 * &lt;keep&gt; &lt;invisible s&gt; &lt;wait s&gt; &lt;quiet s&gt;
 */
public final class GrpcSimpleConsumer {
    public static void main(String[] args) {
        if (args.length != 9) {
            System.err.println("usage: GrpcSimpleConsumer <endpoint> <topic> <group> <tls> <count> <keep> <invisible s> <wait s> <quiet s>");
            System.exit(2);
        }
        String endpoint = args[0], topic = args[1], group = args[2], keep = args[5];
        boolean tls = Boolean.parseBoolean(args[3]);
        int count = Integer.parseInt(args[4]);
        Duration invisible = Duration.ofSeconds(Long.parseLong(args[6]));
        long waitMs = Long.parseLong(args[7]) * 1000, quietMs = Long.parseLong(args[8]) * 1000;
        Map<String, MessageView> first = new LinkedHashMap<>();
        List<MessageView> again = new ArrayList<>();
        try {
            ClientServiceProvider provider = ClientServiceProvider.loadService();
            ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoint)
                .enableSsl(tls).setRequestTimeout(Duration.ofSeconds(3)).build();
            try (SimpleConsumer consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(cfg)
                .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(1))
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
                .build()) {
                long end = System.currentTimeMillis() + 20_000;
                while (first.size() < count && System.currentTimeMillis() < end) {
                    for (MessageView m : consumer.receive(16, invisible)) {
                        first.put(m.getMessageId().toString(), m);
                        if (!body(m).endsWith(keep)) {
                            consumer.ack(m);
                        }
                    }
                }
                end = System.currentTimeMillis() + waitMs;
                while (System.currentTimeMillis() < end) {
                    List<MessageView> got = consumer.receive(16, invisible);
                    for (MessageView m : got) {
                        again.add(m);
                        consumer.ack(m);
                    }
                    if (!again.isEmpty() && end - System.currentTimeMillis() > quietMs) {
                        end = System.currentTimeMillis() + quietMs;
                    }
                }
            }
        } catch (Throwable e) {
            fail(e);
        }
        System.out.println("{\"ok\":true,\"first\":" + json(first.values()) + ",\"again\":" + json(again) + "}");
        System.exit(0);
    }

    static String body(MessageView m) {
        byte[] b = new byte[m.getBody().remaining()];
        m.getBody().duplicate().get(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    static String json(Iterable<MessageView> msgs) {
        StringBuilder sb = new StringBuilder("[");
        for (MessageView m : msgs) {
            sb.append(sb.length() == 1 ? "" : ",").append("{\"id\":").append(quote(m.getMessageId().toString()))
                .append(",\"body\":").append(quote(body(m)))
                .append(",\"tag\":").append(quote(m.getTag().orElse("")))
                .append(",\"keys\":").append(quote(String.join(" ", m.getKeys())))
                .append(",\"color\":").append(quote(m.getProperties().getOrDefault("color", "")))
                .append(",\"attempt\":").append(m.getDeliveryAttempt()).append("}");
        }
        return sb.append("]").toString();
    }

    // fail prints the failure result line and exits 1.
    static void fail(Throwable e) {
        System.out.println("{\"ok\":false,\"error\":" + quote(String.valueOf(e)) + "}");
        System.exit(1);
    }

    // succeed prints the result line of a push consumer (the messages it
    // got) and exits 0.
    static void succeed(List<MessageView> got) {
        synchronized (got) {
            System.out.println("{\"ok\":true,\"got\":" + json(got) + "}");
        }
        System.exit(0);
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }
}
