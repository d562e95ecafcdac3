package rmqgo;

import java.util.Arrays;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * The remoting half of make bench-grpc's "gRPC against remoting on our
 * broker" (scripts/bench/grpc.sh): the same load as rmqgo.GrpcBench's send
 * mode (scripts/java5), through the remoting Java client
 * (rocketmq-client, DefaultMQProducer): &lt;threads&gt; threads share one
 * producer, each sending &lt;size&gt;-byte messages synchronously, one after
 * the other, for &lt;warmup s&gt; (not counted) and then &lt;seconds&gt;; every
 * send of the measured window is timed. The last stdout line is JSON with
 * GrpcBench's fields: {"ok":true,"mode":"send","messages","sent","errors",
 * "seconds","tps","latencyMs":{"p50","p90","p99","p999","max","mean"}}.
 *
 * With a broker pid, also "brokerCpuTicks": the broker's user + system
 * clock ticks (/proc/&lt;pid&gt;/stat) in the measured window; always
 * "clientCpuTicks", the same for this client's JVM.
 *
 * Usage: RemotingBench &lt;namesrv&gt; &lt;topic&gt; &lt;threads&gt; &lt;seconds&gt;
 * &lt;warmup s&gt; &lt;size&gt; [&lt;broker pid&gt;]
 */
public final class RemotingBench {
    private RemotingBench() {
    }

    public static void main(String[] args) {
        if (args.length != 6 && args.length != 7) {
            System.err.println("usage: RemotingBench <namesrv> <topic> <threads> <seconds> <warmup s> <size> [<broker pid>]");
            System.exit(2);
        }
        try {
            System.out.println(send(args[0], args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]),
                Integer.parseInt(args[4]), Integer.parseInt(args[5]), args.length == 7 ? Long.parseLong(args[6]) : 0));
            System.exit(0);
        } catch (Throwable e) {
            System.out.println("{\"ok\":false,\"error\":\"" + String.valueOf(e).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"}");
            System.exit(1);
        }
    }

    static String send(String ns, String topic, int threads, int seconds, int warmup, int size, long pid) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("bench_remoting_pg");
        p.setNamesrvAddr(ns);
        p.setInstanceName("bench-" + System.nanoTime());
        p.setSendMsgTimeout(10_000);
        p.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE); // the gRPC client does not compress either
        p.start();
        byte[] body = new byte[size];
        new Random(17).nextBytes(body);
        long start = System.nanoTime();
        long measureFrom = start + warmup * 1_000_000_000L, end = measureFrom + seconds * 1_000_000_000L;
        AtomicLong sent = new AtomicLong(), errors = new AtomicLong();
        long[][] lat = new long[threads][];
        int[] cnt = new int[threads];
        Thread[] ts = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            final int idx = i;
            lat[i] = new long[1 << 16];
            ts[i] = new Thread(() -> {
                long t;
                while ((t = System.nanoTime()) < end) {
                    try {
                        SendResult r = p.send(new Message(topic, body));
                        if (r.getSendStatus() != SendStatus.SEND_OK) {
                            errors.incrementAndGet();
                            continue;
                        }
                    } catch (Throwable e) {
                        errors.incrementAndGet();
                        continue;
                    }
                    sent.incrementAndGet();
                    if (t >= measureFrom) {
                        if (cnt[idx] == lat[idx].length) {
                            lat[idx] = Arrays.copyOf(lat[idx], cnt[idx] * 2);
                        }
                        lat[idx][cnt[idx]++] = System.nanoTime() - t;
                    }
                }
            }, "send-" + i);
            ts[i].start();
        }
        long wait = measureFrom - System.nanoTime();
        if (wait > 0) {
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
        long ticks0 = Ticks.cpuTicks(pid), self0 = Ticks.cpuTicks(-1);
        int total = 0;
        for (int i = 0; i < threads; i++) {
            ts[i].join();
            total += cnt[i];
        }
        long ticks = Ticks.cpuTicks(pid) - ticks0, self = Ticks.cpuTicks(-1) - self0;
        p.shutdown();
        long[] v = new long[total];
        for (int i = 0, k = 0; i < threads; k += cnt[i], i++) {
            System.arraycopy(lat[i], 0, v, k, cnt[i]);
        }
        Arrays.sort(v);
        if (v.length == 0) {
            throw new IllegalStateException("no send of the measured window succeeded (" + errors.get() + " errors)");
        }
        double sum = 0;
        for (long x : v) {
            sum += x;
        }
        return "{\"ok\":true,\"mode\":\"send\",\"messages\":" + v.length + ",\"sent\":" + sent.get()
            + ",\"errors\":" + errors.get() + ",\"seconds\":" + seconds
            + ",\"tps\":" + String.format(Locale.ROOT, "%.1f", v.length / (double) seconds)
            + ",\"latencyMs\":{\"p50\":" + ms(pct(v, 0.50)) + ",\"p90\":" + ms(pct(v, 0.90)) + ",\"p99\":" + ms(pct(v, 0.99))
            + ",\"p999\":" + ms(pct(v, 0.999)) + ",\"max\":" + ms(v.length == 0 ? 0 : v[v.length - 1])
            + ",\"mean\":" + ms(v.length == 0 ? 0 : (long) (sum / v.length)) + "}"
            + (pid == 0 ? "" : ",\"brokerCpuTicks\":" + ticks) + ",\"clientCpuTicks\":" + self + "}";
    }

    static long pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    /** The user + system ticks of process pid so far (0 for pid 0; -1: this process). */
    static final class Ticks {
        private Ticks() {
        }

        static long cpuTicks(long pid) throws java.io.IOException {
            if (pid == 0) {
                return 0;
            }
            String st = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(pid < 0 ? "/proc/self/stat" : "/proc/" + pid + "/stat")),
                java.nio.charset.StandardCharsets.US_ASCII);
            // After the command name in parentheses: field 3 (state)
            // onwards; utime and stime are fields 14 and 15.
            String[] f = st.substring(st.lastIndexOf(')') + 2).trim().split(" ");
            return Long.parseLong(f[11]) + Long.parseLong(f[12]);
        }
    }

    static String ms(long nanos) {
        return String.format(Locale.ROOT, "%.3f", nanos / 1e6);
    }
}
