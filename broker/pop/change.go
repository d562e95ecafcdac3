package pop

import (
	"context"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"strconv"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// handleChangeInvisible answers CHANGE_MESSAGE_INVISIBLETIME: the message
// leaves its pop's checkpoint and gets one of its own, popped "now" for
// invisibleTime (Java's appendCheckPointThenAckOrigin, as one journal op).
// The client builds the new receipt from the response and the offset.
func (p *Processor) handleChangeInvisible(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h, err := parseChangeHeader(req.ExtFields)
	if err != nil {
		return nil, err
	}
	if err := p.checkReceipt(req.Code, h.AckHeader, true); err != nil {
		return nil, err
	}
	var res ChangeInvisibleResult
	if h.Extra.IsOrder() {
		res, err = p.changeOrderly(ctx, h)
	} else {
		res, err = p.change(ctx, h)
	}
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("popTime", strconv.FormatInt(res.PopTime, 10))
	resp.SetExt("invisibleTime", strconv.FormatInt(res.InvisibleTime, 10))
	resp.SetExt("reviveQid", strconv.Itoa(int(res.ReviveQid)))
	return resp, nil
}

func (p *Processor) change(ctx context.Context, h ChangeInvisibleHeader) (ChangeInvisibleResult, error) {
	rq := h.Extra.ReviveQid
	if rq < 0 || rq >= popcodec.OrderReviveQueue {
		return ChangeInvisibleResult{}, noMessage(fmt.Errorf("%w: reviveQid %d", errNoCheckpoint, rq))
	}
	id := ckID{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Start: h.Extra.CkQueueOffset, PopTime: h.Extra.PopTime}
	unlock := p.j.lock(rq)
	defer unlock()
	v := p.j.view(rq)
	ck, err := v.load(id)
	if err != nil {
		return ChangeInvisibleResult{}, fmt.Errorf("read pop checkpoint: %w", err)
	}
	if ck == nil || ck.ReviveQid != rq {
		return ChangeInvisibleResult{}, noMessage(errNoCheckpoint)
	}
	i := ck.index(h.Offset)
	switch {
	case i < 0:
		return ChangeInvisibleResult{}, noMessage(fmt.Errorf("%w: offset %d", errNotInCK, h.Offset))
	case ck.Revived&(1<<i) != 0:
		return ChangeInvisibleResult{}, noMessage(errRevived)
	case ck.Acked&(1<<i) != 0:
		return ChangeInvisibleResult{}, noMessage(fmt.Errorf("the message at offset %d was already acked", h.Offset))
	}
	now := p.d.Now().UnixMilli()
	nid := ckID{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, Start: h.Offset, PopTime: now}
	// The new checkpoint's key must be free: two changes of one message
	// within a millisecond get distinct pop times.
	for {
		if nid != id {
			old, err := v.load(nid)
			if err != nil {
				return ChangeInvisibleResult{}, fmt.Errorf("read pop checkpoint: %w", err)
			}
			if old == nil {
				break
			}
		}
		nid.PopTime++
	}
	nck := &checkpoint{ckID: nid, ReviveQid: rq, InvisibleTime: h.InvisibleTime, Due: nid.PopTime + h.InvisibleTime, Offsets: []int64{h.Offset}}
	if err := p.j.append(ctx, rq, &op{Kind: opChange, ID: &id, Offsets: []int64{h.Offset}, CK: nck}); err != nil {
		return ChangeInvisibleResult{}, fmt.Errorf("record invisible time change: %w", err)
	}
	if h.InvisibleTime == 0 {
		p.revive.kick()
	}
	return ChangeInvisibleResult{PopTime: nid.PopTime, InvisibleTime: h.InvisibleTime, ReviveQid: rq}, nil
}

// changeOrderly moves one offset's next-visible time in the order info
// (Java's processChangeInvisibleTimeForOrder). The pop time stays: the
// client keeps its receipt.
func (p *Processor) changeOrderly(ctx context.Context, h ChangeInvisibleHeader) (ChangeInvisibleResult, error) {
	res := ChangeInvisibleResult{PopTime: h.Extra.PopTime, InvisibleTime: h.InvisibleTime, ReviveQid: popcodec.OrderReviveQueue}
	if cur, ok := p.st.QueryOffset(h.ConsumerGroup, h.Topic, h.QueueID); ok && h.Offset < cur {
		return res, noMessage(fmt.Errorf("the message at offset %d was already acked (committed offset %d)", h.Offset, cur))
	}
	at := p.d.Now().UnixMilli() + h.InvisibleTime
	free, err := p.moveOrderly(ctx, h, at)
	if err != nil {
		return res, err
	}
	res.InvisibleTime = at - h.Extra.PopTime
	// Wake pollers only after the locks are released.
	if free > 0 {
		p.wakeWhenFree(h.Topic, h.ConsumerGroup, h.QueueID, free)
	} else {
		p.wakeQueue(h.Topic, h.ConsumerGroup, h.QueueID)
	}
	return res, nil
}

// moveOrderly records the new next-visible time under the queue lock and
// returns when the queue unblocks (0: now).
func (p *Processor) moveOrderly(ctx context.Context, h ChangeInvisibleHeader, at int64) (int64, error) {
	mu := p.queueLock(h.Topic, h.ConsumerGroup, h.QueueID)
	mu.Lock()
	defer mu.Unlock()
	jq := p.orderJournalQueue(h.Topic, h.ConsumerGroup, h.QueueID)
	unlock := p.j.lock(jq)
	defer unlock()
	info, err := loadOrder(p.st.DB(), h.ConsumerGroup, h.Topic, h.QueueID)
	if err != nil {
		return 0, fmt.Errorf("read pop order info: %w", err)
	}
	n, ok := info.withNextVisible(h.Offset, h.Extra.PopTime, at)
	if !ok {
		return 0, noMessage(fmt.Errorf("offset %d is not an un-acked message of the queue's last orderly pop %d", h.Offset, h.Extra.PopTime))
	}
	if err := p.j.append(ctx, jq, &op{Kind: opOrderChange, Seq: p.j.nextSeq(), Order: &orderOp{
		Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID, PopTime: h.Extra.PopTime, Offset: h.Offset, At: at,
	}}); err != nil {
		return 0, fmt.Errorf("record orderly invisible time change: %w", err)
	}
	return n.freeAt(p.d.Now().UnixMilli()), nil
}
