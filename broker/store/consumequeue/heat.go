package consumequeue

import (
	"cmp"
	"slices"
	"sync"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// heat finds the queues that take a large share of the dispatched entries
// and names them to Pebble as hot ranges (kv.DB.SetHotRanges), so that its
// tables end at their edges: a table then holds one queue's newest
// entries, which overlap no older table, and compactions move or merge it
// down without rewriting the other queues' older entries.
//
// It counts entries per queue over windows of heatWindow entries (about
// what one memtable holds); a queue with at least 1/hotShare of a
// window's entries is hot for the next window, so at most hotShare
// queues are: each costs a table per flush, and a colder one's tables
// would be too small to be worth it. At most heatTracked queues are
// counted per window (a million lite topics cost no more): a queue hot
// enough to matter shows up within its first hundred entries.
type heat struct {
	mu     sync.Mutex
	counts map[QueueID]int
	total  int
	hot    []QueueID // sorted by key
}

const (
	heatWindow  = 1 << 17
	heatTracked = 1024
	hotShare    = 32
)

// note counts a committed round's entries; at the end of a window it
// returns the new hot set, changed reporting whether it differs from the
// previous one.
func (h *heat) note(qs []queueRound) (hot []QueueID, changed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = make(map[QueueID]int)
	}
	for i := range qs {
		q := &qs[i]
		h.total += q.n
		if c, ok := h.counts[q.id]; ok || len(h.counts) < heatTracked {
			h.counts[q.id] = c + q.n
		}
	}
	if h.total < heatWindow {
		return nil, false
	}
	for id, c := range h.counts {
		if c*hotShare >= h.total {
			hot = append(hot, id)
		}
	}
	clear(h.counts)
	h.total = 0
	slices.SortFunc(hot, compareQueueIDs)
	if slices.Equal(hot, h.hot) {
		return hot, false
	}
	h.hot = hot
	return hot, true
}

// compareQueueIDs orders queues as their keys ('q'|topic|0x00|qid).
func compareQueueIDs(a, b QueueID) int {
	if r := cmp.Compare(a.Topic, b.Topic); r != 0 {
		return r
	}
	return cmp.Compare(uint32(a.QueueID), uint32(b.QueueID))
}

// publishHot names the hot queues' entry ranges to Pebble.
func (s *Store) publishHot(hot []QueueID) {
	prefixes := make([][]byte, len(hot))
	for i, id := range hot {
		prefixes[i] = queuePrefix(kv.PrefixConsumeQueue, id.Topic, id.QueueID)
	}
	s.db.SetHotRanges(prefixes)
}
