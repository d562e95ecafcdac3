package dispatcher

import (
	"sync"
	"sync/atomic"
)

// HardEventCap bounds any client's event set whatever its soft cap.
const HardEventCap = 100000

// eventSet is one client's pending events: a FIFO of lmq names, each at
// most once (§5.6).
type eventSet struct {
	mu   sync.Mutex
	fifo []string
	head int
	in   map[string]struct{}

	softCap int   // resolved cap, guarded by mu
	capAt   int64 // when softCap was resolved (ms)

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
