package store

import (
	"strconv"
	"testing"
)

// TestLMQNextShrinks: once dispatch has drained a backlog of new LMQs
// (prune deleted their next offsets), next is a new small map, not the
// emptied one that keeps the memory of its peak; a small backlog keeps
// its map, and entries still waiting survive the swap.
func TestLMQNextShrinks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		backlog   int
		waiting   int // entries left undispatched
		wantFresh bool
	}{
		{"big backlog drained", 3 * shrinkMin, 0, true},
		{"big backlog, a few still waiting", 3 * shrinkMin, 10, true},
		{"small backlog", shrinkMin / 2, 0, false},
		{"big backlog, much still waiting", 3 * shrinkMin, shrinkMin, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lt := &lmqTable{next: map[string]int64{}}
			var arrivals []arrival
			for i := range tc.backlog {
				n := "%LMQ%$p$" + strconv.Itoa(i)
				lt.next[n] = 1
				if i >= tc.waiting {
					arrivals = append(arrivals, arrival{topic: n, queueID: 0, offset: 0})
				}
			}
			lt.peak = len(lt.next)
			before := lt.next
			lt.prune(arrivals)
			if len(lt.next) != tc.waiting {
				t.Fatalf("%d next offsets left, want %d", len(lt.next), tc.waiting)
			}
			for i := range tc.waiting {
				if lt.next["%LMQ%$p$"+strconv.Itoa(i)] != 1 {
					t.Fatalf("waiting LMQ %d lost its next offset", i)
				}
			}
			// A key added to the old map shows in next only if next is it.
			before["probe"] = 0
			_, same := lt.next["probe"]
			if fresh := !same; fresh != tc.wantFresh {
				t.Fatalf("map replaced: %v, want %v", fresh, tc.wantFresh)
			}
			if tc.wantFresh && lt.peak != tc.waiting {
				t.Fatalf("peak %d after the swap, want %d", lt.peak, tc.waiting)
			}
		})
	}
}
