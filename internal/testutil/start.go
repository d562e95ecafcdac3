package testutil

import (
	"context"
	"testing"
	"time"
)

// Runner is a server or client that starts and shuts down.
type Runner interface {
	Start() error
	Shutdown(ctx context.Context) error
}

// StartWithShutdown starts r, failing t if it does not start, and shuts r
// down when t ends, giving it timeout; a failed shutdown goes to report
// (t.Errorf where it must not fail, t.Logf where it may).
func StartWithShutdown(t testing.TB, r Runner, timeout time.Duration, report func(format string, args ...any)) {
	t.Helper()
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			report("shutdown: %v", err)
		}
	})
}
