package pace

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestPacer: without a rest a pacer never sleeps; with one it rests at the
// yield points reached once its work slice is used up, and not before.
func TestPacer(t *testing.T) {
	for _, p := range []*Pacer{nil, New(time.Millisecond, 0)} {
		for i := 0; i < 100; i++ {
			p.Yield()
		}
		if p.Slept() != 0 {
			t.Fatalf("a pacer without rest slept %v", p.Slept())
		}
	}
	p := New(time.Hour, time.Millisecond)
	for i := 0; i < 100; i++ {
		p.Yield()
	}
	if p.Slept() != 0 {
		t.Fatalf("slept %v before its work slice was used up", p.Slept())
	}
	p = New(0, time.Millisecond)
	for i := 0; i < 5; i++ {
		p.Yield()
	}
	if p.Slept() < 5*time.Millisecond {
		t.Fatalf("slept %v at 5 yield points with no work slice, want ≥ 5 ms", p.Slept())
	}
}

// TestPacerStepsAsideForWaitingGoroutines: on one processor, a goroutine
// that is ready to run makes the pacer park at its yield points; the
// other goroutine then gets the processor.
func TestPacerStepsAsideForWaitingGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ran, stop := spinner()
	p := New(time.Hour, 0)
	deadline := time.Now().Add(5 * time.Second)
	for p.Parks() < 5 && time.Now().Before(deadline) {
		// Busy, as a sweep is between its yield points.
		for t0 := time.Now(); time.Since(t0) < 300*time.Microsecond; {
		}
		p.Yield()
	}
	stop()
	if p.Parks() < 5 {
		t.Fatalf("parked %d times in 5 s with a goroutine waiting, want ≥ 5", p.Parks())
	}
	if ran.Load() == 0 {
		t.Fatal("the waiting goroutine never ran")
	}
	if p.Slept() != 0 {
		t.Fatalf("a pacer without rest rested %v", p.Slept())
	}
}

// TestStepAside: with a goroutine waiting for the only processor,
// StepAside parks (and that goroutine runs meanwhile).
func TestStepAside(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ran, stop := spinner()
	parked := false
	for deadline := time.Now().Add(5 * time.Second); !parked && time.Now().Before(deadline); {
		parked = StepAside()
	}
	before := ran.Load()
	for i := 0; i < 3; i++ {
		StepAside()
	}
	stop()
	if !parked {
		t.Fatal("StepAside never parked with a goroutine waiting")
	}
	if ran.Load() == before {
		t.Fatal("the waiting goroutine did not run while StepAside parked")
	}
}

// spinner starts a goroutine that is always ready to run (counting its
// turns in ran) until stop.
func spinner() (ran *atomic.Int64, stop func()) {
	ran = new(atomic.Int64)
	var quit atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !quit.Load() {
			ran.Add(1)
			runtime.Gosched()
		}
	}()
	return ran, func() { quit.Store(true); <-done }
}
