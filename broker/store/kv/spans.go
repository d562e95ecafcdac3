package kv

import (
	"bytes"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// spans decides where Pebble may not let one table run on into the next
// key range (Options.Experimental.SpanPolicyFunc: a flush or a compaction
// ends its current output table at the end key the func returns).
//
// Tables never span two key spaces (prefixes), and never span the edge of
// a hot range: the components name the ranges their writes append to at a
// high rate (the consume queues that take a large share of the messages).
// Why: the consume queues of a topic are appended to in parallel, so every
// memtable holds the tail of each; flushed as one table, it overlaps all
// the queues' tables in the level below, and every compaction out of L0
// rewrites whatever lies between the tails (the whole of the other
// queues' older entries) for nothing. Cut at the queues' edges, a flushed
// table holds one queue's newest entries, which overlap no older table,
// and Pebble moves or merges it down without rewriting older ones.
type spans struct {
	bounds atomic.Pointer[[][]byte] // sorted, distinct
}

// policy is the SpanPolicyFunc: the default policy, up to the next bound
// after start or the end of start's key space, whichever comes first.
func (s *spans) policy(start []byte) (pebble.SpanPolicy, []byte, error) {
	if len(start) == 0 {
		return pebble.SpanPolicy{}, []byte{0}, nil
	}
	var end []byte
	if start[0] != 0xFF {
		end = []byte{start[0] + 1}
	}
	if p := s.bounds.Load(); p != nil {
		b := *p
		i := sort.Search(len(b), func(i int) bool { return bytes.Compare(b[i], start) > 0 })
		if i < len(b) && (end == nil || bytes.Compare(b[i], end) < 0) {
			end = b[i]
		}
	}
	return pebble.SpanPolicy{}, end, nil
}

// SetHotRanges names the key prefixes that take writes at a high rate
// (replacing the previous set): Pebble's tables then end at their edges.
// Keep the set small (tens): each range costs at least one table per
// memtable flush.
func (d *DB) SetHotRanges(prefixes [][]byte) {
	b := make([][]byte, 0, 2*len(prefixes))
	for _, p := range prefixes {
		if len(p) == 0 {
			continue
		}
		b = append(b, slices.Clone(p))
		if e := PrefixEnd(p); e != nil {
			b = append(b, e)
		}
	}
	slices.SortFunc(b, bytes.Compare)
	b = slices.CompactFunc(b, bytes.Equal)
	d.spans.bounds.Store(&b)
}
