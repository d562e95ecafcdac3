package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exampleNames are the main packages under examples/.
var exampleNames = []string{"producer", "pushconsumer", "orderly", "transaction", "simpleconsumer"}

// buildExamples builds every example into a temporary directory (one go
// build, CGO off, with the workspace) and returns it.
func buildExamples(t *testing.T) string {
	t.Helper()
	root := harness.RepoRoot(t)
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	for _, n := range exampleNames {
		args = append(args, harness.ModulePrefix+"examples/"+n)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK="+filepath.Join(root, "go.work"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// exampleRun is one finished example program.
type exampleRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runExample runs bin with args (and env added) until it exits, at most
// within limit.
func runExample(t *testing.T, limit time.Duration, env []string, bin string, args ...string) exampleRun {
	t.Helper()
	r, err := execExample(limit, env, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s: exit %d in %v", filepath.Base(bin), strings.Join(args, " "), r.code, r.took.Round(10*time.Millisecond))
	return r
}

// execExample is runExample for any goroutine: it reports what went wrong
// instead of failing the test.
func execExample(limit time.Duration, env []string, bin string, args ...string) (exampleRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := exampleRun{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return r, fmt.Errorf("%s %v did not exit within %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, limit, r.stdout, r.stderr)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("%s: %w", filepath.Base(bin), err)
	}
	return r, nil
}

// expect fails unless the run exited with code and its stdout holds every
// one of lines.
func (r exampleRun) expect(t *testing.T, code int, lines ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, l := range lines {
		if !strings.Contains(r.stdout, l) {
			t.Fatalf("stdout lacks %q\nstdout:\n%s\nstderr:\n%s", l, r.stdout, r.stderr)
		}
	}
}

// TestExamples builds the programs under examples/ and runs each against
// one cluster, bounded (-count), checking exit status and output: the
// producer's 4×count+2 sends, a push consumer and a simple consumer (in
// parallel, different groups) consuming all of them, the orderly example's
// in-order check, the transaction example's check-back, and a consumer
// that cannot reach its count failing with exit 1. The nameserver is given
// with -n, and to the transaction example as NAMESRV_ADDR.
func TestExamples(t *testing.T) {
	skipShort(t, "builds and runs the examples against real processes")
	t.Parallel() // mostly waits: for deliveries, a check-back, a timeout
	bins := buildExamples(t)
	bin := func(name string) string { return filepath.Join(bins, name) }
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		// The transaction example waits for the check-back of its
		// unknown transaction: 2 s, not 6 s + 30 s.
		"transactionCheckInterval": "1000",
		"transactionTimeOut":       "2000",
	}})
	for _, tp := range []string{"ExTopic", "ExOrder", "ExTx", "ExEmpty"} {
		mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", tp, "-r", "4", "-w", "4")
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		for _, tp := range []string{"ExTopic", "ExOrder", "ExTx", "ExEmpty"} {
			if _, err := c.MQAdmin(t, "topicRoute", "-t", tp); err != nil {
				return err
			}
		}
		return nil
	})
	ns := c.NamesrvAddr()
	const perKind = 5
	sent := strconv.Itoa(4*perKind + 2) // sync, async, one-way, batch; a delay level, a timer

	t.Run("producer", func(t *testing.T) {
		runExample(t, time.Minute, nil, bin("producer"), "-n", ns, "-t", "ExTopic", "-count", strconv.Itoa(perKind)).
			expect(t, 0, "batch   SEND_OK 5 messages", "oneway  5 sent", "delayed SEND_OK", "timer   SEND_OK", "sent "+sent+" messages")
	})
	t.Run("consumers", func(t *testing.T) {
		// The two run at once, without t.Parallel: a parallel subtest
		// waits for a free slot of -parallel, which the package's other
		// tests held for minutes while this cluster idled.
		type result struct {
			r   exampleRun
			err error
		}
		push := make(chan result, 1)
		go func() {
			r, err := execExample(time.Minute, nil, bin("pushconsumer"), "-n", ns, "-t", "ExTopic", "-g", "ex_push_cg",
				"-count", sent, "-timeout", "30s")
			push <- result{r, err}
		}()
		simple := runExample(t, time.Minute, nil, bin("simpleconsumer"), "-n", ns, "-t", "ExTopic", "-g", "ex_simple_cg",
			"-count", sent, "-timeout", "30s")
		res := <-push
		if res.err != nil {
			t.Fatal(res.err)
		}
		pushed := res.r
		t.Logf("pushconsumer: exit %d in %v", pushed.code, pushed.took.Round(10*time.Millisecond))
		pushed.expect(t, 0, "consumed "+sent+" messages", `body="timer message"`, `body="delay level 1 (1 s)"`)
		simple.expect(t, 0, "acked "+sent+" messages", `body="timer message"`)
	})
	t.Run("orderly", func(t *testing.T) {
		runExample(t, time.Minute, nil, bin("orderly"), "-n", ns, "-t", "ExOrder", "-count", "4", "-timeout", "30s").
			expect(t, 0, "every order consumed in order")
	})
	t.Run("transaction", func(t *testing.T) {
		r := runExample(t, time.Minute, []string{"NAMESRV_ADDR=" + ns}, bin("transaction"), "-t", "ExTx", "-w", "30s")
		r.expect(t, 0, "broker asks about", "resolved 1 unknown transactions")
	})
	t.Run("fails", func(t *testing.T) {
		// Nothing to consume: the bounded run fails, clearly.
		r := runExample(t, time.Minute, nil, bin("pushconsumer"), "-n", ns, "-t", "ExEmpty", "-g", "ex_empty_cg",
			"-count", "1", "-timeout", "1s")
		r.expect(t, 1)
		if !strings.Contains(r.stderr, "0 of 1 messages consumed within 1s") {
			t.Fatalf("stderr: %s", r.stderr)
		}
	})
}
