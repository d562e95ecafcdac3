package testutil

import (
	"sync"
	"time"
)

// LoadSample is one operation of a Load: when it was due (open loop) or
// started (closed loop), and how long it took from then.
type LoadSample struct {
	At  time.Time
	Lat time.Duration
}

// Load runs an operation from several goroutines until Stop and records
// the latency of each run.
type Load struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	samples []LoadSample
}

// StartLoad runs op from workers goroutines. With rate 0 they run it back
// to back (closed loop). Otherwise the runs are due at fixed times, rate a
// second in all, and each is timed from when it was due (open loop), so a
// stalled server cannot hide its delay by slowing the workers down. op gets
// its worker's index and returns false to stop that worker (after
// reporting why).
func StartLoad(workers, rate int, op func(worker int) bool) *Load {
	l := &Load{stop: make(chan struct{})}
	due := make(chan time.Time, 1<<16)
	if rate > 0 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer close(due)
			start := time.Now()
			for i := 0; ; i++ {
				at := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
				if d := time.Until(at); d > 0 {
					select {
					case <-l.stop:
						return
					case <-time.After(d):
					}
				}
				select {
				case due <- at:
				case <-l.stop:
					return
				}
			}
		}()
	}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				var t0 time.Time
				if rate > 0 {
					at, ok := <-due
					if !ok {
						return
					}
					t0 = at
				} else {
					select {
					case <-l.stop:
						return
					default:
					}
					t0 = time.Now()
				}
				if !op(w) {
					return
				}
				l.mu.Lock()
				l.samples = append(l.samples, LoadSample{t0, time.Since(t0)})
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// Stop stops the workers, waits for them and returns every sample.
func (l *Load) Stop() []LoadSample {
	close(l.stop)
	l.wg.Wait()
	return l.samples
}
