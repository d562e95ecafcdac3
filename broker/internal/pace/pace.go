// Package pace lets a long background job (the lite sweep) leave the CPU
// to requests on a small machine: a goroutine that never sleeps holds a
// processor for the scheduler's whole 10 ms slice, and on two cores the
// send path's latency triples while it runs (measured by
// BenchmarkSweepUnderSends in broker/lite).
package pace

import (
	"runtime"
	"time"
)

// Pacer is called at the job's yield points (a few milliseconds of work
// apart). Not safe for concurrent use: one per goroutine.
type Pacer struct {
	work, rest time.Duration
	last       time.Time
	slept      time.Duration
}

// New returns a pacer that, at a yield point reached at least work after
// its last rest, sleeps rest (rest ≤ 0: never sleeps, only yields the
// processor).
func New(work, rest time.Duration) *Pacer { return &Pacer{work: work, rest: rest} }

// Yield is a yield point.
func (p *Pacer) Yield() {
	if p == nil || p.rest <= 0 {
		runtime.Gosched()
		return
	}
	now := time.Now()
	if p.last.IsZero() {
		p.last = now
	}
	if now.Sub(p.last) < p.work {
		runtime.Gosched()
		return
	}
	time.Sleep(p.rest)
	p.last = time.Now()
	p.slept += p.last.Sub(now)
}

// Slept is the time spent resting.
func (p *Pacer) Slept() time.Duration {
	if p == nil {
		return 0
	}
	return p.slept
}
