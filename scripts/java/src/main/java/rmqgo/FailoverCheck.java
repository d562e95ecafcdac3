package rmqgo;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Produce and consume across a broker failover with the Java client
 * ({@code ClientCheck failover -n NS -t TOPIC -g GROUP -run RUN -send-secs S
 * -interval MS -drain-secs D [-until-file F]}): one producer sends one
 * message every interval for send-secs, or until the file F exists when
 * given (send-secs is then the cap: a test releases the producer once it has
 * seen sends on both sides of the failover, however slowly the JVM
 * runs), sync with a 3 s timeout and 2 retries, while a push
 * consumer of the group consumes; both refresh routes every second
 * (pollNameServerInterval=1000), so they find a newly elected master at
 * once, and the consumer heartbeats every second
 * ({@link ClientCheck#shortHeartbeat}). A message counts as acknowledged only on SEND_OK. After the sends
 * the consumer gets up to drain-secs to receive every acknowledged message.
 * Passes when none is missing; duplicates are counted, not failed.
 * While sending, a line "acked N" goes to stderr every second.
 */
final class FailoverCheck {
    private FailoverCheck() {
    }

    static final class Opts {
        String ns = "127.0.0.1:9876", topic = "FailoverJavaTopic", group = "failover_java_cg", run = "f";
        long sendMs = 15_000, intervalMs = 20, drainMs = 30_000;
        String untilFile;

        boolean set(String name, String v) {
            switch (name) {
                case "n": ns = v; break;
                case "t": topic = v; break;
                case "g": group = v; break;
                case "run": run = v; break;
                case "send-secs": sendMs = ClientCheck.secondsMs(v); break;
                case "interval": intervalMs = Long.parseLong(v); break;
                case "drain-secs": drainMs = ClientCheck.secondsMs(v); break;
                case "until-file": untilFile = v; break;
                default: return false;
            }
            return true;
        }
    }

    static int run(String[] args) {
        Opts o = new Opts();
        ClientCheck.parseOptions(args, o::set);
        ClientCheck.Result r = new ClientCheck.Result("failover", o.ns);
        r.f.put("topic", o.topic);
        r.f.put("group", o.group);
        r.f.put("run", o.run);
        return r.run(() -> check(o.ns, o.topic, o.group, o.run, o.sendMs, o.intervalMs, o.drainMs, o.untilFile, r));
    }

    static void check(String ns, String topic, String group, String run, long sendMs, long intervalMs, long drainMs,
                      String untilFile, ClientCheck.Result r) throws Exception {
        Set<Integer> acked = ConcurrentHashMap.newKeySet();
        Set<Integer> consumed = ConcurrentHashMap.newKeySet();
        AtomicLong duplicates = new AtomicLong();
        AtomicLong failed = new AtomicLong();

        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("rmqgo-failover-c-" + run);
        c.setPollNameServerInterval(1000);
        ClientCheck.shortHeartbeat(c);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setVipChannelEnabled(false);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String seq = m.getUserProperty("check_seq");
                if (!run.equals(m.getUserProperty("check_run")) || seq == null) {
                    continue;
                }
                if (!consumed.add(Integer.parseInt(seq))) {
                    duplicates.incrementAndGet();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();

        DefaultMQProducer p = new DefaultMQProducer(group + "_pg");
        p.setNamesrvAddr(ns);
        p.setInstanceName("rmqgo-failover-p-" + run);
        p.setPollNameServerInterval(1000);
        p.setSendMsgTimeout(3000);
        p.setRetryTimesWhenSendFailed(2);
        p.setVipChannelEnabled(false);
        p.start();
        long t0 = System.nanoTime();
        long lastReport = 0;
        int seq = 0;
        try {
            while ((System.nanoTime() - t0) / 1_000_000 < sendMs
                    && (untilFile == null || !Files.exists(Paths.get(untilFile)))) {
                Message m = new Message(topic, "F", "fo-" + run + "-" + seq, ("failover-" + seq).getBytes(StandardCharsets.UTF_8));
                m.putUserProperty("check_run", run);
                m.putUserProperty("check_seq", Integer.toString(seq));
                try {
                    SendResult res = p.send(m);
                    if (res.getSendStatus() == SendStatus.SEND_OK) {
                        acked.add(seq);
                    } else {
                        failed.incrementAndGet();
                    }
                } catch (Exception e) {
                    failed.incrementAndGet();
                    r.error("seq " + seq + ": " + ClientCheck.describe(e));
                }
                seq++;
                long ms = (System.nanoTime() - t0) / 1_000_000;
                if (ms - lastReport >= 1000) {
                    System.err.println("acked " + acked.size());
                    lastReport = ms;
                }
                Thread.sleep(intervalMs);
            }
        } finally {
            p.shutdown();
        }
        long sendEnd = System.nanoTime();
        r.f.put("send_ms", (sendEnd - t0) / 1_000_000);
        while (!consumed.containsAll(acked) && (System.nanoTime() - sendEnd) / 1_000_000 < drainMs) {
            Thread.sleep(100);
        }
        long drain = (System.nanoTime() - sendEnd) / 1_000_000;
        c.shutdown();
        TreeSet<Integer> lost = new TreeSet<>(acked);
        lost.removeAll(consumed);
        List<Integer> sample = new ArrayList<>();
        for (Integer x : lost) {
            if (sample.size() == 20) {
                break;
            }
            sample.add(x);
        }
        r.f.put("sent", seq);
        r.f.put("acked", acked.size());
        r.f.put("failed", failed.get());
        r.f.put("consumed", consumed.size());
        r.f.put("duplicates", duplicates.get());
        r.f.put("lost", lost.size());
        r.f.put("lost_sample", sample);
        r.f.put("drain_ms", drain);
        if (acked.isEmpty()) {
            r.fail("failover: no send was acknowledged");
        }
        if (!lost.isEmpty()) {
            r.fail("failover: " + lost.size() + " acknowledged messages never consumed within " + drainMs / 1000.0 + "s");
        }
    }
}
