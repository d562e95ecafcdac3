package pop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/pkg/message"
)

// JournalStore is what the journal needs from the message store: append
// records, read them back by consume-queue position at recovery, and the
// Pebble database the state lives in. *store.Store implements it.
type JournalStore interface {
	PutMessage(ctx context.Context, msg *message.Message) (store.PutResult, error)
	ReadRecord(phyOffset int64) ([]byte, error)
	ReadRecords(entries []consumequeue.Entry, fn func(i int, rec []byte, err error) error) error
	ConsumeQueue() *consumequeue.Store
	Queues(topic string) []int32
	DB() *pebble.DB
}

// journal appends ops to queues of the revive topic and applies them to
// Pebble. One mutex per journal queue serialises append and apply, so that
// each queue's ops are applied in queue-offset order and the journal
// position written with them is exact.
type journal struct {
	st    JournalStore
	db    *pebble.DB
	topic string
	host  func() netip.AddrPort
	now   func() time.Time
	log   *slog.Logger

	queues sync.Map // int32 → *jqueue
	seq    atomic.Int64

	appended, replayed atomic.Int64
	// replicas waits for the slaves (Deps.Replicas, replicated.go); nil:
	// no wait.
	replicas func(ctx context.Context, end int64) error
	// events counts checkpoint and ack records (nil: not counted).
	events ReviveCounter
}

func newJournal(st JournalStore, topic string, host func() netip.AddrPort, now func() time.Time, log *slog.Logger) *journal {
	j := &journal{st: st, db: st.DB(), topic: topic, host: host, now: now, log: log}
	j.seq.Store(now().UnixNano())
	return j
}

// jqueue is the in-memory side of one journal queue.
type jqueue struct {
	mu  sync.Mutex // serialises append and apply; guards cks, pos and posKnown
	cks ckCache
	// pos is the queue's applied position (the queue offset of the next
	// record to apply), once read from Pebble (posKnown).
	pos      int64
	posKnown bool
	// acks waiting to be recorded together (ack.go), and whether one of
	// their callers is recording a batch now.
	amu     sync.Mutex
	acks    []*ackCall
	leading bool
}

func (j *journal) queue(q int32) *jqueue {
	if v, ok := j.queues.Load(q); ok {
		return v.(*jqueue)
	}
	v, _ := j.queues.LoadOrStore(q, &jqueue{cks: ckCache{limit: ckCacheLimit}})
	return v.(*jqueue)
}

// lock takes the mutex of journal queue q and returns its unlock.
func (j *journal) lock(q int32) func() {
	mu := &j.queue(q).mu
	mu.Lock()
	return mu.Unlock
}

// view reads checkpoints of journal queue q through its cache; the
// caller holds lock(q).
func (j *journal) view(q int32) *ckView {
	return &ckView{r: j.db, q: q, cache: &j.queue(q).cks}
}

// nextSeq is strictly increasing for this process and past every seq of a
// previous run (nanoseconds since the epoch at start).
func (j *journal) nextSeq() int64 { return j.seq.Add(1) }

// errJournal wraps failures to append or apply.
var errJournal = errors.New("pop journal")

// append writes o to journal queue q and applies it. The caller holds
// lock(q) and has validated o against the current state.
func (j *journal) append(ctx context.Context, q int32, o *op) error {
	body, err := encodeOp(o)
	if err != nil {
		return fmt.Errorf("%w: encode %s: %v", errJournal, o.Kind, err)
	}
	now := j.now().UnixMilli()
	msg := &message.Message{
		Topic:         j.topic,
		QueueID:       q,
		Body:          body,
		Properties:    map[string]string{message.PropertyTags: journalTag(o.Kind)},
		BornTimestamp: now,
	}
	if j.host != nil {
		h := j.host()
		msg.BornHost, msg.StoreHost = h, h
	}
	res, err := j.st.PutMessage(ctx, msg)
	j.countPut(o, PutStatus(err))
	if err != nil && !errors.Is(err, store.ErrFlushTimeout) {
		return fmt.Errorf("%w: append %s: %w", errJournal, o.Kind, err)
	}
	j.appended.Add(1)
	if o.Kind == opCheckpoint || o.Kind == opOrderPop {
		j.noteReplicated(ctx, res.End)
	}
	if err := j.applyAt(q, res.QueueOffset, o); err != nil {
		return err
	}
	j.countApplied(q, o)
	return nil
}

// countPut counts a checkpoint or ack record written with status (Java
// counts a change of invisible time as an ack and a checkpoint).
func (j *journal) countPut(o *op, status string) {
	if j.events == nil {
		return
	}
	switch o.Kind {
	case opCheckpoint:
		j.events.RevivePut(o.CK.Group, o.CK.Topic, true, status)
	case opAck:
		j.events.RevivePut(o.ID.Group, o.ID.Topic, false, status)
	case opAcks:
		for _, a := range o.Acks {
			j.events.RevivePut(a.ID.Group, a.ID.Topic, false, status)
		}
	case opChange:
		j.events.RevivePut(o.ID.Group, o.ID.Topic, false, status)
		j.events.RevivePut(o.CK.Group, o.CK.Topic, true, status)
	}
}

// countApplied counts an ack taken up by its checkpoint: ours is applied
// as it is written, where Java's revive service reads it back later.
func (j *journal) countApplied(q int32, o *op) {
	if j.events == nil {
		return
	}
	switch o.Kind {
	case opAck, opChange:
		j.events.ReviveGot(o.ID.Group, o.ID.Topic, q, false)
	case opAcks:
		for _, a := range o.Acks {
			j.events.ReviveGot(a.ID.Group, a.ID.Topic, q, false)
		}
	}
}

// PutStatus is Java's PutMessageStatus name for the result of a store
// write.
func PutStatus(err error) string {
	switch {
	case err == nil:
		return "PUT_OK"
	case errors.Is(err, store.ErrFlushTimeout):
		return "FLUSH_DISK_TIMEOUT"
	case errors.Is(err, store.ErrNotWritable), errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrShutdown):
		return "SERVICE_NOT_AVAILABLE"
	case errors.Is(err, store.ErrMessageIllegal):
		return "MESSAGE_ILLEGAL"
	}
	return "UNKNOWN_ERROR"
}

// applyAt applies o, recorded at journal offset off, in one batch with the
// new journal position.
func (j *journal) applyAt(q int32, off int64, o *op) error {
	b := j.db.NewBatch()
	defer b.Close()
	v := j.view(q)
	if err := apply(v, b, o); err != nil {
		v.drop()
		return fmt.Errorf("%w: apply %s: %v", errJournal, o.Kind, err)
	}
	if err := b.Set(journalPosKey(j.topic, q), u64(off+1), nil); err != nil {
		v.drop()
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		v.drop()
		return fmt.Errorf("%w: commit %s: %v", errJournal, o.Kind, err)
	}
	v.publish()
	jq := j.queue(q)
	jq.pos, jq.posKnown = off+1, true
	return nil
}

// position is journal queue q's applied position; the caller holds
// lock(q).
func (j *journal) position(q int32) (int64, error) {
	jq := j.queue(q)
	if jq.posKnown {
		return jq.pos, nil
	}
	var pos int64
	v, closer, err := j.db.Get(journalPosKey(j.topic, q))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return 0, err
	default:
		pos, _ = readU64(v)
		closer.Close()
	}
	jq.pos, jq.posKnown = pos, true
	return pos, nil
}

// follow applies, queue by queue, the journal records after each queue's
// applied position. A slave's journal is its master's, replicated and
// dispatched into the revive topic's queues; applying it as it comes keeps
// the slave's pop state (checkpoints, acks, the revive index, offset
// shadows) the master's, so that once promoted it revives what the old
// master's consumers left unacked. A position past its queue's end (the
// CommitLog was truncated to a new master's: New registers follow as a
// truncate listener of the store) is lowered to the end, as the records
// replicated there next are the new master's.
func (j *journal) follow() (int, error) {
	qs := j.st.Queues(j.topic)
	j.queues.Range(func(k, _ any) bool {
		if q := k.(int32); !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
		return true
	})
	total := 0
	for _, q := range qs {
		unlock := j.lock(q)
		n, err := j.catchUp(q)
		unlock()
		total += n
		if err != nil {
			return total, fmt.Errorf("pop: follow journal %s-%d: %w", j.topic, q, err)
		}
	}
	return total, nil
}

// catchUp applies queue q's records from its applied position to its end;
// the caller holds lock(q).
func (j *journal) catchUp(q int32) (int, error) {
	pos, err := j.position(q)
	if err != nil {
		return 0, err
	}
	st, ok := j.st.ConsumeQueue().State(j.topic, q)
	if !ok || pos == st.Max {
		return 0, nil
	}
	jq := j.queue(q)
	jq.posKnown = false // replayQueue writes the position
	if pos > st.Max {
		clear(jq.cks.m) // the cut records' checkpoints may be cached
	}
	n, maxSeq, err := j.replayQueue(j.topic, q, pos)
	for cur := j.seq.Load(); n > 0 && maxSeq >= cur && !j.seq.CompareAndSwap(cur, maxSeq+1); cur = j.seq.Load() {
	}
	return n, err
}

// recover replays every journal queue from its applied position to its
// end: the ops whose Pebble batch a crash lost (Pebble runs without its
// WAL) are applied again, in order. It runs before the broker takes
// requests, after the store re-dispatched its CommitLog.
func (j *journal) recover() error {
	positions := map[string]map[int32]int64{}
	it, err := j.db.NewIter(&pebble.IterOptions{LowerBound: tablePrefix(tabJournal), UpperBound: kv.PrefixEnd(tablePrefix(tabJournal))})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		topic, q, ok := parseJournalPosKey(it.Key())
		pos, ok2 := readU64(it.Value())
		if !ok || !ok2 {
			continue
		}
		if positions[topic] == nil {
			positions[topic] = map[int32]int64{}
		}
		positions[topic][q] = pos
	}
	if err := it.Close(); err != nil {
		return err
	}
	if positions[j.topic] == nil {
		positions[j.topic] = map[int32]int64{}
	}
	for _, q := range j.st.Queues(j.topic) {
		if _, ok := positions[j.topic][q]; !ok {
			positions[j.topic][q] = 0
		}
	}
	var maxSeq int64
	for topic, qs := range positions {
		if topic != j.topic {
			// The cluster was renamed: its journal is no longer written,
			// but what it recorded is still applied.
			j.log.Warn("pop journal of another revive topic found", "topic", topic)
		}
		for q, pos := range qs {
			n, seq, err := j.replayQueue(topic, q, pos)
			if err != nil {
				return fmt.Errorf("pop: replay journal %s-%d: %w", topic, q, err)
			}
			maxSeq = max(maxSeq, seq)
			if n > 0 {
				j.log.Info("pop journal replayed", "topic", topic, "queue", q, "from", pos, "ops", n)
			}
		}
	}
	if cur := j.seq.Load(); maxSeq >= cur {
		j.seq.Store(maxSeq + 1)
	}
	return nil
}

const replayChunk = 256

func (j *journal) replayQueue(topic string, q int32, pos int64) (n int, maxSeq int64, err error) {
	cq := j.st.ConsumeQueue()
	st, ok := cq.State(topic, q)
	if !ok {
		return 0, 0, nil
	}
	if pos > st.Max {
		// A power loss can leave Pebble ahead of the CommitLog, and a
		// former master's log is truncated to its new master's: the next
		// records go there, so the position must too.
		j.log.Warn("pop journal position beyond the journal's end: lowered to it", "topic", topic, "queue", q, "position", pos, "max", st.Max)
		return 0, 0, j.db.Set(journalPosKey(topic, q), u64(st.Max), pebble.NoSync)
	}
	if pos < st.Min {
		j.log.Warn("pop journal records before the position were deleted", "topic", topic, "queue", q, "position", pos, "min", st.Min)
		pos = st.Min
	}
	for pos < st.Max {
		entries, err := cq.Entries(topic, q, pos, replayChunk)
		if err != nil {
			return n, maxSeq, err
		}
		if len(entries) == 0 {
			break
		}
		ops := make([]*op, len(entries))
		if err := j.st.ReadRecords(entries, func(i int, rec []byte, rerr error) error {
			var o *op
			if rerr == nil {
				o, rerr = decodeRecord(rec)
			}
			if rerr != nil {
				j.log.Warn("skip unreadable pop journal record", "topic", topic, "queue", q, "offset", entries[i].Offset, "err", rerr)
				return nil
			}
			maxSeq = max(maxSeq, o.Seq)
			ops[i] = o
			return nil
		}); err != nil {
			return n, maxSeq, err
		}
		last := entries[len(entries)-1].Offset
		if cerr := j.applyChunk(topic, q, ops, last); cerr != nil {
			// An op that does not apply is skipped, as one at a time.
			for i, e := range entries {
				if err := j.replayOne(topic, q, e.Offset, ops[i]); err != nil {
					return n, maxSeq, err
				}
			}
		}
		n += len(entries)
		j.replayed.Add(int64(len(entries)))
		pos = last + 1
	}
	return n, maxSeq, nil
}

// applyChunk applies the ops of consecutive records (nil: an unreadable
// record, skipped) in one Pebble batch with the position after last, so
// that a slave following a busy master commits once per chunk rather than
// once per record; the journal's own queues read checkpoints through their
// cache. Any op that does not apply fails the chunk, and nothing of it is
// written.
func (j *journal) applyChunk(topic string, q int32, ops []*op, last int64) error {
	b := j.db.NewIndexedBatch()
	defer b.Close()
	v := &ckView{r: b}
	if topic == j.topic {
		v.q, v.cache = q, &j.queue(q).cks
	}
	for _, o := range ops {
		if o == nil {
			continue
		}
		if err := apply(v, b, o); err != nil {
			v.drop()
			return err
		}
	}
	if err := b.Set(journalPosKey(topic, q), u64(last+1), nil); err != nil {
		v.drop()
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		v.drop()
		return err
	}
	v.publish()
	return nil
}

// replayOne applies one recovered op (nil: skip it, moving the position).
// It reads and writes Pebble past the queue's cache, which it clears.
func (j *journal) replayOne(topic string, q int32, off int64, o *op) error {
	if topic == j.topic {
		clear(j.queue(q).cks.m)
	}
	b := j.db.NewBatch()
	defer b.Close()
	if o != nil {
		if err := apply(&ckView{r: j.db}, b, o); err != nil {
			j.log.Warn("skip pop journal op that does not apply", "topic", topic, "queue", q, "offset", off, "op", o.Kind, "err", err)
			b.Reset()
		}
	}
	if err := b.Set(journalPosKey(topic, q), u64(off+1), nil); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}

// decodeRecord decodes the op in a journal record.
func decodeRecord(rec []byte) (*op, error) {
	v, err := message.ParseView(rec, message.ParseOptions{})
	if err != nil {
		return nil, err
	}
	return decodeOp(v.Body())
}
