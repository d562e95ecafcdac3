// Package consumequeue is RocketMQ's consume queue kept in Pebble: for every
// (topic, queueId) an ordered list of entries pointing into the CommitLog.
//
// Creating a queue is writing a few keys, which is what lets one broker hold
// millions of queues (lite topics). Per-queue min and max offsets live in an
// in-memory table, rebuilt at open from one meta record per queue, so the
// send and pull hot paths never read Pebble for them.
package consumequeue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// shardCount spreads the queue table over locks: with a million lite
// topics a shard is ≈ 2k queues, so a sweep's pass holds one for well
// under a millisecond.
const shardCount = 512

// QueueID names one queue.
type QueueID struct {
	Topic   string
	QueueID int32
}

// QueueState is the in-memory view of one queue.
type QueueState struct {
	Min           int64 // smallest offset still present
	Max           int64 // next offset to be written (exclusive)
	LastPhyOffset int64 // CommitLog offset of the newest entry
	LastStoreTime int64 // store time of the newest entry (ms)
	// sweep is the mark of the deletion (MarkWhere) that chose this
	// queue; any dispatched entry clears it.
	sweep uint32
}

type shard struct {
	mu     sync.RWMutex
	queues table
}

// Store is the consume queue.
type Store struct {
	db     *kv.DB
	log    *slog.Logger
	seed   maphash.Seed
	shards [shardCount]shard

	sweepEpoch atomic.Uint32
	// marksCleared counts dispatched entries that took a queue out of a
	// deletion (cleared its mark): a deletion that saw it unchanged knows
	// that no queue it chose changed since.
	marksCleared atomic.Uint64

	dispatchedMu sync.Mutex
	dispatched   int64 // CommitLog offset up to which entries are committed

	beforePublish func() // test hook, see SetBeforePublish
	// spareBufs is the working memory of the last dispatch round, for
	// the next.
	spareBufs atomic.Pointer[batchBufs]
	heat      heat
	ahead     readAhead
}

// SetBeforePublish installs a test hook that Batch.Commit calls after it
// wrote a round to Pebble and before it publishes the queues' new max
// offsets (readers then find entries past the max they see). Call it
// before any concurrent use.
func (s *Store) SetBeforePublish(f func()) { s.beforePublish = f }

// Open loads the queue table from db.
func Open(db *kv.DB, log *slog.Logger) (*Store, error) {
	s := &Store{db: db, log: log, seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].queues = newTable(s.seed)
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) load() error {
	v, closer, err := s.db.Get(checkpointKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("consumequeue: read checkpoint: %w", err)
	default:
		if len(v) == 8 {
			s.dispatched = int64(binary.BigEndian.Uint64(v))
		}
		closer.Close()
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kv.PrefixQueueMeta}, UpperBound: []byte{kv.PrefixQueueMeta + 1}})
	if err != nil {
		return fmt.Errorf("consumequeue: scan meta: %w", err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		topic, qid, kind, ok := parseMetaKey(it.Key())
		if !ok {
			continue
		}
		val := it.Value()
		id := QueueID{topic, qid}
		sh := s.shard(id)
		st, _ := sh.queues.Get(id)
		switch kind {
		case metaMax:
			if len(val) == 24 {
				st.Max = int64(binary.BigEndian.Uint64(val[0:]))
				st.LastPhyOffset = int64(binary.BigEndian.Uint64(val[8:]))
				st.LastStoreTime = int64(binary.BigEndian.Uint64(val[16:]))
			}
		case metaMin:
			if len(val) == 8 {
				st.Min = int64(binary.BigEndian.Uint64(val))
			}
		}
		sh.queues.Set(id, st)
		n++
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("consumequeue: scan meta: %w", err)
	}
	lmqs, err := s.loadFromEntries()
	if err != nil {
		return err
	}
	if s.log != nil {
		s.log.Info("consume queue loaded", "metaRecords", n, "lmqs", lmqs, "dispatchedOffset", s.dispatched)
	}
	return nil
}

// lmqPrefix starts the topic of every light message queue (the lite
// topics' LMQs among them): their queue 0 keeps no max record.
const lmqPrefix = "%LMQ%"

// maxFromEntries reports a queue whose max offset, last CommitLog offset
// and last store time are read from its newest entry at load, not from a
// max record: queue 0 of an LMQ (millions of them, most with one entry).
func maxFromEntries(id QueueID) bool {
	return id.QueueID == 0 && len(id.Topic) >= len(lmqPrefix) && id.Topic[:len(lmqPrefix)] == lmqPrefix
}

// loadFromEntries sets the max offset, last CommitLog offset and last
// store time of every LMQ queue 0 from its newest entry (a max record
// left by an older version or by a truncation counts too: the larger
// wins), in one pass that seeks only past long queues. An LMQ whose entries are all
// gone keeps max = min.
func (s *Store) loadFromEntries() (int, error) {
	lower := append([]byte{kv.PrefixConsumeQueue}, lmqPrefix...)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: kv.PrefixEnd(lower)})
	if err != nil {
		return 0, fmt.Errorf("consumequeue: scan LMQ entries: %w", err)
	}
	defer it.Close()
	n := 0
	var last []byte // the newest value seen of the current queue
	valid := it.First()
	for valid {
		topic, qid, off, ok := parseEntryKey(it.Key())
		if !ok {
			valid = it.Next()
			continue
		}
		end := kv.PrefixEnd(queuePrefix(kv.PrefixConsumeQueue, topic, qid))
		last = append(last[:0], it.Value()...)
		// Most LMQs hold an entry or two: step through them, ending on the
		// next queue's first key; a longer one is skipped with two seeks.
		for steps := 0; ; steps++ {
			if valid = it.Next(); !valid || bytes.Compare(it.Key(), end) >= 0 {
				break
			}
			if steps == 4 {
				if it.SeekLT(end) {
					_, _, off, _ = parseEntryKey(it.Key())
					last = append(last[:0], it.Value()...)
				}
				valid = it.SeekGE(end)
				break
			}
			_, _, off, _ = parseEntryKey(it.Key())
			last = append(last[:0], it.Value()...)
		}
		if qid != 0 {
			continue
		}
		// The newest entry is the last of the queue's last run.
		if len(last) >= entryValueLen && len(last)%entryValueLen == 0 {
			e, _ := decodeEntry(off, last[len(last)-entryValueLen:])
			id := QueueID{topic, qid}
			sh := s.shard(id)
			st, _ := sh.queues.Get(id)
			if off+1 >= st.Max {
				st.Max, st.LastPhyOffset, st.LastStoreTime = off+1, e.CommitLogOffset, e.StoreTimestamp
			}
			sh.queues.Set(id, st)
			n++
		}
	}
	if err := it.Error(); err != nil {
		return n, fmt.Errorf("consumequeue: scan LMQ entries: %w", err)
	}
	// A min record with no entry left (all removed by retention or a
	// truncation): the queue is empty at its min.
	for i := range s.shards {
		q := &s.shards[i].queues
		for j := range q.recs {
			if r := &q.recs[j]; r.max < r.min {
				r.max = r.min
			}
		}
	}
	return n, nil
}

func (s *Store) shard(id QueueID) *shard { return &s.shards[s.shardIndex(id)] }

func (s *Store) shardIndex(id QueueID) int {
	return int((maphash.String(s.seed, id.Topic) + uint64(id.QueueID)) % shardCount)
}

// State returns a queue's state; ok is false for an unknown queue.
func (s *Store) State(topic string, qid int32) (QueueState, bool) {
	id := QueueID{topic, qid}
	sh := s.shard(id)
	sh.mu.RLock()
	st, ok := sh.queues.Get(id)
	sh.mu.RUnlock()
	return st, ok
}

// MaxOffset is the next offset to be written (0 for an unknown queue).
func (s *Store) MaxOffset(topic string, qid int32) int64 {
	st, _ := s.State(topic, qid)
	return st.Max
}

// MinOffset is the smallest offset present (0 for an unknown queue).
func (s *Store) MinOffset(topic string, qid int32) int64 {
	st, _ := s.State(topic, qid)
	return st.Min
}

// DispatchedOffset is the CommitLog offset up to which entries are stored.
func (s *Store) DispatchedOffset() int64 {
	s.dispatchedMu.Lock()
	defer s.dispatchedMu.Unlock()
	return s.dispatched
}

// QueueCount returns the number of known queues.
func (s *Store) QueueCount() int {
	n := 0
	for i := range s.shards {
		s.shards[i].mu.RLock()
		n += s.shards[i].queues.Len()
		s.shards[i].mu.RUnlock()
	}
	return n
}

// Range calls f for every queue (in no particular order) until f returns
// false. f must not call back into the Store's writers.
func (s *Store) Range(f func(id QueueID, st QueueState) bool) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		q := &sh.queues
		for j := range q.recs {
			if !f(q.id(j), q.recs[j].state()) {
				sh.mu.RUnlock()
				return
			}
		}
		sh.mu.RUnlock()
	}
}

// TopicQueues returns the queue ids known for a topic, sorted.
func (s *Store) TopicQueues(topic string) []int32 {
	var ids []int32
	s.Range(func(id QueueID, _ QueueState) bool {
		if id.Topic == topic {
			ids = append(ids, id.QueueID)
		}
		return true
	})
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Entries returns up to max entries of a queue starting at offset.
func (s *Store) Entries(topic string, qid int32, offset int64, max int) ([]Entry, error) {
	if max <= 0 {
		return nil, nil
	}
	st, ok := s.State(topic, qid)
	if !ok || offset >= st.Max {
		return nil, nil
	}
	if offset < st.Min {
		offset = st.Min
	}
	n := max
	if rest := st.Max - offset; rest < int64(n) {
		n = int(rest)
	}
	id := QueueID{Topic: topic, QueueID: qid}
	if es, ok := s.ahead.get(id, offset, n); ok {
		return es, nil
	}
	limit, ahead := max, false
	if max >= readAheadMin && max < readAheadEntries && st.Max-offset > int64(max) {
		limit, ahead = int(min(readAheadEntries, st.Max-offset)), true
		n = limit
	}
	gen := s.ahead.gen.Load()
	out, err := s.entries(topic, qid, offset, n, limit)
	if err != nil {
		return out, err
	}
	if ahead {
		s.ahead.put(id, gen, out)
	}
	k := min(len(out), max)
	return out[:k:k], nil
}

// entries reads up to limit entries from offset, n of which are known to
// exist.
func (s *Store) entries(topic string, qid int32, offset int64, n, limit int) ([]Entry, error) {
	prefix := queuePrefix(kv.PrefixConsumeQueue, topic, qid)
	// The run holding the last entry wanted is keyed at most maxRun-1
	// above it: bounded there, the iterator leaves alone the queue's newer
	// tables (a catch-up read opened every one of them in L0, each
	// pull, for their index blocks).
	upper := kv.PrefixEnd(prefix)
	if hi := offset + int64(n) - 1; hi <= math.MaxInt64-maxRun {
		upper = entryKey(topic, qid, hi+maxRun)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: entryKey(topic, qid, offset),
		UpperBound: upper,
	})
	if err != nil {
		return nil, fmt.Errorf("consumequeue: iterate %s-%d: %w", topic, qid, err)
	}
	defer it.Close()
	out := make([]Entry, 0, n)
	for it.First(); it.Valid() && len(out) < limit; it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+8 {
			continue
		}
		last := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		v := it.Value()
		first, ok := runFirst(last, v)
		if !ok {
			return out, fmt.Errorf("consumequeue: corrupt entry %s-%d@%d", topic, qid, last)
		}
		// The first run found may start below offset.
		for off := max64(first, offset); off <= last && len(out) < limit; off++ {
			out = append(out, runEntry(first, off, v))
		}
	}
	return out, it.Error()
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// Entry returns one entry; ok is false when it does not exist.
func (s *Store) Entry(topic string, qid int32, offset int64) (Entry, bool, error) {
	if st, ok := s.State(topic, qid); ok && offset < st.Min {
		// Retention keeps a run that holds the min whole: the entries
		// before the min in it are gone all the same.
		return Entry{}, false, nil
	}
	_, _, e, ok, err := s.run(topic, qid, offset, false)
	return e, ok, err
}

// run finds the run holding offset: its first offset, the entry at
// offset and, when whole, a copy of the run's value; ok is false when no
// run holds offset.
func (s *Store) run(topic string, qid int32, offset int64, whole bool) (first int64, v []byte, e Entry, ok bool, err error) {
	if offset < 0 {
		return 0, nil, Entry{}, false, nil
	}
	prefix := queuePrefix(kv.PrefixConsumeQueue, topic, qid)
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: entryKey(topic, qid, offset),
		UpperBound: kv.PrefixEnd(prefix),
	})
	if err != nil {
		return 0, nil, Entry{}, false, fmt.Errorf("consumequeue: get %s-%d@%d: %w", topic, qid, offset, err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+8 {
			continue
		}
		last := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		first, ok := runFirst(last, it.Value())
		if !ok {
			return 0, nil, Entry{}, false, fmt.Errorf("consumequeue: corrupt entry %s-%d@%d", topic, qid, last)
		}
		if first > offset {
			return 0, nil, Entry{}, false, nil
		}
		if whole {
			v = slices.Clone(it.Value())
		}
		return first, v, runEntry(first, offset, it.Value()), true, nil
	}
	if err := it.Error(); err != nil {
		return 0, nil, Entry{}, false, fmt.Errorf("consumequeue: get %s-%d@%d: %w", topic, qid, offset, err)
	}
	return 0, nil, Entry{}, false, nil
}

// BoundaryType chooses which offset SearchOffsetByTime returns when several
// messages share the timestamp.
type BoundaryType int

const (
	BoundaryLower BoundaryType = iota // first message stored at or after ts
	BoundaryUpper                     // last message stored at or before ts
)

// SearchOffsetByTime returns the queue offset for timestamp ts (ms), as
// RocketMQ's SEARCH_OFFSET_BY_TIMESTAMP: with BoundaryLower the first entry
// whose store time is ≥ ts (max offset if none), with BoundaryUpper the last
// entry whose store time is ≤ ts (min offset if none).
func (s *Store) SearchOffsetByTime(topic string, qid int32, ts int64, bt BoundaryType) (int64, error) {
	st, ok := s.State(topic, qid)
	if !ok || st.Max <= st.Min {
		return st.Max, nil
	}
	var searchErr error
	timeAt := func(off int64) int64 {
		e, ok, err := s.Entry(topic, qid, off)
		if err != nil && searchErr == nil {
			searchErr = err
		}
		if !ok {
			return -1
		}
		return e.StoreTimestamp
	}
	lo, hi := st.Min, st.Max
	n := int(hi - lo)
	if bt == BoundaryUpper {
		// first index whose time > ts, minus one
		i := sort.Search(n, func(i int) bool { return timeAt(lo+int64(i)) > ts })
		if i == 0 {
			return st.Min, searchErr
		}
		return lo + int64(i) - 1, searchErr
	}
	i := sort.Search(n, func(i int) bool { return timeAt(lo+int64(i)) >= ts })
	return lo + int64(i), searchErr
}

// DeleteQueue removes every entry and the meta of one queue.
func (s *Store) DeleteQueue(topic string, qid int32) error {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	b := s.db.NewBatch()
	defer b.Close()
	qp := queuePrefix(kv.PrefixConsumeQueue, topic, qid)
	if err := b.DeleteRange(qp, kv.PrefixEnd(qp), nil); err != nil {
		return err
	}
	mp := queuePrefix(kv.PrefixQueueMeta, topic, qid)
	if err := b.DeleteRange(mp, kv.PrefixEnd(mp), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: delete %s-%d: %w", topic, qid, err)
	}
	s.forget(QueueID{topic, qid})
	return nil
}

// forget drops the cached state of a deleted queue.
func (s *Store) forget(id QueueID) {
	sh := s.shard(id)
	sh.mu.Lock()
	sh.queues.Delete(id)
	sh.mu.Unlock()
}

// DeleteTopic removes every queue of a topic.
func (s *Store) DeleteTopic(topic string) error {
	// Read-ahead windows of what this removes are stale, also for
	// the reads that run meanwhile.
	s.ahead.invalidate()
	defer s.ahead.invalidate()
	b := s.db.NewBatch()
	defer b.Close()
	for _, p := range []byte{kv.PrefixConsumeQueue, kv.PrefixQueueMeta} {
		tp := topicPrefix(p, topic)
		if err := b.DeleteRange(tp, kv.PrefixEnd(tp), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("consumequeue: delete topic %s: %w", topic, err)
	}
	for _, qid := range s.TopicQueues(topic) {
		s.forget(QueueID{topic, qid})
	}
	return nil
}

// Flush makes everything committed so far durable (Pebble's WAL is off, so
// this flushes memtables).
func (s *Store) Flush() error {
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("consumequeue: flush: %w", err)
	}
	return nil
}
