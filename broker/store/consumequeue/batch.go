package consumequeue

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Batch collects the entries of one dispatch round. Its entries, the queues'
// new max offsets and the dispatch checkpoint are committed together, so a
// crash either keeps the whole round or none of it, and recovery re-dispatches
// from the checkpoint.
type Batch struct {
	s          *Store
	b          *pebble.Batch
	updates    map[QueueID]update
	created    []QueueID // queues this round brings into existence
	dispatched int64
}

// update is a queue's state after the round, with what the table held
// when the round first touched it (Commit then need not look it up again:
// a million new lite topics are a million lookups less).
type update struct {
	st      QueueState
	existed bool
	oldMin  int64
}

// NewBatch starts a dispatch round. Only one goroutine (the dispatcher)
// writes batches.
func (s *Store) NewBatch() *Batch {
	return &Batch{s: s, b: s.db.NewBatch(), updates: make(map[QueueID]update), dispatched: -1}
}

// Len is the number of queues touched.
func (b *Batch) Len() int { return len(b.updates) }

// Put adds the entry for queue offset e.Offset. Entries of one queue must
// come in offset order.
func (b *Batch) Put(topic string, qid int32, e Entry) error {
	id := QueueID{topic, qid}
	u, ok := b.updates[id]
	if !ok {
		u.st, u.existed = b.s.State(topic, qid)
		u.oldMin = u.st.Min
		if !u.existed {
			// A new queue starts where its first entry is (0 normally; later
			// after a lite topic was re-created or a queue was truncated).
			u.st.Min = e.Offset
			b.created = append(b.created, id)
		}
	}
	st := &u.st
	if e.Offset < st.Max {
		// Re-dispatch after a crash writes the same entries again: harmless,
		// the values are identical.
		st.Max = max(st.Max, e.Offset+1)
	} else {
		st.Max = e.Offset + 1
	}
	st.LastPhyOffset = e.CommitLogOffset
	st.LastStoreTime = e.StoreTimestamp
	st.sweep = 0 // a queue that got an entry is no longer what a deletion chose
	b.updates[id] = u
	if err := b.b.Set(entryKey(topic, qid, e.Offset), encodeEntry(e), nil); err != nil {
		return fmt.Errorf("consumequeue: batch put: %w", err)
	}
	return nil
}

// Created lists the queues that did not exist before this round (lite
// topics learn of new LMQs from it).
func (b *Batch) Created() []QueueID { return b.created }

// SetDispatched records the CommitLog offset that this round covers.
func (b *Batch) SetDispatched(phy int64) { b.dispatched = phy }

// Commit writes the round and publishes the new offsets.
func (b *Batch) Commit() error {
	defer b.b.Close()
	for id, u := range b.updates {
		st := u.st
		// An LMQ's max record would repeat its newest entry, which load
		// reads instead: a lite message then costs one Pebble key more
		// than a plain one (its LMQ entry), not two.
		if !maxFromEntries(id) {
			v := make([]byte, 24)
			binary.BigEndian.PutUint64(v[0:], uint64(st.Max))
			binary.BigEndian.PutUint64(v[8:], uint64(st.LastPhyOffset))
			binary.BigEndian.PutUint64(v[16:], uint64(st.LastStoreTime))
			if err := b.b.Set(metaKey(id.Topic, id.QueueID, metaMax), v, nil); err != nil {
				return err
			}
		}
		// A queue's min record is written only when it is not 0 (an
		// absent one loads as 0): a million new lite topics then cost one
		// key each (the entry), not two.
		if u.existed && u.oldMin != st.Min || !u.existed && st.Min != 0 {
			if err := b.b.Set(metaKey(id.Topic, id.QueueID, metaMin), binary.BigEndian.AppendUint64(nil, uint64(st.Min)), nil); err != nil {
				return err
			}
		}
	}
	if b.dispatched >= 0 {
		if err := b.b.Set(checkpointKey, binary.BigEndian.AppendUint64(nil, uint64(b.dispatched)), nil); err != nil {
			return err
		}
	}
	if err := b.b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: commit dispatch batch: %w", err)
	}
	if f := b.s.beforePublish; f != nil {
		f()
	}
	for id, u := range b.updates {
		st := u.st
		sh := b.s.shard(id)
		sh.mu.Lock()
		cur, _ := sh.queues.Get(id)
		// Keep a concurrent min move (retention) that happened meanwhile.
		if cur.Min > st.Min {
			st.Min = cur.Min
		}
		if cur.sweep != 0 {
			b.s.marksCleared.Add(1)
		}
		sh.queues.Set(id, st)
		sh.mu.Unlock()
	}
	if b.dispatched >= 0 {
		b.s.dispatchedMu.Lock()
		b.s.dispatched = b.dispatched
		b.s.dispatchedMu.Unlock()
	}
	return nil
}

// Abort discards the batch.
func (b *Batch) Abort() { b.b.Close() }

// Pebble exposes the underlying batch so that other key spaces (the index)
// commit atomically with the round.
func (b *Batch) Pebble() *pebble.Batch { return b.b }
