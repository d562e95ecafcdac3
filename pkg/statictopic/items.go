// Package statictopic holds the admin- and client-side logic of static
// topics (docs/static-topics.md): the arithmetic of logic queue mapping items
// (§2.1, §4), the consistency checks (§3), the admin planners that create,
// extend and remap logic queues (§8) and the client's endpoint computation
// (§6). It does no I/O: package admin talks to the servers, package client
// routes requests.
package statictopic

import (
	"fmt"
	"math"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Names and sizes of docs/static-topics.md §1.
const (
	// MockBrokerPrefix prefixes the fake broker name of logic queues.
	MockBrokerPrefix = "__syslo__"
	// MockBrokerNone stands for the leader of a logic queue nobody claims.
	MockBrokerNone = "__syslo__none__"
	// BlockSeqSize is the block a new leader's logic offset is rounded up to.
	BlockSeqSize = 10000
	// DefaultTopic is the defaultTopic the admin sends with request 513.
	DefaultTopic = "TBW102"
)

// MockBrokerName is the broker name clients see for the logic queues of a
// scope: "__syslo__global__" for the global scope.
func MockBrokerName(scope string) string {
	if scope == "" || scope == protocol.MappingScopeGlobal {
		return MockBrokerPrefix + protocol.MappingScopeGlobal[2:]
	}
	return MockBrokerPrefix + scope
}

// IsMockBroker reports whether name is a logic-queue broker name.
func IsMockBroker(name string) bool { return strings.HasPrefix(name, MockBrokerPrefix) }

// Item is one segment of a logic queue.
type Item = protocol.LogicQueueMappingItem

// NewItem returns an item with the reserved fields at -1.
func NewItem(gen, queueID int, bname string, logicOffset int64) Item {
	return Item{Gen: gen, QueueID: queueID, Bname: bname, LogicOffset: logicOffset, StartOffset: 0, EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1}
}

// LogicDecided reports whether the item's logic offset is known.
func LogicDecided(it Item) bool { return it.LogicOffset >= 0 }

// EndDecided reports whether the item has a physical end.
func EndDecided(it Item) bool { return it.EndOffset > it.StartOffset }

// LogicLoosely maps a physical offset to a logic one (send results, min
// offsets): -1 while undecided, clamped to the item's range.
func LogicLoosely(it Item, p int64) int64 {
	switch {
	case it.LogicOffset < 0:
		return -1
	case p < it.StartOffset:
		return it.LogicOffset
	case it.EndOffset >= it.StartOffset && it.EndOffset < p:
		return it.LogicOffset + (it.EndOffset - it.StartOffset)
	}
	return it.LogicOffset + (p - it.StartOffset)
}

// LogicStrictly maps a physical offset to a logic one.
func LogicStrictly(it Item, p int64) int64 {
	if p < it.StartOffset {
		return it.LogicOffset
	}
	return it.LogicOffset + (p - it.StartOffset)
}

// Physical maps a logic offset into the item's physical queue.
func Physical(it Item, x int64) int64 { return x - it.LogicOffset + it.StartOffset }

// MaxLogic is the highest logic offset the item can hold.
func MaxLogic(it Item) int64 {
	if it.EndOffset >= it.StartOffset {
		return it.LogicOffset + it.EndOffset - it.StartOffset
	}
	return it.LogicOffset
}

// Find returns the index of the item that holds logic offset x: the last
// one whose logic offset is ≤ x (skipping undecided ones with
// ignoreNegative), else the earliest candidate; -1 when there is none.
func Find(items []Item, x int64, ignoreNegative bool) int {
	earliest := -1
	for i := len(items) - 1; i >= 0; i-- {
		if ignoreNegative && items[i].LogicOffset < 0 {
			continue
		}
		if items[i].LogicOffset <= x {
			return i
		}
		earliest = i
	}
	return earliest
}

// EarliestDecided is the index of the first decided item, or -1.
func EarliestDecided(items []Item) int { return Find(items, 0, true) }

// LatestDecided is the index of the last decided item, or -1.
func LatestDecided(items []Item) int { return Find(items, math.MaxInt64, true) }

// Leader returns the last item of a non-empty list.
func Leader(items []Item) Item { return items[len(items)-1] }

// RoundUp rounds a logic offset up to the next block boundary, leaving at
// least half a block of room for late writes to the old segment (§8.4).
func RoundUp(o, block int64) int64 {
	q, r := o/block, o%block
	if r < block/2 {
		return (q + 1) * block
	}
	return (q + 2) * block
}

// CheckItems validates one logic queue's item list (§3.1).
func CheckItems(items []Item) error {
	lastGen, lastOffset := -1, int64(-1)
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		if it.StartOffset < 0 || it.Gen < 0 || it.QueueID < 0 {
			return fmt.Errorf("item gen %d on %s queue %d: negative field", it.Gen, it.Bname, it.QueueID)
		}
		if it.Bname == "" {
			return fmt.Errorf("item gen %d: empty broker name", it.Gen)
		}
		if len(items) >= 2 && i <= len(items)-2 && it.LogicOffset < 0 {
			return fmt.Errorf("item gen %d on %s queue %d is not the latest but has no logic offset", it.Gen, it.Bname, it.QueueID)
		}
		if lastGen != -1 && it.Gen >= lastGen {
			return fmt.Errorf("item gens do not increase: %d before %d", it.Gen, lastGen)
		}
		if it.EndOffset != -1 && it.EndOffset < it.StartOffset {
			return fmt.Errorf("item gen %d: end offset %d below start offset %d", it.Gen, it.EndOffset, it.StartOffset)
		}
		if lastOffset != -1 && it.LogicOffset != -1 {
			if it.LogicOffset >= lastOffset {
				return fmt.Errorf("item logic offsets do not increase: %d (gen %d) before %d", it.LogicOffset, it.Gen, lastOffset)
			}
			if MaxLogic(it) >= lastOffset {
				return fmt.Errorf("item gen %d: max logic offset %d reaches the next item's %d", it.Gen, MaxLogic(it), lastOffset)
			}
		}
		lastGen, lastOffset = it.Gen, it.LogicOffset
	}
	return nil
}

// CheckImmutable verifies that a new item list may replace an old one
// (§3.3): items of the same gen keep their broker, queue and start offset
// and a decided logic offset; with equal epochs the leader stays the same.
func CheckImmutable(old, nw []Item, epochEqual bool) error {
	if len(old) == 0 {
		return nil
	}
	if len(nw) == 0 {
		return fmt.Errorf("the new item list is empty")
	}
	io, in := 0, 0
	for io < len(old) && in < len(nw) {
		o, n := old[io], nw[in]
		switch {
		case n.Gen < o.Gen:
			in++
		case o.Gen < n.Gen:
			io++
		default:
			if o.Bname != n.Bname || o.QueueID != n.QueueID || o.StartOffset != n.StartOffset {
				return fmt.Errorf("item gen %d changed: was %s queue %d start %d, now %s queue %d start %d",
					o.Gen, o.Bname, o.QueueID, o.StartOffset, n.Bname, n.QueueID, n.StartOffset)
			}
			if o.LogicOffset != -1 && o.LogicOffset != n.LogicOffset {
				return fmt.Errorf("item gen %d: decided logic offset %d changed to %d", o.Gen, o.LogicOffset, n.LogicOffset)
			}
			io++
			in++
		}
	}
	if epochEqual {
		ol, nl := Leader(old), Leader(nw)
		if ol.Gen != nl.Gen || ol.Bname != nl.Bname || ol.QueueID != nl.QueueID || ol.StartOffset != nl.StartOffset {
			return fmt.Errorf("leader differs but epoch equal: was gen %d %s queue %d, now gen %d %s queue %d",
				ol.Gen, ol.Bname, ol.QueueID, nl.Gen, nl.Bname, nl.QueueID)
		}
	}
	return nil
}
