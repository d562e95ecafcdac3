package rmqgo;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs the Java mqadmin (MQAdminStartup) and exits as soon as the command
 * has returned. The command has already shut its admin client down; what is
 * left is Netty's graceful-shutdown quiet period (2 s of idle event loops),
 * which the plain tool waits out before the JVM ends. Output and exit codes
 * are the tool's own: main0 exits by itself on its own errors.
 *
 * <p>With the single argument --batch it runs several commands in this one
 * JVM: it reads command lines from stdin, one a line, arguments separated by
 * tabs, runs each with main0 and prints the line {@value #END} on stdout
 * after each (tests compare many commands without a JVM start each). Each
 * command ends by shutting its admin client down, whose NettyEventExecutor
 * thread only notices the shutdown at the end of a 3 s poll; while the
 * command waits for it, a watcher interrupts that poll (the thread then
 * sees it is stopped and ends), which saves those 3 s per command.
 */
public final class MQAdminFastExit {
    static final String END = "@@rmqgo-mqadmin-end@@";

    private MQAdminFastExit() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length == 1 && "--batch".equals(args[0])) {
            startShutdownWatcher(Thread.currentThread());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.isEmpty()) {
                    MQAdminStartup.main0(line.split("\t"), null);
                }
                System.out.println(END);
                System.out.flush();
            }
        } else {
            MQAdminStartup.main0(args, null);
        }
        System.out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(0);
    }

    /** Interrupts NettyEventExecutor threads while main waits in ServiceThread.shutdown. */
    private static void startShutdownWatcher(Thread main) {
        Thread w = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    return;
                }
                if (!inServiceThreadShutdown(main)) {
                    continue;
                }
                for (Thread t : Thread.getAllStackTraces().keySet()) {
                    if ("NettyEventExecutor".equals(t.getName()) && t.isAlive()) {
                        t.interrupt();
                    }
                }
            }
        }, "rmqgo-shutdown-watcher");
        w.setDaemon(true);
        w.start();
    }

    private static boolean inServiceThreadShutdown(Thread main) {
        for (StackTraceElement e : main.getStackTrace()) {
            if ("org.apache.rocketmq.common.ServiceThread".equals(e.getClassName()) && "shutdown".equals(e.getMethodName())) {
                return true;
            }
        }
        return false;
    }
}
