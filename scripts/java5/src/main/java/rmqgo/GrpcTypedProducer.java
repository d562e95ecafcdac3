package rmqgo;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * Sends FIFO, delay and transactional messages with the RocketMQ 5.x Java
 * client (gRPC, plaintext) to one endpoint, in one run (issue 17):
 *
 * <ul>
 * <li>FIFO: 8 messages to fifoTopic, alternately in groups "g0" and "g1",
 *     body "fifo-&lt;group&gt;-&lt;n&gt;" (n counts per group);</li>
 * <li>delay: 2 messages to delayTopic with a delivery timestamp delayMs
 *     ahead, body "delay-i"; then one 100 days ahead, which the server must
 *     refuse (ILLEGAL_DELIVERY_TIME; its error is reported), and a third
 *     good one after it;</li>
 * <li>transaction: to txTopic, "tx-commit" committed, "tx-rollback" rolled
 *     back, "tx-check" left open: the producer's transaction checker commits
 *     it when the server asks (RecoverOrphanedTransactionCommand); the run
 *     waits for that check.</li>
 * <li>with the optional priorityTopic and liteTopic: "prio-1" and "prio-5"
 *     with priorities 1 and 5, and "lite" with lite topic "lite-a".</li>
 * </ul>
 *
 * The last stdout line is JSON: {"ok":true,"fifo":[ids],"delay":[ids],
 * "deliverAt":[ms],"farDelayError":"...","tx":{"commit":id,"rollback":id,
 * "check":id},"checked":[ids],"priority":[ids],"lite":[ids]} (or
 * {"ok":false,"error":"..."}, exit 1).
 *
 * Usage: GrpcTypedProducer &lt;endpoint&gt; &lt;fifoTopic&gt; &lt;delayTopic&gt; &lt;txTopic&gt; &lt;delayMs&gt;
 * [&lt;priorityTopic&gt; &lt;liteTopic&gt;]
 */
public final class GrpcTypedProducer {
    private static String quote(String s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"";
    }

    private static String list(List<?> l) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < l.size(); i++) {
            Object o = l.get(i);
            sb.append(i == 0 ? "" : ",").append(o instanceof String ? quote((String) o) : String.valueOf(o));
        }
        return sb.append("]").toString();
    }

    public static void main(String[] args) {
        if (args.length != 5 && args.length != 7) {
            System.err.println("usage: GrpcTypedProducer <endpoint> <fifoTopic> <delayTopic> <txTopic> <delayMs> [<priorityTopic> <liteTopic>]");
            System.exit(2);
        }
        String endpoint = args[0], fifoTopic = args[1], delayTopic = args[2], txTopic = args[3];
        long delayMs = Long.parseLong(args[4]);
        String priorityTopic = args.length == 7 ? args[5] : null, liteTopic = args.length == 7 ? args[6] : null;
        List<String> fifo = new ArrayList<>(), delay = new ArrayList<>(), checked = new ArrayList<>();
        List<String> priority = new ArrayList<>(), lite = new ArrayList<>();
        List<String> topics = new ArrayList<>(List.of(fifoTopic, delayTopic, txTopic));
        if (priorityTopic != null) {
            topics.add(priorityTopic);
            topics.add(liteTopic);
        }
        List<Long> deliverAt = new ArrayList<>();
        String farDelayError = "";
        String txCommit, txRollback, txCheck;
        CountDownLatch checkedLatch = new CountDownLatch(1);
        try {
            ClientServiceProvider provider = ClientServiceProvider.loadService();
            ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoint)
                .enableSsl(false).setRequestTimeout(Duration.ofSeconds(5)).build();
            try (Producer producer = provider.newProducerBuilder().setClientConfiguration(cfg)
                .setTopics(topics.toArray(new String[0]))
                .setTransactionChecker(view -> {
                    synchronized (checked) {
                        checked.add(view.getMessageId().toString());
                    }
                    checkedLatch.countDown();
                    return TransactionResolution.COMMIT;
                }).build()) {
                int[] perGroup = new int[2];
                for (int i = 0; i < 8; i++) {
                    int g = i % 2;
                    Message m = provider.newMessageBuilder().setTopic(fifoTopic).setMessageGroup("g" + g)
                        .setBody(("fifo-g" + g + "-" + perGroup[g]++).getBytes(StandardCharsets.UTF_8)).build();
                    fifo.add(producer.send(m).getMessageId().toString());
                }
                for (int i = 0; i < 3; i++) {
                    if (i == 2) {
                        Message far = provider.newMessageBuilder().setTopic(delayTopic)
                            .setDeliveryTimestamp(System.currentTimeMillis() + 100L * 24 * 3600 * 1000)
                            .setBody("delay-far".getBytes(StandardCharsets.UTF_8)).build();
                        try {
                            producer.send(far);
                            farDelayError = "accepted";
                        } catch (Exception e) {
                            farDelayError = String.valueOf(e);
                        }
                    }
                    long at = System.currentTimeMillis() + delayMs;
                    Message m = provider.newMessageBuilder().setTopic(delayTopic).setDeliveryTimestamp(at)
                        .setBody(("delay-" + delay.size()).getBytes(StandardCharsets.UTF_8)).build();
                    delay.add(producer.send(m).getMessageId().toString());
                    deliverAt.add(at);
                }
                if (priorityTopic != null) {
                    for (int p : new int[] {1, 5}) {
                        priority.add(producer.send(provider.newMessageBuilder().setTopic(priorityTopic).setPriority(p)
                            .setBody(("prio-" + p).getBytes(StandardCharsets.UTF_8)).build()).getMessageId().toString());
                    }
                    lite.add(producer.send(provider.newMessageBuilder().setTopic(liteTopic).setLiteTopic("lite-a")
                        .setBody("lite".getBytes(StandardCharsets.UTF_8)).build()).getMessageId().toString());
                }
                Transaction commit = producer.beginTransaction();
                txCommit = producer.send(provider.newMessageBuilder().setTopic(txTopic)
                    .setBody("tx-commit".getBytes(StandardCharsets.UTF_8)).build(), commit).getMessageId().toString();
                commit.commit();
                Transaction rollback = producer.beginTransaction();
                txRollback = producer.send(provider.newMessageBuilder().setTopic(txTopic)
                    .setBody("tx-rollback".getBytes(StandardCharsets.UTF_8)).build(), rollback).getMessageId().toString();
                rollback.rollback();
                Transaction open = producer.beginTransaction();
                SendReceipt r = producer.send(provider.newMessageBuilder().setTopic(txTopic)
                    .setBody("tx-check".getBytes(StandardCharsets.UTF_8)).build(), open);
                txCheck = r.getMessageId().toString();
                if (!checkedLatch.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the transaction checker was never asked about " + txCheck);
                }
                // Let the checker's EndTransaction reach the server.
                Thread.sleep(500);
            }
        } catch (Throwable e) {
            System.out.println("{\"ok\":false,\"error\":" + quote(String.valueOf(e)) + "}");
            System.exit(1);
            return;
        }
        List<String> checkedCopy;
        synchronized (checked) {
            checkedCopy = new ArrayList<>(checked);
        }
        System.out.println("{\"ok\":true,\"fifo\":" + list(fifo) + ",\"delay\":" + list(delay) + ",\"deliverAt\":" + list(deliverAt)
            + ",\"farDelayError\":" + quote(farDelayError) + ",\"tx\":{\"commit\":" + quote(txCommit) + ",\"rollback\":" + quote(txRollback)
            + ",\"check\":" + quote(txCheck) + "},\"checked\":" + list(checkedCopy)
            + ",\"priority\":" + list(priority) + ",\"lite\":" + list(lite) + "}");
        System.exit(0);
    }
}
