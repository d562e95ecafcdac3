// Package interop runs REAL RocketMQ clients (Java rocketmq-client, Node
// ali-ons, Go rocketmq-client-go v2) against a cluster, and starts the
// REFERENCE Apache RocketMQ cluster (nameserver + broker from Maven Central)
// so that the same checks can be proven against Apache first and then run
// against our broker:
//
//	addr := interop.StartApache(t)                 // or our own nameserver's address
//	res := interop.RunGoCheck(t, "roundtrip", "-n", addr, "-t", "T", "-count", "1000")
//	res.RequireOK(t)
//
// The check programs and their JSON result are described in docs/interop.md
// and tests/interop/checkmsg. A runtime that is not installed makes the
// helper skip the test with an explicit message ("java/mvn not available:
// ...", "node/npm not available: ..."), never silently; with
// RMQ_REQUIRE_JAVA=1 (RMQ_REQUIRE_NODE=1) a missing Java (Node) fails the
// test instead.
//
// Everything listens on and dials 127.0.0.1 only. The package keeps no
// package-level mutable state.
package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/interop/checkmsg"
)

// Environment variables read by this package.
const (
	// EnvRequireJava set to 1 turns "java/mvn not available" skips into failures.
	EnvRequireJava = "RMQ_REQUIRE_JAVA"
	// EnvRequireNode set to 1 turns "node/npm not available" skips into failures.
	EnvRequireNode = "RMQ_REQUIRE_NODE"
	// EnvApacheTests set to 1 enables TestApacheReferenceInterop.
	EnvApacheTests = "RMQ_APACHE_TESTS"
	// EnvApacheLong set to 1 (make test-apache-long) runs the longest
	// tests against Apache's servers, kept out of make test's budget.
	EnvApacheLong = "RMQ_APACHE_LONG"
	// EnvGoCheckBin names a prebuilt gocheck binary (default: built per call
	// from tests/cmd/gocheck, which the Go build cache makes cheap).
	EnvGoCheckBin = "RMQ_GOCHECK_BIN"
)

// Exit codes of the scripts.
const (
	exitRuntimeMissing = 3 // java/mvn or node/npm not installed
	exitPortInUse      = 5 // scripts/apache/start.sh: a port is taken
)

// Timeouts.
const (
	// ApacheStartTimeout bounds scripts/apache/start.sh, including the first
	// Maven resolution of the servers on a fresh machine.
	ApacheStartTimeout = 5 * time.Minute
	// CheckTimeout bounds one check program run (the first Java run also
	// compiles with Maven, the first Node run also runs npm ci).
	CheckTimeout = 10 * time.Minute
)

// Result is what a check program reported: its JSON line, plus how the
// process ran.
type Result struct {
	checkmsg.Result
	// Line is the raw JSON line.
	Line string
	// Stderr is the program's standard error (client logs, usage errors).
	Stderr string
	// ExitCode is the process exit code: 0 passed, 1 check failed.
	ExitCode int
	// Elapsed is the wall time of the whole process (JVM start included).
	Elapsed time.Duration
}

// RequireOK fails the test unless the check passed (ok true, exit 0).
func (r Result) RequireOK(t testing.TB) {
	t.Helper()
	if !r.OK || r.ExitCode != 0 {
		t.Fatalf("interop: %s %s check failed (exit %d): %s\n%s%s", r.Client, r.Mode, r.ExitCode,
			strings.Join(r.Errors, "; "), r.Line, stderrTail(r.Stderr))
	}
}

// stderrTail is the end of a check's stderr (the client library's log),
// for failure messages.
func stderrTail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	// The Java client's log digest (javaLogTail), when there is one, is
	// kept whole: a producer failing over can fill stderr with retries,
	// and the digest's first lines are what says why a consumer stopped.
	log := ""
	if i := strings.Index(s, javaLogDigestHeader); i >= 0 {
		s, log = strings.TrimSpace(s[:i]), s[i:]
	}
	const max = 12 << 10
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return "\n----- client stderr -----\n" + s + log
}

// Summary is a one-line description for test logs.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s ok=%v in %v", r.Client, r.Mode, r.OK, r.Elapsed.Round(10*time.Millisecond))
	// Modes are produce, consume, roundtrip, static-produce, static-consume.
	if !strings.HasSuffix(r.Mode, "consume") {
		fmt.Fprintf(&b, "; %s sent %d failed %d in %d ms", r.SendMode, r.Sent, r.Failed, r.SendMs)
	}
	if !strings.HasSuffix(r.Mode, "produce") {
		fmt.Fprintf(&b, "; consumed %d/%d distinct (received %d, duplicates %d, mismatched %d, foreign %d) in %d ms",
			r.Distinct, r.Expected, r.Received, r.Duplicates, r.Mismatched, r.Foreign, r.ConsumeMs)
	}
	return b.String()
}

// Apache is a running reference cluster started by StartApacheWith.
type Apache struct {
	NamesrvAddr string
	BrokerAddr  string
	// RunDir holds conf/, store/ and logs/ (removed at cleanup).
	RunDir string
	// Started is how long start.sh took (JVMs up, broker registered).
	Started time.Duration
}

// ApacheOptions are the optional settings of StartApacheWith.
type ApacheOptions struct {
	// FlushDiskType is ASYNC_FLUSH (default) or SYNC_FLUSH.
	FlushDiskType string
	// BrokerConfExtra is appended to broker.conf (key=value lines).
	BrokerConfExtra string
	// Env is added to start.sh's environment (e.g. APACHE_BROKER_HEAP=512m).
	Env []string
}

// StartApache starts the reference Apache RocketMQ cluster (one nameserver,
// one broker; scripts/apache/start.sh) on free 127.0.0.1 ports and returns
// the nameserver address. It is stopped at cleanup. Without java or mvn
// the test is skipped ("java/mvn not available: ..."), or fails if
// RMQ_REQUIRE_JAVA=1.
func StartApache(t testing.TB) (namesrvAddr string) {
	t.Helper()
	return StartApacheWith(t, ApacheOptions{}).NamesrvAddr
}

// StartApacheWith is StartApache with options; it returns the whole cluster
// description.
func StartApacheWith(t testing.TB, opts ApacheOptions) *Apache {
	t.Helper()
	root := harness.RepoRoot(t)
	start := filepath.Join(root, "scripts", "apache", "start.sh")
	stop := filepath.Join(root, "scripts", "apache", "stop.sh")
	runDir := filepath.Join(t.TempDir(), "apache")
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		nsPort := harness.FreePort(t)
		brPort := freeBrokerPort(t)
		env := []string{
			"NAMESRV_PORT=" + strconv.Itoa(nsPort),
			"BROKER_PORT=" + strconv.Itoa(brPort),
			"APACHE_RUN_DIR=" + runDir,
			// A watchdog stops the cluster if this test process dies.
			"APACHE_WATCH_PID=" + strconv.Itoa(os.Getpid()),
			// Serial GC and C1 only: the JVMs start on a fraction of the
			// CPU the suite's two cores have (the behaviours under test do
			// not depend on the GC or the JIT).
			"APACHE_JVM_LIGHT=1",
		}
		if opts.FlushDiskType != "" {
			env = append(env, "FLUSH_DISK_TYPE="+opts.FlushDiskType)
		}
		// A JVM still warming up on a loaded 2-core machine can keep a
		// send in its queue for more than waitTimeMillsInSendQueue's
		// default 200 ms, and Apache then refuses it (SYSTEM_BUSY,
		// "[TIMEOUT_CLEAN_QUEUE]broker busy": seen in CI by
		// TestMetricsFamiliesVsApache). The tests compare behaviours, not
		// Apache's load shedding, so the reference broker waits longer;
		// the benchmarks (start.sh alone) keep its default.
		extra := "waitTimeMillsInSendQueue=10000\n" + opts.BrokerConfExtra
		env = append(env, "APACHE_BROKER_CONF_EXTRA="+extra)
		env = append(env, opts.Env...)
		t0 := time.Now()
		out, stderr, code, err := run(ApacheStartTimeout, env, start)
		if code == exitRuntimeMissing {
			missing(t, EnvRequireJava, stderr, "scripts/apache/start.sh exited 3")
		}
		if code == exitPortInUse || (err != nil && strings.Contains(stderr, "Address already in use")) {
			// Another process took a port between FreePort and start.sh
			// (or between start.sh's check and the server's bind: the
			// server then exits with a BindException in its log).
			last = fmt.Errorf("%v: %s", err, stderr)
			continue
		}
		if err != nil {
			t.Fatalf("interop: scripts/apache/start.sh: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		a := &Apache{
			NamesrvAddr: fmt.Sprintf("127.0.0.1:%d", nsPort),
			BrokerAddr:  fmt.Sprintf("127.0.0.1:%d", brPort),
			RunDir:      runDir,
			Started:     time.Since(t0),
		}
		t.Logf("interop: Apache RocketMQ started in %v: namesrv %s, broker %s (run dir %s)",
			a.Started.Round(100*time.Millisecond), a.NamesrvAddr, a.BrokerAddr, runDir)
		t.Cleanup(func() {
			if t.Failed() {
				for _, f := range []string{"broker.out", "broker.log", "namesrv.log"} {
					t.Logf("interop: ----- Apache %s (tail) -----\n%s", f, tail(filepath.Join(runDir, "logs", f), 16<<10))
				}
			}
			// The store is thrown away: no need for the broker's ~15 s
			// graceful shutdown.
			_, stderr, _, err := run(2*time.Minute, []string{
				"APACHE_RUN_DIR=" + runDir, "APACHE_STOP_SIGNAL=KILL",
			}, stop)
			if err != nil {
				t.Errorf("interop: scripts/apache/stop.sh: %v: %s", err, stderr)
			}
		})
		return a
	}
	t.Fatalf("interop: scripts/apache/start.sh: ports kept being taken: %v", last)
	return nil
}

// freeBrokerPort returns a port P such that P, P-2 (the broker's "fast"
// port) and P+1 (its HA port) are all free on 127.0.0.1 right now.
func freeBrokerPort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 50; i++ {
		p := harness.FreePort(t)
		if p < 1026 || p > 65533 {
			continue
		}
		ok := true
		for _, q := range []int{p - 2, p + 1} {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", q))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return p
		}
	}
	t.Fatal("interop: no free broker port P with P-2 and P+1 free")
	return 0
}

// RunJavaCheck runs the Java check (scripts/java-client-check.sh, Apache
// rocketmq-client) with args, e.g. "roundtrip", "-n", addr, "-count", "1000",
// and returns its result; it does not fail the test when the check fails
// (see Result.RequireOK). Skips when java/mvn is missing (fails with
// RMQ_REQUIRE_JAVA=1).
func RunJavaCheck(t testing.TB, args ...string) Result {
	t.Helper()
	return RunJavaCheckEnv(t, nil, args...)
}

// RunJavaCheckEnv is RunJavaCheck with extra environment entries, e.g.
// "RMQ_JAVA_OPTS=-Dtls.enable=true" for a client over TLS.
func RunJavaCheckEnv(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	script := filepath.Join(harness.RepoRoot(t), "scripts", "java-client-check.sh")
	logDir := t.TempDir()
	res := runCheck(t, "java", EnvRequireJava, append([]string{"RMQ_JAVA_LOG_DIR=" + logDir}, env...), script, args...)
	res.Stderr += javaLogTail(res.ExitCode, logDir)
	return res
}

const javaLogDigestHeader = "\n----- client log (client-check-java.log, first warnings) -----\n"

// javaLogTail is the end of the Java client's log file (the check's
// logback writes it under RMQ_JAVA_LOG_DIR, not to stderr) when the check
// failed, so that a failure report shows what the client saw.
func javaLogTail(exitCode int, dir string) string {
	if exitCode == 0 {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, "client-check-java.log"))
	if err != nil || len(b) == 0 {
		return ""
	}
	// The first warnings say what went wrong first (a closed channel's
	// cause comes before the stack traces of every request it failed).
	// Netty's channel events are logged at INFO: a channel that went
	// inactive fails its requests without a warning of its own. So are a
	// consumer's rebalance results: a queue dropped or not assigned stops
	// its consumption without a warning.
	var first, consumer []string
	for _, l := range strings.Split(string(b), "\n") {
		// The push consumer's own lines (pulls, rebalances, offsets), the
		// last of them apart: after a failover they drown among the
		// producer's.
		if strings.Contains(l, ".client.impl.consumer.") {
			if consumer = append(consumer, l); len(consumer) > 60 {
				consumer = consumer[1:]
			}
		}
		// A producer's retries after a failover are many and say nothing
		// the result line does not.
		if strings.Contains(l, "resend at once") {
			continue
		}
		if strings.Contains(l, " WARN ") || strings.Contains(l, " ERROR ") ||
			strings.Contains(l, "channelInactive") || strings.Contains(l, "closeChannel") ||
			strings.Contains(l, "[BUG]") || strings.Contains(l, "rebalanced result changed") ||
			strings.Contains(l, "remove unnecessary mq") || strings.Contains(l, "doRebalance") {
			if len(first) < 60 {
				first = append(first, l)
			}
		}
	}
	const max = 16 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return javaLogDigestHeader + strings.Join(first, "\n") +
		"\n----- client log (client-check-java.log, the consumer's last lines) -----\n" + strings.Join(consumer, "\n") +
		"\n----- client log (client-check-java.log, end) -----\n" + string(b)
}

// RunNodeCheck runs the Node check (scripts/node-client-check.sh, ali-ons)
// with args; see RunJavaCheck. Skips when node/npm is missing (fails with
// RMQ_REQUIRE_NODE=1). ali-ons has no oneway or batch send.
func RunNodeCheck(t testing.TB, args ...string) Result {
	t.Helper()
	script := filepath.Join(harness.RepoRoot(t), "scripts", "node-client-check.sh")
	return runCheck(t, "node", EnvRequireNode, nil, script, args...)
}

// RunNode5Check runs the check with the RocketMQ 5.x Node.js client
// (scripts/node5-check.sh, rocketmq-client-nodejs, gRPC): its args name a
// broker's gRPC endpoint with -endpoint instead of a nameserver; see
// RunJavaCheck. Skips when node/npm is missing (fails with
// RMQ_REQUIRE_NODE=1).
func RunNode5Check(t testing.TB, args ...string) Result {
	t.Helper()
	script := filepath.Join(harness.RepoRoot(t), "scripts", "node5-check.sh")
	return runCheck(t, "node5", EnvRequireNode, nil, script, args...)
}

// RunGoCheck runs the Go check (tests/cmd/gocheck, rocketmq-client-go v2)
// with args; see RunJavaCheck. The binary is built into t.TempDir() (cheap
// with a warm build cache) unless RMQ_GOCHECK_BIN names a prebuilt one.
func RunGoCheck(t testing.TB, args ...string) Result {
	t.Helper()
	return runCheck(t, "go", "", nil, GoCheckBinary(t), args...)
}

// GoCheckBinary returns the path of a gocheck binary: $RMQ_GOCHECK_BIN, or
// one built from tests/cmd/gocheck into t.TempDir().
func GoCheckBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvGoCheckBin); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("interop: $%s: %v", EnvGoCheckBin, err)
		}
		return bin
	}
	root := harness.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "gocheck")
	goTool := "go"
	if gr := os.Getenv("GOROOT"); gr != "" {
		if _, err := os.Stat(filepath.Join(gr, "bin", "go")); err == nil {
			goTool = filepath.Join(gr, "bin", "go")
		}
	}
	cmd := exec.Command(goTool, "build", "-o", bin, harness.ModulePrefix+"tests/cmd/gocheck")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("interop: go build tests/cmd/gocheck: %v\n%s", err, out)
	}
	return bin
}

func runCheck(t testing.TB, client, requireEnv string, env []string, bin string, args ...string) Result {
	t.Helper()
	t0 := time.Now()
	stdout, stderr, code, err := run(CheckTimeout, env, bin, args...)
	return checkResult(t, client, requireEnv, bin, args, stdout, stderr, code, err, time.Since(t0))
}

// checkResult turns a finished check process into its Result (skipping
// when the runtime is missing, failing when there is no JSON line).
func checkResult(t testing.TB, client, requireEnv, bin string, args []string, stdout, stderr string, code int, err error, elapsed time.Duration) Result {
	t.Helper()
	if code == exitRuntimeMissing && requireEnv != "" {
		missing(t, requireEnv, stderr, filepath.Base(bin)+" exited 3")
	}
	res := Result{Stderr: stderr, ExitCode: code, Elapsed: elapsed}
	res.Line = lastLine(stdout)
	if perr := json.Unmarshal([]byte(res.Line), &res.Result); perr != nil || res.Client == "" {
		t.Fatalf("interop: %s check %s: no JSON result line (exit %d, %v)\nstdout:\n%s\nstderr:\n%s",
			client, strings.Join(args, " "), code, err, stdout, stderr)
	}
	if res.OK != (code == 0) {
		t.Errorf("interop: %s check: ok=%v but exit code %d", client, res.OK, code)
	}
	t.Logf("interop: %s", res.Summary())
	return res
}

// missing skips (or, with requireEnv=1, fails) because a runtime is not
// installed; the scripts' message ("java/mvn not available: ...") says which.
func missing(t testing.TB, requireEnv, stderr, fallback string) {
	t.Helper()
	msg := strings.TrimSpace(stderr)
	if i := strings.LastIndex(msg, "\n"); i >= 0 {
		msg = msg[i+1:]
	}
	if msg == "" {
		msg = fallback
	}
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("interop: %s (and %s=1 requires it)", msg, requireEnv)
	}
	t.Skipf("interop: %s (set %s=1 to make this a failure)", msg, requireEnv)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

func tail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}

// run runs bin with args and extra env under a timeout, in its own process
// group (harness.RunGroup).
func run(timeout time.Duration, env []string, bin string, args ...string) (stdout, stderr string, code int, err error) {
	return harness.RunGroup(context.Background(), timeout, env, bin, args...)
}

// RunCrossChecks runs the cross-client checks against the nameserver addr:
// what one of the Java, Go and Node clients produced (count messages to
// topicPrefix+<client>), the other two consume and verify byte for byte,
// each in a new consumer group from the first offset, counting only that
// run's messages.
func RunCrossChecks(t *testing.T, addr, topicPrefix, count string) {
	clients := []struct {
		name     string
		run      func(t testing.TB, args ...string) Result
		sendMode string
	}{
		{"java", RunJavaCheck, "async"},
		{"go", RunGoCheck, "batch"},
		{"node", RunNodeCheck, "async"},
	}
	for _, p := range clients {
		t.Run("cross/"+p.name+"-produces", func(t *testing.T) {
			topic := topicPrefix + strings.ToUpper(p.name[:1]) + p.name[1:]
			prod := p.run(t, "produce", "-n", addr, "-t", topic, "-count", count, "-send-mode", p.sendMode)
			prod.RequireOK(t)
			for _, c := range clients {
				if c.name == p.name {
					continue
				}
				t.Run(c.name+"-consumes", func(t *testing.T) {
					c.run(t, "consume", "-n", addr, "-t", topic, "-run", prod.Run, "-count", count).RequireOK(t)
				})
			}
		})
	}
}
