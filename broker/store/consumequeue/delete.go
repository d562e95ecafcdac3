package consumequeue

import (
	"fmt"

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
		delete(sh.queues, id)
		sh.mu.Unlock()
	}
	return nil
}

// DeleteRuns removes runs of queues with two range deletes per run (one in
// the entry key space, one in the min/max key space) and drops them from
// the in-memory table; it returns the queues that were in the table. Each
// run lists queues in key order whose keys are contiguous: the caller
// guarantees that no other queue's keys lie between the first and the last
// topic of a run. A million expired lite topics are then a few hundred
// range tombstones instead of millions of point deletes.
func (s *Store) DeleteRuns(runs [][]QueueID) ([]QueueID, error) {
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	for _, run := range runs {
		if len(run) == 0 {
			continue
		}
		first, last := run[0].Topic, run[len(run)-1].Topic
		for _, p := range []byte{kv.PrefixConsumeQueue, kv.PrefixQueueMeta} {
			if err := b.DeleteRange(topicPrefix(p, first), kv.PrefixEnd(topicPrefix(p, last)), nil); err != nil {
				return nil, err
			}
		}
		n += len(run)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return nil, fmt.Errorf("consumequeue: delete %d queues in %d runs: %w", n, len(runs), err)
	}
	out := make([]QueueID, 0, n)
	for _, run := range runs {
		for _, id := range run {
			sh := s.shard(id)
			sh.mu.Lock()
			if _, ok := sh.queues[id]; ok {
				delete(sh.queues, id)
				out = append(out, id)
			}
			sh.mu.Unlock()
		}
	}
	return out, nil
}
