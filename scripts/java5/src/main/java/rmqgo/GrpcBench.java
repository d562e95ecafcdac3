package rmqgo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
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
 * Load generator of make bench-grpc (scripts/bench/grpc.sh) on the
 * RocketMQ 5.x Java client (gRPC). Two modes; the last stdout line is one
 * JSON object (exit 1 with {"ok":false,"error":...} when the client fails).
 *
 * send &lt;endpoint&gt; &lt;topic&gt; &lt;producers&gt; &lt;threads&gt;
 * &lt;seconds&gt; &lt;warmup s&gt; &lt;size&gt; [&lt;broker pid&gt;]: &lt;threads&gt; threads share
 * &lt;producers&gt; Producers round robin, each sending &lt;size&gt;-byte NORMAL
 * messages synchronously, one after the other, for &lt;warmup s&gt; (not
 * counted) and then &lt;seconds&gt;. Every send of the measured window is
 * timed (start to receipt). Prints {"ok":true,"mode":"send","messages":
 * (measured sends that succeeded), "sent":(all that succeeded, warm-up
 * included: what is in the topic),"errors","seconds","tps","latencyMs":
 * {"p50","p90","p99","p999","max","mean"}}.
 *
 * recv &lt;endpoint&gt; &lt;topic&gt; &lt;group&gt; &lt;consumers&gt;
 * &lt;threads&gt; &lt;count&gt; &lt;timeout s&gt; [&lt;broker pid&gt;]: &lt;threads&gt; threads share
 * &lt;consumers&gt; SimpleConsumers of the group round robin, each receiving
 * batches of up to 32 (invisible 30 s, long polling 5 s) and acking every
 * message of a batch (asynchronously, then waiting for all of them) before
 * the next receive, until &lt;count&gt; messages are acked or &lt;timeout s&gt;
 * passed. Prints {"ok":true,"mode":"recv","messages":(acked),"received",
 * "ackErrors","seconds":(first receive call to the ack that reached
 * count),"tps","complete":(count reached)}.
 *
 * With a broker pid (a local process), both also print "brokerCpuTicks":
 * the user + system clock ticks (/proc/&lt;pid&gt;/stat utime + stime) the
 * broker process used in the measured window (send: from the end of the
 * warm-up to the end; recv: from the first receive to the ack that reached
 * count), for the broker CPU per message.
 */
public final class GrpcBench {
    private static final int BATCH = 32;

    public static void main(String[] args) {
        try {
            String out;
            long pid = args.length == 9 ? Long.parseLong(args[8]) : 0;
            if ((args.length == 8 || args.length == 9) && args[0].equals("send")) {
                out = send(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]), Integer.parseInt(args[6]), Integer.parseInt(args[7]), pid);
            } else if ((args.length == 8 || args.length == 9) && args[0].equals("recv")) {
                out = recv(args[1], args[2], args[3], Integer.parseInt(args[4]), Integer.parseInt(args[5]),
                    Long.parseLong(args[6]), Integer.parseInt(args[7]), pid);
            } else {
                System.err.println("usage: GrpcBench send <endpoint> <topic> <producers> <threads> <seconds> <warmup s> <size> [<broker pid>]\n"
                    + "       GrpcBench recv <endpoint> <topic> <group> <consumers> <threads> <count> <timeout s> [<broker pid>]");
                System.exit(2);
                return;
            }
            System.out.println(out);
            System.exit(0);
        } catch (Throwable e) {
            System.out.println("{\"ok\":false,\"error\":\"" + String.valueOf(e).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"}");
            System.exit(1);
        }
    }

    static ClientConfiguration config(String endpoint) {
        return ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
    }

    static String send(String endpoint, String topic, int producers, int threads, int seconds, int warmup, int size,
        long pid) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        List<Producer> ps = new ArrayList<>();
        for (int i = 0; i < producers; i++) {
            ps.add(provider.newProducerBuilder().setClientConfiguration(config(endpoint)).setTopics(topic).build());
        }
        byte[] body = new byte[size];
        new Random(17).nextBytes(body);
        Message msg = provider.newMessageBuilder().setTopic(topic).setBody(body).build();
        long start = System.nanoTime();
        long measureFrom = start + warmup * 1_000_000_000L, end = measureFrom + seconds * 1_000_000_000L;
        AtomicLong sent = new AtomicLong(), errors = new AtomicLong();
        LongList[] lat = new LongList[threads];
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            Producer p = ps.get(i % producers);
            LongList l = lat[i] = new LongList();
            ts[i] = new Thread(() -> {
                long t;
                while ((t = System.nanoTime()) < end) {
                    try {
                        p.send(msg);
                    } catch (Throwable e) {
                        errors.incrementAndGet();
                        continue;
                    }
                    sent.incrementAndGet();
                    if (t >= measureFrom) {
                        l.add(System.nanoTime() - t);
                    }
                }
            }, "send-" + i);
            ts[i].start();
        }
        long wait = measureFrom - System.nanoTime();
        if (wait > 0) {
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        long ticks0 = cpuTicks(pid), self0 = cpuTicks(-1);
        for (Thread t : ts) {
            t.join();
        }
        long ticks = cpuTicks(pid) - ticks0, self = cpuTicks(-1) - self0;
        for (Producer p : ps) {
            p.close();
        }
        LongList all = new LongList();
        for (LongList l : lat) {
            all.addAll(l);
        }
        long[] v = all.sorted();
        if (v.length == 0) {
            throw new IllegalStateException("no send of the measured window succeeded (" + errors.get() + " errors)");
        }
        double tps = v.length / (double) seconds;
        return "{\"ok\":true,\"mode\":\"send\",\"messages\":" + v.length + ",\"sent\":" + sent.get()
            + ",\"errors\":" + errors.get() + ",\"seconds\":" + seconds + ",\"tps\":" + round(tps)
            + ",\"latencyMs\":{\"p50\":" + ms(pct(v, 0.50)) + ",\"p90\":" + ms(pct(v, 0.90)) + ",\"p99\":" + ms(pct(v, 0.99))
            + ",\"p999\":" + ms(pct(v, 0.999)) + ",\"max\":" + ms(v.length == 0 ? 0 : v[v.length - 1])
            + ",\"mean\":" + ms(mean(v)) + "}" + ticksField(pid, ticks) + ",\"clientCpuTicks\":" + self + "}";
    }

    static String recv(String endpoint, String topic, String group, int consumers, int threads, long count, int timeout,
        long pid) throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        List<SimpleConsumer> cs = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            cs.add(provider.newSimpleConsumerBuilder().setClientConfiguration(config(endpoint))
                .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(5))
                .setSubscriptionExpressions(Collections.singletonMap(topic, new FilterExpression("*", FilterExpressionType.TAG)))
                .build());
        }
        AtomicLong acked = new AtomicLong(), received = new AtomicLong(), ackErrors = new AtomicLong();
        AtomicLong doneAt = new AtomicLong();
        java.util.concurrent.atomic.AtomicReference<String> firstError = new java.util.concurrent.atomic.AtomicReference<>("");
        CountDownLatch done = new CountDownLatch(1);
        long ticks0 = cpuTicks(pid), self0 = cpuTicks(-1);
        long start = System.nanoTime(), deadline = start + timeout * 1_000_000_000L;
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            SimpleConsumer c = cs.get(i % consumers);
            ts[i] = new Thread(() -> {
                while (done.getCount() > 0 && System.nanoTime() < deadline) {
                    List<MessageView> got;
                    try {
                        got = c.receive(BATCH, Duration.ofSeconds(30));
                    } catch (Throwable e) {
                        // no message within the long polling, or a failure
                        String msg = String.valueOf(e);
                        if (!msg.contains("MESSAGE_NOT_FOUND") && !msg.contains("40401")) {
                            firstError.compareAndSet("", "receive: " + msg);
                        }
                        continue;
                    }
                    received.addAndGet(got.size());
                    List<CompletableFuture<Void>> acks = new ArrayList<>(got.size());
                    for (MessageView m : got) {
                        acks.add(c.ackAsync(m));
                    }
                    for (CompletableFuture<Void> f : acks) {
                        try {
                            f.join();
                        } catch (Throwable e) {
                            ackErrors.incrementAndGet();
                            firstError.compareAndSet("", "ack: " + e);
                            continue;
                        }
                        if (acked.incrementAndGet() == count) {
                            doneAt.set(System.nanoTime());
                            done.countDown();
                        }
                    }
                }
            }, "recv-" + i);
            ts[i].setDaemon(true);
            ts[i].start();
        }
        done.await(Math.max(0, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS);
        long ticks = cpuTicks(pid) - ticks0, self = cpuTicks(-1) - self0;
        boolean complete = done.getCount() == 0;
        long stop = complete ? doneAt.get() : System.nanoTime();
        double secs = (stop - start) / 1e9;
        long n = Math.min(acked.get(), count);
        return "{\"ok\":true,\"mode\":\"recv\",\"messages\":" + n + ",\"received\":" + received.get()
            + ",\"ackErrors\":" + ackErrors.get() + ",\"seconds\":" + round(secs) + ",\"tps\":" + round(n / secs)
            + ",\"complete\":" + complete + ",\"firstError\":\"" + firstError.get().replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\""
            + ticksField(pid, ticks) + ",\"clientCpuTicks\":" + self + "}";
    }

    /** The user + system ticks of process pid so far (0 for pid 0; -1: this process). */
    static long cpuTicks(long pid) throws java.io.IOException {
        if (pid == 0) {
            return 0;
        }
        String st = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(pid < 0 ? "/proc/self/stat" : "/proc/" + pid + "/stat")),
            java.nio.charset.StandardCharsets.US_ASCII);
        // After the command name in parentheses: field 3 (state) onwards;
        // utime and stime are fields 14 and 15.
        String[] f = st.substring(st.lastIndexOf(')') + 2).trim().split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    static String ticksField(long pid, long ticks) {
        return pid == 0 ? "" : ",\"brokerCpuTicks\":" + ticks;
    }

    static long pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    static long mean(long[] v) {
        if (v.length == 0) {
            return 0;
        }
        double s = 0;
        for (long x : v) {
            s += x;
        }
        return (long) (s / v.length);
    }

    static String ms(long nanos) {
        return String.format(java.util.Locale.ROOT, "%.3f", nanos / 1e6);
    }

    static String round(double d) {
        return String.format(java.util.Locale.ROOT, "%.1f", d);
    }

    /** A growable array of longs (one per thread, so no locking). */
    static final class LongList {
        long[] a = new long[1 << 16];
        int n;

        void add(long x) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            a[n++] = x;
        }

        void addAll(LongList o) {
            for (int i = 0; i < o.n; i++) {
                add(o.a[i]);
            }
        }

        long[] sorted() {
            long[] s = Arrays.copyOf(a, n);
            Arrays.sort(s);
            return s;
        }
    }
}
