package store

import (
	"fmt"
	"github.com/rmqgo/rmq/broker/internal/pace"
	"time"

	"github.com/rmqgo/rmq/broker/store/consumequeue"
)

// LmqListener is told about light message queues (docs/lite-topics.md §3.3,
// §3.6). Created and Appended run on the dispatcher goroutine after
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

// DeleteLmqs removes LMQs (docs/lite-topics.md §3.6): their consume-queue entries
// and min/max records, their next-offset counters, and one count each. The
// CommitLog is untouched. Under the LMQ lock, an LMQ is kept when a message
// for it was appended but not dispatched yet (its next offset is ahead of
// the consume queue) or when del, called with its current state, says no:
// a send racing with expiry is never lost. It returns the names deleted and
// tells the LMQ listeners.
func (s *Store) DeleteLmqs(names []string, del func(lmq string, st consumequeue.QueueState) bool) ([]string, error) {
	if len(names) >= rangeDeleteMin {
		return s.deleteLmqRuns(names, del, s.lmqDeletePacer().Yield)
	}
	return s.deleteLmqPoints(names, 0, del)
}

// deleteLmqPoints deletes LMQs one by one (point deletes). With a mark
// (not 0), only LMQs that still carry it go; the others lose it.
func (s *Store) deleteLmqPoints(names []string, mark uint32, del func(lmq string, st consumequeue.QueueState) bool) ([]string, error) {
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
			id := consumequeue.QueueID{Topic: n, QueueID: 0}
			st, marked, ok := s.cq.StateMark(id, mark)
			if !ok {
				continue
			}
			if next, ok := t.next[n]; (ok && next != st.Max) || (mark != 0 && !marked) || (del != nil && !del(n, st)) {
				if mark != 0 {
					s.cq.Unmark(id, mark)
				}
				continue
			}
			ids = append(ids, id)
		}
		if err := s.cq.DeleteQueues(ids); err != nil {
			t.mu.Unlock()
			if mark != 0 {
				// Nothing of the rest is deleted: no mark may outlive this.
				for _, n := range names[start:] {
					s.cq.Unmark(consumequeue.QueueID{Topic: n, QueueID: 0}, mark)
				}
			}
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
func (s *Store) deleteLmqRuns(names []string, del func(lmq string, st consumequeue.QueueState) bool, yield func()) ([]string, error) {
	seq := s.lmqCreated.Load()
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if isLmq(n) {
			want[n] = true
		}
	}
	// Every other queue that could sit between two names splits runs.
	others := newNameSorter()
	s.cq.Range(func(id consumequeue.QueueID, _ consumequeue.QueueState) bool {
		if !isLmq(id.Topic) {
			return true
		}
		if id.QueueID != 0 {
			// Not an LMQ shape: keep the whole topic.
			delete(want, id.Topic)
		}
		if id.QueueID != 0 || !want[id.Topic] {
			others.add(id.Topic)
		}
		return true
	})
	picked := newNameSorter()
	ids := make([]consumequeue.QueueID, 0, len(want))
	for n := range want {
		picked.add(n)
		ids = append(ids, consumequeue.QueueID{Topic: n, QueueID: 0})
	}
	mark := s.cq.MarkNames(ids)
	return s.deleteRuns(seq, quietSince{}, mark, picked.sorted(yield), others.sorted(yield), del, yield)
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
	yield := s.lmqDeletePacer().Yield
	// Quiet: every LMQ append so far is dispatched, so the pass below sees
	// final states; while no LMQ append follows and no mark is cleared,
	// they stay final and the per-LMQ re-check can be skipped.
	s.lmq.mu.Lock()
	appends, lastEnd := s.lmq.appends, s.lmq.lastEnd
	s.lmq.mu.Unlock()
	q := quietSince{ok: s.cq.DispatchedOffset() >= lastEnd, appends: appends, cleared: s.cq.MarksCleared()}
	// Pass 1 marks and counts, and allocates nothing: most sweeps, every
	// liteTtlCheckInterval over millions of LMQs, pick nothing.
	picked := 0
	t0 := time.Now()
	mark := s.cq.MarkWhere(func(id consumequeue.QueueID, st consumequeue.QueueState) bool {
		if id.QueueID != 0 || !isLmq(id.Topic) || !pick(id.Topic, st) {
			return false
		}
		picked++
		return true
	}, yield)
	if picked == 0 {
		return nil, nil
	}
	if picked < rangeDeleteMin {
		// deleteLmqPoints deletes by name and drops the marks it does not use.
		return s.deleteLmqPoints(s.markedNames(mark, yield).names(), mark, recheck)
	}
	// Pass 2: every other LMQ-named queue splits the runs. A queue whose
	// mark a dispatch clears from here on, or an LMQ created from here on,
	// is caught by these counts.
	t1 := time.Now()
	seq, cleared := s.lmqCreated.Load(), s.cq.MarksCleared()
	others, kept := s.otherLmqs(mark, yield)
	picked -= kept
	sortedOthers := others.sorted(yield)
	t2 := time.Now()
	if len(sortedOthers) <= picked/gapRatio {
		// Few others (a mass expiry): the runs are the gaps between them,
		// deleted without sorting, or even reading, the picked names.
		out, done, why, err := s.deleteGaps(mark, sortedOthers, seq, cleared, picked, yield)
		if done {
			s.log.Info("deleted LMQs by gaps", "picked", picked, "kept", len(sortedOthers), "deleted", len(out),
				"mark", t1.Sub(t0), "others", t2.Sub(t1), "delete", time.Since(t2), "err", err)
			return out, err
		}
		// An LMQ changed meanwhile: the general way, from a fresh look.
		s.log.Info("LMQ deletion by gaps gave way", "reason", why, "picked", picked, "kept", len(sortedOthers), "after", time.Since(t0))
	}
	// The names before the others: a queue whose mark is cleared in
	// between is then among the others, or among the names with its mark
	// gone (deleteRuns keeps it).
	names := s.markedNames(mark, yield)
	if s.cq.MarksCleared() != cleared || len(sortedOthers) <= picked/gapRatio {
		seq = s.lmqCreated.Load()
		others, _ = s.otherLmqs(mark, yield)
		sortedOthers = others.sorted(yield)
	}
	t3 := time.Now()
	out, err := s.deleteRuns(seq, q, mark, names.sorted(yield), sortedOthers, recheck, yield)
	s.log.Info("deleted LMQs by runs", "picked", picked, "kept", len(sortedOthers), "deleted", len(out),
		"mark", t1.Sub(t0), "others", t2.Sub(t1), "names", t3.Sub(t2), "delete", time.Since(t3), "err", err)
	return out, err
}

// gapRatio: DeleteLmqsWhere deletes by gaps when the LMQs kept are at
// most 1/gapRatio of those deleted (at most that many range deletes
// per deleted LMQ; sorting the kept then costs less than sorting the
// deleted).
const gapRatio = 8

// markedNames collects the LMQs (queue 0) that carry mark.
func (s *Store) markedNames(mark uint32, yield func()) *nameSorter {
	var names nameSorter
	s.cq.RangeMarked(mark, func(id consumequeue.QueueID, _ consumequeue.QueueState) {
		if id.QueueID == 0 {
			names.add(id.Topic)
		}
	}, yield)
	return &names
}

// otherLmqs collects every LMQ-named queue that does not carry mark. A
// topic with a queue other than 0 is not an LMQ shape: its queue 0 loses
// the mark (kept counts those) and the topic is kept whole.
func (s *Store) otherLmqs(mark uint32, yield func()) (others *nameSorter, kept int) {
	others = newNameSorter()
	nonLmqShape := map[string]bool{}
	s.cq.RangeUnmarked(mark, func(id consumequeue.QueueID, _ consumequeue.QueueState) {
		if isLmq(id.Topic) {
			if id.QueueID != 0 {
				nonLmqShape[id.Topic] = true
			}
			others.add(id.Topic)
		}
	}, yield)
	for n := range nonLmqShape {
		id := consumequeue.QueueID{Topic: n, QueueID: 0}
		if _, marked, _ := s.cq.StateMark(id, mark); marked {
			s.cq.Unmark(id, mark)
			kept++
		}
	}
	return others, kept
}

// deleteGaps deletes the LMQs that carry mark (about picked of them) when
// others, sorted and distinct, are every other LMQ-named queue as of the
// creation count seq and the cleared-mark count cleared: then every queue
// with keys between two neighbouring others (or before the first, or after
// the last) is one to delete, and each gap goes with one range delete per
// key space, without reading the deleted names. Under the LMQ lock with no
// dispatch round in flight, each chunk of gaps is deleted only if no LMQ
// was created and no mark cleared since, and no marked LMQ has an append
// on its way; otherwise it returns done false, having deleted only keys of
// LMQs that still carry mark (dropped from memory by the caller's next
// steps) and no table entry.
func (s *Store) deleteGaps(mark uint32, others []string, seq int64, cleared uint64, picked int, yield func()) (out []string, done bool, why string, err error) {
	t := s.lmq
	gaps := len(others) + 1
	for start := 0; start < gaps; start += lmqRunChunk {
		end := min(start+lmqRunChunk, gaps)
		if h := s.beforeGapCommit; h != nil {
			h()
		}
		t.mu.Lock()
		s.dispatchMu.Lock()
		switch {
		case s.lmqCreated.Load() != seq:
			why = "an LMQ was created"
		case s.cq.MarksCleared() != cleared:
			why = "an LMQ got a message"
		case s.markedInFlight(mark):
			why = "an LMQ has a message on its way"
		}
		if why != "" {
			s.dispatchMu.Unlock()
			t.mu.Unlock()
			return nil, false, why, nil
		}
		derr := s.cq.DeleteGaps(lmqPrefix, others, start, end)
		s.dispatchMu.Unlock()
		t.mu.Unlock()
		if derr != nil {
			// These gaps and the rest are all still there: their LMQs keep
			// their keys and lose the mark; the gaps before go.
			var keep []consumequeue.QueueID
			s.cq.RangeMarked(mark, func(id consumequeue.QueueID, _ consumequeue.QueueState) {
				if start == 0 || id.Topic > others[start-1] {
					keep = append(keep, id)
				}
			}, yield)
			for _, id := range keep {
				s.cq.Unmark(id, mark)
			}
			return s.dropMarked(mark, picked, yield), true, "", fmt.Errorf("store: delete LMQs: %w", derr)
		}
		yield()
	}
	return s.dropMarked(mark, picked, yield), true, "", nil
}

// markedInFlight reports an LMQ that carries mark with an append not
// dispatched yet (caller holds the LMQ lock and dispatchMu).
func (s *Store) markedInFlight(mark uint32) bool {
	for n, next := range s.lmq.next {
		if st, marked, ok := s.cq.StateMark(consumequeue.QueueID{Topic: n, QueueID: 0}, mark); ok && marked && next != st.Max {
			return true
		}
	}
	return false
}

// lmqDeletePacer paces one deletion of many LMQs (LmqDeleteWork /
// LmqDeleteRest of the config).
func (s *Store) lmqDeletePacer() *pace.Pacer {
	return pace.New(s.cfg.LmqDeleteWork, s.cfg.LmqDeleteRest)
}

// quietSince says that the caller saw final LMQ states while the append
// count was appends.
type quietSince struct {
	ok      bool
	appends uint64
	cleared uint64 // the consume queue's MarksCleared then
}

// deleteRuns deletes names (sorted and distinct, marked with mark in the consume
// queue's table) by runs; others (sorted) are every other LMQ-named queue
// seen since the LMQ creation count was seq. Each chunk of names, under the
// LMQ lock with no dispatch round in flight, range-deletes the keys of the
// names that still qualify (unmarking the others); then dropMarked drops
// the marked queues from memory shard by shard. A message appended to a
// queue in between keeps it (its dispatch clears the mark, or it is in
// flight when dropMarked looks), with its new entries after the tombstones.
func (s *Store) deleteRuns(seq int64, quiet quietSince, mark uint32, sorted, others []string, del func(lmq string, st consumequeue.QueueState) bool, yield func()) ([]string, error) {
	// split[i] is true when an other queue lies between sorted[i-1] and
	// sorted[i]; other[i] when sorted[i] is itself among the others (it
	// became one after the names were read): it is kept and splits too.
	split := make([]bool, len(sorted))
	other := make([]bool, len(sorted))
	j := 0
	for i, n := range sorted {
		if i%lmqRunChunk == lmqRunChunk-1 {
			yield()
		}
		for j < len(others) && others[j] < n {
			if i > 0 && others[j] > sorted[i-1] {
				split[i] = true
			}
			j++
		}
		other[i] = j < len(others) && others[j] == n
	}
	unmarkFrom := func(i int) {
		for _, n := range sorted[i:] {
			s.cq.Unmark(consumequeue.QueueID{Topic: n, QueueID: 0}, mark)
		}
	}
	var rest []string
	var err error
	t := s.lmq
	for start := 0; start < len(sorted); start += lmqRunChunk {
		end := min(start+lmqRunChunk, len(sorted))
		t.mu.Lock()
		s.dispatchMu.Lock()
		if s.lmqCreated.Load() != seq {
			s.dispatchMu.Unlock()
			t.mu.Unlock()
			// A new LMQ may sit inside a run: the rest the point way.
			rest, err = s.deleteLmqPoints(sorted[start:], mark, del)
			break
		}
		// No LMQ changed since the caller's pass: its choice stands.
		unchanged := quiet.ok && t.appends == quiet.appends && s.cq.MarksCleared() == quiet.cleared
		// A run is its first and last name: the keys between go.
		var runs []consumequeue.KeyRun
		var run consumequeue.KeyRun
		for i := start; i < end; i++ {
			n := sorted[i]
			if split[i] && run.N > 0 {
				runs, run = append(runs, run), consumequeue.KeyRun{}
			}
			if other[i] {
				s.cq.Unmark(consumequeue.QueueID{Topic: n, QueueID: 0}, mark)
				if run.N > 0 {
					runs, run = append(runs, run), consumequeue.KeyRun{}
				}
				continue
			}
			if !unchanged {
				id := consumequeue.QueueID{Topic: n, QueueID: 0}
				st, marked, ok := s.cq.StateMark(id, mark)
				if !ok {
					continue // gone already: its keys are not there either
				}
				next, inFlight := t.next[n]
				if inFlight && next == st.Max {
					inFlight = false
				}
				if !marked || inFlight || (del != nil && !del(n, st)) {
					// Kept (a dispatched entry cleared the mark, or one is
					// on its way): it splits the run.
					s.cq.Unmark(id, mark)
					if run.N > 0 {
						runs, run = append(runs, run), consumequeue.KeyRun{}
					}
					continue
				}
			}
			if run.N == 0 {
				run.First = n
			}
			run.Last = n
			run.N++
		}
		if run.N > 0 {
			runs = append(runs, run)
		}
		derr := s.cq.DeleteRunKeys(runs)
		s.dispatchMu.Unlock()
		t.mu.Unlock()
		if derr != nil {
			// The batch did not commit: these keys are all still there.
			unmarkFrom(start)
			err = fmt.Errorf("store: delete LMQs: %w", derr)
			break
		}
		// Let waiting goroutines (sends) run between chunks rather than
		// at the scheduler's 10 ms preemption.
		yield()
	}
	out := s.dropMarked(mark, len(sorted), yield)
	return append(out, rest...), err
}

// dropMarked drops the queues that still carry mark (about expect of
// them) from the consume queue's table, one shard at a time under the LMQ
// lock with no dispatch round in flight, and tells the LMQ listeners. An
// LMQ with an append not dispatched yet is kept.
func (s *Store) dropMarked(mark uint32, expect int, yield func()) []string {
	out := make([]string, 0, expect)
	t := s.lmq
	for k := 0; k < s.cq.ShardCount(); k++ {
		t.mu.Lock()
		s.dispatchMu.Lock()
		for n, next := range t.next {
			id := consumequeue.QueueID{Topic: n, QueueID: 0}
			if s.cq.ShardOf(id) != k {
				continue
			}
			st, ok := s.cq.State(n, 0)
			switch {
			case !ok:
			case next == st.Max:
				delete(t.next, n) // dispatched: the consume queue says as much
			default:
				s.cq.Unmark(id, mark)
			}
		}
		from := len(out)
		out = s.cq.DeleteMarked(k, mark, out)
		t.count = max(0, t.count-(len(out)-from))
		s.dispatchMu.Unlock()
		t.mu.Unlock()
		for _, l := range s.lmqListenerList() {
			for _, n := range out[from:] {
				l.OnLmqDeleted(n)
			}
		}
		yield()
	}
	return out
}

// lmqRunChunk bounds the LMQs of one locked step of deleteLmqRuns.
const lmqRunChunk = 4096
