package rmqgo;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.exception.RemotingException;

/**
 * Static-topic (logic queue) checks with the Java client, driven by
 * tests/e2e/statictopic_java_test.go around remaps done by an mqadmin:
 *
 * <pre>
 *   ClientCheck static-produce -n ADDR -t TOPIC -run RUN [-start SEQ] -count N
 *               [-stop-file F] [-ready-file F] [-interval MS] [-poll MS] [-timeout SEC] [-out FILE]
 *   ClientCheck static-consume -n ADDR -t TOPIC -run RUN [-start SEQ] -count N
 *               [-count-file F] [-consumer lite|push] [-g GROUP] [-queues Q] [-poll MS]
 *               [-timeout SEC] [-linger MS] [-out FILE]
 * </pre>
 *
 * static-produce sends messages start..start+count-1 one by one with
 * DefaultMQProducer (the shared check format of ClientCheck); with
 * -stop-file it keeps going after count until that file exists; -ready-file
 * is created once 40 messages are sent (a test waits for it before it
 * starts an admin operation the producer must live through). A failed
 * send is retried by the check itself until -timeout: a producer whose route
 * is older than a remap sends to the old leader, which answers
 * NOT_LEADER_FOR_QUEUE (501), and the Java producer does not retry on that
 * code; the retry counts as "not_leader" and the check waits for the next
 * route refresh (-poll, pollNameServerInterval). -out writes one line per
 * message: "seq logicQueue broker logicOffset attempts" (offset -1 while the
 * new leader's logic offset was undecided).
 *
 * static-consume expects messages start..start+count-1 of the run (with
 * -count-file, count is read from file F once it exists, so that a consumer
 * can run while a producer of unknown length still sends). "lite" assigns every queue of fetchMessageQueues (which must be the -queues
 * logic queues of the mock broker __syslo__...) to a DefaultLitePullConsumer
 * and seeks each to its beginning; "push" subscribes a DefaultMQPushConsumer
 * (CONSUME_FROM_FIRST_OFFSET, one consume thread so that delivery order per
 * queue is pull order; a group that already committed offsets resumes from
 * them: a message below start counts as redelivered). Every expected message
 * must arrive exactly once, none below start may arrive, each must carry a mock
 * broker name and a logic queue id below -queues, and logic offsets must
 * strictly increase per queue. -out writes "seq logicQueue logicOffset" per
 * message.
 *
 * The last stdout line is the JSON result, as for the other modes.
 */
final class StaticCheck {

    static final String MOCK_PREFIX = "__syslo__";
    static final int NOT_LEADER_FOR_QUEUE = 501;
    static final int READY_AFTER = 40;

    private StaticCheck() {
    }

    static final class Opts {
        String mode;
        String namesrv = "127.0.0.1:9876";
        String topic = "RmqgoStatic";
        String run = "";
        String group = "";
        String producerGroup = "rmqgo_static_producer_java";
        String consumer = "lite";
        String stopFile = "";
        String countFile = "";
        String readyFile = "";
        String out = "";
        int start;
        int count = 100;
        int queues;
        long intervalMs = 5;
        int pollMs = 1000;
        long timeoutMs = 30_000;
        long lingerMs = 1_000;
    }

    static Opts parse(String[] args) {
        Opts o = new Opts();
        o.mode = args[0];
        ClientCheck.parseOptions(args, (name, v) -> {
            switch (name) {
                case "n": o.namesrv = v; break;
                case "t": o.topic = v; break;
                case "run": o.run = v; break;
                case "g": o.group = v; break;
                case "pg": o.producerGroup = v; break;
                case "consumer": o.consumer = v; break;
                case "stop-file": o.stopFile = v; break;
                case "count-file": o.countFile = v; break;
                case "ready-file": o.readyFile = v; break;
                case "out": o.out = v; break;
                case "start": o.start = Integer.parseInt(v); break;
                case "count": o.count = Integer.parseInt(v); break;
                case "queues": o.queues = Integer.parseInt(v); break;
                case "interval": o.intervalMs = Long.parseLong(v); break;
                case "poll": o.pollMs = Integer.parseInt(v); break;
                case "timeout": o.timeoutMs = ClientCheck.secondsMs(v); break;
                case "linger": o.lingerMs = Long.parseLong(v); break;
                default: return false;
            }
            return true;
        });
        if (o.run.isEmpty()) {
            ClientCheck.usage(o.mode + " needs -run (the consumer must know the producer's run)");
        }
        if (!o.consumer.equals("lite") && !o.consumer.equals("push")) {
            ClientCheck.usage("unknown consumer " + o.consumer + " (lite or push)");
        }
        if (o.group.isEmpty()) {
            o.group = "rmqgo_static_java_" + o.consumer + "_" + o.run;
        }
        return o;
    }

    /** The ClientCheck options that build and verify messages of this run. */
    static ClientCheck.Options format(Opts s) {
        ClientCheck.Options o = new ClientCheck.Options();
        o.namesrv = s.namesrv;
        o.topic = s.topic;
        o.run = s.run;
        o.sizes = new int[] {16, 128, 1000};
        return o;
    }

    /** Entry point for "ClientCheck static-produce|static-consume ..."; returns the exit code. */
    static int run(String[] args) {
        Opts o = parse(args);
        ClientCheck.Result r = new ClientCheck.Result(o.mode, o.namesrv);
        r.f.put("topic", o.topic);
        r.f.put("run", o.run);
        return r.run(() -> {
            if (o.mode.equals("static-produce")) {
                produce(o, r);
            } else {
                r.f.put("group", o.group);
                r.f.put("consumer", o.consumer);
                consume(o, r);
            }
        });
    }

    // ------------------------------------------------------------ produce

    static void produce(Opts s, ClientCheck.Result r) throws Exception {
        ClientCheck.Options fmt = format(s);
        DefaultMQProducer p = new DefaultMQProducer(s.producerGroup);
        p.setNamesrvAddr(s.namesrv);
        p.setInstanceName("rmqgo-static-p-" + s.run + "-" + s.start);
        p.setPollNameServerInterval(s.pollMs);
        p.setSendMsgTimeout(5_000);
        p.setVipChannelEnabled(false);
        p.start();
        List<String> lines = new ArrayList<>();
        Map<Integer, Integer> perQueue = new TreeMap<>();
        Map<Integer, Integer> errorCodes = new TreeMap<>();
        long sent = 0;
        long failed = 0;
        long undecided = 0;
        long retried = 0;
        long t0 = System.nanoTime();
        long deadline = System.currentTimeMillis() + s.timeoutMs;
        int seq = s.start;
        try {
            while (seq < s.start + s.count || (!s.stopFile.isEmpty() && !Files.exists(Paths.get(s.stopFile)))) {
                if (System.currentTimeMillis() > deadline) {
                    r.fail("produce: deadline of " + s.timeoutMs / 1000.0 + " s passed at seq " + seq
                        + (seq >= s.start + s.count ? " (stop file " + s.stopFile + " never appeared)" : ""));
                    break;
                }
                SendResult res = null;
                int attempts = 0;
                while (res == null && System.currentTimeMillis() <= deadline) {
                    attempts++;
                    try {
                        SendResult x = p.send(ClientCheck.build(fmt, seq));
                        if (x.getSendStatus() != SendStatus.SEND_OK) {
                            r.fail("seq " + seq + ": status " + x.getSendStatus());
                        }
                        res = x;
                    } catch (MQBrokerException e) {
                        errorCodes.merge(e.getResponseCode(), 1, Integer::sum);
                        if (e.getResponseCode() != NOT_LEADER_FOR_QUEUE) {
                            r.error("seq " + seq + " attempt " + attempts + ": " + ClientCheck.describe(e));
                        }
                        Thread.sleep(50);
                    } catch (MQClientException e) {
                        errorCodes.merge(e.getResponseCode(), 1, Integer::sum);
                        r.error("seq " + seq + " attempt " + attempts + ": " + ClientCheck.describe(e));
                        Thread.sleep(50);
                    } catch (RemotingException | IllegalStateException e) {
                        // A request that timed out (the client wraps a route
                        // lookup's RemotingException in IllegalStateException)
                        // is retried like any failed send.
                        r.error("seq " + seq + " attempt " + attempts + ": " + ClientCheck.describe(e));
                        Thread.sleep(50);
                    }
                }
                if (res == null) {
                    failed++;
                    r.fail("seq " + seq + ": not sent in " + attempts + " attempts");
                    break;
                }
                if (attempts > 1) {
                    retried++;
                }
                MessageQueue mq = res.getMessageQueue();
                if (res.getQueueOffset() < 0) {
                    undecided++;
                }
                if (mq.getBrokerName().startsWith(MOCK_PREFIX)) {
                    r.fail("seq " + seq + ": send result names the mock broker " + mq.getBrokerName());
                }
                sent++;
                perQueue.merge(mq.getQueueId(), 1, Integer::sum);
                lines.add(seq + " " + mq.getQueueId() + " " + mq.getBrokerName() + " " + res.getQueueOffset() + " " + attempts);
                seq++;
                if (sent == READY_AFTER && !s.readyFile.isEmpty()) {
                    Files.write(Paths.get(s.readyFile), new byte[0]);
                }
                if (s.intervalMs > 0) {
                    Thread.sleep(s.intervalMs);
                }
            }
        } finally {
            long ms = (System.nanoTime() - t0) / 1_000_000;
            p.shutdown();
            r.f.put("send_mode", "sync");
            r.f.put("first_seq", s.start);
            r.f.put("next_seq", seq);
            r.f.put("sent", sent);
            r.f.put("failed", failed);
            r.f.put("retried", retried);
            r.f.put("undecided", undecided);
            r.f.put("not_leader", errorCodes.getOrDefault(NOT_LEADER_FOR_QUEUE, 0));
            r.f.put("error_codes", errorCodes.toString());
            r.f.put("per_queue", perQueue.toString());
            r.f.put("send_ms", ms);
            writeLines(s.out, lines);
        }
        if (sent < s.count) {
            r.fail("produce: sent " + sent + " of at least " + s.count);
        }
    }

    // ------------------------------------------------------------ consume

    /** What the consumer saw; shared by the listener threads. */
    static final class Seen {
        final ClientCheck.Options fmt;
        final Opts s;
        final ClientCheck.Result r;
        /** Expected count; -1 until -count-file appears. */
        volatile int count;
        final Map<Integer, String> bySeq = new TreeMap<>();
        final Map<Integer, Long> lastOffset = new TreeMap<>();
        long received;
        long duplicates;
        long redelivered;
        long mismatched;
        long foreign;
        long outOfOrder;

        Seen(Opts s, ClientCheck.Result r) {
            this.s = s;
            this.fmt = format(s);
            this.r = r;
            this.count = s.countFile.isEmpty() ? s.count : -1;
        }

        synchronized void add(MessageExt m) {
            received++;
            if (!s.run.equals(m.getUserProperty("check_run"))) {
                foreign++;
                return;
            }
            String why = ClientCheck.verify(fmt, m);
            if (why != null) {
                mismatched++;
                r.error(why);
                return;
            }
            int seq = Integer.parseInt(m.getUserProperty("check_seq"));
            int q = m.getQueueId();
            long off = m.getQueueOffset();
            if (!m.getBrokerName().startsWith(MOCK_PREFIX) || (s.queues > 0 && (q < 0 || q >= s.queues))) {
                mismatched++;
                r.error("seq " + seq + ": delivered from " + m.getBrokerName() + " queue " + q + ", not a logic queue");
                return;
            }
            Long last = lastOffset.put(q, off);
            if (last != null && off <= last) {
                outOfOrder++;
                r.error("seq " + seq + ": logic queue " + q + " offset " + off + " after " + last);
            }
            if (seq < s.start) {
                redelivered++;
                r.error("seq " + seq + " (queue " + q + " offset " + off + ") is below -start " + s.start
                    + ": delivered again although the group committed it");
                return;
            }
            String line = seq + " " + q + " " + off;
            String prev = bySeq.putIfAbsent(seq, line);
            if (prev != null) {
                duplicates++;
                r.error("duplicate seq " + seq + ": " + prev + " and again at queue " + q + " offset " + off);
            }
        }

        /** Whether every expected message arrived (false while the count is unknown). */
        synchronized boolean complete() {
            int n = count;
            if (n < 0) {
                return false;
            }
            for (int seq = s.start; seq < s.start + n; seq++) {
                if (!bySeq.containsKey(seq)) {
                    return false;
                }
            }
            return true;
        }

        /** Reads -count-file once it exists. */
        void readCountFile() throws IOException {
            if (count >= 0) {
                return;
            }
            Path p = Paths.get(s.countFile);
            if (Files.exists(p)) {
                String v = Files.readString(p, StandardCharsets.UTF_8).trim();
                if (!v.isEmpty()) {
                    count = Integer.parseInt(v);
                }
            }
        }
    }

    static void consume(Opts s, ClientCheck.Result r) throws Exception {
        Seen seen = new Seen(s, r);
        long t0 = System.nanoTime();
        long deadline = System.currentTimeMillis() + s.timeoutMs;
        long lingerUntil = Long.MAX_VALUE;
        DefaultLitePullConsumer lite = null;
        DefaultMQPushConsumer push = null;
        try {
            if (s.consumer.equals("lite")) {
                lite = new DefaultLitePullConsumer(s.group);
                lite.setNamesrvAddr(s.namesrv);
                lite.setInstanceName("rmqgo-static-c-" + s.run);
                lite.setPollNameServerInterval(s.pollMs);
                lite.setVipChannelEnabled(false);
                lite.start();
                Collection<MessageQueue> mqs = lite.fetchMessageQueues(s.topic);
                r.f.put("queues", mqs.size());
                for (MessageQueue mq : mqs) {
                    if (!mq.getBrokerName().startsWith(MOCK_PREFIX)) {
                        r.fail("fetchMessageQueues: " + mq + " is not a logic queue");
                    }
                }
                if (s.queues > 0 && mqs.size() != s.queues) {
                    r.fail("fetchMessageQueues: " + mqs.size() + " queues, want " + s.queues + ": " + mqs);
                }
                lite.assign(mqs);
                for (MessageQueue mq : mqs) {
                    lite.seekToBegin(mq);
                }
            } else {
                push = new DefaultMQPushConsumer(s.group);
                push.setNamesrvAddr(s.namesrv);
                push.setInstanceName("rmqgo-static-c-" + s.run);
                push.setPollNameServerInterval(s.pollMs);
                ClientCheck.shortHeartbeat(push);
                push.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                // One thread: the listener sees each queue's messages in
                // pull order, so per-queue offset order can be checked.
                push.setConsumeThreadMin(1);
                push.setConsumeThreadMax(1);
                push.setVipChannelEnabled(false);
                push.subscribe(s.topic, "*");
                push.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        seen.add(m);
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                push.start();
            }
            while (System.currentTimeMillis() < Math.min(deadline, lingerUntil)) {
                if (lite != null) {
                    for (MessageExt m : lite.poll(100)) {
                        seen.add(m);
                    }
                } else {
                    Thread.sleep(50);
                }
                seen.readCountFile();
                if (lingerUntil == Long.MAX_VALUE && seen.complete()) {
                    r.f.put("consume_ms", (System.nanoTime() - t0) / 1_000_000);
                    lingerUntil = System.currentTimeMillis() + s.lingerMs;
                }
            }
        } finally {
            // Shutting down persists the group's offsets on the brokers
            // (UPDATE_CONSUMER_OFFSET of logic offsets).
            if (lite != null) {
                lite.shutdown();
            }
            if (push != null) {
                push.shutdown();
            }
        }
        synchronized (seen) {
            int count = seen.count;
            int distinct = 0;
            List<Integer> missing = new ArrayList<>();
            for (int seq = s.start; seq < s.start + Math.max(count, 0); seq++) {
                if (seen.bySeq.containsKey(seq)) {
                    distinct++;
                } else if (missing.size() < 20) {
                    missing.add(seq);
                }
            }
            long beyond = seen.bySeq.keySet().stream().filter(q -> q >= s.start + Math.max(count, 0)).count();
            r.f.put("expected", count);
            r.f.put("received", seen.received);
            r.f.put("distinct", distinct);
            r.f.put("duplicates", seen.duplicates);
            r.f.put("redelivered", seen.redelivered);
            r.f.put("mismatched", seen.mismatched);
            r.f.put("foreign", seen.foreign + beyond);
            r.f.put("out_of_order", seen.outOfOrder);
            r.f.put("last_offsets", seen.lastOffset.toString());
            if (!r.f.containsKey("consume_ms")) {
                r.f.put("consume_ms", (System.nanoTime() - t0) / 1_000_000);
            }
            writeLines(s.out, new ArrayList<>(seen.bySeq.values()));
            if (count < 0) {
                r.fail("consume: " + s.countFile + " never appeared");
            } else if (distinct < count) {
                r.fail("consume: got " + distinct + " of " + count + " within " + s.timeoutMs / 1000.0
                    + " s; first missing " + missing);
            }
            if (seen.mismatched > 0) {
                r.fail("consume: " + seen.mismatched + " messages failed verification");
            }
            if (seen.duplicates > 0) {
                r.fail("consume: " + seen.duplicates + " duplicates");
            }
            if (seen.redelivered > 0) {
                r.fail("consume: " + seen.redelivered + " messages below -start delivered again");
            }
            if (seen.outOfOrder > 0) {
                r.fail("consume: " + seen.outOfOrder + " messages with a logic offset not above the previous one of their queue");
            }
        }
    }

    static void writeLines(String path, List<String> lines) throws IOException {
        if (path.isEmpty()) {
            return;
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(path), StandardCharsets.UTF_8))) {
            for (String l : lines) {
                w.println(l);
            }
        }
    }
}
