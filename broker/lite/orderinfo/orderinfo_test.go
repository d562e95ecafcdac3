package orderinfo

import (
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
)

func TestBlockAndCommit(t *testing.T) {
	c := testutil.NewFakeClock(time.UnixMilli(1_000_000))
	m := New(Options{Now: c.Now})
	k := Key{"%LMQ%$p$a", "g"}
	if m.Blocked(k, "") {
		t.Fatal("blocked without state")
	}
	if got := m.CommitAndNext(k, 7, 1); got != 8 {
		t.Fatalf("commit without state = %d, want 8", got)
	}
	popTime := c.Now().UnixMilli()
	counts := m.Update(k, "A1", popTime, 30_000, []int64{3, 4, 5})
	if len(counts) != 3 || counts[0] != 0 || counts[2] != 0 {
		t.Fatalf("first delivery counts %v", counts)
	}
	for _, tc := range []struct {
		attempt string
		want    bool
	}{{"", true}, {"A2", true}, {"A1", false}} {
		if got := m.Blocked(k, tc.attempt); got != tc.want {
			t.Errorf("Blocked(%q) = %v", tc.attempt, got)
		}
	}
	if got := m.CommitAndNext(k, 4, popTime+1); got != Stale {
		t.Fatalf("stale popTime: %d", got)
	}
	if got := m.CommitAndNext(k, 9, popTime); got != Illegal {
		t.Fatalf("not popped: %d", got)
	}
	// Out of order: the commit point stays at the first un-acked offset.
	if got := m.CommitAndNext(k, 4, popTime); got != 3 {
		t.Fatalf("ack 4 → %d, want 3", got)
	}
	if got := m.CommitAndNext(k, 3, popTime); got != 5 {
		t.Fatalf("ack 3 → %d, want 5", got)
	}
	if !m.Blocked(k, "") {
		t.Fatal("5 still un-acked: must block")
	}
	if got := m.CommitAndNext(k, 5, popTime); got != 6 {
		t.Fatalf("ack 5 → %d, want 6", got)
	}
	if m.Blocked(k, "") || m.Count() != 0 {
		t.Fatalf("all acked: blocked=%v count=%d", m.Blocked(k, ""), m.Count())
	}
}

func TestRedeliveryCountsAndVisibility(t *testing.T) {
	c := testutil.NewFakeClock(time.UnixMilli(5_000_000))
	m := New(Options{Now: c.Now})
	k := Key{"%LMQ%$p$a", "g"}
	p1 := c.Now().UnixMilli()
	m.Update(k, "A1", p1, 1000, []int64{0, 1})
	c.Advance(1001 * time.Millisecond)
	if m.Blocked(k, "A9") {
		t.Fatal("invisible time over: must not block")
	}
	// Redelivery by another attempt: counts rise.
	p2 := c.Now().UnixMilli()
	if got := m.Update(k, "A2", p2, 1000, []int64{0, 1, 2}); got[0] != 1 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("second delivery counts %v", got)
	}
	// A retry of the same attempt does not count.
	if got := m.Update(k, "A2", p2, 1000, []int64{0}); got[0] != 1 {
		t.Fatalf("same attempt counts %v", got)
	}
	// Change invisible time: offset 0 visible only in 10 s.
	p3 := c.Now().UnixMilli()
	m.Update(k, "A3", p3, 1000, []int64{0})
	if !m.UpdateNextVisible(k, 0, p3, p3+10_000) {
		t.Fatal("UpdateNextVisible refused")
	}
	if m.UpdateNextVisible(k, 0, p3+1, p3+10_000) || m.UpdateNextVisible(k, 8, p3, 1) {
		t.Fatal("UpdateNextVisible accepted a wrong pop or offset")
	}
	c.Advance(2 * time.Second)
	if !m.Blocked(k, "") {
		t.Fatal("extended invisibility must still block")
	}
	c.Advance(9 * time.Second)
	if m.Blocked(k, "") {
		t.Fatal("extended invisibility over: must not block")
	}
	m.Clear(k)
	if m.Count() != 0 {
		t.Fatal("Clear")
	}
}

func TestReleaseTimer(t *testing.T) {
	released := make(chan Key, 4)
	m := New(Options{OnRelease: func(k Key) { released <- k }})
	defer m.Close()
	k := Key{"%LMQ%$p$a", "g"}
	now := time.Now().UnixMilli()
	m.Update(k, "", now, 50, []int64{0})
	select {
	case got := <-released:
		if got != k {
			t.Fatalf("released %v", got)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no release after the invisible time")
	}
	// Acked before the invisible time ends: no release.
	now = time.Now().UnixMilli()
	m.Update(k, "", now, 100, []int64{1})
	if got := m.CommitAndNext(k, 1, now); got != 2 {
		t.Fatalf("ack → %d", got)
	}
	select {
	case got := <-released:
		t.Fatalf("released %v after the ack", got)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestLocks(t *testing.T) {
	c := testutil.NewFakeClock(time.Unix(100, 0))
	l := NewLocks(time.Minute, c.Now)
	k := Key{"l", "g"}
	if !l.TryLock(k) || l.TryLock(k) {
		t.Fatal("TryLock")
	}
	l.Unlock(k)
	if !l.TryLock(k) {
		t.Fatal("relock after unlock")
	}
	c.Advance(61 * time.Second)
	if !l.TryLock(k) {
		t.Fatal("lease over: lock must be takeable")
	}
	c.Advance(61 * time.Second)
	if n := l.Sweep(); n != 1 {
		t.Fatalf("Sweep = %d", n)
	}
}
