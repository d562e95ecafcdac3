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
	}
}

// VerifyNoLeaks runs the package's tests and then fails the run when a
// goroutine is left behind (one not stopped at Shutdown or Close), apart
// from the process-wide ones of leakIgnores. Use it as the whole TestMain.
func VerifyNoLeaks(m *testing.M) {
	goleak.VerifyTestMain(m, leakIgnores()...)
}
