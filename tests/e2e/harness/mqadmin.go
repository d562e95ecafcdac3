package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// MQAdminTimeout bounds one RunMQAdmin call.
const MQAdminTimeout = 60 * time.Second

// JavaMQAdminTimeout bounds one RunJavaMQAdmin call; the first call of a
// machine also resolves the Java classpath from Maven Central.
const JavaMQAdminTimeout = 5 * time.Minute

// exitJavaMissing is the exit code of scripts/mqadmin-java.sh and
// scripts/java-classpath.sh when java or mvn is not installed.
const exitJavaMissing = 3

// javaMissingPrefix starts the scripts' message for exitJavaMissing.
const javaMissingPrefix = "java/mvn not available:"

// RunMQAdmin runs our mqadmin binary (bin, e.g. filepath.Join(BuildBinaries(t),
// harness.MQAdmin)) with args and returns its stdout. err is non-nil when the
// command cannot run, times out or exits non-zero; it then includes stderr.
// Stderr is also written to the test log when not empty.
func RunMQAdmin(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	stdout, stderr, _, err := run(MQAdminTimeout, nil, bin, args...)
	if stderr != "" {
		t.Logf("harness: mqadmin %s: stderr:\n%s", strings.Join(args, " "), stderr)
	}
	return stdout, err
}

// ExecMQAdmin runs our mqadmin binary like RunMQAdmin and returns stdout,
// stderr and the exit code; a run that cannot happen (no binary, timeout)
// fails t.
func ExecMQAdmin(t testing.TB, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code, err := run(MQAdminTimeout, nil, bin, args...)
	if code < 0 {
		t.Fatalf("harness: mqadmin %s: %v", strings.Join(args, " "), err)
	}
	return stdout, stderr, code
}

// RunJavaMQAdmin runs the real Java admin tool (scripts/mqadmin-java.sh,
// RocketMQ's org.apache.rocketmq.tools.command.MQAdminStartup) with args
// and returns its stdout. Note that the Java tool prints most failures (a
// stack trace on stderr) and still exits 0: check the output.
//
// When java or mvn is missing the test is skipped with a message starting
// "java/mvn not available:". Any other failure of the script (e.g. Maven
// could not resolve the tool, exit 4) is returned as an error.
func RunJavaMQAdmin(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return RunJavaMQAdminEnv(t, nil, args...)
}

// RunJavaMQAdminEnv is RunJavaMQAdmin with extra environment entries, e.g.
// "RMQ_JAVA_OPTS=-Drocketmq.serialize.type=ROCKETMQ" for ROCKETMQ headers.
// The tool's log goes to a file in t.TempDir() (RMQ_JAVA_LOG_DIR) unless env
// sets RMQ_JAVA_LOG_DIR.
func RunJavaMQAdminEnv(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	stdout, _, err := RunJavaMQAdminStderr(t, env, args...)
	return stdout, err
}

// RunJavaMQAdminStderr is RunJavaMQAdminEnv that also returns what the
// tool wrote to stderr (where it prints the stack trace of an exception it
// caught, exiting 0).
func RunJavaMQAdminStderr(t testing.TB, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "mqadmin-java.sh")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("harness: %v", err)
	}
	logDir := ""
	for _, e := range env {
		if strings.HasPrefix(e, "RMQ_JAVA_LOG_DIR=") {
			logDir = strings.TrimPrefix(e, "RMQ_JAVA_LOG_DIR=")
		}
	}
	if logDir == "" {
		logDir = t.TempDir()
		env = append(append([]string(nil), env...), "RMQ_JAVA_LOG_DIR="+logDir)
	}
	// The same tool, without idling through Netty's 2 s shutdown quiet
	// period once the command has run (scripts/mqadmin-java.sh).
	env = append(append([]string(nil), env...), "RMQ_JAVA_FAST_EXIT=1")
	var code int
	stdout, stderr, code, err = run(JavaMQAdminTimeout, env, script, args...)
	if code == exitJavaMissing {
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr), javaMissingPrefix))
		if msg == "" {
			msg = "scripts/mqadmin-java.sh exited 3"
		}
		t.Skipf("%s %s", javaMissingPrefix, msg)
	}
	if stderr != "" {
		t.Logf("harness: java mqadmin %s: stderr:\n%s", strings.Join(args, " "), stderr)
	}
	if err != nil && t.Failed() {
		t.Logf("harness: java mqadmin log dir: %s", logDir)
	}
	return stdout, stderr, err
}

// javaBatchEnd is the line scripts/java's MQAdminFastExit --batch prints
// after each command.
const javaBatchEnd = "@@rmqgo-mqadmin-end@@"

// RunJavaMQAdminBatch runs several commands of the Java admin tool in one
// JVM (MQAdminFastExit --batch: no JVM start per command) and returns the
// stdout of each. Arguments must not contain tabs or newlines. env and
// skipping are as RunJavaMQAdminEnv's.
func RunJavaMQAdminBatch(t testing.TB, env []string, commands [][]string) ([]string, error) {
	t.Helper()
	script := filepath.Join(RepoRoot(t), "scripts", "mqadmin-java.sh")
	var in strings.Builder
	for _, c := range commands {
		for _, a := range c {
			if strings.ContainsAny(a, "\t\n") {
				t.Fatalf("harness: RunJavaMQAdminBatch: argument %q has a tab or newline", a)
			}
		}
		in.WriteString(strings.Join(c, "\t") + "\n")
	}
	env = append(append([]string(nil), env...), "RMQ_JAVA_FAST_EXIT=1", "RMQ_JAVA_LOG_DIR="+t.TempDir())
	stdout, stderr, code, err := RunGroupStdin(context.Background(), JavaMQAdminTimeout, env, in.String(), script, "--batch")
	if code == exitJavaMissing {
		t.Skipf("%s %s", javaMissingPrefix, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr), javaMissingPrefix)))
	}
	if stderr != "" {
		t.Logf("harness: java mqadmin --batch: stderr:\n%s", stderr)
	}
	if err != nil {
		return nil, err
	}
	outs := strings.SplitAfter(stdout, javaBatchEnd+"\n")
	if len(outs) != len(commands)+1 || outs[len(outs)-1] != "" {
		return nil, fmt.Errorf("java mqadmin --batch: %d outputs for %d commands:\n%s", len(outs)-1, len(commands), stdout)
	}
	res := make([]string, len(commands))
	for i := range commands {
		res[i] = strings.TrimSuffix(outs[i], javaBatchEnd+"\n")
	}
	return res, nil
}

// run runs bin with args and extra env under a timeout (RunGroup); its
// error also carries what bin wrote to stderr.
func run(timeout time.Duration, env []string, bin string, args ...string) (stdout, stderr string, code int, err error) {
	stdout, stderr, code, err = RunGroup(context.Background(), timeout, env, bin, args...)
	if err != nil {
		err = fmt.Errorf("%w; stderr: %s", err, strings.TrimSpace(stderr))
	}
	return stdout, stderr, code, err
}

// RunGroup runs bin with args and extra env in its own process group, so
// that a timeout or the end of parent kills it with what it started (mvn,
// java, node). code is the exit code (-1 when the process did not exit
// normally or did not start); err names bin and args.
func RunGroup(parent context.Context, timeout time.Duration, env []string, bin string, args ...string) (stdout, stderr string, code int, err error) {
	return RunGroupStdin(parent, timeout, env, "", bin, args...)
}

// RunGroupStdin is RunGroup with stdin as the process's standard input.
func RunGroupStdin(parent context.Context, timeout time.Duration, env []string, stdin, bin string, args ...string) (stdout, stderr string, code int, err error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	cmd.SysProcAttr = groupSysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	stdout, stderr, code = out.String(), errb.String(), -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if runErr == nil {
		return stdout, stderr, code, nil
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		runErr = fmt.Errorf("timed out after %v: %w", timeout, runErr)
	}
	return stdout, stderr, code, fmt.Errorf("%s %s: %w", filepath.Base(bin), strings.Join(args, " "), runErr)
}
