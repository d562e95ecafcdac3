package store

import (
	"fmt"
	"slices"

	"github.com/rmqgo/rmq/broker/store/consumequeue"
)

// LmqListener is told about light message queues (lite-topic.md §3.3,
// §3.6, §10). Created and Appended run on the dispatcher goroutine after
// the round that wrote the entries committed (Created before the first
// Appended of that queue); Deleted runs on the caller of DeleteLmqs. None
// may block.
type LmqListener interface {
	// OnLmqCreated: the first entry of an LMQ that did not exist.
	OnLmqCreated(lmq string)
	// OnLmqAppended: an entry at offset (queue 0) stored at storeTime.
	OnLmqAppended(lmq string, offset, storeTime int64)
	// OnLmqDeleted: DeleteLmqs removed the LMQ.
	OnLmqDeleted(lmq string)
}

// AddLmqListener registers l.
func (s *Store) AddLmqListener(l LmqListener) {
	s.listenersMu.Lock()
	s.lmqListeners = append(s.lmqListeners, l)
	s.listenersMu.Unlock()
}

func (s *Store) lmqListenerList() []LmqListener {
	s.listenersMu.RLock()
	defer s.listenersMu.RUnlock()
	return s.lmqListeners
}

// notifyLmq tells the LMQ listeners about a committed dispatch round.
func (s *Store) notifyLmq(created []consumequeue.QueueID, arrivals []arrival) {
	ls := s.lmqListenerList()
	if len(ls) == 0 {
		return
	}
	for _, id := range created {
		if isLmq(id.Topic) {
			for _, l := range ls {
				l.OnLmqCreated(id.Topic)
			}
		}
	}
	for _, a := range arrivals {
		if a.queueID == 0 && isLmq(a.topic) {
			for _, l := range ls {
				l.OnLmqAppended(a.topic, a.offset, a.storeTime)
			}
		}
	}
}

func isLmq(topic string) bool {
	return len(topic) >= len(lmqPrefix) && topic[:len(lmqPrefix)] == lmqPrefix
}

// LmqCount is the number of LMQs that hold at least one entry (the quota's
// count and the rocketmq_lmq_number gauge).
func (s *Store) LmqCount() int {
	s.lmq.mu.Lock()
	defer s.lmq.mu.Unlock()
	return s.lmq.count
}

// lmqDeleteChunk bounds the LMQs deleted under one hold of the LMQ lock, so
// lite sends (which take it to assign LMQ offsets) wait at most one chunk.
const lmqDeleteChunk = 512

// DeleteLmqs removes LMQs (lite-topic.md §3.6): their consume-queue entries
// and min/max records, their next-offset counters, and one count each. The
// CommitLog is untouched. Under the LMQ lock, an LMQ is kept when a message
// for it was appended but not dispatched yet (its next offset is ahead of
// the consume queue) or when del, called with its current state, says no:
// a send racing with expiry is never lost. It returns the names deleted and
// tells the LMQ listeners.
func (s *Store) DeleteLmqs(names []string, del func(lmq string, st consumequeue.QueueState) bool) ([]string, error) {
	if len(names) >= rangeDeleteMin {
		return s.deleteLmqRuns(names, del)
	}
	return s.deleteLmqPoints(names, del)
}

// deleteLmqPoints deletes LMQs one by one (point deletes).
func (s *Store) deleteLmqPoints(names []string, del func(lmq string, st consumequeue.QueueState) bool) ([]string, error) {
	var out []string
	t := s.lmq
	for start := 0; start < len(names); start += lmqDeleteChunk {
		chunk := names[start:min(start+lmqDeleteChunk, len(names))]
		ids := make([]consumequeue.QueueID, 0, len(chunk))
		t.mu.Lock()
		for _, n := range chunk {
			if !isLmq(n) {
				continue
			}
			st, ok := s.cq.State(n, 0)
			if !ok {
				continue
			}
			if next, ok := t.next[n]; ok && next != st.Max {
				continue
			}
			if del != nil && !del(n, st) {
				continue
			}
			ids = append(ids, consumequeue.QueueID{Topic: n, QueueID: 0})
		}
		if err := s.cq.DeleteQueues(ids); err != nil {
			t.mu.Unlock()
			return out, fmt.Errorf("store: delete LMQs: %w", err)
		}
		deleted := make([]string, 0, len(ids))
		for _, id := range ids {
			delete(t.next, id.Topic)
			if t.count > 0 {
				t.count--
			}
			deleted = append(deleted, id.Topic)
		}
		t.mu.Unlock()
		for _, l := range s.lmqListenerList() {
			for _, n := range deleted {
				l.OnLmqDeleted(n)
			}
		}
		out = append(out, deleted...)
	}
	return out, nil
}

// rangeDeleteMin is the number of LMQs from which DeleteLmqs deletes runs
// of adjacent LMQs with range tombstones.
const rangeDeleteMin = 256

// deleteLmqRuns deletes LMQs by runs: the names are sorted, and names that
// are adjacent in key order (no other LMQ between them) are deleted with one
// range delete per key space. Correctness rests on knowing every queue that
// could lie between two names: all start with the LMQ prefix, the in-memory
// table lists them, and an LMQ created after that listing bumps lmqCreated
// (checked with no dispatch round in flight, so none has keys in Pebble
// that the table does not show yet). If one was created, the rest goes the
// point-delete way. Each chunk re-checks every name under the LMQ lock, as
// the point path does.
func (s *Store) deleteLmqRuns(names []string, del func(lmq string, st consumequeue.QueueState) bool) ([]string, error) {
	seq := s.lmqCreated.Load()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if isLmq(n) {
			want[n] = true
		}
	}
	// Every other queue that could sit between two names splits runs.
	var others []string
	s.cq.Range(func(id consumequeue.QueueID, _ consumequeue.QueueState) bool {
		if !isLmq(id.Topic) {
			return true
		}
		if id.QueueID != 0 {
			// Not an LMQ shape: keep the whole topic.
			delete(want, id.Topic)
		}
		if id.QueueID != 0 || !want[id.Topic] {
			others = append(others, id.Topic)
		}
		return true
	})
	sorted := make([]string, 0, len(want))
	for n := range want {
		sorted = append(sorted, n)
	}
	return s.deleteRuns(seq, quietSince{}, sorted, others, del)
}

// DeleteLmqsWhere deletes, in one pass over the in-memory queue table,
// every LMQ that pick chooses (called with the state seen then, under the
// table's shard locks: it must not call back into the store), by runs of
// range deletes as DeleteLmqs does for large sets. If an LMQ may have
// changed since the pass (a lite message was appended), recheck (nil:
// pick) must agree again, under the LMQ lock, with the current state; pick
// must therefore choose only LMQs that stay chosen while unchanged (expiry
// by age does).
func (s *Store) DeleteLmqsWhere(pick, recheck func(lmq string, st consumequeue.QueueState) bool) ([]string, error) {
	if recheck == nil {
		recheck = pick
	}
	seq := s.lmqCreated.Load()
	// Quiet: every LMQ append so far is dispatched, so the pass below sees
	// final states; while no LMQ append follows, they stay final and the
	// per-LMQ re-check can be skipped.
	s.lmq.mu.Lock()
	appends, lastEnd := s.lmq.appends, s.lmq.lastEnd
	s.lmq.mu.Unlock()
	quiet := s.cq.DispatchedOffset() >= lastEnd
	var names, others []string
	nonLmqShape := map[string]bool{}
	s.cq.Range(func(id consumequeue.QueueID, st consumequeue.QueueState) bool {
		if !isLmq(id.Topic) {
			return true
		}
		if id.QueueID != 0 {
			nonLmqShape[id.Topic] = true
			others = append(others, id.Topic)
			return true
		}
		if pick(id.Topic, st) {
			names = append(names, id.Topic)
		} else {
			others = append(others, id.Topic)
		}
		return true
	})
	if len(nonLmqShape) > 0 {
		kept := names[:0]
		for _, n := range names {
			if nonLmqShape[n] {
				others = append(others, n)
			} else {
				kept = append(kept, n)
			}
		}
		names = kept
	}
	if len(names) < rangeDeleteMin {
		return s.deleteLmqPoints(names, recheck)
	}
	q := quietSince{ok: quiet, appends: appends}
	return s.deleteRuns(seq, q, names, others, recheck)
}

// quietSince says that the caller saw final LMQ states while the append
// count was appends.
type quietSince struct {
	ok      bool
	appends uint64
}

// deleteRuns deletes names (unsorted) by runs; others are every other
// LMQ-named queue seen since the LMQ creation count was seq.
func (s *Store) deleteRuns(seq int64, quiet quietSince, names, others []string, del func(lmq string, st consumequeue.QueueState) bool) ([]string, error) {
	sorted := names
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	slices.Sort(others)
	// split[i] is true when an other queue lies between sorted[i-1] and
	// sorted[i].
	split := make([]bool, len(sorted))
	j := 0
	for i, n := range sorted {
		for j < len(others) && others[j] < n {
			if i > 0 && others[j] > sorted[i-1] {
				split[i] = true
			}
			j++
		}
	}
	var out []string
	t := s.lmq
	for start := 0; start < len(sorted); start += lmqRunChunk {
		end := min(start+lmqRunChunk, len(sorted))
		t.mu.Lock()
		s.dispatchMu.Lock()
		if s.lmqCreated.Load() != seq {
			s.dispatchMu.Unlock()
			t.mu.Unlock()
			rest, err := s.deleteLmqPoints(sorted[start:], del)
			return append(out, rest...), err
		}
		// No LMQ changed since the caller's pass: its choice stands.
		unchanged := quiet.ok && t.appends == quiet.appends
		var runs [][]consumequeue.QueueID
		var run []consumequeue.QueueID
		for i := start; i < end; i++ {
			n := sorted[i]
			if split[i] && len(run) > 0 {
				runs, run = append(runs, run), nil
			}
			if !unchanged {
				st, ok := s.cq.State(n, 0)
				if !ok {
					continue // gone already: its keys are not there either
				}
				next, inFlight := t.next[n]
				if inFlight && next == st.Max {
					inFlight = false
				}
				if inFlight || (del != nil && !del(n, st)) {
					// Kept: it splits the run.
					if len(run) > 0 {
						runs, run = append(runs, run), nil
					}
					continue
				}
			}
			run = append(run, consumequeue.QueueID{Topic: n, QueueID: 0})
		}
		if len(run) > 0 {
			runs = append(runs, run)
		}
		gone, err := s.cq.DeleteRuns(runs)
		s.dispatchMu.Unlock()
		if err != nil {
			t.mu.Unlock()
			return out, fmt.Errorf("store: delete LMQs: %w", err)
		}
		deleted := make([]string, 0, len(gone))
		for _, id := range gone {
			delete(t.next, id.Topic)
			if t.count > 0 {
				t.count--
			}
			deleted = append(deleted, id.Topic)
		}
		t.mu.Unlock()
		for _, l := range s.lmqListenerList() {
			for _, n := range deleted {
				l.OnLmqDeleted(n)
			}
		}
		out = append(out, deleted...)
	}
	return out, nil
}

// lmqRunChunk bounds the LMQs of one locked step of deleteLmqRuns.
const lmqRunChunk = 4096
