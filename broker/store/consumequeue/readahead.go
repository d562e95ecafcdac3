package consumequeue

import (
	"sync"
	"sync/atomic"
)

// A reader that wants at least readAheadMin entries of a queue with more
// behind them gets up to readAheadEntries read at once: the rest is kept
// for the queue's next read. A catch-up consumer pulls 32 at a time, and
// each pull opened a Pebble iterator whose index and data blocks a small
// block cache had evicted meanwhile (three preads per pull).
const (
	readAheadMin     = 8
	readAheadEntries = 256
	// readAheadQueues bounds the windows kept: 256 of 256 entries are
	// under 3 MiB.
	readAheadQueues = 256
)

// readAhead holds, per queue, one window of entries read ahead. Entries
// below a queue's max never change except by a deletion or truncation,
// which bumps gen before and after it: a window read under another gen
// is stale.
type readAhead struct {
	gen     atomic.Uint64
	mu      sync.Mutex
	windows map[QueueID]window
}

type window struct {
	gen     uint64
	entries []Entry // contiguous offsets, from entries[0].Offset
}

// invalidate is called before and after anything removes or rewrites
// entries.
func (r *readAhead) invalidate() { r.gen.Add(1) }

// get returns the n entries from offset when a current window holds them.
func (r *readAhead) get(id QueueID, offset int64, n int) ([]Entry, bool) {
	gen := r.gen.Load()
	r.mu.Lock()
	w, ok := r.windows[id]
	r.mu.Unlock()
	if !ok || w.gen != gen || len(w.entries) == 0 {
		return nil, false
	}
	i := offset - w.entries[0].Offset
	if i < 0 || i+int64(n) > int64(len(w.entries)) {
		return nil, false
	}
	j := int(i) + n
	return w.entries[i:j:j], true
}

// put keeps es, read under gen, as id's window if its offsets are
// contiguous.
func (r *readAhead) put(id QueueID, gen uint64, es []Entry) {
	if len(es) == 0 || es[len(es)-1].Offset-es[0].Offset != int64(len(es)-1) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.windows == nil {
		r.windows = make(map[QueueID]window)
	}
	if _, ok := r.windows[id]; !ok && len(r.windows) >= readAheadQueues {
		for k := range r.windows { // any one
			delete(r.windows, k)
			break
		}
	}
	r.windows[id] = window{gen: gen, entries: es}
}
