package pop

import (
	"context"
	"errors"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Revive tuning.
const (
	reviveBatch      = 1024 // checkpoints looked at per round
	reviveMaxBackoff = time.Minute
)

// reviveService redelivers what was popped and not acked in time (Java's
// PopReviveService): when a checkpoint is due, each offset neither acked
// nor revived is read back at exactly that offset (a gone or different
// message is never revived in its place: upstream #7724) and stored in the
// group's pop retry topic with reconsumeTimes+1, or in %DLQ%<group> once
// its reconsumeTimes reached the group's retryMaxTimes. Then one journal
// op settles those offsets. The checkpoint's revive queue lock is held
// from the decision to that op, so an ack either lands before (and the
// message is not revived) or after (and answers NO_MESSAGE): an acked
// message is never redelivered. A message that could not be stored keeps
// its checkpoint and is tried again with backoff, never dropped
// (upstream #7914). A crash between the store and the op revives it twice:
// redelivery of an un-acked message, never a loss.
type reviveService struct {
	p                    *Processor
	wakeCh, stop, done   chan struct{}
	startOnce, closeOnce sync.Once
	revived, dlq, failed atomic.Int64
	gone                 atomic.Int64
	// lastRound (ms) and lastCount describe the last round (pop status).
	lastRound, lastCount atomic.Int64
	createdMu            sync.Mutex
	created              []string
}

func newReviveService(p *Processor) *reviveService {
	return &reviveService{p: p, wakeCh: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

func (r *reviveService) kick() {
	loop.Wake(r.wakeCh)
}

func (r *reviveService) start() {
	r.startOnce.Do(func() { go r.loop() })
}

func (r *reviveService) close() {
	r.closeOnce.Do(func() {
		close(r.stop)
		r.startOnce.Do(func() { close(r.done) })
		<-r.done
	})
}

func (r *reviveService) interval() time.Duration {
	if r.p.d.ReviveInterval > 0 {
		return r.p.d.ReviveInterval
	}
	return defaults.Or(r.p.d.Config().ReviveInterval, time.Second)
}

func (r *reviveService) loop() {
	defer close(r.done)
	loop.Rounds(r.stop, r.wakeCh, func() time.Duration {
		if !r.p.d.Config().IsMaster() {
			// A slave applies its master's journal as it arrives, and
			// revives nothing (journal.follow).
			if _, err := r.p.j.follow(); err != nil {
				r.p.log.Error("pop journal: follow the master's", "err", err)
			}
			return r.interval()
		}
		t0 := time.Now()
		n := r.round()
		if f := r.p.d.ReviveRound; f != nil {
			f(time.Since(t0))
		}
		wait := r.interval()
		if n >= reviveBatch {
			wait = 0 // more are due
		} else if next, ok := r.nextDue(); ok {
			wait = min(wait, time.Duration(next-r.p.d.Now().UnixMilli())*time.Millisecond)
		}
		return wait
	})
}

// nextDue is the earliest checkpoint due time.
func (r *reviveService) nextDue() (int64, bool) {
	it, err := r.p.st.DB().NewIter(prefixIter(tabDue))
	if err != nil {
		return 0, false
	}
	defer it.Close()
	if !it.First() {
		return 0, false
	}
	due, _, ok := parseDueKey(it.Key())
	return due, ok
}

type dueRef struct {
	due int64
	id  ckID
}

// round revives the checkpoints due now and returns how many it looked at.
func (r *reviveService) round() int {
	if !r.p.d.Config().IsMaster() {
		return 0 // a slave's journal is the master's, replicated (loop follows it)
	}
	now := r.p.d.Now().UnixMilli()
	db := r.p.st.DB()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: dueLowerBound(), UpperBound: dueUpperBound(now)})
	if err != nil {
		r.p.log.Error("revive: scan", "err", err)
		return 0
	}
	var due []dueRef
	for it.First(); it.Valid() && len(due) < reviveBatch; it.Next() {
		d, id, ok := parseDueKey(it.Key())
		if !ok {
			r.p.log.Warn("revive: drop malformed index key", "key", fmt.Sprintf("%q", it.Key()))
			_ = db.Delete(append([]byte(nil), it.Key()...), pebble.NoSync)
			continue
		}
		due = append(due, dueRef{d, id})
	}
	if err := it.Close(); err != nil {
		r.p.log.Error("revive: scan", "err", err)
	}
	ctx := context.Background()
	for _, d := range due {
		select {
		case <-r.stop:
			return len(due)
		default:
		}
		r.reviveOne(ctx, d, now)
	}
	r.announceCreated()
	r.lastRound.Store(now)
	r.lastCount.Store(int64(len(due)))
	return len(due)
}

// reviveOne revives the pending offsets of one due checkpoint.
func (r *reviveService) reviveOne(ctx context.Context, d dueRef, now int64) {
	p := r.p
	db := p.st.DB()
	ck0, err := loadCK(db, d.id)
	if err != nil || ck0 == nil {
		if err == nil {
			// An index key without its checkpoint (cannot be written, but
			// never let one spin the loop).
			_ = db.Delete(dueKey(d.due, d.id), pebble.NoSync)
		}
		return
	}
	unlock := p.j.lock(ck0.ReviveQid)
	defer unlock()
	ck, err := p.j.view(ck0.ReviveQid).load(d.id)
	if err != nil || ck == nil || ck.Due != d.due || ck.Due > now {
		return // acked, revived or moved meanwhile
	}
	if ev := p.d.Revive; ev != nil {
		ev.ReviveGot(ck.Group, ck.Topic, ck.ReviveQid, true)
	}
	maxTimes := int32(subscription.DefaultRetryMaxTimes)
	if sg, ok := p.d.Groups.FindOrCreate(ck.Group); ok {
		maxTimes = int32(sg.RetryMaxTimes)
	}
	var settled []int64
	failed := false
	for _, off := range ck.pending() {
		if err := r.reviveMessage(ctx, ck, off, maxTimes); err != nil {
			failed = true
			r.failed.Add(1)
			p.log.Warn("revive: message not redelivered yet", "group", ck.Group, "topic", ck.Topic, "queue", ck.QueueID, "offset", off, "err", err)
			continue
		}
		settled = append(settled, off)
	}
	o := &op{Kind: opRevive, ID: &ck.ckID, Offsets: settled}
	if failed {
		backoff := min(time.Second<<min(ck.Tries, 6), reviveMaxBackoff)
		o.Due = now + backoff.Milliseconds()
	}
	if err := p.j.append(ctx, ck.ReviveQid, o); err != nil {
		p.log.Error("revive: record", "group", ck.Group, "topic", ck.Topic, "queue", ck.QueueID, "err", err)
	}
}

// errGone: the message is no longer in the store (retention, topic
// deleted): there is nothing to redeliver.
var errGone = errors.New("message gone")

// reviveMessage stores one un-acked message again; nil means settled
// (stored, or gone for good).
func (r *reviveService) reviveMessage(ctx context.Context, ck *checkpoint, off int64, maxTimes int32) error {
	m, err := r.readExact(ck.Topic, ck.QueueID, off)
	if errors.Is(err, errGone) {
		r.gone.Add(1)
		r.p.log.Warn("revive: un-acked message is gone from the store", "topic", ck.Topic, "queue", ck.QueueID, "offset", off, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	p := r.p
	cfg := p.d.Config()
	var host = m.StoreHost
	if p.d.StoreHost != nil {
		host = p.d.StoreHost()
	}
	props := maps.Clone(m.Properties)
	if props == nil {
		props = map[string]string{}
	}
	// Retry and DLQ copies take no lite-topic dispatch (docs/lite-topics.md §3.1).
	delete(props, message.PropertyInnerMultiDispatch)
	delete(props, message.PropertyInnerMultiQueueOffset)
	delete(props, message.PropertyPopCK)
	msg := &message.Message{
		Flag: m.Flag, Body: m.Body, Properties: props, SysFlag: m.SysFlag,
		BornTimestamp: m.BornTimestamp, BornHost: host, StoreHost: host, ReconsumeTimes: m.ReconsumeTimes + 1,
	}
	dlq := m.ReconsumeTimes >= maxTimes
	if dlq {
		msg.Topic = protocol.DLQTopic(ck.Group)
		if props[message.PropertyRetryTopic] == "" {
			props[message.PropertyRetryTopic] = r.consumerTopic(ck)
		}
		if props[message.PropertyOriginMessageID] == "" {
			props[message.PropertyOriginMessageID] = message.OffsetMsgID(m.StoreHost, m.CommitLogOffset)
		}
	} else {
		msg.Topic = ck.Topic
		if _, isRetry := popcodec.ParseRetryTopic(ck.Topic, ck.Group); !isRetry {
			msg.Topic = popcodec.RetryTopic(ck.Topic, ck.Group, cfg.EnableRetryTopicV2)
		}
		if m.ReconsumeTimes == 0 || props[message.PropertyFirstPopTime] == "" {
			props[message.PropertyFirstPopTime] = strconv.FormatInt(ck.PopTime, 10)
		}
	}
	if err := r.ensureTopic(msg.Topic); err != nil {
		return err
	}
	_, err = p.st.PutMessage(ctx, msg)
	if ev := p.d.Revive; ev != nil && !dlq {
		ev.ReviveRetry(ck.Group, ck.Topic, PutStatus(err))
	}
	if err != nil && !errors.Is(err, store.ErrFlushTimeout) {
		return fmt.Errorf("store %s copy: %w", msg.Topic, err)
	}
	if dlq {
		r.dlq.Add(1)
		p.log.Info("pop message sent to DLQ", "group", ck.Group, "topic", ck.Topic, "queue", ck.QueueID, "offset", off,
			"reconsumeTimes", m.ReconsumeTimes, "maxReconsumeTimes", maxTimes)
	} else {
		r.revived.Add(1)
	}
	return nil
}

// consumerTopic is the topic the group consumes (the retry topic's base).
func (r *reviveService) consumerTopic(ck *checkpoint) string {
	if t, ok := popcodec.ParseRetryTopic(ck.Topic, ck.Group); ok {
		return t
	}
	return ck.Topic
}

// readExact reads the message stored at exactly queue offset off.
func (r *reviveService) readExact(topic string, qid int32, off int64) (*message.Message, error) {
	st := r.p.st
	e, ok, err := st.ConsumeQueue().Entry(topic, qid, off)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: no consume queue entry %s-%d@%d", errGone, topic, qid, off)
	}
	rec, err := st.ReadRecord(e.CommitLogOffset)
	if errors.Is(err, commitlog.ErrOffsetOutOfRange) {
		return nil, fmt.Errorf("%w: %v", errGone, err)
	}
	if err != nil {
		return nil, err
	}
	m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
	if err != nil {
		return nil, fmt.Errorf("%w: undecodable record: %v", errGone, err)
	}
	if m.Topic != topic || m.QueueID != qid || m.QueueOffset != off {
		return nil, fmt.Errorf("%w: record at %d is %s-%d@%d, not %s-%d@%d", errGone, e.CommitLogOffset, m.Topic, m.QueueID, m.QueueOffset, topic, qid, off)
	}
	return m, nil
}

// ensureTopic creates a retry (1 queue) or DLQ topic (1 queue) as Java's
// addRetryTopicIfNotExist and createTopicInSendMessageBackMethod do; the
// nameservers learn of it after the round (announceCreated), outside the
// revive queue lock.
func (r *reviveService) ensureTopic(name string) error {
	if _, ok := r.p.d.Topics.Get(name); ok {
		return nil
	}
	tc := protocol.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
	tc.Perm = protocol.PermRead | protocol.PermWrite
	got, created, err := r.p.d.Topics.CreateIfAbsent(tc)
	if got.TopicName == "" {
		return fmt.Errorf("create topic %s: %v", name, err)
	}
	if err != nil {
		r.p.log.Error("persist topic created by pop revive", "topic", name, "err", err)
	}
	if created {
		r.p.log.Info("topic created by pop revive", "topic", name)
		r.createdMu.Lock()
		r.created = append(r.created, name)
		r.createdMu.Unlock()
	}
	return nil
}

func (r *reviveService) announceCreated() {
	r.createdMu.Lock()
	names := r.created
	r.created = nil
	r.createdMu.Unlock()
	if r.p.d.TopicCreated == nil {
		return
	}
	for _, n := range names {
		r.p.d.TopicCreated(n)
	}
}
