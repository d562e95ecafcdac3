// Package loop runs the broker services' background goroutines (sweepers,
// scanners): one that Start launches and Stop ends, waiting for it.
package loop

import (
	"context"
	"sync"
	"time"
)

// Runner owns at most one background goroutine. Start after Stop runs it
// again. The zero value is ready; safe for concurrent use.
type Runner struct {
	mu      sync.Mutex
	stop    chan struct{}
	done    chan struct{}
	started bool // by StartOnce
}

// Start runs fn on its own goroutine unless one runs already; fn must
// return once stop is closed.
func (r *Runner) Start(fn func(stop <-chan struct{})) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	r.stop, r.done = stop, done
	go func() {
		defer close(done)
		fn(stop)
	}()
}

// StartOnce is Start for services that run once: after the first call it
// does nothing, even once the goroutine has been stopped.
func (r *Runner) StartOnce(fn func(stop <-chan struct{})) {
	r.mu.Lock()
	first := !r.started
	r.started = true
	r.mu.Unlock()
	if first {
		r.Start(fn)
	}
}

// Running reports whether the goroutine runs: started and not stopped.
func (r *Runner) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stop != nil
}

// Stop closes the running goroutine's stop channel and waits for it to
// return; without one it does nothing.
func (r *Runner) Stop() {
	r.mu.Lock()
	stop, done := r.stop, r.done
	r.stop = nil
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Tick calls fn every period until stop is closed.
func Tick(stop <-chan struct{}, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// Repeat calls fn after each wait of interval() (read again every round,
// so a changed setting applies from the next one) until stop is closed.
func Repeat(stop <-chan struct{}, interval func() time.Duration, fn func()) {
	for {
		t := time.NewTimer(interval())
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		fn()
	}
}

// Rounds calls round until stop is closed. After each call it waits for
// the duration round returned (at least a millisecond: when the next
// deadline is due already) or for a wake-up on wake, whichever comes
// first: the loop of a service that knows its next deadline and is woken
// early by new work.
func Rounds(stop, wake <-chan struct{}, round func() time.Duration) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		t.Reset(max(round(), time.Millisecond))
		select {
		case <-stop:
			return
		case <-wake:
		case <-t.C:
		}
	}
}

// StopContext returns a context cancelled once stop is closed, for the
// calls of a loop that must end when the loop is stopped. The caller calls
// cancel when the loop returns; that also ends the goroutine watching stop.
func StopContext(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Wake sends on wake, a channel buffered for one, without blocking: a
// wake-up that finds one already pending coalesces with it.
func Wake(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}
