// Package testutil holds what every test of the project shares: waiting for
// a condition, a fake clock and a goroutine-leak check (the fake nameserver
// is in fakens). Only tests import it; it imports none of our packages, so
// that every package's tests can use it.
package testutil

import (
	"errors"
	"testing"
	"time"
)

// PollInterval is how often Eventually and WaitFor look again.
const PollInterval = 10 * time.Millisecond

// slowWait is how long a wait may take before it is logged: slow waits are
// where a suite's time goes.
const slowWait = 5 * time.Second

// Eventually calls f until it returns nil, and fails the test with f's last
// error when timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := f()
		if err == nil {
			if d := time.Since(start); d > slowWait {
				t.Logf("testutil: condition met after %v", d.Round(100*time.Millisecond))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(PollInterval)
	}
}

// WaitFor is Eventually for a condition without an error of its own: what
// names it in the failure.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, func() error {
		if cond() {
			return nil
		}
		return errors.New("still waiting for " + what)
	})
}
