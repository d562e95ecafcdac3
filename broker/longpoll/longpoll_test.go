package longpoll

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
)

// tagOnly matches one tag code.
type tagOnly int64

func (f tagOnly) MatchTagsCode(c int64) bool    { return c == int64(f) }
func (f tagOnly) MatchProperties(_ []byte) bool { return true }

type recorder struct {
	mu      sync.Mutex
	resumed []int32 // opaques
	ch      chan int32
}

func newRecorder() *recorder { return &recorder{ch: make(chan int32, 64)} }

func (r *recorder) resume(_ context.Context, _ *remoting.Channel, req *remoting.Command) {
	r.mu.Lock()
	r.resumed = append(r.resumed, req.Opaque)
	r.mu.Unlock()
	r.ch <- req.Opaque
}

func (r *recorder) wait(t *testing.T, opaque int32) {
	t.Helper()
	select {
	case got := <-r.ch:
		if got != opaque {
			t.Fatalf("resumed %d, want %d", got, opaque)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("request %d not resumed", opaque)
	}
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-r.ch:
		t.Fatalf("request %d resumed unexpectedly", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func req(opaque int32) *remoting.Command {
	c := remoting.NewRequest(11, nil, nil)
	c.Opaque = opaque
	return c
}

func newService(t *testing.T, cfg Config, max func(string, int32) int64) (*Service, *recorder, *testutil.FakeClock) {
	t.Helper()
	clk := testutil.NewFakeClock(time.Unix(1_700_000_000, 0))
	if cfg.Now == nil {
		cfg.Now = clk.Now
	}
	if max == nil {
		max = func(string, int32) int64 { return 0 }
	}
	r := newRecorder()
	s := New(cfg, r.resume, max)
	t.Cleanup(s.Close)
	return s, r, clk
}

func TestArrivalWakesMatchingRequests(t *testing.T) {
	s, r, clk := newService(t, Config{}, nil)
	dl := clk.Now().Add(time.Minute)
	must(t, s.Park(Request{Command: req(1), Topic: "T", QueueID: 0, Offset: 5, Deadline: dl}))
	must(t, s.Park(Request{Command: req(2), Topic: "T", QueueID: 0, Offset: 5, Filter: tagOnly(97), Deadline: dl}))
	must(t, s.Park(Request{Command: req(3), Topic: "T", QueueID: 1, Offset: 5, Deadline: dl}))
	must(t, s.Park(Request{Command: req(4), Topic: "T", QueueID: 0, Offset: 9, Deadline: dl}))

	s.OnArrival("T", 0, 4, 0, 0) // below every offset: nobody
	r.none(t)
	s.OnArrival("T", 0, 5, 98, 0) // offset 5, tag 98: request 1 only
	r.wait(t, 1)
	r.none(t)
	s.OnArrival("T", 0, 6, 97, 0) // tag 97: request 2
	r.wait(t, 2)
	r.none(t)
	if s.Len() != 2 {
		t.Fatalf("parked %d, want 2", s.Len())
	}
	s.OnArrival("X", 0, 100, 0, 0) // other topic
	r.none(t)
}

func TestDeadlineAndCheck(t *testing.T) {
	maxOff := atomic.Int64{}
	s, r, clk := newService(t, Config{}, func(string, int32) int64 { return maxOff.Load() })
	must(t, s.Park(Request{Command: req(1), Topic: "T", Offset: 3, Deadline: clk.Now().Add(time.Second)}))
	must(t, s.Park(Request{Command: req(2), Topic: "T", Offset: 3, Deadline: clk.Now().Add(10 * time.Second)}))
	must(t, s.Park(Request{Command: req(3), Topic: "T", Offset: 8, Filter: tagOnly(1), Deadline: clk.Now().Add(10 * time.Second)}))

	if next := s.ExpireDue(); !next.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("next deadline %v", next)
	}
	r.none(t)
	clk.Advance(time.Second)
	s.ExpireDue()
	r.wait(t, 1)

	// The queue grew past 3 (e.g. a filtered arrival was missed): Check wakes 2.
	maxOff.Store(4)
	s.Check()
	r.wait(t, 2)
	r.none(t)
	// Request 3 waits for offset 8: the periodic check ignores the filter
	// (no tag code known) as Java does.
	maxOff.Store(9)
	s.Check()
	r.wait(t, 3)
	if s.Len() != 0 {
		t.Fatalf("parked %d", s.Len())
	}
}

func TestExpiredWokenByArrivalOfOtherTag(t *testing.T) {
	s, r, clk := newService(t, Config{}, nil)
	must(t, s.Park(Request{Command: req(1), Topic: "T", Offset: 0, Filter: tagOnly(1), Deadline: clk.Now().Add(time.Second)}))
	clk.Advance(2 * time.Second)
	s.OnArrival("T", 0, 0, 2, 0) // no match, but the deadline passed
	r.wait(t, 1)
}

func TestMaxParkedAndClose(t *testing.T) {
	s, _, clk := newService(t, Config{MaxParked: 2}, nil)
	dl := clk.Now().Add(time.Minute)
	must(t, s.Park(Request{Command: req(1), Topic: "T", Deadline: dl}))
	must(t, s.Park(Request{Command: req(2), Topic: "T", Deadline: dl}))
	if err := s.Park(Request{Command: req(3), Topic: "T", Deadline: dl}); !errors.Is(err, ErrFull) {
		t.Fatalf("third park: %v", err)
	}
	s.Close()
	if err := s.Park(Request{Command: req(4), Topic: "T", Deadline: dl}); !errors.Is(err, ErrClosed) {
		t.Fatalf("park after close: %v", err)
	}
	if s.Len() != 0 {
		t.Fatal("close kept requests")
	}
}

// With the loop running, a deadline is honoured on time.
func TestLoopAnswersAtDeadline(t *testing.T) {
	r := newRecorder()
	s := New(Config{CheckInterval: time.Hour}, r.resume, func(string, int32) int64 { return 0 })
	defer s.Close()
	s.Start()
	start := time.Now()
	must(t, s.Park(Request{Command: req(7), Topic: "T", Deadline: start.Add(150 * time.Millisecond)}))
	r.wait(t, 7)
	if el := time.Since(start); el < 140*time.Millisecond || el > 2*time.Second {
		t.Fatalf("answered after %v", el)
	}
}

// The periodic check runs on its own with the loop.
func TestLoopChecks(t *testing.T) {
	r := newRecorder()
	var maxOff atomic.Int64
	s := New(Config{CheckInterval: 50 * time.Millisecond}, r.resume, func(string, int32) int64 { return maxOff.Load() })
	defer s.Close()
	s.Start()
	must(t, s.Park(Request{Command: req(8), Topic: "T", Offset: 1, Deadline: time.Now().Add(time.Minute)}))
	maxOff.Store(2)
	r.wait(t, 8)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWakeQueue(t *testing.T) {
	s, r, clk := newService(t, Config{}, nil)
	dl := clk.Now().Add(time.Minute)
	must(t, s.Park(Request{Command: req(1), Topic: "T", Offset: 3, Filter: tagOnly(1), Deadline: dl}))
	must(t, s.Park(Request{Command: req(2), Topic: "T", Offset: 5, Deadline: dl}))
	s.WakeQueue("T", 0, 3)
	r.none(t)
	s.WakeQueue("T", 0, 4) // request 1 waits for 3 < 4, regardless of its filter
	r.wait(t, 1)
	r.none(t)
	if s.Len() != 1 {
		t.Fatalf("parked %d", s.Len())
	}
}

// Drain answers every parked request at once (broker shutdown) and leaves
// the service usable.
func TestDrainAnswersParked(t *testing.T) {
	s, r, clk := newService(t, Config{}, nil)
	dl := clk.Now().Add(time.Minute)
	must(t, s.Park(Request{Command: req(1), Topic: "T", QueueID: 0, Offset: 5, Deadline: dl}))
	must(t, s.Park(Request{Command: req(2), Topic: "U", QueueID: 3, Offset: 0, Deadline: dl}))
	if n := s.Drain(); n != 2 {
		t.Fatalf("Drain = %d, want 2", n)
	}
	got := map[int32]bool{}
	for i := 0; i < 2; i++ {
		got[<-r.ch] = true
	}
	if !got[1] || !got[2] || s.Len() != 0 {
		t.Fatalf("resumed %v, parked %d", got, s.Len())
	}
	s.OnArrival("T", 0, 5, 0, 0) // nothing left to wake
	r.none(t)
	must(t, s.Park(Request{Command: req(3), Topic: "T", Deadline: dl}))
}
