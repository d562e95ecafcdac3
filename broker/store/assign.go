package store

import (
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/message"
)

// assigner hands out consume-queue offsets at append time (under the
// CommitLog's append lock), so queue order is physical order. Its table
// starts from the consume queues' max offsets, which recovery brought up to
// date before the first append.
type assigner struct {
	mu     sync.Mutex
	cq     *consumequeue.Store
	topics map[string][]int64 // topic → next offset by queue id; -1 = not loaded
}

func newAssigner(cq *consumequeue.Store) *assigner {
	return &assigner{cq: cq, topics: make(map[string][]int64)}
}

// AssignQueueOffset implements commitlog.QueueOffsetAssigner.
func (a *assigner) AssignQueueOffset(first message.View, n int) (int64, error) {
	switch message.TransactionType(first.SysFlag()) {
	case message.TransactionPreparedType, message.TransactionRollbackType:
		// Not dispatched to a consume queue, so they take no offset (as
		// RocketMQ does).
		return 0, nil
	}
	topic := first.Topic()
	qid := int(first.QueueID())
	a.mu.Lock()
	defer a.mu.Unlock()
	offs := a.topics[string(topic)] // no allocation for the lookup
	if qid >= len(offs) {
		grown := make([]int64, qid+1)
		copy(grown, offs)
		for i := len(offs); i <= qid; i++ {
			grown[i] = -1
		}
		offs = grown
		a.topics[string(topic)] = offs
	}
	if offs[qid] < 0 {
		offs[qid] = a.cq.MaxOffset(string(topic), int32(qid))
	}
	off := offs[qid]
	offs[qid] += int64(n)
	return off, nil
}

// forget drops a deleted topic's counters.
func (a *assigner) forget(topic string) {
	a.mu.Lock()
	delete(a.topics, topic)
	a.mu.Unlock()
}

// lmqTable assigns LMQ offsets for multi-dispatch (docs/lite-topics.md §3.2). Its
// lock is held across the append of a multi-dispatch message so LMQ offset
// order equals physical order.
type lmqTable struct {
	mu   sync.Mutex
	cq   *consumequeue.Store
	next map[string]int64
	// peak is the most entries next held since it was last replaced: a
	// Go map keeps its memory when emptied, and a backlog of millions of
	// new lite topics waiting for dispatch would keep hundreds of MiB.
	peak  int
	count int // distinct LMQs known
	// appends counts multi-dispatch appends and lastEnd is the CommitLog
	// end of the latest: DeleteLmqsWhere uses them to know that no LMQ
	// changed while it worked.
	appends uint64
	lastEnd int64
}

func newLMQTable(cq *consumequeue.Store) *lmqTable {
	t := &lmqTable{cq: cq, next: make(map[string]int64)}
	cq.Range(func(id consumequeue.QueueID, st consumequeue.QueueState) bool {
		if strings.HasPrefix(id.Topic, lmqPrefix) && st.Max > 0 {
			t.count++
		}
		return true
	})
	return t
}

const lmqPrefix = "%LMQ%"

// nextOf returns the next offset of LMQ name (caller holds mu) and whether
// the LMQ does not exist yet.
func (t *lmqTable) nextOf(name string) (int64, bool) {
	if off, ok := t.next[name]; ok {
		return off, false
	}
	st, ok := t.cq.State(name, 0)
	return st.Max, !ok || st.Max == 0
}

// prune drops the next offsets that a committed dispatch round caught up
// with: next then equals the consume queue's max, which nextOf reads
// instead. next keeps only LMQs with appends not dispatched yet, so it
// stays small with millions of LMQs and the sweep has nothing to delete
// from it.
func (t *lmqTable) prune(arrivals []arrival) {
	locked := false
	for _, a := range arrivals {
		if a.queueID != 0 || !isLmq(a.topic) {
			continue
		}
		if !locked {
			t.mu.Lock()
			locked = true
		}
		if next, ok := t.next[a.topic]; ok && next == a.offset+1 {
			delete(t.next, a.topic)
		}
	}
	if locked {
		t.shrink()
		t.mu.Unlock()
	}
}

// shrinkMin is the peak size of next from which an emptied next is
// replaced by a new map (caller holds mu).
const shrinkMin = 4096

// shrink gives back the memory of a next that a backlog grew and that
// dispatch has drained (caller holds mu).
func (t *lmqTable) shrink() {
	if t.peak >= shrinkMin && len(t.next) <= t.peak/64 {
		fresh := make(map[string]int64, len(t.next))
		for n, o := range t.next {
			fresh[n] = o
		}
		t.next, t.peak = fresh, len(t.next)
	}
}

// Forget drops an LMQ that the lifecycle manager deleted.
func (t *lmqTable) forget(name string) {
	t.mu.Lock()
	if _, ok := t.next[name]; ok || t.cq.MaxOffset(name, 0) > 0 {
		if t.count > 0 {
			t.count--
		}
	}
	delete(t.next, name)
	t.mu.Unlock()
}

func joinOffsets(offs []int64) string {
	var b []byte
	for i, o := range offs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, o, 10)
	}
	return string(b)
}

// reset drops every counter: they are reloaded from the consume queues
// (after a truncation, or when a replica becomes master).
func (a *assigner) reset() {
	a.mu.Lock()
	clear(a.topics)
	a.mu.Unlock()
}
