package pop

import (
	"context"
	"errors"
	"fmt"
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
	if rq < 0 || rq >= OrderReviveQueue {
		return noMessage(fmt.Errorf("%w: reviveQid %d", errNoCheckpoint, rq))
	}
	unlock := p.j.lock(rq)
	defer unlock()
	ck, err := loadCK(p.st.DB(), id)
	if err != nil {
		return fmt.Errorf("read pop checkpoint: %w", err)
	}
	if ck == nil || ck.ReviveQid != rq {
		return noMessage(errNoCheckpoint)
	}
	var todo []int64
	for _, off := range offsets {
		i := ck.index(off)
		switch {
		case i < 0:
			return noMessage(fmt.Errorf("%w: offset %d", errNotInCK, off))
		case ck.Revived&(1<<i) != 0:
			return noMessage(errRevived)
		case ck.Acked&(1<<i) == 0:
			todo = append(todo, off)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := p.j.append(ctx, rq, &op{Kind: opAck, ID: &id, Offsets: todo}); err != nil {
		return fmt.Errorf("record ack: %w", err)
	}
	return nil
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
	body, err := DecodeBatchAckBody(req.Body)
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
	var failed []string
	for i, a := range body.Acks {
		if err := p.batchAckOne(ctx, a, ch); err != nil {
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

func (p *Processor) batchAckOne(ctx context.Context, a BatchAck, ch *remoting.Channel) error {
	if err := checkNames(a.ConsumerGroup, a.Topic); err != nil {
		return err
	}
	topic, err := RealTopic(a.Topic, a.ConsumerGroup, a.Retry)
	if err != nil {
		return processor.BadRequestf("%v", err)
	}
	lo, hi := p.st.MinOffset(topic, a.QueueID), p.st.MaxOffset(topic, a.QueueID)
	var offsets []int64
	for _, off := range a.Offsets() {
		if off >= lo && off <= hi {
			offsets = append(offsets, off)
		}
	}
	if len(offsets) == 0 {
		return noMessage(errors.New("no acked offset inside the queue"))
	}
	if a.ReviveQueueID == OrderReviveQueue {
		var errs []error
		for _, off := range offsets {
			errs = append(errs, p.ackOrderly(ctx, topic, a.ConsumerGroup, a.QueueID, off, a.PopTime, ch))
		}
		return errors.Join(errs...)
	}
	id := ckID{Group: a.ConsumerGroup, Topic: topic, QueueID: a.QueueID, Start: a.StartOffset, PopTime: a.PopTime}
	return p.ack(ctx, id, a.ReviveQueueID, offsets)
}
