package dispatcher

import (
	"sync"
	"sync/atomic"
)

// HardEventCap bounds any client's event set whatever its soft cap.
const HardEventCap = 100000

// eventSet is one client's pending events: a FIFO of lmq names, each at
// most once (docs/lite-topics.md §5.6).
type eventSet struct {
	mu   sync.Mutex
	fifo []string
	head int
	in   map[string]struct{}

	softCap int   // resolved cap, guarded by mu
	capAt   int64 // when softCap was resolved (ms)

	// more: an offer to this set failed because it was full, so the
	// client's subscriptions may hold backlog that no event announces; the
	// next poll that drains the set to its low-water mark asks for a full
	// dispatch at once instead of waiting for a jittered retry.
	more atomic.Bool
	// backlog holds the lagging lmqs a full dispatch found beyond the set's
	// capacity (guarded by mu): refills take from it before walking the
	// whole subscription again, so draining N lagging lite topics costs
	// O(N) walks in all, not one O(N) walk per set's worth.
	backlog []string

	lastAccess   atomic.Int64 // any pop (ms)
	lastConsume  atomic.Int64 // a pop that returned messages
	lastLongPoll atomic.Int64 // parked in a long poll
}

func newEventSet(now int64) *eventSet {
	e := &eventSet{in: map[string]struct{}{}}
	// A new client counts as just seen, so it is not taken for a stalled
	// one before its first pop.
	e.lastAccess.Store(now)
	return e
}

// offer appends lmq unless present (success) or the set holds capacity
// events (failure).
func (e *eventSet) offer(lmq string, capacity int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.in[lmq]; ok {
		return true
	}
	if len(e.in) >= min(capacity, HardEventCap) {
		return false
	}
	e.in[lmq] = struct{}{}
	e.fifo = append(e.fifo, lmq)
	return true
}

// poll removes and returns the oldest event.
func (e *eventSet) poll() (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.head >= len(e.fifo) {
		return "", false
	}
	lmq := e.fifo[e.head]
	e.fifo[e.head] = ""
	e.head++
	delete(e.in, lmq)
	if e.head == len(e.fifo) {
		e.fifo, e.head = e.fifo[:0], 0
	} else if e.head > 1024 && e.head*2 > len(e.fifo) {
		e.fifo = append([]string(nil), e.fifo[e.head:]...)
		e.head = 0
	}
	return lmq, true
}

// drain empties the set and returns its events in order.
func (e *eventSet) drain() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := append([]string(nil), e.fifo[e.head:]...)
	e.fifo, e.head = nil, 0
	e.in = map[string]struct{}{}
	return out
}

func (e *eventSet) size() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.in)
}

// setBacklog replaces the lmqs kept for later refills.
func (e *eventSet) setBacklog(lmqs []string) {
	e.mu.Lock()
	e.backlog = lmqs
	e.mu.Unlock()
}

// takeBacklog removes and returns up to n kept lmqs (nil when none are
// left).
func (e *eventSet) takeBacklog(n int) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.backlog) == 0 {
		e.backlog = nil
		return nil
	}
	n = min(n, len(e.backlog))
	out := e.backlog[len(e.backlog)-n:]
	e.backlog = e.backlog[:len(e.backlog)-n]
	return out
}

// backlogLen is the number of kept lmqs.
func (e *eventSet) backlogLen() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.backlog)
}
