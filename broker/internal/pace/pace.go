// Package pace lets a long background job (the lite sweep) leave the CPU
// to requests on a small machine.
//
// runtime.Gosched alone is not enough: it puts the job at the back of the
// global run queue, and its processor takes the job straight back from
// there without looking at the other processor's local queue, so requests
// queued behind a GC worker or a Pebble compaction there (each runs up to
// the scheduler's 10 ms slice) wait for it. Measured on two cores
// (make bench-lite with LITE_BENCH_SWEEP_TRACE): goroutines runnable for up
// to 20–30 ms during a sweep. So at a yield point where goroutines are
// waiting for a processor, the job parks for a moment instead: its
// processor then runs its own queue, the global one, and steals from the
// other's.
package pace

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// Pacer is called at the job's yield points. Yield is cheap enough to call
// every few hundred items: it looks at the scheduler only once per
// checkEvery. Not safe for concurrent use: one per goroutine.
type Pacer struct {
	work, rest time.Duration
	last       time.Time // last rest
	checked    time.Time // last look at the scheduler
	slept      time.Duration
	parks      int
	runnable   []metrics.Sample
}

const (
	// checkEvery is how often Yield looks at the scheduler: the most a
	// request waits behind the job for a processor, give or take.
	checkEvery = 250 * time.Microsecond
	// park is how long the job steps aside at a time when goroutines are
	// waiting, and maxPark the longest it stays aside at one yield point
	// (so it runs at least checkEvery in every checkEvery+maxPark).
	park    = 50 * time.Microsecond
	maxPark = time.Millisecond
	// runnableMetric counts goroutines waiting for a processor (Go 1.26).
	runnableMetric = "/sched/goroutines/runnable:goroutines"
)

// New returns a pacer that, at a yield point reached at least work after
// its last rest, sleeps rest (rest ≤ 0: never rests; it still steps aside
// for waiting goroutines).
func New(work, rest time.Duration) *Pacer {
	return &Pacer{work: work, rest: rest, runnable: []metrics.Sample{{Name: runnableMetric}}}
}

// Yield is a yield point.
func (p *Pacer) Yield() {
	if p == nil {
		runtime.Gosched()
		return
	}
	now := time.Now()
	if now.Sub(p.checked) < checkEvery {
		return
	}
	p.checked = now
	if p.rest > 0 {
		if p.last.IsZero() {
			p.last = now
		}
		if now.Sub(p.last) >= p.work {
			time.Sleep(p.rest)
			p.last = time.Now()
			p.slept += p.last.Sub(now)
			return
		}
	}
	if n := stepAside(p.runnable, now); n > 0 {
		p.parks += n
		p.checked = time.Now()
		return
	}
	// Nobody waits: Gosched still runs this processor's due timers.
	runtime.Gosched()
}

// StepAside is a yield point for a background goroutine that keeps no
// Pacer and that others may end up waiting for (a Pebble compaction: a
// starved one lets level 0 fill up until writes stall): while goroutines
// wait for a processor it parks once, for park, so that its processor
// runs them. It must not be called holding anything a request needs. It
// reports whether it parked.
func StepAside() bool {
	if !othersWaiting([]metrics.Sample{{Name: runnableMetric}}) {
		return false
	}
	time.Sleep(park)
	return true
}

// stepAside parks while goroutines are waiting for a processor: until they
// have run (the job, woken, may be put ahead of them on its processor),
// but not past maxPark, so that under a load that keeps every processor
// busy the job still gets a share. It returns how many times it parked.
func stepAside(runnable []metrics.Sample, now time.Time) int {
	n := 0
	for deadline := now.Add(maxPark); othersWaiting(runnable) && (n == 0 || time.Now().Before(deadline)); n++ {
		time.Sleep(park)
	}
	return n
}

// othersWaiting reports goroutines waiting for a processor.
func othersWaiting(runnable []metrics.Sample) bool {
	metrics.Read(runnable)
	v := runnable[0].Value
	return v.Kind() == metrics.KindUint64 && v.Uint64() > 0
}

// Slept is the time spent resting.
func (p *Pacer) Slept() time.Duration {
	if p == nil {
		return 0
	}
	return p.slept
}

// Parks is how many times the job stepped aside for waiting goroutines.
func (p *Pacer) Parks() int {
	if p == nil {
		return 0
	}
	return p.parks
}
