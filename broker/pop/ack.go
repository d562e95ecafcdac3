package pop

import (
	"context"
	"errors"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"runtime"
	"strconv"

	"github.com/rmqgo/rmq/broker/msgtype"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Errors of ack and change-invisible that become NO_MESSAGE: the receipt
// does not (or no longer) name an in-flight message.
var (
	errNoCheckpoint = errors.New("no in-flight pop matches the receipt handle (forged, already fully acked, or revived)")
	errNotInCK      = errors.New("the offset is not one of the receipt's pop")
	errRevived      = errors.New("the message's invisible time passed: it was already redelivered through the retry topic")
)

// errLite refuses a request carrying liteTopic. The broker's lite processor
// (broker/lite/poplite) wraps ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME
// and answers those itself, so they reach this package only where lite
// topics are not wired; handled here they would be taken for acks of the
// parent topic's queue.
func errLite(c int32) error {
	return errorf(code.IllegalOperation, "request code %d: liteTopic is set but lite topics are not served here", c)
}

func noMessage(err error) error {
	return &remoting.CodeError{Code: code.NoMessage, Remark: err.Error()}
}

func (p *Processor) handleAck(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h, err := parseAckHeader(req.ExtFields)
	if err != nil {
		return nil, err
	}
	if err := p.checkReceipt(req.Code, h, false); err != nil {
		return nil, err
	}
	if h.Extra.IsOrder() {
		if err := p.ackOrderly(ctx, h.Topic, h.ConsumerGroup, h.QueueID, h.Offset, h.Extra.PopTime, ch); err != nil {
			return nil, err
		}
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	id := ckID{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Start: h.Extra.CkQueueOffset, PopTime: h.Extra.PopTime}
	if err := p.ack(ctx, id, h.Extra.ReviveQid, []int64{h.Offset}); err != nil {
		return nil, err
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// checkReceipt is what ack and change-invisible (request code reqCode)
// require of the message h names before they act on it: a master, no
// liteTopic (not served here), and Java's topic, queue and offset check
// (offset ≤ max for ack; offset < max, strict, for change-invisible).
func (p *Processor) checkReceipt(reqCode int32, h AckHeader, strict bool) error {
	if err := NotMaster(p.d.Config()); err != nil {
		return err
	}
	if h.LiteTopic != "" {
		return errLite(reqCode)
	}
	topic, qid, offset := h.Topic, h.QueueID, h.Offset
	tc, ok := p.d.Topics.Get(topic)
	if !ok {
		return errorf(code.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if qid < 0 || int(qid) >= tc.ReadQueueNums {
		return errorf(code.MessageIllegal, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]", qid, topic, tc.ReadQueueNums)
	}
	lo, hi := p.st.MinOffset(topic, qid), p.st.MaxOffset(topic, qid)
	if offset < lo || offset > hi || (strict && offset == hi) {
		return errorf(code.NoMessage, "offset is illegal, key:%s@%d, commit:%d, store:%d~%d", topic, qid, offset, lo, hi)
	}
	return nil
}

// ack marks offsets of checkpoint id acked. A repeated ack of an acked
// offset succeeds; offsets of a revived or unknown checkpoint do not.
func (p *Processor) ack(ctx context.Context, id ckID, rq int32, offsets []int64) error {
	items := []ackItem{{id: id, offsets: offsets}}
	p.ackAll(ctx, rq, items)
	return items[0].err
}

// ackItem is one ack: offsets of one checkpoint, and its outcome.
type ackItem struct {
	id      ckID
	offsets []int64
	err     error
}

// ackCall is one caller's acks of one revive queue, waiting to be recorded.
type ackCall struct {
	items []ackItem
	done  chan struct{} // closed when items are answered, or lead is set
	lead  bool          // the caller is to record the waiting acks
}

// maxAcksPerRecord bounds the acks of one journal record (a few dozen
// bytes each).
const maxAcksPerRecord = 512

// ackAll acks items, all of revive queue rq, setting each item's err.
// Acks of one revive queue are recorded as a group commit: while one
// caller records a batch under the queue's journal lock, the acks that
// arrive wait, and the first of them then records all that waited in one
// journal record and one Pebble batch. Each ack is answered only after
// the record holding it was written and applied, as a single ack was, so
// an answered ack is as durable as before (the journal's CommitLog write
// with the store's flush mode) and a crash replays it.
func (p *Processor) ackAll(ctx context.Context, rq int32, items []ackItem) {
	if rq < 0 || rq >= popcodec.OrderReviveQueue {
		for i := range items {
			items[i].err = noMessage(fmt.Errorf("%w: reviveQid %d", errNoCheckpoint, rq))
		}
		return
	}
	q := p.j.queue(rq)
	call := &ackCall{items: items, done: make(chan struct{})}
	q.amu.Lock()
	q.acks = append(q.acks, call)
	if q.leading {
		q.amu.Unlock()
		<-call.done
		if !call.lead {
			return
		}
	} else {
		q.leading = true
		q.amu.Unlock()
	}
	// This caller records every waiting call, its own included. It
	// yields first: acks sent together (a 5.x SimpleConsumer acks each
	// message of a receive in an rpc of its own, all at once) are being
	// dispatched to other goroutines now, and a yield lets those that are
	// ready join this record instead of waiting for the next.
	runtime.Gosched()
	q.amu.Lock()
	batch := q.acks
	q.acks = nil
	q.amu.Unlock()
	// The batch is others' acks too: the caller's cancellation must not
	// fail them.
	p.recordAcks(context.WithoutCancel(ctx), rq, batch)
	for _, c := range batch {
		if c != call {
			close(c.done)
		}
	}
	q.amu.Lock()
	if len(q.acks) > 0 {
		next := q.acks[0]
		next.lead = true
		close(next.done)
	} else {
		q.leading = false
	}
	q.amu.Unlock()
}

// recordAcks checks the acks of calls against their checkpoints under the
// journal lock of rq, as one ack at a time would in call order, and
// records those with offsets to ack.
func (p *Processor) recordAcks(ctx context.Context, rq int32, calls []*ackCall) {
	unlock := p.j.lock(rq)
	defer unlock()
	v := p.j.view(rq)
	// The checkpoints as the acks before the current one leave them, and
	// the bits the unwritten record sets: an ack found done by them is
	// answered with that record's outcome.
	cks := make(map[ckID]*checkpoint, 4)
	pending := make(map[ckID]uint32, 4)
	var entries []ackEntry
	var waiting []*ackItem
	flush := func() {
		if len(waiting) == 0 {
			return
		}
		o := &op{Kind: opAcks, Acks: entries}
		if len(entries) == 1 {
			o = &op{Kind: opAck, ID: &entries[0].ID, Offsets: entries[0].Offsets}
		}
		if err := p.j.append(ctx, rq, o); err != nil {
			for _, it := range waiting {
				it.err = fmt.Errorf("record ack: %w", err)
			}
			clear(cks) // read again what was recorded
		}
		entries, waiting = entries[:0], waiting[:0]
		clear(pending)
	}
	for _, c := range calls {
		for i := range c.items {
			if len(entries) == maxAcksPerRecord {
				flush()
			}
			it := &c.items[i]
			ck, ok := cks[it.id]
			if !ok {
				var err error
				if ck, err = v.load(it.id); err != nil {
					it.err = fmt.Errorf("read pop checkpoint: %w", err)
					continue
				}
				cks[it.id] = ck
			}
			if ck == nil || ck.ReviveQid != rq {
				it.err = noMessage(errNoCheckpoint)
				continue
			}
			unacked, err := toAck(ck, it.offsets)
			if err != nil {
				it.err = err
				continue
			}
			var bits uint32
			for _, off := range it.offsets {
				bits |= 1 << ck.index(off)
			}
			if len(unacked) > 0 {
				ck.Acked |= bits
				pending[it.id] |= bits
				entries = append(entries, ackEntry{ID: it.id, Offsets: unacked})
				waiting = append(waiting, it)
			} else if pending[it.id]&bits != 0 {
				waiting = append(waiting, it)
			}
		}
	}
	flush()
}

// toAck lists the offsets of ck that an ack of offsets records: those not
// acked yet. An offset that is not ck's, or was revived, fails the ack.
func toAck(ck *checkpoint, offsets []int64) ([]int64, error) {
	var unacked []int64
	for _, off := range offsets {
		i := ck.index(off)
		switch {
		case i < 0:
			return nil, noMessage(fmt.Errorf("%w: offset %d", errNotInCK, off))
		case ck.Revived&(1<<i) != 0:
			return nil, noMessage(errRevived)
		case ck.Acked&(1<<i) == 0:
			unacked = append(unacked, off)
		}
	}
	return unacked, nil
}

// ackOrderly is Java's ackOrderly: commit the offset after the acked one
// (the first un-acked of the pop), and wake pollers when the queue
// unblocks.
func (p *Processor) ackOrderly(ctx context.Context, topic, group string, qid int32, offset, popTime int64, ch *remoting.Channel) error {
	if cur, ok := p.st.QueryOffset(group, topic, qid); ok && offset < cur {
		return nil // already committed past it
	}
	next, unblocked, err := p.commitOrderly(ctx, topic, group, qid, offset, popTime, ch)
	if err != nil || next < 0 {
		return err
	}
	// Wake pollers only now: a woken pop must find the queue lock free.
	if unblocked {
		p.wakeQueue(topic, group, qid)
	}
	return nil
}

// commitOrderly records an orderly ack under the queue lock; next < 0
// means there was nothing to do.
func (p *Processor) commitOrderly(ctx context.Context, topic, group string, qid int32, offset, popTime int64, ch *remoting.Channel) (next int64, unblocked bool, err error) {
	mu := p.queueLock(topic, group, qid)
	mu.Lock()
	defer mu.Unlock()
	if cur, ok := p.st.QueryOffset(group, topic, qid); ok && offset < cur {
		return -1, false, nil
	}
	jq := p.orderJournalQueue(topic, group, qid)
	unlock := p.j.lock(jq)
	defer unlock()
	info, err := loadOrder(p.st.DB(), group, topic, qid)
	if err != nil {
		return -1, false, fmt.Errorf("read pop order info: %w", err)
	}
	n, next := info.commitAndNext(offset, popTime)
	switch next {
	case orderNoPopInfo:
		return -1, false, noMessage(errNoCheckpoint)
	case orderStalePop:
		return -1, false, noMessage(fmt.Errorf("the receipt's pop time %d is not the queue's last orderly pop", popTime))
	case orderNotFound:
		return -1, false, errorf(code.MessageIllegal, "offset is illegal, key:%s@%s@%d, commit:%d, %s", topic, group, qid, offset, processor.RemoteAddr(ch))
	}
	if err := p.j.append(ctx, jq, &op{Kind: opOrderAck, Seq: p.j.nextSeq(), Order: &orderOp{
		Group: group, Topic: topic, QueueID: qid, PopTime: popTime, Offset: offset,
	}}); err != nil {
		return -1, false, fmt.Errorf("record orderly ack: %w", err)
	}
	p.st.CommitOffset(group, topic, qid, next)
	return next, !n.blocks("", n.InvisibleTime, p.d.Now().UnixMilli()), nil
}

func (p *Processor) handleBatchAck(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if err := NotMaster(p.d.Config()); err != nil {
		return nil, err
	}
	if len(req.Body) == 0 {
		return nil, errorf(code.NoMessage, "batch ack without body")
	}
	body, err := popcodec.DecodeBatchAckBody(req.Body)
	if err != nil {
		return nil, processor.BadRequestf("%v", err)
	}
	if len(body.Acks) == 0 {
		return nil, errorf(code.NoMessage, "batch ack without acks")
	}
	for _, a := range body.Acks {
		if a.LiteTopic != "" {
			return nil, errorf(code.IllegalOperation, "batch ack of lite topic messages is not supported")
		}
		if tc, ok := p.d.Topics.Get(a.Topic); ok && msgtype.TopicType(&tc) == msgtype.Lite {
			return nil, errorf(code.IllegalOperation, "batch ack of lite topic [%s] messages is not supported", a.Topic)
		}
	}
	errs := make([]error, len(body.Acks))
	// The acks of each revive queue are recorded together; orderly ones
	// one by one.
	byQueue := map[int32][]ackItem{}
	var at map[int32][]int
	for i, a := range body.Acks {
		id, offsets, err := p.batchAckOne(ctx, a, ch)
		if err != nil || offsets == nil {
			errs[i] = err
			continue
		}
		if at == nil {
			at = map[int32][]int{}
		}
		byQueue[a.ReviveQueueID] = append(byQueue[a.ReviveQueueID], ackItem{id: id, offsets: offsets})
		at[a.ReviveQueueID] = append(at[a.ReviveQueueID], i)
	}
	for rq, items := range byQueue {
		p.ackAll(ctx, rq, items)
		for k, it := range items {
			errs[at[rq][k]] = it.err
		}
	}
	var failed []string
	for i, err := range errs {
		if err != nil {
			// Java acks what it can and answers SUCCESS; we say what failed.
			failed = append(failed, fmt.Sprintf("ack %d: %v", i, err))
		}
	}
	resp := remoting.NewResponse(req, code.Success, "")
	if len(failed) > 0 {
		resp.Remark = strconv.Itoa(len(failed)) + " of " + strconv.Itoa(len(body.Acks)) + " acks not applied: " + failed[0]
		p.log.Debug("batch ack partly stale", "failed", len(failed), "first", failed[0])
	}
	return resp, nil
}

// batchAckOne checks one entry of a batch ack; an orderly one is acked
// at once. It returns the checkpoint and offsets of a non-orderly one,
// for the caller to ack (nil offsets: nothing left to do).
func (p *Processor) batchAckOne(ctx context.Context, a popcodec.BatchAck, ch *remoting.Channel) (ckID, []int64, error) {
	if err := checkNames(a.ConsumerGroup, a.Topic); err != nil {
		return ckID{}, nil, err
	}
	topic, err := popcodec.RealTopic(a.Topic, a.ConsumerGroup, a.Retry)
	if err != nil {
		return ckID{}, nil, processor.BadRequestf("%v", err)
	}
	lo, hi := p.st.MinOffset(topic, a.QueueID), p.st.MaxOffset(topic, a.QueueID)
	var offsets []int64
	for _, off := range a.Offsets() {
		if off >= lo && off <= hi {
			offsets = append(offsets, off)
		}
	}
	if len(offsets) == 0 {
		return ckID{}, nil, noMessage(errors.New("no acked offset inside the queue"))
	}
	if a.ReviveQueueID == popcodec.OrderReviveQueue {
		var errs []error
		for _, off := range offsets {
			errs = append(errs, p.ackOrderly(ctx, topic, a.ConsumerGroup, a.QueueID, off, a.PopTime, ch))
		}
		return ckID{}, nil, errors.Join(errs...)
	}
	id := ckID{Group: a.ConsumerGroup, Topic: topic, QueueID: a.QueueID, Start: a.StartOffset, PopTime: a.PopTime}
	return id, offsets, nil
}
