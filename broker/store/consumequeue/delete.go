package consumequeue

import (
	"fmt"
	"runtime"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// smallQueue is the entry count up to which DeleteQueues removes a queue's
// entries with point deletes instead of a range tombstone: expired lite
// topics are mostly tiny, and a million range tombstones would slow every
// later read of the consume-queue key space until compaction.
const smallQueue = 64

// DeleteQueues removes the given queues (entries and min/max records) in one
// batch and drops them from the in-memory table. Each queue's entries lie in
// [Min, Max) (retention and truncation remove the rest), so a small queue
// takes one point delete per entry; a larger one a range delete over its key
// prefix.
func (s *Store) DeleteQueues(ids []QueueID) error {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	if len(ids) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, id := range ids {
		st, _ := s.State(id.Topic, id.QueueID)
		if n := st.Max - st.Min; n >= 0 && n <= smallQueue {
			for off := st.Min; off < st.Max; off++ {
				if err := b.Delete(entryKey(id.Topic, id.QueueID, off), nil); err != nil {
					return err
				}
			}
		} else {
			qp := queuePrefix(kv.PrefixConsumeQueue, id.Topic, id.QueueID)
			if err := b.DeleteRange(qp, kv.PrefixEnd(qp), nil); err != nil {
				return err
			}
		}
		for _, kind := range []byte{metaMax, metaMin} {
			if err := b.Delete(metaKey(id.Topic, id.QueueID, kind), nil); err != nil {
				return err
			}
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: delete %d queues: %w", len(ids), err)
	}
	for _, id := range ids {
		sh := s.shard(id)
		sh.mu.Lock()
		sh.queues.Delete(id)
		sh.mu.Unlock()
	}
	return nil
}

// Deleting many queues (the lite sweep) goes in three steps so that the
// in-memory table is touched in its own order, with its entries in cache,
// rather than once per name in key order:
//
//  1. MarkWhere marks the chosen queues in one pass over the table.
//  2. DeleteRunKeys range-deletes their keys, run by run in key order;
//     Unmark takes back the queues that the caller keeps after all.
//  3. DeleteMarked drops the still-marked queues, shard by shard.
//
// A dispatched entry clears its queue's mark, so a queue that got a message
// after step 1 survives step 3 (its new entries come after the range
// tombstones and are kept).

// MarkWhere marks, under each shard's lock, every queue for which pick
// (called with its state; it must not call back into the Store) returns
// true, and returns the mark. yield (nil: runtime.Gosched) runs between
// shards, outside their locks; within one, runtime.Gosched runs every
// yieldEvery queues.
func (s *Store) MarkWhere(pick func(id QueueID, st QueueState) bool, yield func()) uint32 {
	if yield == nil {
		yield = runtime.Gosched
	}
	mark := s.sweepEpoch.Add(1)
	if mark == 0 {
		mark = s.sweepEpoch.Add(1)
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		q := &sh.queues
		for j := range q.recs {
			if r := &q.recs[j]; pick(q.id(j), r.state()) {
				r.sweep = mark
			}
			if (j+1)%yieldEvery == 0 {
				// With millions of queues a shard is milliseconds of
				// work: let this processor's queue run, but do not park
				// (as yield may) holding the shard, which the
				// dispatcher needs.
				runtime.Gosched()
			}
		}
		sh.mu.Unlock()
		yield()
	}
	return mark
}

// RangeUnmarked calls f for every queue that does not carry mark, under
// the shard's read lock (f must not call back into the Store). The marked
// ones are skipped without reading their names.
func (s *Store) RangeUnmarked(mark uint32, f func(id QueueID, st QueueState), yield func()) {
	s.rangeByMark(mark, false, f, yield)
}

// RangeMarked calls f for every queue that carries mark, as RangeUnmarked
// does for the others.
func (s *Store) RangeMarked(mark uint32, f func(id QueueID, st QueueState), yield func()) {
	s.rangeByMark(mark, true, f, yield)
}

func (s *Store) rangeByMark(mark uint32, marked bool, f func(id QueueID, st QueueState), yield func()) {
	if yield == nil {
		yield = runtime.Gosched
	}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		q := &sh.queues
		for j := range q.recs {
			if r := &q.recs[j]; (r.sweep == mark) == marked {
				f(q.id(j), r.state())
			}
			if (j+1)%yieldEvery == 0 {
				runtime.Gosched() // as in MarkWhere
			}
		}
		sh.mu.RUnlock()
		yield()
	}
}

// MarksCleared counts the queues that a dispatched entry took out of a
// deletion (their mark cleared) since the Store opened. It only grows.
func (s *Store) MarksCleared() uint64 { return s.marksCleared.Load() }

// yieldEvery is how many queues MarkWhere and rangeByMark visit between
// two runtime.Gosched calls within a shard (a fraction of a millisecond).
const yieldEvery = 1024

// MarkNames marks the named queues that exist and returns the mark.
func (s *Store) MarkNames(ids []QueueID) uint32 {
	mark := s.sweepEpoch.Add(1)
	if mark == 0 {
		mark = s.sweepEpoch.Add(1)
	}
	for _, id := range ids {
		sh := s.shard(id)
		sh.mu.Lock()
		if st, ok := sh.queues.Get(id); ok {
			st.sweep = mark
			sh.queues.Set(id, st)
		}
		sh.mu.Unlock()
	}
	return mark
}

// Unmark takes a queue out of the deletion that marked it.
func (s *Store) Unmark(id QueueID, mark uint32) {
	sh := s.shard(id)
	sh.mu.Lock()
	if st, ok := sh.queues.Get(id); ok && st.sweep == mark {
		st.sweep = 0
		sh.queues.Set(id, st)
	}
	sh.mu.Unlock()
}

// KeyRun is a run of LMQs (queue 0 of topics First … Last, N of them, in
// key order) whose keys are contiguous.
type KeyRun struct {
	First, Last string
	N           int
}

// DeleteRunKeys removes runs of queues with two range deletes per run (one
// in the entry key space, one in the min/max key space); the in-memory
// table is DeleteMarked's. The caller guarantees that no other queue's
// keys lie between the first and the last topic of a run. A million
// expired lite topics are then a few hundred range tombstones instead of
// millions of point deletes.
func (s *Store) DeleteRunKeys(runs []KeyRun) error {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	for _, run := range runs {
		if run.N == 0 {
			continue
		}
		for _, p := range []byte{kv.PrefixConsumeQueue, kv.PrefixQueueMeta} {
			if err := b.DeleteRange(topicPrefix(p, run.First), kv.PrefixEnd(topicPrefix(p, run.Last)), nil); err != nil {
				return err
			}
		}
		n += run.N
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: delete %d queues in %d runs: %w", n, len(runs), err)
	}
	return nil
}

// ShardCount is the number of shards of the in-memory table.
func (s *Store) ShardCount() int { return shardCount }

// ShardOf is the shard index of a queue.
func (s *Store) ShardOf(id QueueID) int { return s.shardIndex(id) }

// DeleteMarked drops from shard i of the in-memory table the queues that
// carry mark and appends their topics to out. When most of the shard goes,
// the survivors move to a new table instead: fewer entries to move one by
// one, and the memory of the dropped ones is returned at once.
func (s *Store) DeleteMarked(i int, mark uint32, out []string) []string {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	q := &sh.queues
	n := 0
	for j := range q.recs {
		if q.recs[j].sweep == mark {
			n++
		}
	}
	if n == 0 {
		return out
	}
	if 2*n < q.Len() {
		// From the last to the first: a deletion moves the last rec, one
		// already visited, into the hole.
		for j := q.Len() - 1; j >= 0; j-- {
			if q.recs[j].sweep == mark {
				out = append(out, q.name(j))
				q.DeleteRec(j)
			}
		}
		return out
	}
	kept := newTable(s.seed)
	for j := range q.recs {
		if q.recs[j].sweep == mark {
			out = append(out, q.name(j))
		} else {
			kept.Set(q.id(j), q.recs[j].state())
		}
	}
	sh.queues = kept
	return out
}

// DeleteGaps removes the keys (entries and min/max records) of every queue
// whose topic starts with prefix and lies in one of gaps from … to-1 of
// keep: gap i holds the topics between keep[i-1] and keep[i] (gap 0 the
// ones before keep[0], gap len(keep) the ones after the last). keep is
// sorted and distinct, each with the prefix; its topics keep their keys.
// It is two range deletes a gap, whatever the gap holds. The in-memory
// table is DeleteMarked's; the caller guarantees that every queue with
// keys in the gaps is one it means to delete.
func (s *Store) DeleteGaps(prefix string, keep []string, from, to int) error {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	b := s.db.NewBatch()
	defer b.Close()
	for _, p := range []byte{kv.PrefixConsumeQueue, kv.PrefixQueueMeta} {
		space := append([]byte{p}, prefix...)
		for i := from; i < to && i <= len(keep); i++ {
			lo, hi := space, kv.PrefixEnd(space)
			if i > 0 {
				lo = kv.PrefixEnd(topicPrefix(p, keep[i-1]))
			}
			if i < len(keep) {
				hi = topicPrefix(p, keep[i])
			}
			if string(lo) >= string(hi) {
				continue
			}
			if err := b.DeleteRange(lo, hi, nil); err != nil {
				return err
			}
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: delete gaps %d-%d of %d kept queues: %w", from, to, len(keep), err)
	}
	return nil
}

// StateMark returns a queue's state and whether it carries mark.
func (s *Store) StateMark(id QueueID, mark uint32) (st QueueState, marked, ok bool) {
	sh := s.shard(id)
	sh.mu.RLock()
	st, ok = sh.queues.Get(id)
	sh.mu.RUnlock()
	return st, ok && st.sweep == mark, ok
}
