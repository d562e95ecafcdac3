package rmqgo;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * Produces and consumes with the RocketMQ 5.x Java client (gRPC) while the
 * test restarts or kills the broker: a Producer sends message "r-SEQ"
 * (property seq) every 20 ms for &lt;send s&gt;, a SimpleConsumer receives
 * (invisible &lt;invisible&gt; s) and acks each message. Both go on through
 * errors. After the sends the consumer gets up to &lt;drain s&gt; to receive
 * every message whose send was acknowledged.
 *
 * While sending, "acked N" (sends acknowledged so far) goes to stdout every
 * 200 ms. The last stdout line is JSON with "ok" true when every
 * acknowledged send was received at least once (else "lost") and no message
 * whose ack succeeded came again ("redelivered"); exit 1 otherwise. A message
 * whose ack failed counts as received: an ack cut off by a kill may have been
 * recorded by the broker before it died (then it is rightly not delivered
 * again) or not (then it comes again); "ack_unknown" lists those that never
 * came again.
 *
 * Usage: GrpcRestartCheck &lt;endpoint&gt; &lt;topic&gt; &lt;group&gt; &lt;tls&gt; &lt;send s&gt;
 * &lt;drain s&gt; &lt;invisible s&gt; [redelivery-ok]
 *
 * With "redelivery-ok" a message delivered again is reported but not a
 * failure: across a failover the elected replica knows the consumer's
 * progress as of the last metadata copy (at least once).
 */
public final class GrpcRestartCheck {
    public static void main(String[] args) throws Exception {
        if (args.length != 7 && !(args.length == 8 && args[7].equals("redelivery-ok"))) {
            System.err.println("usage: GrpcRestartCheck <endpoint> <topic> <group> <tls> <send s> <drain s> <invisible s> [redelivery-ok]");
            System.exit(2);
        }
        boolean redeliveryOK = args.length == 8;
        String endpoint = args[0], topic = args[1], group = args[2];
        boolean tls = Boolean.parseBoolean(args[3]);
        long sendMs = Long.parseLong(args[4]) * 1000, drainMs = Long.parseLong(args[5]) * 1000;
        Duration invisible = Duration.ofSeconds(Long.parseLong(args[6]));

        Set<Integer> sent = ConcurrentHashMap.newKeySet();
        Set<Integer> received = ConcurrentHashMap.newKeySet();
        Set<Integer> acked = ConcurrentHashMap.newKeySet();
        Set<Integer> ackUnknown = ConcurrentHashMap.newKeySet();
        Set<Integer> redelivered = ConcurrentHashMap.newKeySet();
        AtomicLong sendFailed = new AtomicLong(), receiveFailed = new AtomicLong(), ackFailed = new AtomicLong();
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoint)
            .enableSsl(tls).setRequestTimeout(Duration.ofSeconds(3)).build();
        Producer producer;
        SimpleConsumer consumer;
        try {
            producer = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build();
            consumer = provider.newSimpleConsumerBuilder().setClientConfiguration(cfg)
                .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(1))
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
                .build();
        } catch (Throwable e) {
            System.out.println("{\"ok\":false,\"error\":" + GrpcSimpleConsumer.quote("start: " + e) + "}");
            System.exit(1);
            return;
        }
        long t0 = System.currentTimeMillis();
        AtomicLong sendEnd = new AtomicLong(); // 0 while sending
        Thread receiver = new Thread(() -> {
            while (true) {
                long end = sendEnd.get();
                if (end != 0 && (System.currentTimeMillis() > end + drainMs || received.containsAll(sent))) {
                    return;
                }
                List<MessageView> got;
                try {
                    got = consumer.receive(16, invisible);
                } catch (Throwable e) {
                    receiveFailed.incrementAndGet();
                    note(errors, "receive: " + e);
                    sleep(200);
                    continue;
                }
                for (MessageView m : got) {
                    int seq = Integer.parseInt(m.getProperties().getOrDefault("seq", "-1"));
                    if (acked.contains(seq)) {
                        redelivered.add(seq);
                    }
                    received.add(seq);
                    ackUnknown.remove(seq);
                    try {
                        consumer.ack(m);
                        acked.add(seq);
                    } catch (Throwable e) {
                        ackFailed.incrementAndGet();
                        ackUnknown.add(seq);
                        note(errors, "ack " + seq + ": " + e);
                    }
                }
            }
        });
        receiver.start();

        int seq = 0;
        long lastReport = 0;
        while (System.currentTimeMillis() - t0 < sendMs) {
            Message m = provider.newMessageBuilder().setTopic(topic).setTag("R").setKeys("r-" + seq)
                .addProperty("seq", Integer.toString(seq)).setBody(("r-" + seq).getBytes(StandardCharsets.UTF_8)).build();
            try {
                producer.send(m);
                sent.add(seq);
            } catch (Throwable e) {
                sendFailed.incrementAndGet();
                note(errors, "send " + seq + ": " + e);
                sleep(100);
            }
            seq++;
            long now = System.currentTimeMillis();
            if (now - lastReport >= 200) {
                System.out.println("acked " + sent.size());
                System.out.flush();
                lastReport = now;
            }
            sleep(20);
        }
        sendEnd.set(System.currentTimeMillis());
        receiver.join();
        long drain = System.currentTimeMillis() - sendEnd.get();
        try {
            consumer.close();
            producer.close();
        } catch (Throwable e) {
            note(errors, "close: " + e);
        }
        TreeSet<Integer> lost = new TreeSet<>(sent);
        lost.removeAll(received);
        boolean ok = lost.isEmpty() && (redeliveryOK || redelivered.isEmpty()) && !sent.isEmpty();
        StringBuilder sb = new StringBuilder("{\"ok\":").append(ok)
            .append(",\"sent\":").append(seq)
            .append(",\"acked_sends\":").append(sent.size())
            .append(",\"send_failed\":").append(sendFailed.get())
            .append(",\"consumed\":").append(acked.size())
            .append(",\"receive_failed\":").append(receiveFailed.get())
            .append(",\"ack_failed\":").append(ackFailed.get())
            .append(",\"received\":").append(received.size())
            .append(",\"ack_unknown\":").append(sample(new TreeSet<>(ackUnknown)))
            .append(",\"drain_ms\":").append(drain)
            .append(",\"lost\":").append(sample(lost))
            .append(",\"redelivered\":").append(sample(new TreeSet<>(redelivered)))
            .append(",\"redelivered_count\":").append(redelivered.size())
            .append(",\"errors\":[");
        synchronized (errors) {
            for (int i = 0; i < errors.size(); i++) {
                sb.append(i == 0 ? "" : ",").append(GrpcSimpleConsumer.quote(errors.get(i)));
            }
        }
        sb.append("]");
        if (!ok) {
            sb.append(",\"error\":").append(GrpcSimpleConsumer.quote(lost.size() + " acknowledged sends never received, "
                + redelivered.size() + " acked messages delivered again"));
        }
        System.out.println(sb.append("}"));
        System.exit(ok ? 0 : 1);
    }

    /** Keeps the first errors of each run for the report. */
    static void note(List<String> errors, String e) {
        if (errors.size() < 20) {
            errors.add(e);
        }
    }

    static String sample(TreeSet<Integer> s) {
        StringBuilder sb = new StringBuilder("[");
        int n = 0;
        for (Integer x : s) {
            if (n++ == 20) {
                break;
            }
            sb.append(n == 1 ? "" : ",").append(x);
        }
        return sb.append("]").toString();
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
