package rmqgo;

import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Runs the Java mqadmin (MQAdminStartup) and exits as soon as the command
 * has returned. The command has already shut its admin client down; what is
 * left is Netty's graceful-shutdown quiet period (2 s of idle event loops),
 * which the plain tool waits out before the JVM ends. Output and exit codes
 * are the tool's own: main0 exits by itself on its own errors.
 */
public final class MQAdminFastExit {
    private MQAdminFastExit() {
    }

    public static void main(String[] args) {
        MQAdminStartup.main0(args, null);
        System.out.flush();
        System.err.flush();
        Runtime.getRuntime().halt(0);
    }
}
