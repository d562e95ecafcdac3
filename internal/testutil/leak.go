package testutil

import (
	"testing"

	"go.uber.org/goleak"
)

// leakIgnores are goroutines that outlive every test by design and are not
// ours to stop.
func leakIgnores() []goleak.Option {
	return []goleak.Option{
		// netpoll starts its pollers (one per poller shard) on first use and
		// keeps them, blocked in epoll_wait, for the life of the process;
		// nothing can stop them.
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
		// Pebble watches each file it writes with a ticker that stops when
		// the file is closed; an Open that fails on a MANIFEST fault returns
		// without closing the files it opened (broker/store/kv
		// TestOpenFaults). A database left open is still reported: its own
		// background goroutines are not ignored.
		goleak.IgnoreAnyFunction("github.com/cockroachdb/pebble/v2/vfs.(*diskHealthCheckingFile).startTicker.func1"),
	}
}

// VerifyNoLeaks runs the package's tests and then fails the run when a
// goroutine is left behind (one not stopped at Shutdown or Close), apart
// from the process-wide ones of leakIgnores. Use it as the whole TestMain.
func VerifyNoLeaks(m *testing.M) {
	goleak.VerifyTestMain(m, leakIgnores()...)
}
