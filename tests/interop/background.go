package interop

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// Background is a check program running while the test does something
// else (e.g. a producer sending across an admin operation). Wait returns
// its Result; a test that ends first kills it.
type Background struct {
	client, requireEnv, bin string
	logDir                  string
	args                    []string
	done                    chan struct{}
	stdout, stderr          string
	code                    int
	err                     error
	elapsed                 time.Duration
}

// StartJavaCheck starts the Java check (scripts/java-client-check.sh) with
// args and returns at once; see RunJavaCheck. A missing java/mvn is
// reported (skip, or failure with RMQ_REQUIRE_JAVA=1) by Wait.
func StartJavaCheck(t testing.TB, args ...string) *Background {
	t.Helper()
	b := &Background{
		client: "java", requireEnv: EnvRequireJava,
		bin:  filepath.Join(harness.RepoRoot(t), "scripts", "java-client-check.sh"),
		args: args, done: make(chan struct{}),
	}
	b.logDir = t.TempDir()
	env := []string{"RMQ_JAVA_LOG_DIR=" + b.logDir}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	go func() {
		defer close(b.done)
		t0 := time.Now()
		b.stdout, b.stderr, b.code, b.err = harness.RunGroup(ctx, CheckTimeout, env, b.bin, b.args...)
		b.elapsed = time.Since(t0)
	}()
	return b
}

// Done is closed when the program has ended.
func (b *Background) Done() <-chan struct{} { return b.done }

// Wait waits for the program to end and returns its Result; like
// RunJavaCheck it does not fail the test when the check failed. Call it
// from the test's goroutine.
func (b *Background) Wait(t testing.TB) Result {
	t.Helper()
	<-b.done
	stderr := b.stderr + javaLogTail(b.code, b.logDir)
	return checkResult(t, b.client, b.requireEnv, b.bin, b.args, b.stdout, stderr, b.code, b.err, b.elapsed)
}
