package rmqgo;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.CommunicationMode;
import org.apache.rocketmq.client.impl.consumer.PullResultExt;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.producer.RecallMessageHandle;
import org.apache.rocketmq.common.sysflag.PullSysFlag;
import org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Messaging-semantics checks with the Java client (rocketmq-client 5.5.x),
 * all in one JVM, in parallel ({@code ClientCheck semantics ...}):
 *
 * <pre>
 *   tx       TransactionMQProducer: commit, rollback, and UNKNOW answered
 *            by check-backs (UNKNOW first, then commit or rollback); a
 *            consumer gets exactly the committed ones
 *   orderly  MessageSelector-routed sends, MessageListenerOrderly: per key
 *            and per queue order, through a SUSPEND_CURRENT_QUEUE_A_MOMENT
 *            and a consumer restart (queue locks handed over)
 *   reply    DefaultMQProducer.request answered by MessageUtil replies
 *   retry    RECONSUME_LATER: reconsume times 0..max, each at least a delay
 *            level apart, then %DLQ%group with reconsume times max+1
 *   delay    delay level 3 arrives no sooner than 10 s after the send
 *   msgtype  enableTopicMessageTypeCheck: wrong-type sends refused with
 *            MESSAGE_ILLEGAL (13), right-type sends accepted
 *   reset    DefaultMQAdminExt.resetOffsetByTimestamp while a push consumer
 *            runs: it consumes everything again from the reset point (a
 *            server-side reset reaches it as PULL_OFFSET_MOVED)
 *   recall   timer messages (setDeliverTimeMs) carry a recall handle;
 *            DefaultMQProducer.recallMessage cancels one before it is due
 *   broadcast two BROADCASTING push consumers of one group each get every
 *            message once (offsets in a temporary local offset store)
 *   tag      subscriptions "TagA || TagB" and "Aa" (whose String.hashCode
 *            equals that of "BB"): consumers get exactly their tags; a raw
 *            PULL_MESSAGE shows the broker filters by tag hash code (it
 *            returns BB for "Aa") and leaves the re-check to the client
 * </pre>
 *
 * Topics (created beforehand, with message.type where it matters):
 * PREFIX + Tx (TRANSACTION), Order (FIFO), Reply, Retry (NORMAL), Delay
 * (DELAY), Normal (NORMAL), Reset, Recall (DELAY), Broadcast, Tag, and
 * %RETRY%PREFIX_retry_cg: a Java consumer
 * rebalances every 20 s, so one that starts before its retry topic has a
 * route pulls retries only after the next rebalance. The broker is expected to run with
 * enableTopicMessageTypeCheck=true, recallMessageEnable=true, a short
 * transaction check
 * (transactionTimeOut 2 s, transactionCheckInterval 1 s), delay level 3 =
 * 10 s and level 4 = 1 s (retries go through levels 3 and 4).
 *
 * The last stdout line is the JSON result: ok, errors, and per check
 * CHECK_ok and CHECK_ms plus a few figures.
 */
final class SemanticsCheck {

    static final List<String> ALL = List.of("tx", "orderly", "reply", "retry", "delay", "msgtype", "reset", "recall",
        "broadcast", "tag", "litepull", "pull", "adminapi");

    private SemanticsCheck() {
    }

    static final class Opts {
        String namesrv = "127.0.0.1:9876";
        String prefix = "JSem";
        Set<String> checks = new LinkedHashSet<>(ALL);
        long timeoutMs = 60_000;
        int maxReconsume = 2;
    }

    static Opts parse(String[] args) {
        Opts o = new Opts();
        ClientCheck.parseOptions(args, (name, v) -> {
            switch (name) {
                case "n": o.namesrv = v; break;
                case "prefix": o.prefix = v; break;
                case "checks":
                    o.checks = new LinkedHashSet<>(Arrays.asList(v.split(",")));
                    for (String c : o.checks) {
                        if (!ALL.contains(c)) {
                            ClientCheck.usage("unknown check " + c + " (known: " + String.join(",", ALL) + ")");
                        }
                    }
                    break;
                case "timeout": o.timeoutMs = ClientCheck.secondsMs(v); break;
                case "max-reconsume": o.maxReconsume = Integer.parseInt(v); break;
                default: return false;
            }
            return true;
        });
        return o;
    }

    /** What one check reports. */
    static final class Outcome {
        final String name;
        final List<String> errors = new CopyOnWriteArrayList<>();
        final Map<String, Object> figures = Collections.synchronizedMap(new LinkedHashMap<>());

        Outcome(String name) {
            this.name = name;
        }

        void fail(String e) {
            if (errors.size() < 10) {
                errors.add(e);
            }
        }
    }

    interface Check {
        void run(Opts o, Outcome out) throws Exception;
    }

    static int run(String[] args) {
        Opts o = parse(args);
        ClientCheck.Result r = new ClientCheck.Result("semantics", o.namesrv);
        r.f.put("checks", String.join(",", o.checks));
        Map<String, Check> impl = new HashMap<>();
        impl.put("tx", SemanticsCheck::tx);
        impl.put("orderly", SemanticsCheck::orderly);
        impl.put("reply", SemanticsCheck::reply);
        impl.put("retry", SemanticsCheck::retry);
        impl.put("delay", SemanticsCheck::delay);
        impl.put("msgtype", SemanticsCheck::msgtype);
        impl.put("reset", SemanticsCheck::reset);
        impl.put("recall", SemanticsCheck::recall);
        impl.put("broadcast", SemanticsCheck::broadcast);
        impl.put("tag", SemanticsCheck::tag);
        impl.put("litepull", SemanticsCheck::litepull);
        impl.put("pull", SemanticsCheck::pull);
        impl.put("adminapi", SemanticsCheck::adminapi);
        // Broadcasting consumers keep their offsets in local files
        // (LocalFileOffsetStore, read once when the class loads): a fresh
        // directory per run, so no offsets of an earlier cluster apply.
        Path offsetDir;
        try {
            offsetDir = Files.createTempDirectory("rmqgo-java-offsets");
        } catch (java.io.IOException e) {
            throw new IllegalStateException("temporary offset directory", e);
        }
        System.setProperty("rocketmq.client.localOffsetStoreDir", offsetDir.toString());
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(o.checks.size());
        Map<String, Future<?>> futures = new LinkedHashMap<>();
        Map<String, Outcome> outcomes = new LinkedHashMap<>();
        Map<String, Long> took = new ConcurrentHashMap<>();
        for (String name : o.checks) {
            Outcome out = new Outcome(name);
            outcomes.put(name, out);
            futures.put(name, pool.submit(() -> {
                long s = System.nanoTime();
                try {
                    impl.get(name).run(o, out);
                } catch (Throwable t) {
                    out.fail(ClientCheck.describe(t));
                } finally {
                    took.put(name, (System.nanoTime() - s) / 1_000_000);
                }
            }));
        }
        for (Map.Entry<String, Future<?>> e : futures.entrySet()) {
            try {
                e.getValue().get(o.timeoutMs + 30_000, TimeUnit.MILLISECONDS);
            } catch (Exception ex) {
                outcomes.get(e.getKey()).fail("did not finish: " + ClientCheck.describe(ex));
            }
        }
        pool.shutdownNow();
        deleteTree(offsetDir);
        for (Outcome out : outcomes.values()) {
            r.f.put(out.name + "_ok", out.errors.isEmpty());
            r.f.put(out.name + "_ms", took.getOrDefault(out.name, -1L));
            synchronized (out.figures) {
                for (Map.Entry<String, Object> e : out.figures.entrySet()) {
                    r.f.put(out.name + "_" + e.getKey(), e.getValue());
                }
            }
            for (String e : out.errors) {
                r.fail(out.name + ": " + e);
            }
        }
        return r.print(t0);
    }

    // ------------------------------------------------------------ helpers

    static void deleteTree(Path dir) {
        try (java.util.stream.Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (java.io.IOException e) {
            // Best effort: a temporary directory.
        }
    }

    static DefaultMQProducer producer(Opts o, String group, String instance) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(o.prefix + group);
        configure(p, o, instance);
        p.start();
        return p;
    }

    static void configure(DefaultMQProducer p, Opts o, String instance) {
        p.setNamesrvAddr(o.namesrv);
        p.setInstanceName(o.prefix + "-" + instance);
        p.setVipChannelEnabled(false);
        p.setSendMsgTimeout(10_000);
        p.setPollNameServerInterval(1000);
        // The broker finds a requester's channel (PUSH_REPLY_MESSAGE) by
        // its heartbeat, which a fresh client sends only once it knows a
        // route: heartbeat every second instead of every 30.
        p.setHeartbeatBrokerInterval(1000);
    }

    static DefaultMQPushConsumer consumer(Opts o, String group, String instance, String topic) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(o.prefix + group);
        c.setNamesrvAddr(o.namesrv);
        c.setInstanceName(o.prefix + "-" + instance);
        c.setVipChannelEnabled(false);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setConsumeThreadMin(2);
        c.setConsumeThreadMax(2);
        // Routes of topics the broker creates meanwhile (%RETRY%) are
        // picked up in a second, not 30.
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(1000);
        c.subscribe(o.prefix + topic, "*");
        return c;
    }

    static Message msg(String topic, String body, String... props) {
        Message m = new Message(topic, "T", body.getBytes(StandardCharsets.UTF_8));
        m.setKeys(body);
        for (int i = 0; i + 1 < props.length; i += 2) {
            m.putUserProperty(props[i], props[i + 1]);
        }
        return m;
    }

    static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    static boolean await(long timeoutMs, BooleanSupplier done) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    /** The MQBrokerException in t's cause chain, or null. */
    static MQBrokerException brokerError(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            if (x instanceof MQBrokerException) {
                return (MQBrokerException) x;
            }
            if (x.getCause() == x) {
                break;
            }
        }
        return null;
    }

    // ------------------------------------------------------------ tx

    static void tx(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Tx";
        String[] kinds = {"commit", "rollback", "unknown-commit", "unknown-rollback"};
        int perKind = 3;
        Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();
        Map<String, Integer> received = new ConcurrentHashMap<>();
        AtomicInteger checkOfUnsent = new AtomicInteger();

        DefaultMQPushConsumer c = consumer(o, "_tx_cg", "tx-c", "Tx");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                received.merge(body(m), 1, Integer::sum);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();

        TransactionMQProducer p = new TransactionMQProducer(o.prefix + "_tx_pg");
        configure(p, o, "tx-p");
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message m, Object arg) {
                String kind = m.getUserProperty("kind");
                if ("commit".equals(kind)) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                if ("rollback".equals(kind)) {
                    return LocalTransactionState.ROLLBACK_MESSAGE;
                }
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt m) {
                String kind = m.getUserProperty("kind");
                if (kind == null || !kind.startsWith("unknown")) {
                    // Decided at send: the broker must not ask.
                    checkOfUnsent.incrementAndGet();
                    out.fail("check-back for " + body(m) + " (" + kind + "), decided at send");
                    return "commit".equals(kind) ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
                }
                int n = checks.computeIfAbsent(body(m), k -> new AtomicInteger()).incrementAndGet();
                if (n == 1) {
                    return LocalTransactionState.UNKNOW;
                }
                return kind.equals("unknown-commit") ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        p.start();
        Set<String> want = new LinkedHashSet<>();
        try {
            for (String kind : kinds) {
                for (int i = 0; i < perKind; i++) {
                    String b = "tx-" + kind + "-" + i;
                    TransactionSendResult res = p.sendMessageInTransaction(msg(topic, b, "kind", kind), null);
                    if (res.getSendStatus() != SendStatus.SEND_OK) {
                        out.fail(b + ": send status " + res.getSendStatus());
                    }
                    LocalTransactionState st = res.getLocalTransactionState();
                    LocalTransactionState exp = kind.equals("commit") ? LocalTransactionState.COMMIT_MESSAGE
                        : kind.equals("rollback") ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.UNKNOW;
                    if (st != exp) {
                        out.fail(b + ": local state " + st + ", want " + exp);
                    }
                    if (kind.endsWith("commit")) {
                        want.add(b);
                    }
                }
            }
            boolean done = await(o.timeoutMs, () -> received.keySet().containsAll(want)
                && checks.values().stream().filter(a -> a.get() >= 2).count() == 2L * perKind);
            if (!done) {
                out.fail("after " + o.timeoutMs + " ms: received " + new ArrayList<>(received.keySet())
                    + ", check-backs " + checks);
            }
            Thread.sleep(1500); // nothing rolled back arrives late
        } finally {
            p.shutdown();
            c.shutdown();
        }
        for (Map.Entry<String, Integer> e : received.entrySet()) {
            if (!want.contains(e.getKey())) {
                out.fail("consumer got " + e.getKey() + ", which was not committed");
            } else if (e.getValue() != 1) {
                out.fail(e.getKey() + " consumed " + e.getValue() + " times");
            }
        }
        for (Map.Entry<String, AtomicInteger> e : checks.entrySet()) {
            if (e.getValue().get() < 2) {
                out.fail(e.getKey() + ": " + e.getValue().get() + " check-backs, want an UNKNOW and a decision");
            }
        }
        out.figures.put("committed", received.size());
        int maxChecks = 0;
        for (AtomicInteger a : checks.values()) {
            maxChecks = Math.max(maxChecks, a.get());
        }
        out.figures.put("max_checkbacks", maxChecks);
    }

    // ------------------------------------------------------------ orderly

    static void orderly(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Order";
        int keys = 8;
        int perKey = 25;
        int total = keys * perKey;
        Map<Integer, Integer> next = new ConcurrentHashMap<>();
        Map<Integer, Long> lastOffset = new ConcurrentHashMap<>();
        AtomicInteger firsts = new AtomicInteger();
        AtomicInteger redeliveries = new AtomicInteger();
        AtomicBoolean suspended = new AtomicBoolean();
        Map<String, Set<Integer>> queuesOf = new ConcurrentHashMap<>();

        DefaultMQProducer p = producer(o, "_order_pg", "order-p");
        try {
            for (int s = 0; s < perKey; s++) {
                for (int k = 0; k < keys; k++) {
                    Message m = msg(topic, "o-" + k + "-" + s, "k", Integer.toString(k), "s", Integer.toString(s));
                    SendResult res = p.send(m, (mqs, mm, arg) -> mqs.get(((Integer) arg) % mqs.size()), k);
                    if (res.getSendStatus() != SendStatus.SEND_OK) {
                        out.fail("send " + k + "/" + s + ": " + res.getSendStatus());
                    }
                    queuesOf.computeIfAbsent("k" + k, x -> ConcurrentHashMap.newKeySet()).add(res.getMessageQueue().getQueueId());
                }
            }
        } finally {
            p.shutdown();
        }
        for (Map.Entry<String, Set<Integer>> e : queuesOf.entrySet()) {
            if (e.getValue().size() != 1) {
                out.fail("selector sent " + e.getKey() + " to queues " + e.getValue());
            }
        }

        MessageListenerOrderly listener = (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                int k = Integer.parseInt(m.getUserProperty("k"));
                int s = Integer.parseInt(m.getUserProperty("s"));
                if (k == 0 && s == 5 && suspended.compareAndSet(false, true)) {
                    // Redelivered after a pause, before anything behind it.
                    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                }
            }
            for (MessageExt m : msgs) {
                int k = Integer.parseInt(m.getUserProperty("k"));
                int s = Integer.parseInt(m.getUserProperty("s"));
                synchronized (next) {
                    int n = next.getOrDefault(k, 0);
                    if (s == n) {
                        next.put(k, n + 1);
                        firsts.incrementAndGet();
                    } else if (s < n) {
                        redeliveries.incrementAndGet();
                    } else {
                        out.fail("key " + k + ": got seq " + s + " while expecting " + n);
                    }
                    long last = lastOffset.getOrDefault(m.getQueueId(), -1L);
                    if (m.getQueueOffset() <= last && s >= n) {
                        out.fail("queue " + m.getQueueId() + ": offset " + m.getQueueOffset() + " after " + last);
                    }
                    lastOffset.put(m.getQueueId(), Math.max(last, m.getQueueOffset()));
                }
            }
            return ConsumeOrderlyStatus.SUCCESS;
        };
        // Half the messages with a first consumer, the rest with a second
        // one of the same group: the queue locks and the consumed offsets
        // pass from one to the other.
        DefaultMQPushConsumer c1 = consumer(o, "_order_cg", "order-c1", "Order");
        c1.setSuspendCurrentQueueTimeMillis(200);
        c1.registerMessageListener(listener);
        c1.start();
        try {
            if (!await(o.timeoutMs, () -> firsts.get() >= total / 2)) {
                out.fail("first consumer: " + firsts.get() + " of " + total + " after " + o.timeoutMs + " ms");
                return;
            }
        } finally {
            c1.shutdown();
        }
        int atRestart = firsts.get();
        DefaultMQPushConsumer c2 = consumer(o, "_order_cg", "order-c2", "Order");
        c2.registerMessageListener(listener);
        c2.start();
        try {
            if (!await(o.timeoutMs, () -> firsts.get() >= total)) {
                out.fail("second consumer: " + firsts.get() + " of " + total + " after " + o.timeoutMs + " ms");
            }
        } finally {
            c2.shutdown();
        }
        if (!suspended.get()) {
            out.fail("the suspended message never came");
        }
        out.figures.put("consumed", firsts.get());
        out.figures.put("at_restart", atRestart);
        out.figures.put("redeliveries", redeliveries.get());
    }

    // ------------------------------------------------------------ reply

    static void reply(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Reply";
        int n = 10;
        DefaultMQProducer replier = producer(o, "_reply_pg", "reply-p");
        DefaultMQPushConsumer responder = consumer(o, "_reply_cg", "reply-c", "Reply");
        // Replies whose send returned. The broker pushes a reply to the
        // requester before it answers the replier's send, so the requester
        // can be done while the last send still waits for its answer; the
        // responder is shut down (which interrupts its threads) only after.
        AtomicInteger replied = new AtomicInteger();
        responder.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                try {
                    Message r = MessageUtil.createReplyMessage(m, ("re:" + body(m)).getBytes(StandardCharsets.UTF_8));
                    replier.send(r);
                    replied.incrementAndGet();
                } catch (Exception e) {
                    out.fail("reply to " + body(m) + ": " + ClientCheck.describe(e));
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        responder.start();
        DefaultMQProducer requester = producer(o, "_request_pg", "request-p");
        int ok = 0;
        long worst = 0;
        try {
            for (int i = 0; i < n; i++) {
                String b = "req-" + i;
                long s = System.nanoTime();
                Message r = requester.request(msg(topic, b), i == 0 ? 20_000 : 5_000);
                long ms = (System.nanoTime() - s) / 1_000_000;
                if (i > 0) {
                    worst = Math.max(worst, ms);
                }
                String got = r == null ? null : new String(r.getBody(), StandardCharsets.UTF_8);
                if (!("re:" + b).equals(got)) {
                    out.fail(b + ": reply " + got);
                } else {
                    ok++;
                }
            }
        } finally {
            requester.shutdown();
            final int want = ok;
            await(10_000, () -> replied.get() >= want);
            responder.shutdown();
            replier.shutdown();
        }
        out.figures.put("replies", ok);
        out.figures.put("worst_ms", worst);
    }

    // ------------------------------------------------------------ retry

    static void retry(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Retry";
        String group = o.prefix + "_retry_cg";
        String[] failing = {"fail-0", "fail-1"};
        Map<String, List<long[]>> attempts = new ConcurrentHashMap<>(); // body -> (reconsumeTimes, at)
        Map<String, String> ids = new ConcurrentHashMap<>();
        AtomicInteger okCount = new AtomicInteger();

        DefaultMQPushConsumer c = consumer(o, "_retry_cg", "retry-c", "Retry");
        c.setMaxReconsumeTimes(o.maxReconsume);
        c.setConsumeMessageBatchMaxSize(1);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String b = body(m);
                if (b.startsWith("fail")) {
                    attempts.computeIfAbsent(b, k -> new CopyOnWriteArrayList<>())
                        .add(new long[] {m.getReconsumeTimes(), System.currentTimeMillis()});
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                okCount.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer p = producer(o, "_retry_pg", "retry-p");
        try {
            for (String b : failing) {
                SendResult r = p.send(msg(topic, b));
                ids.put(b, r.getMsgId());
            }
            p.send(msg(topic, "ok-0"));
        } finally {
            p.shutdown();
        }
        int want = o.maxReconsume + 1;
        boolean done = await(o.timeoutMs, () -> {
            for (String b : failing) {
                List<long[]> a = attempts.get(b);
                if (a == null || a.size() < want) {
                    return false;
                }
            }
            return true;
        });
        Thread.sleep(1500); // no attempt beyond the maximum
        c.shutdown();
        if (!done) {
            out.fail("after " + o.timeoutMs + " ms: attempts " + describeAttempts(attempts));
            return;
        }
        for (String b : failing) {
            List<long[]> a = attempts.get(b);
            if (a.size() != want) {
                out.fail(b + ": " + a.size() + " attempts, want " + want + ": " + describeAttempts(attempts));
                continue;
            }
            for (int i = 0; i < a.size(); i++) {
                if (a.get(i)[0] != i) {
                    out.fail(b + ": attempt " + i + " has reconsumeTimes " + a.get(i)[0]);
                }
            }
            // Retry i waits delay level 3 + i − 1 (10 s, then 1 s on the
            // test broker).
            long first = a.get(1)[1] - a.get(0)[1];
            if (first < 9_500) {
                out.fail(b + ": first retry after " + first + " ms, want the 10 s of delay level 3");
            }
            out.figures.put("first_retry_ms", first);
        }
        if (okCount.get() != 1) {
            out.fail("ok-0 consumed " + okCount.get() + " times");
        }

        // The dead letters.
        String dlq = MixAll.getDLQTopic(group);
        DefaultLitePullConsumer lc = new DefaultLitePullConsumer(o.prefix + "_dlq_reader");
        lc.setNamesrvAddr(o.namesrv);
        lc.setInstanceName(o.prefix + "-dlq");
        lc.setVipChannelEnabled(false);
        lc.setAutoCommit(false);
        lc.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        lc.start();
        Map<String, MessageExt> dead = new HashMap<>();
        try {
            Collection<MessageQueue> mqs = null;
            long deadline = System.currentTimeMillis() + 20_000;
            while (mqs == null || mqs.isEmpty()) {
                try {
                    mqs = lc.fetchMessageQueues(dlq);
                } catch (Exception e) {
                    if (System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                    Thread.sleep(200);
                }
            }
            lc.assign(mqs);
            for (MessageQueue mq : mqs) {
                lc.seek(mq, 0);
            }
            deadline = System.currentTimeMillis() + 20_000;
            while (dead.size() < failing.length && System.currentTimeMillis() < deadline) {
                for (MessageExt m : lc.poll(500)) {
                    dead.put(body(m), m);
                }
            }
        } finally {
            lc.shutdown();
        }
        for (String b : failing) {
            MessageExt m = dead.get(b);
            if (m == null) {
                out.fail(b + " not in " + dlq + " (it holds " + dead.keySet() + ")");
                continue;
            }
            if (m.getReconsumeTimes() != want) {
                out.fail(b + " in the DLQ with reconsumeTimes " + m.getReconsumeTimes() + ", want " + want);
            }
            if (!ids.get(b).equals(m.getMsgId())) {
                out.fail(b + " in the DLQ with msgId " + m.getMsgId() + ", sent as " + ids.get(b));
            }
        }
        out.figures.put("dead_letters", dead.size());
    }

    static String describeAttempts(Map<String, List<long[]>> attempts) {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, List<long[]>> e : attempts.entrySet()) {
            sb.append(e.getKey()).append('=');
            List<String> rt = new ArrayList<>();
            for (long[] a : e.getValue()) {
                rt.add(Long.toString(a[0]));
            }
            sb.append(rt).append(' ');
        }
        return sb.toString().trim();
    }

    // ------------------------------------------------------------ delay

    static void delay(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Delay";
        Map<String, Long> arrived = new ConcurrentHashMap<>();
        Map<String, Long> stored = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consumer(o, "_delay_cg", "delay-c", "Delay");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                arrived.putIfAbsent(body(m), System.currentTimeMillis());
                stored.putIfAbsent(body(m), m.getStoreTimestamp());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer p = producer(o, "_delay_pg", "delay-p");
        long sent;
        try {
            Message m = msg(topic, "delay-3");
            m.setDelayTimeLevel(3);
            sent = System.currentTimeMillis();
            SendResult r = p.send(m);
            if (r.getSendStatus() != SendStatus.SEND_OK) {
                out.fail("send: " + r.getSendStatus());
            }
            if (!await(o.timeoutMs, () -> arrived.containsKey("delay-3"))) {
                out.fail("delay level 3 message not received within " + o.timeoutMs + " ms");
                return;
            }
        } finally {
            p.shutdown();
            c.shutdown();
        }
        long after = arrived.get("delay-3") - sent;
        out.figures.put("level3_ms", after);
        // When the broker stored the delivered copy (its clock is ours).
        out.figures.put("level3_stored_ms", stored.get("delay-3") - sent);
        if (after < 10_000) {
            out.fail("delay level 3 arrived " + after + " ms after the send, want >= 10000");
        }
        if (after > 20_000) {
            out.fail("delay level 3 arrived " + after + " ms after the send, more than 10 s late");
        }
    }

    // ------------------------------------------------------------ msgtype

    static void msgtype(Opts o, Outcome out) throws Exception {
        DefaultMQProducer p = producer(o, "_type_pg", "type-p");
        p.setRetryTimesWhenSendFailed(0);
        int refused = 0;
        try {
            // Right types are accepted.
            Message delayed = msg(o.prefix + "Delay", "type-delay-ok");
            delayed.setDelayTimeLevel(1);
            for (Message m : List.of(msg(o.prefix + "Normal", "type-normal-ok"), delayed)) {
                SendResult r = p.send(m);
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    out.fail(m.getTopic() + ": " + r.getSendStatus());
                }
            }
            // Wrong ones are refused with MESSAGE_ILLEGAL.
            Message wrongDelay = msg(o.prefix + "Normal", "type-delay-to-normal");
            wrongDelay.setDelayTimeLevel(1);
            Message wrongTimer = msg(o.prefix + "Normal", "type-timer-to-normal");
            wrongTimer.setDelayTimeMs(3000);
            for (Message m : List.of(msg(o.prefix + "Delay", "type-normal-to-delay"), wrongDelay, wrongTimer,
                msg(o.prefix + "Tx", "type-normal-to-tx"))) {
                try {
                    SendResult r = p.send(m);
                    out.fail(new String(m.getBody(), StandardCharsets.UTF_8) + " accepted: " + r.getSendStatus());
                } catch (Exception e) {
                    if (expectIllegal(out, new String(m.getBody(), StandardCharsets.UTF_8), e)) {
                        refused++;
                    }
                }
            }
        } finally {
            p.shutdown();
        }
        // A transaction's half message to a NORMAL topic.
        TransactionMQProducer tp = new TransactionMQProducer(o.prefix + "_type_tx_pg");
        configure(tp, o, "type-tx-p");
        tp.setRetryTimesWhenSendFailed(0);
        tp.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message m, Object arg) {
                out.fail("local transaction ran for a refused half message");
                return LocalTransactionState.ROLLBACK_MESSAGE;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt m) {
                return LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        tp.start();
        try {
            TransactionSendResult r = tp.sendMessageInTransaction(msg(o.prefix + "Normal", "type-tx-to-normal"), null);
            out.fail("half message to a NORMAL topic accepted: " + r.getSendStatus() + " " + r.getLocalTransactionState());
        } catch (Exception e) {
            if (expectIllegal(out, "type-tx-to-normal", e)) {
                refused++;
            }
        } finally {
            tp.shutdown();
        }
        out.figures.put("refused", refused);
    }

    // ------------------------------------------------------------ reset

    static void reset(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Reset";
        String group = o.prefix + "_reset_cg";
        int n = 20;
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consumer(o, "_reset_cg", "reset-c", "Reset");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                seen.computeIfAbsent(body(m), k -> new AtomicInteger()).incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long from = System.currentTimeMillis();
        DefaultMQProducer p = producer(o, "_reset_pg", "reset-p");
        try {
            for (int i = 0; i < n; i++) {
                p.send(msg(topic, "r-" + i));
            }
        } finally {
            p.shutdown();
        }
        try {
            if (!await(o.timeoutMs, () -> seen.size() == n)) {
                out.fail("first pass: " + seen.size() + " of " + n + " consumed");
                return;
            }
            DefaultMQAdminExt admin = new DefaultMQAdminExt();
            admin.setNamesrvAddr(o.namesrv);
            admin.setInstanceName(o.prefix + "-reset-admin");
            admin.start();
            Map<MessageQueue, Long> table;
            long t1 = System.nanoTime();
            try {
                table = admin.resetOffsetByTimestamp(topic, group, from, true);
            } finally {
                admin.shutdown();
            }
            for (Map.Entry<MessageQueue, Long> e : table.entrySet()) {
                if (e.getValue() != 0) {
                    out.fail("reset " + e.getKey() + " to " + e.getValue() + ", want 0");
                }
            }
            out.figures.put("queues_reset", table.size());
            if (!await(o.timeoutMs, () -> seen.values().stream().allMatch(a -> a.get() >= 2))) {
                int again = (int) seen.values().stream().filter(a -> a.get() >= 2).count();
                out.fail("after the reset: " + again + " of " + n + " consumed again within " + o.timeoutMs + " ms");
                return;
            }
            out.figures.put("reconsumed_ms", (System.nanoTime() - t1) / 1_000_000);
            Thread.sleep(1000); // and only once more
        } finally {
            c.shutdown();
        }
        for (Map.Entry<String, AtomicInteger> e : seen.entrySet()) {
            if (e.getValue().get() != 2) {
                out.fail(e.getKey() + " consumed " + e.getValue().get() + " times, want 2");
            }
        }
    }

    // ------------------------------------------------------------ recall

    static void recall(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Recall";
        Map<String, Long> arrived = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consumer(o, "_recall_cg", "recall-c", "Recall");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                arrived.putIfAbsent(body(m), System.currentTimeMillis());
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        DefaultMQProducer p = producer(o, "_recall_pg", "recall-p");
        long due = System.currentTimeMillis() + 4000;
        try {
            Map<String, SendResult> sent = new LinkedHashMap<>();
            for (String b : List.of("recalled", "kept")) {
                Message m = msg(topic, b);
                m.setDeliverTimeMs(due);
                sent.put(b, p.send(m));
            }
            String handle = sent.get("recalled").getRecallHandle();
            if (handle == null || handle.isEmpty()) {
                out.fail("no recall handle in the send result of a timer message");
                return;
            }
            String id = p.recallMessage(topic, handle);
            if (!sent.get("recalled").getMsgId().equals(id)) {
                out.fail("recallMessage answered msgId " + id + ", sent as " + sent.get("recalled").getMsgId());
            }
            // A handle for a time already past is refused by the broker
            // with ILLEGAL_OPERATION (604); a garbage one never leaves the
            // client.
            RecallMessageHandle.HandleV1 h = (RecallMessageHandle.HandleV1) RecallMessageHandle.decodeHandle(handle);
            try {
                p.recallMessage(topic, RecallMessageHandle.HandleV1.buildHandle(topic, h.getBrokerName(), "1", h.getMessageId()));
                out.fail("a recall handle for a past time was accepted");
            } catch (Exception e) {
                MQBrokerException be = brokerError(e);
                if (be == null || be.getResponseCode() != 604 || !String.valueOf(be.getErrorMessage()).contains("timestamp invalid")) {
                    out.fail("past recall handle: " + ClientCheck.describe(e) + ", want code 604 timestamp invalid");
                }
            }
            if (!await(o.timeoutMs, () -> arrived.containsKey("kept"))) {
                out.fail("the timer that was not recalled never came");
                return;
            }
            out.figures.put("kept_late_ms", arrived.get("kept") - due);
            Thread.sleep(Math.max(0, due + 2500 - System.currentTimeMillis()));
        } finally {
            p.shutdown();
            c.shutdown();
        }
        if (arrived.get("kept") < due) {
            out.fail("the timer came " + (due - arrived.get("kept")) + " ms early");
        }
        if (arrived.containsKey("recalled")) {
            out.fail("the recalled timer was delivered");
        }
    }

    // ------------------------------------------------------------ broadcast

    static void broadcast(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Broadcast";
        int n = 20;
        List<Map<String, AtomicInteger>> seen = new ArrayList<>();
        List<DefaultMQPushConsumer> cs = new ArrayList<>();
        DefaultMQProducer p = null;
        try {
            for (int i = 0; i < 2; i++) {
                Map<String, AtomicInteger> got = new ConcurrentHashMap<>();
                seen.add(got);
                DefaultMQPushConsumer c = consumer(o, "_bcast_cg", "bcast-c" + i, "Broadcast");
                broadcasting(c);
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        got.computeIfAbsent(body(m), k -> new AtomicInteger()).incrementAndGet();
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                c.start();
                cs.add(c);
            }
            p = producer(o, "_bcast_pg", "bcast-p");
            for (int i = 0; i < n; i++) {
                SendResult r = p.send(msg(topic, "b-" + i));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    out.fail("send b-" + i + ": " + r.getSendStatus());
                }
            }
            if (!await(o.timeoutMs, () -> seen.stream().allMatch(m -> m.size() == n))) {
                out.fail("after " + o.timeoutMs + " ms the consumers have " + seen.get(0).size() + " and "
                    + seen.get(1).size() + " of " + n);
                return;
            }
            Thread.sleep(1000); // no duplicates arrive late
        } finally {
            if (p != null) {
                p.shutdown();
            }
            for (DefaultMQPushConsumer c : cs) {
                c.shutdown();
            }
        }
        for (int i = 0; i < seen.size(); i++) {
            for (Map.Entry<String, AtomicInteger> e : seen.get(i).entrySet()) {
                if (e.getValue().get() != 1) {
                    out.fail("consumer " + i + " got " + e.getKey() + " " + e.getValue().get() + " times");
                }
            }
        }
        out.figures.put("each_consumed", n);
    }

    // ------------------------------------------------------------ litepull

    static DefaultLitePullConsumer litePull(Opts o, String group, String instance) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(o.prefix + group);
        c.setNamesrvAddr(o.namesrv);
        c.setInstanceName(o.prefix + "-" + instance);
        c.setVipChannelEnabled(false);
        c.setAutoCommit(false);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(1000);
        return c;
    }

    /**
     * Polls c until want distinct messages (by body) arrived or timeoutMs
     * passed; counts each body's deliveries.
     */
    static Map<String, Integer> pollBodies(DefaultLitePullConsumer c, int want, long timeoutMs, Map<String, String> ids, Outcome out) {
        Map<String, Integer> got = new HashMap<>();
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (got.size() < want && System.currentTimeMillis() < deadline) {
            for (MessageExt m : c.poll(200)) {
                got.merge(body(m), 1, Integer::sum);
                String id = ids.get(body(m));
                if (id != null && !id.equals(m.getMsgId())) {
                    out.fail(body(m) + " polled with msgId " + m.getMsgId() + ", sent as " + id);
                }
            }
        }
        return got;
    }

    /**
     * The lite pull consumer: in subscribe mode (queues rebalanced to it)
     * it polls every message once and commits; committed() reads the
     * broker's offsets back, and a new consumer of the group resumes after
     * them. In assign mode: seekToBegin, offsetForTimestamp and seek to the
     * second half, seekToEnd.
     */
    static void litepull(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "LitePull";
        int n = 40;
        Map<String, String> ids = new HashMap<>();
        long mid = 0;
        DefaultMQProducer p = producer(o, "_lpull_pg", "lpull-p");
        try {
            for (int i = 0; i < n + 4; i++) {
                if (i == n / 2) {
                    // Store times of the two halves are apart from mid.
                    Thread.sleep(300);
                    mid = System.currentTimeMillis();
                    Thread.sleep(300);
                }
                if (i == n) {
                    break; // the last four are sent later
                }
                SendResult r = p.send(msg(topic, "lp-" + i));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    out.fail("send lp-" + i + ": " + r.getSendStatus());
                }
                ids.put("lp-" + i, r.getMsgId());
            }

            // Subscribe mode.
            DefaultLitePullConsumer c = litePull(o, "_lpull_cg", "lpull-c1");
            c.subscribe(topic, "*");
            c.start();
            Map<String, Integer> got;
            Map<MessageQueue, Long> committed = new HashMap<>();
            try {
                got = pollBodies(c, n, o.timeoutMs, ids, out);
                c.commitSync();
                for (MessageQueue mq : c.fetchMessageQueues(topic)) {
                    Long off = c.committed(mq);
                    committed.put(mq, off == null ? -1L : off);
                }
            } finally {
                c.shutdown();
            }
            if (got.size() != n || got.values().stream().anyMatch(v -> v != 1)) {
                out.fail("subscribe mode polled " + got.size() + " distinct of " + n + ": " + got);
            }
            long sum = committed.values().stream().mapToLong(Long::longValue).sum();
            if (sum != n) {
                out.fail("committed offsets " + committed + " add up to " + sum + ", want " + n);
            }
            out.figures.put("committed", sum);

            // A new consumer of the group resumes after the committed
            // offsets: only the messages sent now.
            DefaultLitePullConsumer c2 = litePull(o, "_lpull_cg", "lpull-c2");
            c2.subscribe(topic, "*");
            c2.start();
            try {
                Thread.sleep(1000); // its first rebalance
                for (int i = n; i < n + 4; i++) {
                    SendResult r = p.send(msg(topic, "lp-" + i));
                    ids.put("lp-" + i, r.getMsgId());
                }
                got = pollBodies(c2, 4, o.timeoutMs, ids, out);
                Thread.sleep(500);
                for (MessageExt m : c2.poll(500)) {
                    got.merge(body(m), 1, Integer::sum);
                }
            } finally {
                c2.shutdown();
            }
            Set<String> want = new HashSet<>();
            for (int i = n; i < n + 4; i++) {
                want.add("lp-" + i);
            }
            if (!got.keySet().equals(want) || got.values().stream().anyMatch(v -> v != 1)) {
                out.fail("a new consumer of the group polled " + got + ", want each of " + want + " once");
            }
        } finally {
            p.shutdown();
        }

        // Assign mode.
        DefaultLitePullConsumer a = litePull(o, "_lpull_assign", "lpull-a");
        a.start();
        try {
            Collection<MessageQueue> mqs = a.fetchMessageQueues(topic);
            a.assign(mqs);
            // A new group starts at the queues' beginning. The seeks come
            // only once the queues are drained: a seek made while a pull
            // task is between runs can be taken by the task it cancels
            // (DefaultLitePullConsumerImpl: the cancelled task's
            // nextPullOffset clears the seek offset), a race of the client
            // whatever the broker; a drained queue's task waits in a held
            // pull instead.
            Map<String, Integer> got = pollBodies(a, n + 4, o.timeoutMs, ids, out);
            if (got.size() != n + 4) {
                out.fail("assign mode polled " + got.size() + " distinct of " + (n + 4));
            }
            Thread.sleep(500); // every task in its held pull
            for (MessageQueue mq : mqs) {
                a.seekToBegin(mq);
            }
            got = pollBodies(a, n + 4, o.timeoutMs, ids, out);
            if (got.size() != n + 4) {
                out.fail("after seekToBegin polled " + got.size() + " distinct of " + (n + 4));
            }
            Thread.sleep(500);
            for (MessageQueue mq : mqs) {
                long off = a.offsetForTimestamp(mq, mid);
                a.seek(mq, off);
            }
            got = pollBodies(a, n / 2 + 4, o.timeoutMs, ids, out);
            for (int i = 0; i < n + 4; i++) {
                boolean second = i >= n / 2;
                if (second != got.containsKey("lp-" + i)) {
                    out.fail("after seeking to offsetForTimestamp: lp-" + i + (second ? " missing" : " polled") + " (" + got.keySet() + ")");
                    break;
                }
            }
            out.figures.put("after_timestamp", got.size());
            Thread.sleep(500);
            for (MessageQueue mq : mqs) {
                a.seekToEnd(mq);
            }
            List<MessageExt> rest = a.poll(1000);
            if (!rest.isEmpty()) {
                out.fail("after seekToEnd polled " + rest.size() + " messages");
            }
        } finally {
            a.shutdown();
        }
    }

    // ------------------------------------------------------------ pull

    static DefaultMQPullConsumer pullConsumer(Opts o, String instance, String topic) throws Exception {
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(o.prefix + "_pull_cg");
        c.setNamesrvAddr(o.namesrv);
        c.setInstanceName(o.prefix + "-" + instance);
        c.setVipChannelEnabled(false);
        c.setRegisterTopics(new HashSet<>(List.of(topic)));
        c.start();
        return c;
    }

    /**
     * The 4.x pull consumer (DefaultMQPullConsumer, deprecated in 5.x but
     * still common): min and max offsets, pulls from each queue's start to
     * its end, viewMessage by id, searchOffset, a pull at the end of a queue
     * held until a message arrives (pullBlockIfNotFound), and offsets
     * persisted to the broker and read back by another instance.
     */
    static void pull(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Pull";
        int n = 20;
        Map<String, String> ids = new HashMap<>();
        DefaultMQProducer p = producer(o, "_pull_pg", "pull-p");
        DefaultMQPullConsumer c = pullConsumer(o, "pull-c1", topic);
        Map<MessageQueue, Long> ends = new HashMap<>();
        try {
            long before = System.currentTimeMillis();
            for (int i = 0; i < n; i++) {
                SendResult r = p.send(msg(topic, "pl-" + i));
                ids.put("pl-" + i, r.getMsgId());
            }
            Set<MessageQueue> mqs = c.fetchSubscribeMessageQueues(topic);
            // The client's first rebalance (its RebalanceService thread)
            // drops the local offset of every queue it takes
            // (RebalanceImpl.removeDirtyOffset): offsets updated before it
            // ran would never be persisted. Wait until it holds them all.
            long deadline = System.currentTimeMillis() + 20_000;
            while (!c.fetchMessageQueuesInBalance(topic).containsAll(mqs)) {
                if (System.currentTimeMillis() > deadline) {
                    out.fail("the pull consumer's rebalance took " + c.fetchMessageQueuesInBalance(topic) + " of " + mqs + " in 20 s");
                    break;
                }
                Thread.sleep(50);
            }
            Map<String, Integer> got = new HashMap<>();
            long total = 0;
            for (MessageQueue mq : mqs) {
                long min = c.minOffset(mq);
                long max = c.maxOffset(mq);
                total += max - min;
                if (c.searchOffset(mq, before - 60_000) != min) {
                    out.fail(mq + ": searchOffset before the first message = " + c.searchOffset(mq, before - 60_000) + ", want " + min);
                }
                long off = min;
                while (off < max) {
                    PullResult r = c.pull(mq, "*", off, 32);
                    if (r.getPullStatus() != PullStatus.FOUND) {
                        out.fail(mq + " at " + off + " (max " + max + "): " + r.getPullStatus());
                        break;
                    }
                    for (MessageExt m : r.getMsgFoundList()) {
                        got.merge(body(m), 1, Integer::sum);
                        if (!m.getMsgId().equals(ids.get(body(m)))) {
                            out.fail(body(m) + " pulled with msgId " + m.getMsgId() + ", sent as " + ids.get(body(m)));
                        }
                    }
                    off = r.getNextBeginOffset();
                }
                PullResult end = c.pull(mq, "*", off, 32);
                if (end.getPullStatus() != PullStatus.NO_NEW_MSG) {
                    out.fail(mq + " at its end " + off + ": " + end.getPullStatus() + ", want NO_NEW_MSG");
                }
                c.updateConsumeOffset(mq, off);
                ends.put(mq, off);
            }
            if (total != n || got.size() != n || got.values().stream().anyMatch(v -> v != 1)) {
                out.fail("queues hold " + total + " messages, pulled " + got.size() + " distinct of " + n + ": " + got);
            }
            MessageExt v = c.viewMessage(topic, ids.get("pl-3"));
            if (!"pl-3".equals(body(v))) {
                out.fail("viewMessage of pl-3's id gave " + body(v));
            }
            c.getOffsetStore().persistAll(mqs);

            // A pull at the end of a queue is held until a message arrives.
            MessageQueue q0 = mqs.iterator().next();
            Thread late = new Thread(() -> {
                try {
                    Thread.sleep(1000);
                    p.send(msg(topic, "pl-late"), (list, m, arg) -> {
                        for (MessageQueue q : list) {
                            if (q.getBrokerName().equals(q0.getBrokerName()) && q.getQueueId() == q0.getQueueId()) {
                                return q;
                            }
                        }
                        return list.get(0);
                    }, null);
                } catch (Exception e) {
                    out.fail("late send: " + ClientCheck.describe(e));
                }
            });
            late.start();
            long t0 = System.currentTimeMillis();
            PullResult held = c.pullBlockIfNotFound(q0, "*", ends.get(q0), 32);
            long waited = System.currentTimeMillis() - t0;
            late.join();
            if (held.getPullStatus() != PullStatus.FOUND || !"pl-late".equals(body(held.getMsgFoundList().get(0)))) {
                out.fail("held pull: " + held.getPullStatus() + " " + held.getMsgFoundList());
            } else if (waited < 700) {
                out.fail("held pull answered after " + waited + " ms, before the message was sent");
            }
            out.figures.put("held_ms", waited);
        } finally {
            p.shutdown();
            c.shutdown();
        }
        // Another instance of the group reads the persisted offsets.
        DefaultMQPullConsumer c2 = pullConsumer(o, "pull-c2", topic);
        try {
            for (Map.Entry<MessageQueue, Long> e : ends.entrySet()) {
                long off = c2.fetchConsumeOffset(e.getKey(), true);
                if (off != e.getValue()) {
                    out.fail(e.getKey() + ": offset read back " + off + ", persisted " + e.getValue());
                }
            }
        } finally {
            c2.shutdown();
        }
    }

    // ------------------------------------------------------------ adminapi

    /**
     * The admin calls every Java producer and consumer has (MQAdmin,
     * deprecated in 5.x, still used by applications): createTopic through
     * the key topic TBW102, fetchPublishMessageQueues, min/max offsets,
     * earliestMsgStoreTime, searchOffset, viewMessage by id, queryMessage
     * by key.
     */
    static void adminapi(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "AdminApi";
        int n = 8;
        DefaultMQProducer p = producer(o, "_adminapi_pg", "adminapi-p");
        try {
            // createTopic's signature changed in 5.0 (attributes added).
            try {
                p.getClass().getMethod("createTopic", String.class, String.class, int.class, Map.class)
                    .invoke(p, "TBW102", topic, 4, new HashMap<String, String>());
            } catch (NoSuchMethodException e) {
                p.getClass().getMethod("createTopic", String.class, String.class, int.class).invoke(p, "TBW102", topic, 4);
            }
            List<MessageQueue> mqs = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 20_000;
            while (mqs.size() != 4 && System.currentTimeMillis() < deadline) {
                try {
                    mqs = p.fetchPublishMessageQueues(topic);
                } catch (Exception e) {
                    Thread.sleep(200);
                }
            }
            if (mqs.size() != 4) {
                out.fail("createTopic: " + mqs.size() + " publish queues after 20 s, want 4");
                return;
            }
            long before = System.currentTimeMillis();
            Map<String, String> ids = new HashMap<>();
            for (int i = 0; i < n; i++) {
                SendResult r = p.send(msg(topic, "ak-" + i));
                ids.put("ak-" + i, r.getMsgId());
            }
            long after = System.currentTimeMillis();
            long total = 0;
            for (MessageQueue mq : mqs) {
                long min = p.minOffset(mq);
                long max = p.maxOffset(mq);
                total += max - min;
                if (max > min) {
                    long t = p.earliestMsgStoreTime(mq);
                    if (t < before - 1000 || t > after + 1000) {
                        out.fail(mq + ": earliestMsgStoreTime " + t + " outside the sends' [" + before + ", " + after + "]");
                    }
                }
                if (p.searchOffset(mq, before - 60_000) != min) {
                    out.fail(mq + ": searchOffset before the sends = " + p.searchOffset(mq, before - 60_000) + ", want " + min);
                }
            }
            if (total != n) {
                out.fail("queues hold " + total + " messages, want " + n);
            }
            MessageExt v = p.viewMessage(topic, ids.get("ak-3"));
            if (!"ak-3".equals(body(v)) || !topic.equals(v.getTopic())) {
                out.fail("viewMessage of ak-3's id: " + v);
            }
            // The key index is written after the send returns.
            List<String> found = new ArrayList<>();
            deadline = System.currentTimeMillis() + 10_000;
            while (found.isEmpty() && System.currentTimeMillis() < deadline) {
                try {
                    for (MessageExt m : p.queryMessage(topic, "ak-5", 32, before - 60_000, after + 60_000).getMessageList()) {
                        found.add(body(m));
                    }
                } catch (Exception e) {
                    Thread.sleep(200);
                }
            }
            if (!found.equals(List.of("ak-5"))) {
                out.fail("queryMessage by key ak-5 found " + found);
            }
        } finally {
            p.shutdown();
        }
    }

    // ------------------------------------------------------------ tag

    static void tag(Opts o, Outcome out) throws Exception {
        String topic = o.prefix + "Tag";
        // "Aa" and "BB" share a String.hashCode: the broker's consume queue
        // holds only that code, so it lets BB through to an "Aa"
        // subscription and the client drops it by the tag string.
        if ("Aa".hashCode() != "BB".hashCode()) {
            throw new IllegalStateException("Aa and BB no longer collide");
        }
        String[] tags = {"TagA", "TagB", "TagC", "Aa", "BB", null};
        int per = 3;
        Map<String, Set<String>> want = new HashMap<>();
        want.put("TagA || TagB", new LinkedHashSet<>());
        want.put("Aa", new LinkedHashSet<>());
        Set<String> sentHashAa = new LinkedHashSet<>(); // bodies whose tag hash is Aa's
        Set<String> sentAB = new LinkedHashSet<>();
        List<Map<String, String>> got = new ArrayList<>(); // body -> tag
        List<DefaultMQPushConsumer> cs = new ArrayList<>();
        DefaultMQProducer p = null;
        String[] exprs = {"TagA || TagB", "Aa"};
        try {
            for (int i = 0; i < exprs.length; i++) {
                Map<String, String> g = new ConcurrentHashMap<>();
                got.add(g);
                DefaultMQPushConsumer c = consumer(o, "_tag" + i + "_cg", "tag-c" + i, "Tag");
                c.subscribe(topic, exprs[i]);
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    for (MessageExt m : msgs) {
                        g.put(body(m), String.valueOf(m.getTags()));
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                c.start();
                cs.add(c);
            }
            p = producer(o, "_tag_pg", "tag-p");
            // All to queue 0: one raw pull of that queue sees them all.
            for (int i = 0; i < per; i++) {
                for (String tg : tags) {
                    String b = "tag-" + tg + "-" + i;
                    // No tag at all for null (the constructor leaves TAGS unset).
                    Message m = tg == null ? new Message(topic, b.getBytes(StandardCharsets.UTF_8)) : msg(topic, b);
                    if (tg != null) {
                        m.setTags(tg);
                    }
                    SendResult r = p.send(m, (mqs, mm, arg) -> mqs.get(0), null);
                    if (r.getSendStatus() != SendStatus.SEND_OK) {
                        out.fail("send " + b + ": " + r.getSendStatus());
                    }
                    if ("TagA".equals(tg) || "TagB".equals(tg)) {
                        want.get("TagA || TagB").add(b);
                        sentAB.add(b);
                    }
                    if ("Aa".equals(tg)) {
                        want.get("Aa").add(b);
                    }
                    if ("Aa".equals(tg) || "BB".equals(tg)) {
                        sentHashAa.add(b);
                    }
                }
            }
            for (int i = 0; i < exprs.length; i++) {
                Map<String, String> g = got.get(i);
                Set<String> w = want.get(exprs[i]);
                if (!await(o.timeoutMs, () -> g.keySet().containsAll(w))) {
                    out.fail("\"" + exprs[i] + "\": got " + g.keySet() + " after " + o.timeoutMs + " ms, want " + w);
                }
            }
            Thread.sleep(1000); // nothing else arrives late

            // What the broker itself returns, before the client's re-check.
            MQClientInstance f = cs.get(0).getDefaultMQPushConsumerImpl().getmQClientFactory();
            String addr = f.findBrokerAddrByTopic(topic);
            if (addr == null) {
                out.fail("no broker address for " + topic);
                return;
            }
            Map<String, Set<String>> raw = new LinkedHashMap<>();
            raw.put("TagA || TagB", sentAB);
            raw.put("Aa", sentHashAa);
            for (Map.Entry<String, Set<String>> e : raw.entrySet()) {
                Set<String> bodies = rawPull(f, addr, o.prefix + "_tag_raw", topic, e.getKey());
                if (!bodies.equals(e.getValue())) {
                    out.fail("raw pull \"" + e.getKey() + "\": broker returned " + bodies + ", want " + e.getValue());
                }
            }
        } finally {
            if (p != null) {
                p.shutdown();
            }
            for (DefaultMQPushConsumer c : cs) {
                c.shutdown();
            }
        }
        for (int i = 0; i < exprs.length; i++) {
            Set<String> w = want.get(exprs[i]);
            for (Map.Entry<String, String> e : got.get(i).entrySet()) {
                if (!w.contains(e.getKey())) {
                    out.fail("\"" + exprs[i] + "\" consumer got " + e.getKey() + " (tag " + e.getValue() + ")");
                }
            }
        }
        out.figures.put("ab_consumed", got.get(0).size());
        out.figures.put("aa_consumed", got.get(1).size());
    }

    /**
     * Sets BROADCASTING by the setter's own parameter type: MessageModel
     * moved packages in 5.0 (org.apache.rocketmq.common.protocol.heartbeat
     * in 4.x), and these classes also run on the 4.9.8 client.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void broadcasting(DefaultMQPushConsumer c) throws Exception {
        for (java.lang.reflect.Method m : DefaultMQPushConsumer.class.getMethods()) {
            if (m.getName().equals("setMessageModel") && m.getParameterCount() == 1) {
                m.invoke(c, Enum.valueOf((Class) m.getParameterTypes()[0], "BROADCASTING"));
                return;
            }
        }
        throw new IllegalStateException("DefaultMQPushConsumer has no setMessageModel");
    }

    /** Bodies of queue 0 the broker returns for a tag expression (no client filter). */
    static Set<String> rawPull(MQClientInstance f, String addr, String group, String topic, String expr) throws Exception {
        Set<String> bodies = new LinkedHashSet<>();
        long offset = 0;
        for (int round = 0; round < 20; round++) {
            PullMessageRequestHeader h = new PullMessageRequestHeader();
            h.setConsumerGroup(group);
            h.setTopic(topic);
            h.setQueueId(0);
            h.setQueueOffset(offset);
            h.setMaxMsgNums(32);
            h.setSysFlag(PullSysFlag.buildSysFlag(false, false, true, false));
            h.setCommitOffset(0L);
            h.setSuspendTimeoutMillis(0L);
            h.setSubscription(expr);
            h.setSubVersion(System.currentTimeMillis());
            h.setExpressionType(ExpressionType.TAG);
            PullResult r = f.getMQClientAPIImpl().pullMessage(addr, h, 5000, CommunicationMode.SYNC, null);
            if (r.getPullStatus() == PullStatus.FOUND) {
                byte[] bin = ((PullResultExt) r).getMessageBinary();
                for (MessageExt m : MessageDecoder.decodes(ByteBuffer.wrap(bin))) {
                    bodies.add(body(m));
                }
            }
            if (r.getNextBeginOffset() <= offset || r.getNextBeginOffset() >= r.getMaxOffset()) {
                break;
            }
            offset = r.getNextBeginOffset();
        }
        return bodies;
    }

    static boolean expectIllegal(Outcome out, String what, Exception e) {
        MQBrokerException be = brokerError(e);
        if (be == null) {
            out.fail(what + ": " + ClientCheck.describe(e) + ", want a broker MESSAGE_ILLEGAL");
            return false;
        }
        if (be.getResponseCode() != 13) {
            out.fail(what + ": code " + be.getResponseCode() + " (" + be.getErrorMessage() + "), want 13 MESSAGE_ILLEGAL");
            return false;
        }
        String remark = String.valueOf(be.getErrorMessage());
        if (!remark.contains("message type")) {
            out.fail(what + ": remark '" + remark + "' does not name the message type");
            return false;
        }
        return true;
    }
}
