package statictopic

import (
	"fmt"
	"math"

	"github.com/rmqgo/rmq/pkg/protocol"
	st "github.com/rmqgo/rmq/pkg/statictopic"
)

// Names and sizes of docs/static-topics.md §1, and the arithmetic of
// mapping items: package pkg/statictopic's, which the admin and client
// sides use too; the helpers below adapt it to item pointers.
const (
	// MockBrokerPrefix starts every fake broker name clients see for logic
	// queues.
	MockBrokerPrefix = st.MockBrokerPrefix
	// NoneBrokerName is the endpoint of a logic queue nobody leads.
	NoneBrokerName = st.MockBrokerNone
	// BlockSeqSize is the block a new leader's logic offset is rounded up to.
	BlockSeqSize = st.BlockSeqSize
)

// MockBrokerName is the broker name of the logic queues of a scope:
// "__syslo__global__" for the global scope.
func MockBrokerName(scope string) string { return st.MockBrokerName(scope) }

type item = protocol.LogicQueueMappingItem

// decided reports whether the item's logic offset is known.
func decided(it *item) bool { return st.LogicDecided(*it) }

// endDecided reports whether the item's physical end is fixed.
func endDecided(it *item) bool { return st.EndDecided(*it) }

// looseLogic maps a physical offset to a logic one for send results and
// min offsets (§2.1): -1 while the segment is undecided, clamped to the
// segment's physical range.
func looseLogic(it *item, p int64) int64 { return st.LogicLoosely(*it, p) }

// strictLogic maps a physical offset to a logic one (§2.1).
func strictLogic(it *item, p int64) int64 { return st.LogicStrictly(*it, p) }

// physical maps a logic offset into the item's physical queue.
func physical(it *item, x int64) int64 { return st.Physical(*it, x) }

// maxLogic is the highest logic offset the item covers as far as known.
func maxLogic(it *item) int64 { return st.MaxLogic(*it) }

// offsetDelta is what a client adds to a pulled message's physical offset.
func offsetDelta(it *item) int64 { return it.LogicOffset - it.StartOffset }

// findItem returns the last item whose logic offset is ≤ x, skipping
// undecided items when ignoreNegative; when none qualifies, the earliest
// candidate (§4). nil for an empty list or when every item is skipped.
func findItem(items []item, x int64, ignoreNegative bool) *item {
	if i := st.Find(items, x, ignoreNegative); i >= 0 {
		return &items[i]
	}
	return nil
}

// earliestDecided and latestDecided bound what can be read.
func earliestDecided(items []item) *item { return findItem(items, 0, true) }
func latestDecided(items []item) *item   { return findItem(items, math.MaxInt64, true) }

// nextItem returns the item after c (found by gen); with ignoreNegative an
// undecided successor yields nil, so reads never enter an undecided segment.
func nextItem(items []item, c *item, ignoreNegative bool) *item {
	for i := range items {
		if ignoreNegative && !decided(&items[i]) {
			continue
		}
		if items[i].Gen != c.Gen {
			continue
		}
		if i+1 >= len(items) {
			return nil
		}
		n := &items[i+1]
		if ignoreNegative && !decided(n) {
			return nil
		}
		return n
	}
	return nil
}

// leaderOf is the last item of a list (nil when empty).
func leaderOf(items []item) *item {
	if len(items) == 0 {
		return nil
	}
	return &items[len(items)-1]
}

// checkItems applies the per-list invariants of §3.1.
func checkItems(items []item) error {
	n := len(items)
	if n == 0 {
		return fmt.Errorf("empty item list")
	}
	for i := n - 1; i >= 0; i-- {
		it := &items[i]
		if it.Bname == "" {
			return fmt.Errorf("item gen %d: empty bname", it.Gen)
		}
		if it.StartOffset < 0 || it.Gen < 0 || it.QueueID < 0 {
			return fmt.Errorf("item gen %d: startOffset %d, gen %d and queueId %d must be >= 0", it.Gen, it.StartOffset, it.Gen, it.QueueID)
		}
		if n >= 2 && i != n-1 && !decided(it) {
			return fmt.Errorf("item gen %d: logicOffset %d: only the last item may be undecided", it.Gen, it.LogicOffset)
		}
		if it.LogicOffset < -1 {
			return fmt.Errorf("item gen %d: logicOffset %d (want -1 or >= 0)", it.Gen, it.LogicOffset)
		}
		if it.EndOffset != -1 && it.EndOffset < it.StartOffset {
			return fmt.Errorf("item gen %d: endOffset %d < startOffset %d", it.Gen, it.EndOffset, it.StartOffset)
		}
		if i == n-1 {
			continue
		}
		next := &items[i+1]
		if it.Gen >= next.Gen {
			return fmt.Errorf("gen must increase along the list: %d then %d", it.Gen, next.Gen)
		}
		if decided(it) && decided(next) {
			if it.LogicOffset >= next.LogicOffset {
				return fmt.Errorf("item gen %d: logicOffset %d not below the next item's %d", it.Gen, it.LogicOffset, next.LogicOffset)
			}
			if maxLogic(it) >= next.LogicOffset {
				return fmt.Errorf("item gen %d: max logic offset %d overlaps the next item's logicOffset %d", it.Gen, maxLogic(it), next.LogicOffset)
			}
		}
	}
	return nil
}

type physQueue struct {
	bname string
	qid   int
}

// checkNoReuse fails when one physical queue appears twice: in two logic
// queues or twice in one list (physical queues are never reused, §3.4).
func checkNoReuse(hosted map[int][]item) error {
	seen := map[physQueue]int{}
	for g, items := range hosted {
		for _, it := range items {
			k := physQueue{it.Bname, it.QueueID}
			if prev, ok := seen[k]; ok {
				return fmt.Errorf("physical queue %s/%d is mapped twice (logic queues %d and %d)", it.Bname, it.QueueID, prev, g)
			}
			seen[k] = g
		}
	}
	return nil
}
