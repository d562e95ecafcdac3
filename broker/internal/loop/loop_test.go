package loop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// countingBody is a loop body that counts its runs and waits for stop.
func countingBody() (*atomic.Int32, func(stop <-chan struct{})) {
	var runs atomic.Int32
	return &runs, func(stop <-chan struct{}) {
		runs.Add(1)
		<-stop
	}
}

// wantRuns fails unless the body of countingBody ran want times after
// the calls named by after.
func wantRuns(t *testing.T, runs *atomic.Int32, want int32, after string) {
	t.Helper()
	if n := runs.Load(); n != want {
		t.Fatalf("runs after %s = %d, want %d", after, n, want)
	}
}

func TestRunnerStartsOnceAndRestarts(t *testing.T) {
	var r Runner
	runs, body := countingBody()
	r.Start(body)
	r.Start(body) // already running: no second goroutine
	r.Stop()
	wantRuns(t, runs, 1, "Start, Start, Stop")
	r.Stop() // not running: nothing to wait for
	r.Start(body)
	r.Stop()
	wantRuns(t, runs, 2, "a restart")
}

func TestStartOnceNeverRestarts(t *testing.T) {
	var r Runner
	runs, body := countingBody()
	r.StartOnce(body)
	r.StartOnce(body)
	if !r.Running() {
		t.Fatal("not Running after StartOnce")
	}
	r.Stop()
	if r.Running() {
		t.Fatal("Running after Stop")
	}
	r.StartOnce(body)
	r.Stop()
	wantRuns(t, runs, 1, "StartOnce, StartOnce, Stop, StartOnce")
}

func TestStopWaitsForTheGoroutine(t *testing.T) {
	var r Runner
	var finished atomic.Bool
	r.Start(func(stop <-chan struct{}) {
		<-stop
		time.Sleep(10 * time.Millisecond)
		finished.Store(true)
	})
	r.Stop()
	if !finished.Load() {
		t.Fatal("Stop returned before the goroutine did")
	}
}

func TestTickAndRepeatCallUntilStopped(t *testing.T) {
	for name, run := range map[string]func(stop <-chan struct{}, fn func()){
		"Tick": func(stop <-chan struct{}, fn func()) { Tick(stop, time.Millisecond, fn) },
		"Repeat": func(stop <-chan struct{}, fn func()) {
			Repeat(stop, func() time.Duration { return time.Millisecond }, fn)
		},
	} {
		t.Run(name, func(t *testing.T) {
			var r Runner
			calls := make(chan struct{}, 100)
			r.Start(func(stop <-chan struct{}) {
				run(stop, func() {
					select {
					case calls <- struct{}{}:
					default:
					}
				})
			})
			for i := 0; i < 3; i++ {
				select {
				case <-calls:
				case <-time.After(5 * time.Second):
					t.Fatalf("call %d did not come", i)
				}
			}
			r.Stop()
			for len(calls) > 0 {
				<-calls
			}
			time.Sleep(5 * time.Millisecond)
			if len(calls) != 0 {
				t.Fatal("fn called after Stop returned")
			}
		})
	}
}

func TestStopContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(stop chan struct{}, cancel context.CancelFunc)
	}{
		{"stop closed", func(stop chan struct{}, _ context.CancelFunc) { close(stop) }},
		{"cancelled by the caller", func(_ chan struct{}, cancel context.CancelFunc) { cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			ctx, cancel := StopContext(stop)
			defer cancel()
			select {
			case <-ctx.Done():
				t.Fatal("context done before stop or cancel")
			case <-time.After(5 * time.Millisecond):
			}
			tc.end(stop, cancel)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("context not done")
			}
		})
	}
}

func TestWakeCoalesces(t *testing.T) {
	wake := make(chan struct{}, 1)
	Wake(wake)
	Wake(wake) // one pending already: must not block
	if n := len(wake); n != 1 {
		t.Fatalf("pending wake-ups = %d, want 1", n)
	}
	<-wake
	Wake(wake)
	if n := len(wake); n != 1 {
		t.Fatalf("pending wake-ups after a receive = %d, want 1", n)
	}
}

func TestRounds(t *testing.T) {
	stop, wake := make(chan struct{}), make(chan struct{}, 1)
	rounds := make(chan time.Time, 100)
	var wait atomic.Int64 // the duration the next round returns
	wait.Store(int64(time.Hour))
	done := make(chan struct{})
	go func() {
		defer close(done)
		Rounds(stop, wake, func() time.Duration {
			rounds <- time.Now()
			return time.Duration(wait.Load())
		})
	}()
	next := func(what string) {
		t.Helper()
		select {
		case <-rounds:
		case <-time.After(5 * time.Second):
			t.Fatalf("no round %s", what)
		}
	}
	next("at the start")
	select {
	case <-rounds:
		t.Fatal("a round before the hour returned by the first one")
	case <-time.After(20 * time.Millisecond):
	}
	wait.Store(0) // due at once: runs again after the minimum wait
	Wake(wake)
	next("after a wake-up")
	next("after a zero wait")
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Rounds did not return after stop")
	}
}
