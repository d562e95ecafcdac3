package rmqgo;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.RecallReceipt;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Recalls delay messages with the RocketMQ 5.x Java client (gRPC,
 * plaintext, Producer.recallMessage) against one endpoint (issue 17):
 *
 * <ul>
 * <li>sends three messages to the DELAY topic, all delayMs ahead: "keep"
 *     (left alone), "recalled" (recalled here with the recall handle of its
 *     SendReceipt) and "remote" (its handle is printed for the caller to
 *     recall another way);</li>
 * <li>recalls "recalled", then tries a handle that does not decode and a
 *     forged one naming another broker (their errors are reported);</li>
 * <li>prints the progress line {"event":"sent","remoteHandle":"..."}, then
 *     keeps the producer running (the caller can list it among the
 *     broker's producers) until the file releaseFile exists, holdMs at
 *     most, before closing it.</li>
 * </ul>
 *
 * The last stdout line is JSON: {"ok":true,"keep":id,"recalled":id,
 * "recallReceipt":id,"remote":id,"remoteHandle":h,"deliverAt":ms,
 * "garbageError":"...","forgedError":"..."} (or {"ok":false,"error":"..."},
 * exit 1).
 *
 * Usage: GrpcRecall &lt;endpoint&gt; &lt;delayTopic&gt; &lt;delayMs&gt; &lt;holdMs&gt; &lt;releaseFile&gt;
 */
public final class GrpcRecall {
    private static String quote(String s) {
        return "\"" + String.valueOf(s).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"";
    }

    private static String recallError(Producer producer, String topic, String handle) {
        try {
            RecallReceipt r = producer.recallMessage(topic, handle);
            return "accepted: " + r.getMessageId();
        } catch (Exception e) {
            return String.valueOf(e);
        }
    }

    public static void main(String[] args) {
        if (args.length != 5) {
            System.err.println("usage: GrpcRecall <endpoint> <delayTopic> <delayMs> <holdMs> <releaseFile>");
            System.exit(2);
        }
        String endpoint = args[0], topic = args[1];
        long delayMs = Long.parseLong(args[2]), holdMs = Long.parseLong(args[3]);
        java.nio.file.Path release = java.nio.file.Paths.get(args[4]);
        String keep, recalled, recallReceipt, remote, remoteHandle, garbageError, forgedError;
        long at;
        try {
            ClientServiceProvider provider = ClientServiceProvider.loadService();
            ClientConfiguration cfg = ClientConfiguration.newBuilder().setEndpoints(endpoint)
                .enableSsl(false).setRequestTimeout(Duration.ofSeconds(5)).build();
            try (Producer producer = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build()) {
                at = System.currentTimeMillis() + delayMs;
                SendReceipt[] r = new SendReceipt[3];
                String[] bodies = {"keep", "recalled", "remote"};
                for (int i = 0; i < 3; i++) {
                    Message m = provider.newMessageBuilder().setTopic(topic).setDeliveryTimestamp(at)
                        .setBody(bodies[i].getBytes(StandardCharsets.UTF_8)).build();
                    r[i] = producer.send(m);
                    if (r[i].getRecallHandle() == null || r[i].getRecallHandle().isEmpty()) {
                        throw new IllegalStateException("no recall handle in the SendReceipt of " + bodies[i]);
                    }
                }
                keep = r[0].getMessageId().toString();
                recalled = r[1].getMessageId().toString();
                remote = r[2].getMessageId().toString();
                remoteHandle = r[2].getRecallHandle();
                recallReceipt = producer.recallMessage(topic, r[1].getRecallHandle()).getMessageId().toString();
                garbageError = recallError(producer, topic, "not-a-recall-handle");
                String forged = "v1 " + topic + " broker-forged " + (System.currentTimeMillis() + 60_000) + " " + keep;
                forgedError = recallError(producer, topic,
                    Base64.getUrlEncoder().encodeToString(forged.getBytes(StandardCharsets.UTF_8)));
                System.out.println("{\"event\":\"sent\",\"remoteHandle\":" + quote(remoteHandle) + "}");
                System.out.flush();
                for (long end = System.currentTimeMillis() + holdMs;
                     !java.nio.file.Files.exists(release) && System.currentTimeMillis() < end; ) {
                    Thread.sleep(50);
                }
            }
        } catch (Throwable e) {
            System.out.println("{\"ok\":false,\"error\":" + quote(String.valueOf(e)) + "}");
            System.exit(1);
            return;
        }
        System.out.println("{\"ok\":true,\"keep\":" + quote(keep) + ",\"recalled\":" + quote(recalled)
            + ",\"recallReceipt\":" + quote(recallReceipt) + ",\"remote\":" + quote(remote)
            + ",\"remoteHandle\":" + quote(remoteHandle) + ",\"deliverAt\":" + at
            + ",\"garbageError\":" + quote(garbageError) + ",\"forgedError\":" + quote(forgedError) + "}");
        System.exit(0);
    }
}
