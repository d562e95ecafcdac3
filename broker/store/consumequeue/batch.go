package consumequeue

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Batch collects the entries of one dispatch round. Its entries, the queues'
// new max offsets and the dispatch checkpoint are committed together, so a
// crash either keeps the whole round or none of it, and recovery re-dispatches
// from the checkpoint.
//
// Commit writes the round into the Pebble batch in key order: the other
// key spaces' writes (Set: the index), the checkpoint, the meta records,
// then each queue's entries as runs (keys.go), queue after queue. Pebble
// inserts a batch into its memtable (a skiplist) key by key in batch order
// and starts each search from where the previous key went: keys in order
// cost a step or two each, where the entries of 8 queues interleaved with
// index keys cost a search from the top each.
type Batch struct {
	s *Store
	b *pebble.Batch
	*batchBufs
	created    []QueueID // queues this round brings into existence
	dispatched int64
}

// batchBufs is a round's working memory, which the next round reuses.
type batchBufs struct {
	idx    map[QueueID]int // position in qs
	last   int             // position in qs of the last Put's queue
	qs     []queueRound
	ents   []pendingEntry // in Put order
	other  []byte         // Set's keys and values, each length-prefixed
	otherN int
	// Commit's
	order  []int32
	next   []int
	sorted []Entry
	kvs    [][2][]byte
	key    []byte
	val    []byte
}

// queueRound is a queue's state after the round, with what the table held
// when the round first touched it (Commit then need not look it up again:
// a million new lite topics are a million lookups less).
type queueRound struct {
	id      QueueID
	st      QueueState
	existed bool
	oldMin  int64
	oldMax  int64 // entries below it are stored already
	n       int   // entries this round
}

type pendingEntry struct {
	q int32 // position in qs
	e Entry
}

// NewBatch starts a dispatch round. Only one goroutine (the dispatcher)
// writes batches.
func (s *Store) NewBatch() *Batch {
	bufs := s.spareBufs.Swap(nil)
	if bufs == nil {
		bufs = &batchBufs{idx: make(map[QueueID]int)}
	}
	return &Batch{s: s, b: s.db.NewBatch(), batchBufs: bufs, dispatched: -1}
}

// release closes the Pebble batch and keeps the buffers of a round of
// ordinary size for the next one.
func (b *Batch) release() {
	b.b.Close()
	bufs := b.batchBufs
	b.batchBufs = nil
	if bufs == nil || cap(bufs.ents) > maxSpareEntries || cap(bufs.other) > maxSpareEntries*64 {
		return
	}
	clear(bufs.idx)
	clear(bufs.qs)
	clear(bufs.kvs)
	bufs.qs, bufs.ents, bufs.other, bufs.otherN, bufs.kvs, bufs.last = bufs.qs[:0], bufs.ents[:0], bufs.other[:0], 0, bufs.kvs[:0], 0
	b.s.spareBufs.Store(bufs)
}

// maxSpareEntries bounds the buffers kept between rounds (a round of the
// default dispatch batch, 4096 records, fits).
const maxSpareEntries = 8192

// Len is the number of queues touched.
func (b *Batch) Len() int { return len(b.qs) }

// Put adds the entry for queue offset e.Offset. Entries of one queue must
// come in offset order.
func (b *Batch) Put(topic string, qid int32, e Entry) error {
	id := QueueID{topic, qid}
	// Consecutive entries mostly share a queue (a batch send's messages):
	// the last one's position saves the map lookup.
	var i int
	ok := false
	if n := len(b.qs); n > 0 && b.qs[b.last].id == id {
		i, ok = b.last, true
	} else {
		i, ok = b.idx[id]
	}
	if !ok {
		u := queueRound{id: id}
		u.st, u.existed = b.s.State(topic, qid)
		u.oldMin, u.oldMax = u.st.Min, u.st.Max
		if !u.existed {
			u.oldMax = 0
			// A new queue starts where its first entry is (0 normally; later
			// after a lite topic was re-created or a queue was truncated).
			u.st.Min = e.Offset
			b.created = append(b.created, id)
		}
		i = len(b.qs)
		b.qs = append(b.qs, u)
		b.idx[id] = i
	}
	b.last = i
	u := &b.qs[i]
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
	u.n++
	b.ents = append(b.ents, pendingEntry{int32(i), e})
	return nil
}

// Set adds a write of another key space (the message index) to the round;
// keys must not repeat within a round. It has pebble.Batch's signature.
func (b *Batch) Set(key, value []byte, _ *pebble.WriteOptions) error {
	b.other = binary.AppendUvarint(b.other, uint64(len(key)))
	b.other = append(b.other, key...)
	b.other = binary.AppendUvarint(b.other, uint64(len(value)))
	b.other = append(b.other, value...)
	b.otherN++
	return nil
}

// Created lists the queues that did not exist before this round (lite
// topics learn of new LMQs from it).
func (b *Batch) Created() []QueueID { return b.created }

// SetDispatched records the CommitLog offset that this round covers.
func (b *Batch) SetDispatched(phy int64) { b.dispatched = phy }

// Commit writes the round and publishes the new offsets.
func (b *Batch) Commit() error {
	defer b.release()
	if err := b.writeOther(); err != nil {
		return err
	}
	if b.dispatched >= 0 {
		if err := b.b.Set(checkpointKey, binary.BigEndian.AppendUint64(nil, uint64(b.dispatched)), nil); err != nil {
			return err
		}
	}
	// Queues in key order ('q'|topic|0x00|qid: by topic, then qid).
	order := b.order[:0]
	for i := range b.qs {
		order = append(order, int32(i))
	}
	b.order = order
	slices.SortFunc(order, func(x, y int32) int { return compareQueueIDs(b.qs[x].id, b.qs[y].id) })
	key := b.key[:0]
	var val [24]byte
	for _, i := range order {
		u := &b.qs[i]
		st := u.st
		// A queue's min record ('n') is written only when it is not 0 (an
		// absent one loads as 0): a million new lite topics then cost one
		// key each (the entry), not two.
		if u.existed && u.oldMin != st.Min || !u.existed && st.Min != 0 {
			key = append(appendQueuePrefix(key[:0], kv.PrefixQueueMeta, u.id.Topic, u.id.QueueID), metaMin)
			if err := b.b.Set(key, binary.BigEndian.AppendUint64(val[:0], uint64(st.Min)), nil); err != nil {
				return err
			}
		}
		// An LMQ's max record ('x') would repeat its newest entry, which
		// load reads instead: a lite message then costs one Pebble key
		// more than a plain one (its LMQ entry), not two.
		if !maxFromEntries(u.id) {
			key = append(appendQueuePrefix(key[:0], kv.PrefixQueueMeta, u.id.Topic, u.id.QueueID), metaMax)
			binary.BigEndian.PutUint64(val[0:], uint64(st.Max))
			binary.BigEndian.PutUint64(val[8:], uint64(st.LastPhyOffset))
			binary.BigEndian.PutUint64(val[16:], uint64(st.LastStoreTime))
			if err := b.b.Set(key, val[:], nil); err != nil {
				return err
			}
		}
	}
	b.key = key
	if err := b.writeEntries(order); err != nil {
		return err
	}
	if err := b.b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: commit dispatch batch: %w", err)
	}
	if f := b.s.beforePublish; f != nil {
		f()
	}
	for i := range b.qs {
		u := &b.qs[i]
		st := u.st
		sh := b.s.shard(u.id)
		sh.mu.Lock()
		cur, _ := sh.queues.Get(u.id)
		// Keep a concurrent min move (retention) that happened meanwhile.
		if cur.Min > st.Min {
			st.Min = cur.Min
		}
		if cur.sweep != 0 {
			b.s.marksCleared.Add(1)
		}
		sh.queues.Set(u.id, st)
		sh.mu.Unlock()
	}
	if hot, changed := b.s.heat.note(b.qs); changed {
		b.s.publishHot(hot)
	}
	if b.dispatched >= 0 {
		b.s.dispatchedMu.Lock()
		b.s.dispatched = b.dispatched
		b.s.dispatchedMu.Unlock()
	}
	return nil
}

// writeOther writes Set's keys, sorted.
func (b *Batch) writeOther() error {
	if b.otherN == 0 {
		return nil
	}
	kvs := b.kvs[:0]
	defer func() { b.kvs = kvs }()
	for rest := b.other; len(rest) > 0; {
		var e [2][]byte
		for j := range e {
			n, w := binary.Uvarint(rest)
			e[j], rest = rest[w:w+int(n)], rest[w+int(n):]
		}
		kvs = append(kvs, e)
	}
	slices.SortFunc(kvs, func(x, y [2][]byte) int { return bytes.Compare(x[0], y[0]) })
	for _, e := range kvs {
		if err := b.b.Set(e[0], e[1], nil); err != nil {
			return fmt.Errorf("consumequeue: batch put: %w", err)
		}
	}
	return nil
}

// writeEntries writes the entries queue by queue in the given order of
// queues, each queue's in Put order as runs of consecutive offsets.
func (b *Batch) writeEntries(order []int32) error {
	if len(b.ents) == 0 {
		return nil
	}
	// Counting sort by the queue's rank in order, stable.
	next := slices.Grow(b.next[:0], len(b.qs))[:len(b.qs)] // queue → where its next entry goes
	b.next = next
	pos := 0
	for _, i := range order {
		next[i] = pos
		pos += b.qs[i].n
	}
	sorted := slices.Grow(b.sorted[:0], len(b.ents))[:len(b.ents)]
	b.sorted = sorted
	for _, pe := range b.ents {
		sorted[next[pe.q]] = pe.e
		next[pe.q]++
	}
	key := b.key[:0]
	defer func() { b.key = key }()
	val := b.val[:0]
	if cap(val) < maxRun*entryValueLen {
		val = make([]byte, 0, maxRun*entryValueLen)
	}
	defer func() { b.val = val }()
	pos = 0
	for _, i := range order {
		u := &b.qs[i]
		key = appendQueuePrefix(key[:0], kv.PrefixConsumeQueue, u.id.Topic, u.id.QueueID)
		p := len(key)
		// Consecutive offsets make a run, keyed by its last offset. An
		// entry below what the queue held before the round is stored
		// already (a re-dispatch writes the same entries again): runs
		// must not overlap, so it is not written twice.
		var next int64
		val = val[:0]
		for _, e := range sorted[pos : pos+u.n] {
			if e.Offset < u.oldMax {
				continue
			}
			if len(val) > 0 && (e.Offset != next || len(val) == maxRun*entryValueLen) {
				key = binary.BigEndian.AppendUint64(key[:p], uint64(next-1))
				if err := b.b.Set(key, val, nil); err != nil {
					return fmt.Errorf("consumequeue: batch put: %w", err)
				}
				val = val[:0]
			}
			val = val[:len(val)+entryValueLen]
			putEntry(val[len(val)-entryValueLen:], e)
			next = e.Offset + 1
		}
		if len(val) > 0 {
			key = binary.BigEndian.AppendUint64(key[:p], uint64(next-1))
			if err := b.b.Set(key, val, nil); err != nil {
				return fmt.Errorf("consumequeue: batch put: %w", err)
			}
		}
		pos += u.n
	}
	return nil
}

// Abort discards the batch.
func (b *Batch) Abort() { b.release() }
