// Package offset stores consumer offsets (group, topic, queueId) → committed
// offset in the broker's Pebble database.
//
// Commits are frequent (every client, every queue, every 5 s) and losing the
// last few seconds of them only means redelivery, so writes go to an
// in-memory table and are flushed to Pebble in batches (Flush is called
// periodically and at shutdown), as RocketMQ persists consumerOffset.json
// every few seconds.
package offset

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Key: 'c' | group | 0x00 | topic | 0x00 | queueId u32 → offset u64.
// Group and topic names never contain 0x00.

// Key identifies one committed offset.
type Key struct {
	Group   string
	Topic   string
	QueueID int32
}

func encodeKey(k Key) []byte {
	b := make([]byte, 0, 2+len(k.Group)+len(k.Topic)+5)
	b = append(b, kv.PrefixOffset)
	b = append(b, k.Group...)
	b = append(b, 0)
	b = append(b, k.Topic...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(k.QueueID))
}

func decodeKey(b []byte) (Key, bool) {
	if len(b) < 1+1+1+4 || b[0] != kv.PrefixOffset {
		return Key{}, false
	}
	rest := b[1 : len(b)-4]
	i := strings.IndexByte(string(rest), 0)
	if i < 0 || rest[len(rest)-1] != 0 {
		return Key{}, false
	}
	return Key{Group: string(rest[:i]), Topic: string(rest[i+1 : len(rest)-1]), QueueID: int32(binary.BigEndian.Uint32(b[len(b)-4:]))}, true
}

// Store is the consumer offset table.
type Store struct {
	db  *kv.DB
	log *slog.Logger

	mu      sync.RWMutex
	offsets map[Key]int64
	dirty   map[Key]struct{}
	deleted map[Key]struct{}
	// groups counts the offsets of each group: deleting the offsets of a
	// million expired lite topics for a group that has none costs nothing.
	groups map[string]int

	// opened and changes make the table's data version (Version).
	opened  int64
	changes int64
}

// Open loads all offsets into memory.
func Open(db *kv.DB, log *slog.Logger) (*Store, error) {
	s := &Store{db: db, log: log, offsets: map[Key]int64{}, dirty: map[Key]struct{}{}, deleted: map[Key]struct{}{}, groups: map[string]int{},
		opened: time.Now().UnixMilli()}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{kv.PrefixOffset}, UpperBound: []byte{kv.PrefixOffset + 1}})
	if err != nil {
		return nil, fmt.Errorf("offset: scan: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k, ok := decodeKey(it.Key())
		if !ok || len(it.Value()) != 8 {
			continue
		}
		if _, ok := s.offsets[k]; !ok {
			s.groups[k.Group]++
		}
		s.offsets[k] = int64(binary.BigEndian.Uint64(it.Value()))
	}
	return s, it.Error()
}

// Commit records an offset.
func (s *Store) Commit(k Key, offset int64) {
	s.mu.Lock()
	cur, ok := s.offsets[k]
	if ok && cur == offset {
		// Nothing to write (a slave's copy of its master's table every
		// few seconds mostly repeats what it holds).
		s.mu.Unlock()
		return
	}
	if !ok {
		s.groups[k.Group]++
	}
	s.offsets[k] = offset
	s.dirty[k] = struct{}{}
	delete(s.deleted, k)
	s.changes++
	s.mu.Unlock()
}

// Advance records offset unless a larger one is recorded already; it
// reports whether it did.
func (s *Store) Advance(k Key, offset int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.offsets[k]
	if ok && cur >= offset {
		return false
	}
	if !ok {
		s.groups[k.Group]++
	}
	s.offsets[k] = offset
	s.dirty[k] = struct{}{}
	delete(s.deleted, k)
	s.changes++
	return true
}

// Get returns the committed offset; ok is false when there is none.
func (s *Store) Get(k Key) (int64, bool) {
	s.mu.RLock()
	v, ok := s.offsets[k]
	s.mu.RUnlock()
	return v, ok
}

// Delete removes the offset of one queue. Every persisted offset is in
// memory (Open loads them all), so an absent key needs no tombstone: mass
// deletions (expired lite topics, most never consumed by most groups) stay
// cheap.
func (s *Store) Delete(k Key) {
	s.mu.Lock()
	if s.groups[k.Group] == 0 {
		s.mu.Unlock()
		return
	}
	if _, ok := s.offsets[k]; !ok {
		s.mu.Unlock()
		return
	}
	s.forgetGroupKey(k.Group)
	delete(s.offsets, k)
	delete(s.dirty, k)
	s.deleted[k] = struct{}{}
	s.mu.Unlock()
}

// DeleteQueues removes the offsets of queue qid of topics for groups (the
// LMQs a lite sweep deleted, a million at a time, most without offsets).
// When the table holds fewer offsets than there are (group, topic) pairs
// to look up, it walks the table once instead and looks its topics up in
// a map of the candidates: a lookup in a small map of strings is far
// cheaper than one of a Key in a large one.
func (s *Store) DeleteQueues(groups, topics []string, qid int32) int {
	s.mu.RLock()
	var live []string
	for _, g := range groups {
		if s.groups[g] > 0 && !slices.Contains(live, g) {
			live = append(live, g)
		}
	}
	size := len(s.offsets)
	s.mu.RUnlock()
	if len(live) == 0 || len(topics) == 0 {
		return 0
	}
	if size >= len(live)*len(topics) {
		return s.deleteProbing(live, topics, qid)
	}
	cand := map[string][]Key{}
	s.mu.RLock()
	for k := range s.offsets {
		if k.QueueID == qid && slices.Contains(live, k.Group) {
			cand[k.Topic] = append(cand[k.Topic], k)
		}
	}
	s.mu.RUnlock()
	if len(cand) == 0 {
		return 0
	}
	var hits []Key
	for _, t := range topics {
		if ks, ok := cand[t]; ok {
			hits = append(hits, ks...)
		}
	}
	n := 0
	s.mu.Lock()
	if len(s.deleted) == 0 {
		s.deleted = make(map[Key]struct{}, len(hits)) // grown once, not step by step
	}
	s.mu.Unlock()
	for len(hits) > 0 {
		part := hits[:min(deleteSlice, len(hits))]
		hits = hits[len(part):]
		s.mu.Lock()
		for _, k := range part {
			if s.deleteLocked(k) {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// deleteSlice is how many deletions one lock hold does: commits get in
// between.
const deleteSlice = 4096

// deleteProbing looks every (group, topic) pair up, deleteSlice topics per
// lock hold.
func (s *Store) deleteProbing(groups, topics []string, qid int32) int {
	n := 0
	for len(topics) > 0 {
		part := topics[:min(deleteSlice, len(topics))]
		topics = topics[len(part):]
		s.mu.Lock()
		for _, g := range groups {
			for _, t := range part {
				if s.groups[g] == 0 {
					break
				}
				if s.deleteLocked(Key{Group: g, Topic: t, QueueID: qid}) {
					n++
				}
			}
		}
		s.mu.Unlock()
	}
	return n
}

// deleteLocked removes k if present; s.mu must be held.
func (s *Store) deleteLocked(k Key) bool {
	if _, ok := s.offsets[k]; !ok {
		return false
	}
	s.forgetGroupKey(k.Group)
	delete(s.offsets, k)
	delete(s.dirty, k)
	s.deleted[k] = struct{}{}
	return true
}

func (s *Store) forgetGroupKey(group string) {
	s.changes++
	if s.groups[group]--; s.groups[group] <= 0 {
		delete(s.groups, group)
	}
}

// DeleteWhere removes every offset for which match returns true (a group's,
// a topic's, an expired lite topic's).
func (s *Store) DeleteWhere(match func(Key) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.offsets {
		if match(k) {
			s.forgetGroupKey(k.Group)
			delete(s.offsets, k)
			delete(s.dirty, k)
			s.deleted[k] = struct{}{}
			n++
		}
	}
	return n
}

// Version is the table's data version for GET_ALL_CONSUMER_OFFSET: the
// number of changes since Open, and Open's time (so versions of two runs
// differ).
func (s *Store) Version() (counter, openedMs int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.changes, s.opened
}

// Len is the number of offsets held.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.offsets)
}

// Range calls f for each offset until it returns false.
func (s *Store) Range(f func(Key, int64) bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for k, v := range s.offsets {
		if !f(k, v) {
			return
		}
	}
}

// GroupTopics returns the topics a group has offsets for.
func (s *Store) GroupTopics(group string) []string {
	return s.distinct(func(k Key) (string, bool) { return k.Topic, k.Group == group })
}

// TopicGroups returns the groups that have offsets for topic (Java's
// ConsumerOffsetManager.whichGroupByTopic).
func (s *Store) TopicGroups(topic string) []string {
	return s.distinct(func(k Key) (string, bool) { return k.Group, k.Topic == topic })
}

// distinct lists, each once in Range order, the names pick returns for
// the keys it accepts.
func (s *Store) distinct(pick func(k Key) (name string, ok bool)) []string {
	seen := map[string]bool{}
	var out []string
	s.Range(func(k Key, _ int64) bool {
		if name, ok := pick(k); ok && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
		return true
	})
	return out
}

// Flush writes changed offsets to Pebble and syncs them.
func (s *Store) Flush() error {
	s.mu.Lock()
	if len(s.dirty) == 0 && len(s.deleted) == 0 {
		s.mu.Unlock()
		return nil
	}
	b := s.db.NewBatch()
	for k := range s.dirty {
		if err := b.Set(encodeKey(k), binary.BigEndian.AppendUint64(nil, uint64(s.offsets[k])), nil); err != nil {
			s.mu.Unlock()
			b.Close()
			return err
		}
	}
	for k := range s.deleted {
		if err := b.Delete(encodeKey(k), nil); err != nil {
			s.mu.Unlock()
			b.Close()
			return err
		}
	}
	dirty, deleted := s.dirty, s.deleted
	s.dirty, s.deleted = map[Key]struct{}{}, map[Key]struct{}{}
	s.mu.Unlock()

	err := b.Commit(pebble.NoSync)
	b.Close()
	if err == nil {
		// The WAL is off: a memtable flush is what makes the batch durable.
		err = s.db.Flush()
	}
	if err != nil {
		// Put the keys back so the next flush retries them.
		s.mu.Lock()
		for k := range dirty {
			if _, ok := s.offsets[k]; ok {
				s.dirty[k] = struct{}{}
			}
		}
		for k := range deleted {
			if _, ok := s.offsets[k]; !ok {
				s.deleted[k] = struct{}{}
			}
		}
		s.mu.Unlock()
		return fmt.Errorf("offset: flush: %w", err)
	}
	return nil
}
