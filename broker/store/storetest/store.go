// Package storetest is an in-memory store.MessageStore for processor tests.
//
// It keeps real stored records (pkg/message format) in per-queue slices and
// reproduces the read semantics of RocketMQ's DefaultMessageStore.getMessage
// (status, nextBeginOffset, min/max offsets, tag filtering, batch limits), so
// processors tested against it see what they will see from the real store.
// Test helpers (RemoveBefore, MarkRemoving, SetGetHook, Put) produce the
// situations that are hard to reach otherwise.
package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/message"
)

// ErrNoRecord is returned by ReadRecord for an unknown CommitLog offset.
var ErrNoRecord = errors.New("storetest: no record at offset")

// Java's consume-queue unit size and maxFilterMessageSize: a read examines
// at most max(16000, maxMsgNums*20)/20 entries.
const (
	cqUnitSize           = 20
	maxFilterMessageSize = 16000
)

// Option customises New.
type Option func(*Store)

// WithClock sets the clock used for store timestamps (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithStoreHost sets the store host written into records (default 127.0.0.1:10911).
func WithStoreHost(ap netip.AddrPort) Option { return func(s *Store) { s.host = ap } }

// GetHook may replace a GetMessage result; ok=false falls through to the
// normal read. Tests use it for statuses the data cannot produce
// (OFFSET_FOUND_NULL, OFFSET_RESET) or to inject errors.
type GetHook func(topic string, queueID int32, offset int64) (res *store.GetResult, err error, ok bool)

type qkey struct {
	topic string
	qid   int32
}

type offKey struct {
	group, topic string
	qid          int32
}

type entry struct {
	phy       int64
	tagsCode  int64
	storeTime int64
	record    []byte // nil: the CommitLog part was removed (MESSAGE_WAS_REMOVING)
}

type queue struct {
	base    int64 // queue offset of entries[0]
	entries []entry
}

func (q *queue) max() int64 { return q.base + int64(len(q.entries)) }

// Store is safe for concurrent use. Arrival listeners run synchronously on
// the goroutine that put the message, after the store's lock is released.
type Store struct {
	now  func() time.Time
	host netip.AddrPort

	mu        sync.Mutex
	queues    map[qkey]*queue
	byPhy     map[int64][]byte
	nextPhy   int64
	offsets   map[offKey]int64
	listeners []store.ArrivalListener
	hook      GetHook
	puts      int64
	gets      int64
}

var _ store.MessageStore = (*Store)(nil)

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:     time.Now,
		host:    netip.MustParseAddrPort("127.0.0.1:10911"),
		queues:  map[qkey]*queue{},
		byPhy:   map[int64][]byte{},
		offsets: map[offKey]int64{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SetGetHook installs (or with nil removes) a GetMessage hook.
func (s *Store) SetGetHook(h GetHook) {
	s.mu.Lock()
	s.hook = h
	s.mu.Unlock()
}

// Put stores a message with the given tags ("" for none) and body and
// returns its queue offset; a test shortcut for PutMessage.
func (s *Store) Put(topic string, queueID int32, tags string, body []byte) int64 {
	m := &message.Message{Topic: topic, QueueID: queueID, Body: body, BornTimestamp: s.now().UnixMilli(),
		BornHost: netip.MustParseAddrPort("127.0.0.1:50000")}
	if tags != "" {
		m.SetProperty(message.PropertyTags, tags)
	}
	r, err := s.PutMessage(context.Background(), m)
	if err != nil {
		panic(fmt.Sprintf("storetest: put: %v", err))
	}
	return r.QueueOffset
}

// PutMessage stores msg in msg.QueueID of msg.Topic.
func (s *Store) PutMessage(ctx context.Context, msg *message.Message) (store.PutResult, error) {
	return s.PutMessages(ctx, []*message.Message{msg})
}

// PutMessages stores a batch into the first message's queue with
// consecutive offsets.
func (s *Store) PutMessages(_ context.Context, msgs []*message.Message) (store.PutResult, error) {
	if len(msgs) == 0 {
		return store.PutResult{}, fmt.Errorf("%w: empty batch", store.ErrMessageIllegal)
	}
	topic, qid := msgs[0].Topic, msgs[0].QueueID
	if topic == "" || qid < 0 {
		return store.PutResult{}, fmt.Errorf("%w: topic %q queue %d", store.ErrMessageIllegal, topic, qid)
	}
	type arrival struct {
		off, tags, ts int64
	}
	var arrivals []arrival

	s.mu.Lock()
	k := qkey{topic, qid}
	q := s.queues[k]
	if q == nil {
		q = &queue{}
		s.queues[k] = q
	}
	now := s.now().UnixMilli()
	res := store.PutResult{QueueID: qid, QueueOffset: q.max(), PhysicalOffset: s.nextPhy, StoreTimestamp: now}
	for _, m := range msgs {
		m.Topic, m.QueueID = topic, qid
		m.QueueOffset = q.max()
		m.CommitLogOffset = s.nextPhy
		m.StoreTimestamp = now
		m.StoreHost = s.host
		rec, err := message.EncodeStored(m)
		if err != nil {
			s.mu.Unlock()
			return store.PutResult{}, fmt.Errorf("%w: %w", store.ErrMessageIllegal, err)
		}
		var tags int64
		if t := m.Tags(); t != "" {
			tags = int64(message.TagHashCode(t))
		}
		q.entries = append(q.entries, entry{phy: s.nextPhy, tagsCode: tags, storeTime: now, record: rec})
		s.byPhy[s.nextPhy] = rec
		res.MsgIDs = append(res.MsgIDs, message.OffsetMsgID(s.host, s.nextPhy))
		arrivals = append(arrivals, arrival{m.QueueOffset, tags, now})
		s.nextPhy += int64(len(rec))
		s.puts++
	}
	ls := slices.Clone(s.listeners)
	s.mu.Unlock()

	for _, a := range arrivals {
		for _, l := range ls {
			l(topic, qid, a.off, a.tags, a.ts)
		}
	}
	return res, nil
}

// GetMessage follows DefaultMessageStore.getMessage.
func (s *Store) GetMessage(_ context.Context, topic string, queueID int32, offset int64, maxMsgNums int, maxBytes int, filter store.MessageFilter) (*store.GetResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook != nil {
		if r, err, ok := s.hook(topic, queueID, offset); ok {
			return r, err
		}
	}
	res := &store.GetResult{Status: store.NoMessageInQueue, NextBeginOffset: offset}
	q := s.queues[qkey{topic, queueID}]
	if q == nil {
		res.Status, res.NextBeginOffset = store.NoMatchedLogicQueue, 0
		return res, nil
	}
	minOff, maxOff := q.base, q.max()
	res.MinOffset, res.MaxOffset = minOff, maxOff
	switch {
	case maxOff == 0:
		res.Status, res.NextBeginOffset = store.NoMessageInQueue, 0
		return res, nil
	case offset < minOff:
		res.Status, res.NextBeginOffset = store.OffsetTooSmall, minOff
		return res, nil
	case offset == maxOff:
		res.Status, res.NextBeginOffset = store.OffsetOverflowOne, offset
		return res, nil
	case offset > maxOff:
		res.Status, res.NextBeginOffset = store.OffsetOverflowBadly, maxOff
		return res, nil
	}
	if maxMsgNums <= 0 {
		maxMsgNums = 1
	}
	maxPull := max(maxBytes, 100)
	scanLimit := int64(max(maxFilterMessageSize, maxMsgNums*cqUnitSize))
	res.Status = store.NoMatchedMessage
	next := offset
	for next < maxOff {
		if (next-offset)*cqUnitSize >= scanLimit {
			break
		}
		e := q.entries[next-q.base]
		// Java's isTheBatchFull: the first message always fits.
		if len(res.Records) > 0 && (len(res.Records) >= maxMsgNums || res.TotalSize+len(e.record) > maxPull) {
			break
		}
		cur := next
		next++
		if filter != nil && !filter.MatchTagsCode(e.tagsCode) {
			continue
		}
		if e.record == nil {
			if res.TotalSize == 0 {
				res.Status = store.MessageWasRemoving
			}
			continue
		}
		if filter != nil {
			v, err := message.ParseView(e.record, message.ParseOptions{})
			if err == nil && !filter.MatchProperties(v.Properties()) {
				continue
			}
		}
		res.Records = append(res.Records, e.record)
		res.QueueOffsets = append(res.QueueOffsets, cur)
		res.TotalSize += len(e.record)
		res.Status = store.Found
	}
	res.NextBeginOffset = next
	s.gets += int64(len(res.Records)) // messages served, as the real store counts
	return res, nil
}

// MaxOffset is the next offset to be written (0 for a missing queue).
func (s *Store) MaxOffset(topic string, queueID int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[qkey{topic, queueID}]; q != nil {
		return q.max()
	}
	return 0
}

// MinOffset is the smallest offset still present (0 for a missing queue).
func (s *Store) MinOffset(topic string, queueID int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[qkey{topic, queueID}]; q != nil {
		return q.base
	}
	return 0
}

// SearchOffsetByTime has consumequeue.Store's semantics.
func (s *Store) SearchOffsetByTime(topic string, queueID int32, ts int64, bt consumequeue.BoundaryType) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[qkey{topic, queueID}]
	if q == nil {
		return 0, nil
	}
	if len(q.entries) == 0 {
		return q.max(), nil
	}
	if bt == consumequeue.BoundaryUpper {
		i, _ := slices.BinarySearchFunc(q.entries, ts+1, func(e entry, t int64) int { return cmp.Compare(e.storeTime, t) })
		if i == 0 {
			return q.base, nil
		}
		return q.base + int64(i) - 1, nil
	}
	i, _ := slices.BinarySearchFunc(q.entries, ts, func(e entry, t int64) int { return cmp.Compare(e.storeTime, t) })
	return q.base + int64(i), nil
}

// EarliestMessageTime is the store time of the queue's first message (-1 if none).
func (s *Store) EarliestMessageTime(topic string, queueID int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[qkey{topic, queueID}]; q != nil && len(q.entries) > 0 {
		return q.entries[0].storeTime
	}
	return -1
}

// MessageStoreTime is the store time of the message at offset (-1 if none).
func (s *Store) MessageStoreTime(topic string, queueID int32, offset int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[qkey{topic, queueID}]
	if q == nil || offset < q.base || offset >= q.max() {
		return -1
	}
	return q.entries[offset-q.base].storeTime
}

// ReadRecord returns the record stored at a CommitLog offset.
func (s *Store) ReadRecord(phyOffset int64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.byPhy[phyOffset]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("%w %d", ErrNoRecord, phyOffset)
}

// QueryMessage scans every record for the key (KEYS or UNIQ_KEY).
func (s *Store) QueryMessage(topic, key string, uniq bool, maxNum int, begin, end int64) (*store.QueryResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &store.QueryResult{}
	phys := make([]int64, 0, len(s.byPhy))
	for p := range s.byPhy {
		phys = append(phys, p)
	}
	slices.Sort(phys)
	for _, p := range phys {
		if maxNum > 0 && len(res.Records) >= maxNum {
			break
		}
		v, err := message.ParseView(s.byPhy[p], message.ParseOptions{})
		if err != nil || string(v.Topic()) != topic || v.StoreTimestamp() < begin || v.StoreTimestamp() > end {
			continue
		}
		match := false
		if uniq {
			u, _ := v.Property(message.PropertyUniqClientMessageIDKeyIdx)
			match = u == key
		} else {
			keys, _ := v.Property(message.PropertyKeys)
			match = slices.Contains(strings.Fields(keys), key)
		}
		if match {
			res.Records = append(res.Records, s.byPhy[p])
			res.IndexLastUpdateTimestamp = max(res.IndexLastUpdateTimestamp, v.StoreTimestamp())
			res.IndexLastUpdatePhyOffset = max(res.IndexLastUpdatePhyOffset, p)
		}
	}
	return res, nil
}

// CommitOffset records a consumer offset.
func (s *Store) CommitOffset(group, topic string, queueID int32, offset int64) {
	s.mu.Lock()
	s.offsets[offKey{group, topic, queueID}] = offset
	s.mu.Unlock()
}

// AdvanceOffset commits offset unless a larger one is committed.
func (s *Store) AdvanceOffset(group, topic string, queueID int32, offset int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.offsets[offKey{group, topic, queueID}]; ok && cur >= offset {
		return false
	}
	s.offsets[offKey{group, topic, queueID}] = offset
	return true
}

// QueryOffset returns a committed consumer offset.
func (s *Store) QueryOffset(group, topic string, queueID int32) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.offsets[offKey{group, topic, queueID}]
	return v, ok
}

// GroupTopics lists the topics a group has committed offsets for, sorted
// (the optional extension processors use for GET_CONSUME_STATS).
func (s *Store) GroupTopics(group string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.offsets {
		if k.group == group && !slices.Contains(out, k.topic) {
			out = append(out, k.topic)
		}
	}
	slices.Sort(out)
	return out
}

// DeleteGroupOffsets drops every offset of a group and returns how many.
func (s *Store) DeleteGroupOffsets(group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.offsets {
		if k.group == group {
			delete(s.offsets, k)
			n++
		}
	}
	return n
}

// DeleteTopic drops a topic's queues and offsets.
func (s *Store) DeleteTopic(topic string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, q := range s.queues {
		if k.topic == topic {
			for _, e := range q.entries {
				delete(s.byPhy, e.phy)
			}
			delete(s.queues, k)
		}
	}
	for k := range s.offsets {
		if k.topic == topic {
			delete(s.offsets, k)
		}
	}
	return nil
}

// Queues returns the queue ids present for a topic, sorted.
func (s *Store) Queues(topic string) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int32
	for k := range s.queues {
		if k.topic == topic {
			out = append(out, k.qid)
		}
	}
	slices.Sort(out)
	return out
}

// AddArrivalListener registers l for every stored entry.
func (s *Store) AddArrivalListener(l store.ArrivalListener) {
	s.mu.Lock()
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
}

// Stats reports message counts.
func (s *Store) Stats() store.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return store.Stats{CommitLogMaxOffset: s.nextPhy, PutMessageCount: s.puts, GetMessageCount: s.gets, EarliestMessageTime: -1}
}

// RemoveBefore drops the entries below offset, as retention does: the
// queue's min offset becomes offset (at most its max offset).
func (s *Store) RemoveBefore(topic string, queueID int32, offset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[qkey{topic, queueID}]
	if q == nil {
		q = &queue{}
		s.queues[qkey{topic, queueID}] = q
	}
	offset = min(offset, q.max()) // an emptied queue keeps its max offset
	if offset <= q.base {
		return
	}
	drop := offset - q.base
	for _, e := range q.entries[:drop] {
		delete(s.byPhy, e.phy)
	}
	q.entries = slices.Clone(q.entries[drop:])
	q.base = offset
}

// MarkRemoving makes the CommitLog part of one entry unreadable, so reads
// reaching it report MESSAGE_WAS_REMOVING.
func (s *Store) MarkRemoving(topic string, queueID int32, offset int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[qkey{topic, queueID}]
	if q == nil || offset < q.base || offset >= q.max() {
		return
	}
	e := &q.entries[offset-q.base]
	delete(s.byPhy, e.phy)
	e.record = nil
}

// CreateQueue makes an empty queue exist (NO_MESSAGE_IN_QUEUE instead of
// NO_MATCHED_LOGIC_QUEUE).
func (s *Store) CreateQueue(topic string, queueID int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queues[qkey{topic, queueID}] == nil {
		s.queues[qkey{topic, queueID}] = &queue{}
	}
}
