package ha

import (
	"testing"
	"time"
)

// TestDeadlineRefresh: the deadline is set on the first frame, not again
// while it is at least d ahead, and always lies between d and 9d/8 after
// the last refresh, so a connection silent since then fails after that.
func TestDeadlineRefresh(t *testing.T) {
	const d = 800 * time.Millisecond
	var sets []time.Time
	x := deadline{set: func(at time.Time) error { sets = append(sets, at); return nil }, d: d}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		after time.Duration // since t0
		sets  int           // deadlines set so far
	}{
		{0, 1},
		{50 * time.Millisecond, 1},
		{100 * time.Millisecond, 1}, // exactly d ahead still
		{101 * time.Millisecond, 2},
		{150 * time.Millisecond, 2},
		{5 * time.Second, 3},
	} {
		now := t0.Add(tc.after)
		x.refresh(now)
		if len(sets) != tc.sets {
			t.Fatalf("after %v: %d deadlines set, want %d", tc.after, len(sets), tc.sets)
		}
		if left := sets[len(sets)-1].Sub(now); left < d || left > d+d/8 {
			t.Fatalf("after %v: deadline %v ahead, want within [%v, %v]", tc.after, left, d, d+d/8)
		}
	}
}
