package bench

import (
	"context"
	"time"
)

// reporter reproduces the Java tools' two scheduled tasks: a snapshot every
// second into a window of the last 10, and a report every interval once the
// window is full.
type reporter[S any] struct {
	w    window[S]
	done chan struct{}
}

// startReporter runs until ctx ends; call wait to get the final window.
func startReporter[S any](ctx context.Context, interval time.Duration, snap func(time.Time) S, report func(now time.Time, begin, end S)) *reporter[S] {
	r := &reporter[S]{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		rep := time.NewTicker(interval)
		defer rep.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				r.w.add(snap(now))
			case now := <-rep.C:
				if r.w.full() {
					begin, end := r.w.ends()
					report(now, begin, end)
				}
			}
		}
	}()
	return r
}

// wait blocks until the reporter stopped and returns its snapshots.
func (r *reporter[S]) wait() []S {
	<-r.done
	return r.w.snaps
}
