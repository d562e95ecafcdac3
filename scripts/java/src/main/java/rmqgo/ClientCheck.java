package rmqgo;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * Real-client check for any RocketMQ cluster, with the Java client
 * (rocketmq-client, DefaultMQProducer / DefaultMQPushConsumer).
 *
 * <pre>
 *   ClientCheck produce|consume|roundtrip -n 127.0.0.1:9876 [-t topic] [-count 1000] ...
 * </pre>
 *
 * The message format is shared with scripts/node/client-check.js and
 * tests/cmd/gocheck (docs/interop.md): each message of a run carries
 * the user properties check_run, check_seq, check_len, check_crc, check_tag,
 * check_client and check_utf8, keys "chk-RUN-SEQ seq-SEQ", the tag
 * tags[seq % tags.length] and a body the consumer regenerates from
 * (seq, length), so any client can verify what any other client produced.
 *
 * The last line on stdout is one JSON object (the result); the exit code is
 * 0 when the check passed, 1 when it failed, 2 on bad usage.
 */
public final class ClientCheck {

    static final String UTF8_VALUE = "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c";
    static final String DEFAULT_SIZES = "16,128,1000,4095,4096,4097,20000,65536";

    private ClientCheck() {
    }

    // ------------------------------------------------------------ options

    static final class Options {
        String mode;
        String namesrv = "127.0.0.1:9876";
        String topic = "RmqgoCheck";
        String group = "";
        String producerGroup = "rmqgo_check_producer_java";
        int count = 1000;
        int[] sizes;
        String[] tags = {"TagA", "TagB"};
        String expr = "*";
        String sendMode = "sync";
        String run = "";
        long timeoutMs = 120_000;
        long lingerMs = 1_000;
        int concurrency = 64;
        int batch = 32;
        int sendTimeoutMs = 10_000;
        int retries = 2;
        int consumeThreads = 4;
        boolean allowDups;
        boolean trace;
        String namespace = "";
        String accessKey = "";
        String secretKey = "";

        /** The ACL signer of -ak/-sk (AclClientRPCHook), null without. */
        RPCHook aclHook() {
            if (accessKey.isEmpty()) {
                return null;
            }
            return new AclClientRPCHook(new SessionCredentials(accessKey, secretKey));
        }
    }

    /** Takes one option of a check; false for a name it does not know. */
    interface Option {
        boolean set(String name, String value);
    }

    /**
     * Hands the "-name value" pairs of args from args[1] on to set, the name
     * without its leading "-" or "--". A missing value, a bad number or an
     * unknown name ends the program with usage.
     */
    static void parseOptions(String[] args, Option set) {
        for (int i = 1; i < args.length; i += 2) {
            String a = args[i];
            if (i + 1 >= args.length) {
                usage("missing value for " + a);
            }
            String v = args[i + 1];
            boolean known = false;
            try {
                known = set.set(a.replaceFirst("^--?", ""), v);
            } catch (NumberFormatException e) {
                usage("bad value for " + a + ": " + v);
            }
            if (!known) {
                usage("unknown option " + a);
            }
        }
    }

    /** Seconds, fractions allowed, as milliseconds. */
    /**
     * Shortens a push consumer's broker heartbeat interval. The rebalance
     * that bumps the subscription version sends its heartbeat only when no
     * other heartbeat holds the client's lock (at start the consumer's own
     * first heartbeat often does; apache/rocketmq#3434, #8970); brokers,
     * Apache's included, then answer SUBSCRIPTION_NOT_LATEST to its pulls
     * until the next periodic heartbeat, 30 s by default. A short interval
     * bounds that client-side stall.
     */
    static void shortHeartbeat(DefaultMQPushConsumer c) {
        c.setHeartbeatBrokerInterval(1_000);
    }

    /**
     * With -trace, lets the client's last trace records reach the broker
     * before the client shuts down. Java's AsyncTraceDispatcher.shutdown
     * flushes its queue into asynchronous sends of its trace producer and
     * shuts that producer down at once, so a send still waiting for the
     * producer's async executor is lost: a run lost the producer's Pub
     * record that way. A consumer's Sub records are queued by a hook that
     * runs after the listener returns, so after the last message was seen
     * too. The settle flushes the queue while everything still runs and
     * leaves the sends time to be written.
     */
    static void settleTrace(Options o, org.apache.rocketmq.client.trace.TraceDispatcher d) throws InterruptedException {
        if (!o.trace || d == null) {
            return;
        }
        Thread.sleep(500);
        if (d instanceof org.apache.rocketmq.client.trace.AsyncTraceDispatcher) {
            ((org.apache.rocketmq.client.trace.AsyncTraceDispatcher) d).flush();
        }
        Thread.sleep(1500);
    }

    static long secondsMs(String v) {
        return (long) (Double.parseDouble(v) * 1000);
    }

    static void usage(String err) {
        if (err != null) {
            System.err.println("client-check: " + err);
        }
        System.err.println(String.join("\n",
            "usage: ClientCheck produce|consume|roundtrip [options]",
            "       ClientCheck semantics -n ADDR [-prefix JSem] [-checks tx,orderly,reply,retry,delay,msgtype,reset,recall,broadcast,tag]",
            "                   [-timeout SEC] [-max-reconsume N]   (see SemanticsCheck.java)",
            "       ClientCheck failover -n ADDR -t TOPIC -g GROUP -run RUN [-send-secs S] [-interval MS] [-drain-secs D]",
            "                   (see FailoverCheck.java)",
            "       ClientCheck static-produce|static-consume -n ADDR -t TOPIC -run RUN ...   (see StaticCheck.java)",
            "  -n ADDR          nameserver address (default 127.0.0.1:9876)",
            "  -t TOPIC         topic (default RmqgoCheck)",
            "  -g GROUP         consumer group (default rmqgo_check_java_RUN)",
            "  -pg GROUP        producer group (default rmqgo_check_producer_java)",
            "  -count N         messages to send; distinct messages to expect (default 1000)",
            "  -size N          fixed body size (shortcut for -sizes N)",
            "  -sizes A,B,..    body sizes, cycled by sequence (default " + DEFAULT_SIZES + ")",
            "  -tags A,B        tags, cycled by sequence (default TagA,TagB)",
            "  -expr EXPR       consumer tag expression, e.g. '*' or 'TagA || TagB' (default *)",
            "  -send-mode M     sync | async | oneway | batch | autobatch (default sync;",
            "                   autobatch: async sends the 5.x producer gathers into batches)",
            "  -run ID          run id (default random; consume: only this run's messages count,",
            "                   empty = any run)",
            "  -timeout SEC     consume deadline in seconds (default 120)",
            "  -linger MS       keep consuming this long after the last expected message to",
            "                   catch duplicates (default 1000)",
            "  -concurrency N   async sends in flight (default 64)",
            "  -batch N         messages per batch in batch mode (default 32)",
            "  -send-timeout MS producer send timeout (default 10000)",
            "  -retries N       producer retries when a send fails (default 2)",
            "  -threads N       consumer threads (default 4)",
            "  -allow-dups      duplicates do not fail the check",
            "  -trace           enable the client's message trace (to RMQ_SYS_TRACE_TOPIC)",
            "  -namespace NS    the clients' namespace (setNamespace: topic NS%T, group NS%G)",
            "  -ak KEY -sk KEY  sign every request (AclClientRPCHook, ACL 2.0 users)"));
        System.exit(err == null ? 0 : 2);
    }

    static Options parse(String[] args) {
        Options o = new Options();
        String sizes = DEFAULT_SIZES;
        if (args.length == 0) {
            usage("missing mode");
        }
        o.mode = args[0];
        if (o.mode.equals("-h") || o.mode.equals("--help") || o.mode.equals("help")) {
            usage(null);
        }
        if (!o.mode.equals("produce") && !o.mode.equals("consume") && !o.mode.equals("roundtrip")) {
            usage("unknown mode " + o.mode);
        }
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("-")) {
                usage("unexpected argument " + a);
            }
            String name = a.replaceFirst("^--?", "");
            String val = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                val = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (name.equals("allow-dups")) {
                o.allowDups = val == null || Boolean.parseBoolean(val);
                continue;
            }
            if (name.equals("trace")) {
                o.trace = val == null || Boolean.parseBoolean(val);
                continue;
            }
            if (name.equals("h") || name.equals("help")) {
                usage(null);
            }
            if (val == null) {
                if (i + 1 >= args.length) {
                    usage("missing value for " + a);
                }
                val = args[++i];
            }
            try {
                switch (name) {
                    case "n": o.namesrv = val; break;
                    case "t": o.topic = val; break;
                    case "g": o.group = val; break;
                    case "pg": o.producerGroup = val; break;
                    case "count": o.count = Integer.parseInt(val); break;
                    case "size": sizes = val; break;
                    case "sizes": sizes = val; break;
                    case "tags": o.tags = val.split(","); break;
                    case "expr": o.expr = val; break;
                    case "send-mode": o.sendMode = val; break;
                    case "run": o.run = val; break;
                    case "timeout": o.timeoutMs = (long) (Double.parseDouble(val) * 1000); break;
                    case "linger": o.lingerMs = Long.parseLong(val); break;
                    case "concurrency": o.concurrency = Integer.parseInt(val); break;
                    case "batch": o.batch = Integer.parseInt(val); break;
                    case "send-timeout": o.sendTimeoutMs = Integer.parseInt(val); break;
                    case "retries": o.retries = Integer.parseInt(val); break;
                    case "threads": o.consumeThreads = Integer.parseInt(val); break;
                    case "namespace": o.namespace = val; break;
                    case "ak": o.accessKey = val; break;
                    case "sk": o.secretKey = val; break;
                    default: usage("unknown option " + a);
                }
            } catch (NumberFormatException e) {
                usage("bad value for " + a + ": " + val);
            }
        }
        String[] parts = sizes.split(",");
        o.sizes = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            o.sizes[i] = Integer.parseInt(parts[i].trim());
            if (o.sizes[i] < 0) {
                usage("negative size");
            }
        }
        if (!Arrays.asList("sync", "async", "oneway", "batch", "autobatch").contains(o.sendMode)) {
            usage("unknown send mode " + o.sendMode);
        }
        if (o.run.isEmpty() && !o.mode.equals("consume")) {
            o.run = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        }
        if (o.group.isEmpty()) {
            o.group = "rmqgo_check_java_" + (o.run.isEmpty() ? Long.toHexString(System.nanoTime()) : o.run);
        }
        if (o.count < 0 || o.concurrency < 1 || o.batch < 1 || o.consumeThreads < 1) {
            usage("count must be >= 0; concurrency, batch, threads >= 1");
        }
        return o;
    }

    // ------------------------------------------------------------ message format

    /** Body of message seq: length hex characters of an LCG stream seeded by seq. */
    static byte[] body(int seq, int length) {
        final byte[] hex = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
        byte[] b = new byte[length];
        int x = seq * 0x9E3779B1 + 0x7F4A7C15;
        for (int i = 0; i < length; i++) {
            x = x * 1664525 + 1013904223;
            b[i] = hex[x >>> 28];
        }
        return b;
    }

    static long crc(byte[] b) {
        CRC32 c = new CRC32();
        c.update(b);
        return c.getValue();
    }

    static String keys(String run, int seq) {
        return "chk-" + run + "-" + seq + " seq-" + seq;
    }

    static Message build(Options o, int seq) {
        int len = o.sizes[seq % o.sizes.length];
        byte[] b = body(seq, len);
        String tag = o.tags[seq % o.tags.length];
        Message m = new Message(o.topic, tag, b);
        m.setKeys(Arrays.asList("chk-" + o.run + "-" + seq, "seq-" + seq));
        m.putUserProperty("check_run", o.run);
        m.putUserProperty("check_seq", Integer.toString(seq));
        m.putUserProperty("check_len", Integer.toString(len));
        m.putUserProperty("check_crc", Long.toString(crc(b)));
        m.putUserProperty("check_tag", tag);
        m.putUserProperty("check_client", "java");
        m.putUserProperty("check_utf8", UTF8_VALUE);
        return m;
    }

    /** Whether tag matches a tag expression ("*", "" or "A || B"). */
    static boolean matches(String expr, String tag) {
        String e = expr == null ? "" : expr.trim();
        if (e.isEmpty() || e.equals("*")) {
            return true;
        }
        for (String t : e.split("\\|\\|")) {
            if (t.trim().equals(tag)) {
                return true;
            }
        }
        return false;
    }

    /** Verifies a received message; returns null when it is fine, else why not. */
    static String verify(Options o, MessageExt m) {
        String run = m.getUserProperty("check_run");
        int seq;
        int len;
        long sum;
        try {
            seq = Integer.parseInt(m.getUserProperty("check_seq"));
            len = Integer.parseInt(m.getUserProperty("check_len"));
            sum = Long.parseLong(m.getUserProperty("check_crc"));
        } catch (NumberFormatException | NullPointerException e) {
            return "bad check properties " + m.getProperties();
        }
        if (!o.topic.equals(m.getTopic())) {
            return "seq " + seq + ": topic " + m.getTopic();
        }
        byte[] b = m.getBody();
        if (b == null || b.length != len) {
            return "seq " + seq + ": body length " + (b == null ? -1 : b.length) + " != " + len;
        }
        if (crc(b) != sum) {
            return "seq " + seq + ": body crc " + crc(b) + " != " + sum;
        }
        if (!Arrays.equals(b, body(seq, len))) {
            return "seq " + seq + ": body differs from the generated one";
        }
        String tag = m.getUserProperty("check_tag");
        if (tag == null || !tag.equals(m.getTags())) {
            return "seq " + seq + ": tags " + m.getTags() + " != " + tag;
        }
        if (!matches(o.expr, tag)) {
            return "seq " + seq + ": tag " + tag + " does not match the subscription " + o.expr;
        }
        if (!keys(run, seq).equals(m.getKeys())) {
            return "seq " + seq + ": keys '" + m.getKeys() + "' != '" + keys(run, seq) + "'";
        }
        if (!UTF8_VALUE.equals(m.getUserProperty("check_utf8"))) {
            return "seq " + seq + ": check_utf8 '" + m.getUserProperty("check_utf8") + "'";
        }
        if (m.getUserProperty("check_client") == null) {
            return "seq " + seq + ": no check_client";
        }
        return null;
    }

    // ------------------------------------------------------------ result

    /** The body of a check. */
    interface Body {
        void run() throws Exception;
    }

    static final class Result {
        final Map<String, Object> f = new LinkedHashMap<>();
        final List<String> errors = new ArrayList<>();
        boolean ok = true;

        Result() {
        }

        /** A result that starts with the client, its version, mode and namesrv. */
        Result(String mode, String namesrv) {
            f.put("client", "java");
            f.put("client_version", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
            f.put("mode", mode);
            f.put("namesrv", namesrv);
        }

        synchronized void error(String e) {
            if (errors.size() < 10) {
                errors.add(e);
            }
        }

        synchronized void fail(String e) {
            ok = false;
            error(e);
        }

        /**
         * Runs a check, recording what it throws as the failure, and prints
         * the result; returns the exit code.
         */
        int run(Body body) {
            long t0 = System.nanoTime();
            try {
                body.run();
            } catch (Throwable t) {
                fail(describe(t));
            }
            return print(t0);
        }

        /**
         * Prints the result, with total_ms since t0, as the last stdout
         * line; returns the exit code (0 passed, 1 failed).
         */
        int print(long t0) {
            f.put("total_ms", (System.nanoTime() - t0) / 1_000_000);
            System.out.println(json());
            System.out.flush();
            return ok ? 0 : 1;
        }

        String json() {
            StringBuilder sb = new StringBuilder("{");
            f.put("ok", ok);
            f.put("errors", errors);
            boolean first = true;
            for (Map.Entry<String, Object> e : f.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                sb.append(quote(e.getKey())).append(':').append(value(e.getValue()));
            }
            return sb.append('}').toString();
        }

        static String value(Object v) {
            if (v == null) {
                return "null";
            }
            if (v instanceof Number || v instanceof Boolean) {
                return v.toString();
            }
            if (v instanceof List) {
                StringBuilder sb = new StringBuilder("[");
                for (Object x : (List<?>) v) {
                    if (sb.length() > 1) {
                        sb.append(',');
                    }
                    sb.append(value(x));
                }
                return sb.append(']').toString();
            }
            return quote(v.toString());
        }

        static String quote(String s) {
            StringBuilder sb = new StringBuilder("\"");
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                }
            }
            return sb.append('"').toString();
        }
    }

    static String describe(Throwable t) {
        String s = t.getClass().getSimpleName() + ": " + t.getMessage();
        return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }

    // ------------------------------------------------------------ produce

    static void produce(Options o, Result r) throws Exception {
        // -trace: the client's message trace (AsyncTraceDispatcher) to the
        // default trace topic RMQ_SYS_TRACE_TOPIC.
        DefaultMQProducer p = new DefaultMQProducer(o.producerGroup, o.aclHook(), o.trace, null);
        p.setNamesrvAddr(o.namesrv);
        if (!o.namespace.isEmpty()) {
            p.setNamespace(o.namespace);
        }
        p.setInstanceName("rmqgo-check-p-" + o.run);
        p.setSendMsgTimeout(o.sendTimeoutMs);
        p.setRetryTimesWhenSendFailed(o.retries);
        p.setRetryTimesWhenSendAsyncFailed(o.retries);
        p.setVipChannelEnabled(false);
        if (o.sendMode.equals("autobatch")) {
            // 5.x only (ProduceAccumulator); called by name so that the
            // check still compiles against the 4.x client.
            try {
                p.getClass().getMethod("setAutoBatch", boolean.class).invoke(p, true);
            } catch (NoSuchMethodException e) {
                throw new IllegalStateException("this client has no auto batch (5.x feature)");
            }
        }
        p.start();
        AtomicLong sent = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        long t0 = System.nanoTime();
        try {
            switch (o.sendMode) {
                case "sync":
                    for (int seq = 0; seq < o.count; seq++) {
                        try {
                            SendResult res = p.send(build(o, seq));
                            if (res.getSendStatus() == SendStatus.SEND_OK) {
                                sent.incrementAndGet();
                            } else {
                                failed.incrementAndGet();
                                r.error("seq " + seq + ": status " + res.getSendStatus());
                            }
                        } catch (Exception e) {
                            failed.incrementAndGet();
                            r.error("seq " + seq + ": " + describe(e));
                        }
                    }
                    break;
                case "oneway":
                    for (int seq = 0; seq < o.count; seq++) {
                        try {
                            p.sendOneway(build(o, seq));
                            sent.incrementAndGet();
                        } catch (Exception e) {
                            failed.incrementAndGet();
                            r.error("seq " + seq + ": " + describe(e));
                        }
                    }
                    break;
                case "batch":
                    for (int from = 0; from < o.count; from += o.batch) {
                        int to = Math.min(o.count, from + o.batch);
                        List<Message> msgs = new ArrayList<>();
                        for (int seq = from; seq < to; seq++) {
                            msgs.add(build(o, seq));
                        }
                        try {
                            SendResult res = p.send(msgs);
                            if (res.getSendStatus() == SendStatus.SEND_OK) {
                                sent.addAndGet(to - from);
                            } else {
                                failed.addAndGet(to - from);
                                r.error("batch " + from + ".." + (to - 1) + ": status " + res.getSendStatus());
                            }
                        } catch (Exception e) {
                            failed.addAndGet(to - from);
                            r.error("batch " + from + ".." + (to - 1) + ": " + describe(e));
                        }
                    }
                    break;
                default: { // async
                    Semaphore inflight = new Semaphore(o.concurrency);
                    CountDownLatch done = new CountDownLatch(o.count);
                    for (int seq = 0; seq < o.count; seq++) {
                        inflight.acquire();
                        final int s = seq;
                        try {
                            p.send(build(o, seq), new SendCallback() {
                                @Override
                                public void onSuccess(SendResult res) {
                                    if (res.getSendStatus() == SendStatus.SEND_OK) {
                                        sent.incrementAndGet();
                                    } else {
                                        failed.incrementAndGet();
                                        r.error("seq " + s + ": status " + res.getSendStatus());
                                    }
                                    inflight.release();
                                    done.countDown();
                                }

                                @Override
                                public void onException(Throwable e) {
                                    failed.incrementAndGet();
                                    r.error("seq " + s + ": " + describe(e));
                                    inflight.release();
                                    done.countDown();
                                }
                            });
                        } catch (Exception e) {
                            failed.incrementAndGet();
                            r.error("seq " + s + ": " + describe(e));
                            inflight.release();
                            done.countDown();
                        }
                    }
                    if (!done.await(o.sendTimeoutMs * (long) (o.retries + 2) + 30_000, TimeUnit.MILLISECONDS)) {
                        r.fail("async sends did not all complete: " + done.getCount() + " outstanding");
                    }
                }
            }
        } finally {
            long ms = (System.nanoTime() - t0) / 1_000_000;
            settleTrace(o, p.getTraceDispatcher());
            p.shutdown();
            r.f.put("send_mode", o.sendMode);
            r.f.put("sent", sent.get());
            r.f.put("failed", failed.get());
            r.f.put("send_ms", ms);
            r.f.put("send_per_sec", ms > 0 ? Math.round(sent.get() * 1000.0 / ms) : sent.get());
        }
        if (failed.get() > 0 || sent.get() != o.count) {
            r.fail("produce: sent " + sent.get() + " of " + o.count + ", failed " + failed.get());
        }
    }

    // ------------------------------------------------------------ consume

    static void consume(Options o, Result r, int expected) throws Exception {
        Set<String> distinct = ConcurrentHashMap.newKeySet();
        Set<String> bad = ConcurrentHashMap.newKeySet();
        AtomicLong received = new AtomicLong();
        AtomicLong duplicates = new AtomicLong();
        AtomicLong mismatched = new AtomicLong();
        AtomicLong foreign = new AtomicLong();
        AtomicReference<CountDownLatch> all = new AtomicReference<>(new CountDownLatch(1));
        Set<String> seenMsgIds = new HashSet<>();

        DefaultMQPushConsumer c = new DefaultMQPushConsumer(o.group, o.aclHook(), new AllocateMessageQueueAveragely(), o.trace, null);
        c.setNamesrvAddr(o.namesrv);
        if (!o.namespace.isEmpty()) {
            c.setNamespace(o.namespace);
        }
        c.setInstanceName("rmqgo-check-c-" + (o.run.isEmpty() ? "any" : o.run));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setConsumeThreadMin(o.consumeThreads);
        c.setConsumeThreadMax(o.consumeThreads);
        c.setVipChannelEnabled(false);
        shortHeartbeat(c);
        c.subscribe(o.topic, o.expr);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                received.incrementAndGet();
                String run = m.getUserProperty("check_run");
                if (run == null || (!o.run.isEmpty() && !o.run.equals(run))) {
                    foreign.incrementAndGet();
                    continue;
                }
                String key = run + "/" + m.getUserProperty("check_seq");
                String why = verify(o, m);
                if (why != null) {
                    mismatched.incrementAndGet();
                    r.error(why);
                    // A mismatch fails the check; waiting longer for a good
                    // copy does not help.
                    if (bad.add(key) && distinct.size() + bad.size() >= expected) {
                        all.get().countDown();
                    }
                    continue;
                }
                if (!distinct.add(key)) {
                    duplicates.incrementAndGet();
                    synchronized (seenMsgIds) {
                        if (seenMsgIds.add(key)) {
                            r.error("duplicate " + key + " (msgId " + m.getMsgId() + ", reconsumeTimes "
                                + m.getReconsumeTimes() + ")");
                        }
                    }
                } else if (distinct.size() + bad.size() >= expected) {
                    all.get().countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long t0 = System.nanoTime();
        c.start();
        long ms;
        try {
            if (expected > 0) {
                all.get().await(o.timeoutMs, TimeUnit.MILLISECONDS);
            }
            ms = (System.nanoTime() - t0) / 1_000_000;
            if (o.lingerMs > 0) {
                Thread.sleep(o.lingerMs);
            }
            settleTrace(o, c.getTraceDispatcher());
        } finally {
            c.shutdown();
        }
        r.f.put("expected", expected);
        r.f.put("received", received.get());
        r.f.put("distinct", distinct.size());
        r.f.put("duplicates", duplicates.get());
        r.f.put("mismatched", mismatched.get());
        r.f.put("foreign", foreign.get());
        r.f.put("consume_ms", ms);
        r.f.put("consume_per_sec", ms > 0 ? Math.round(distinct.size() * 1000.0 / ms) : distinct.size());
        if (distinct.size() < expected) {
            r.fail("consume: got " + distinct.size() + " of " + expected + " distinct messages within "
                + o.timeoutMs / 1000.0 + "s");
        }
        if (mismatched.get() > 0) {
            r.fail("consume: " + mismatched.get() + " messages failed verification");
        }
        if (duplicates.get() > 0 && !o.allowDups) {
            r.fail("consume: " + duplicates.get() + " duplicates");
        }
    }

    static int expectedFor(Options o) {
        int n = 0;
        for (int seq = 0; seq < o.count; seq++) {
            if (matches(o.expr, o.tags[seq % o.tags.length])) {
                n++;
            }
        }
        return n;
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("semantics")) {
            // Transactions, orderly, request/reply, retry, delay,
            // message-type, offset-reset and recall checks (SemanticsCheck).
            int rc = SemanticsCheck.run(args);
            Runtime.getRuntime().halt(rc);
        }
        if (args.length > 0 && args[0].equals("pop")) {
            // POP consumption with DefaultMQPushConsumer (PopCheck).
            Runtime.getRuntime().halt(PopCheck.run(args));
        }
        if (args.length > 0 && args[0].equals("failover")) {
            // Produce and consume across a master failover (FailoverCheck).
            Runtime.getRuntime().halt(FailoverCheck.run(args));
        }
        if (args.length > 0 && args[0].startsWith("static-")) {
            // Static topics (logic queues) across remaps (StaticCheck).
            Runtime.getRuntime().halt(StaticCheck.run(args));
        }
        Options o = parse(args);
        Result r = new Result();
        r.f.put("client", "java");
        r.f.put("client_version", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION));
        r.f.put("client_version_code", MQVersion.CURRENT_VERSION);
        r.f.put("mode", o.mode);
        r.f.put("namesrv", o.namesrv);
        r.f.put("topic", o.topic);
        r.f.put("group", o.group);
        r.f.put("run", o.run);
        int code = r.run(() -> {
            if (!o.mode.equals("consume")) {
                produce(o, r);
            }
            if (!o.mode.equals("produce")) {
                int expected = o.mode.equals("roundtrip") ? expectedFor(o) : o.count;
                if (r.ok || !o.mode.equals("roundtrip")) {
                    consume(o, r, expected);
                }
            }
        });
        // The client's non-daemon threads may linger after shutdown().
        Runtime.getRuntime().halt(code);
    }
}
