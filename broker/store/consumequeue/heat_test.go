package consumequeue

import (
	"fmt"
	"slices"
	"testing"
)

// A queue taking at least 1/hotShare of a window's entries is hot for the
// next window; note reports a new set once per change; the queues counted
// per window are bounded.
func TestHeat(t *testing.T) {
	var h heat
	round := func(perQueue map[QueueID]int) (hot []QueueID, changed bool) {
		var qs []queueRound
		for id, n := range perQueue {
			qs = append(qs, queueRound{id: id, n: n})
		}
		return h.note(qs)
	}
	a, b, c := QueueID{"T", 1}, QueueID{"T", 0}, QueueID{"S", 3}
	// Window 1: a and b take 45% each, c 10%, 2000 cold queues the rest.
	// The cold ones come first and fill the tracked set, so c is not
	// counted; a and b were counted before that.
	if _, changed := round(map[QueueID]int{a: heatWindow * 45 / 100, b: heatWindow * 45 / 100}); changed {
		t.Fatal("a set before the window ended")
	}
	cold := map[QueueID]int{}
	for i := range 2000 {
		cold[QueueID{fmt.Sprintf("cold-%d", i), 0}] = 1
	}
	round(cold)
	hot, changed := round(map[QueueID]int{c: heatWindow / 10})
	if !changed || !slices.Equal(hot, []QueueID{b, a}) {
		t.Fatalf("window 1: hot %v changed %v, want [T-0 T-1] (key order)", hot, changed)
	}
	if len(h.counts) != 0 || h.total != 0 {
		t.Fatalf("counts not reset: %d queues, total %d", len(h.counts), h.total)
	}
	// Window 2: the same shares: no change reported.
	round(map[QueueID]int{a: heatWindow / 2, b: heatWindow/2 - 1})
	if _, changed := round(map[QueueID]int{a: 1}); changed {
		t.Fatal("window 2: unchanged set reported as a change")
	}
	// Window 3: c alone, and b just at the threshold.
	round(map[QueueID]int{b: heatWindow / hotShare})
	hot, changed = round(map[QueueID]int{c: heatWindow - heatWindow/hotShare})
	if !changed || !slices.Equal(hot, []QueueID{c, b}) {
		t.Fatalf("window 3: hot %v changed %v, want [S-3 T-0]", hot, changed)
	}
	// Counting stops adding queues at heatTracked.
	many := map[QueueID]int{}
	for i := range 3 * heatTracked {
		many[QueueID{fmt.Sprintf("m-%d", i), 0}] = 1
	}
	round(many)
	if len(h.counts) != heatTracked {
		t.Fatalf("%d queues counted, want at most %d", len(h.counts), heatTracked)
	}
}
