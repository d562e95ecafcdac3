package poplite

import (
	"context"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/lite/orderinfo"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// ExtraInfo is the part of a POP receipt's extra info ("ckOffset popTime
// invisibleTime reviveQid topicMark brokerName queueId [queueOffset]",
// Java's ExtraInfoUtil) that lite acks use.
type ExtraInfo struct {
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
}

// ParseExtraInfo reads an extra-info string.
func ParseExtraInfo(s string) (ExtraInfo, error) {
	f := strings.Fields(s)
	if len(f) < 4 {
		return ExtraInfo{}, errf(code.InvalidParameter, "extraInfo %q: want at least 4 fields", s)
	}
	pt, err1 := strconv.ParseInt(f[1], 10, 64)
	it, err2 := strconv.ParseInt(f[2], 10, 64)
	rq, err3 := strconv.ParseInt(f[3], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return ExtraInfo{}, errf(code.InvalidParameter, "extraInfo %q: popTime, invisibleTime and reviveQid must be numbers", s)
	}
	return ExtraInfo{PopTime: pt, InvisibleTime: it, ReviveQid: int32(rq)}, nil
}

// AckRequest is an ACK_MESSAGE (or CHANGE_MESSAGE_INVISIBLETIME) that
// carries liteTopic.
type AckRequest struct {
	Group     string
	Topic     string // the parent
	LiteTopic string
	QueueID   int32
	Offset    int64 // the LMQ offset
	ExtraInfo string
	// InvisibleTime is the new invisible time (change invisible time only).
	InvisibleTime int64
}

// ParseAckRequest reads the header fields of ACK_MESSAGE /
// CHANGE_MESSAGE_INVISIBLETIME; lite reports whether liteTopic is set.
func ParseAckRequest(req *remoting.Command) (r AckRequest, lite bool, err error) {
	if strings.TrimSpace(req.ExtFields["liteTopic"]) == "" {
		return r, false, nil
	}
	f := protocol.FieldsOf(req.ExtFields)
	r = AckRequest{
		Group:     f.Str("consumerGroup"),
		Topic:     f.Str("topic"),
		LiteTopic: strings.TrimSpace(f.Str("liteTopic")),
		QueueID:   f.Int32("queueId"),
		Offset:    f.Int64("offset"),
		ExtraInfo: f.Str("extraInfo"),
	}
	if req.Code == code.ChangeMessageInvisible {
		r.InvisibleTime = f.Int64("invisibleTime")
	}
	if err := f.Err(); err != nil {
		return r, true, errf(code.InvalidParameter, "request code %d: %v", req.Code, err)
	}
	return r, true, nil
}

// lmqOf runs the checks shared by lite acks and invisibility changes and
// returns the lmq and its max offset.
func (p *Processor) lmqOf(r AckRequest) (string, error) {
	tc, ok := p.d.Meta.Topic(r.Topic)
	if !ok {
		return "", errf(code.TopicNotExist, "topic[%s] not exist, apply first please!", r.Topic)
	}
	if r.QueueID < 0 || int(r.QueueID) >= tc.ReadQueueNums {
		return "", errf(code.MessageIllegal, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]", r.QueueID, r.Topic, tc.ReadQueueNums)
	}
	if err := naming.ValidateLite(r.LiteTopic, p.d.Config().MaxLiteTopicSize); err != nil {
		return "", errf(code.InvalidParameter, "liteTopic %q: %v", r.LiteTopic, err)
	}
	lmq, _ := naming.LMQName(r.Topic, r.LiteTopic)
	return lmq, nil
}

// Ack acknowledges one lite message (docs/lite-topics.md §6.7).
func (p *Processor) Ack(r AckRequest) error {
	ei, err := ParseExtraInfo(r.ExtraInfo)
	if err != nil {
		return err
	}
	return p.ack(r, ei)
}

func (p *Processor) ack(r AckRequest, ei ExtraInfo) error {
	lmq, err := p.lmqOf(r)
	if err != nil {
		return err
	}
	if g, ok := p.d.Meta.Group(r.Group); !ok || g.BindTopic != r.Topic {
		return errf(code.InvalidParameter, "group type or bind topic not match: group [%s], topic [%s]", r.Group, r.Topic)
	}
	if max := p.d.Store.MaxOffset(lmq, naming.QueueID); r.Offset > max {
		return errf(code.NoMessage, "ack offset illegal: %s offset %d, max %d", lmq, r.Offset, max)
	}
	if r.QueueID != naming.QueueID || ei.ReviveQid != ReviveQid {
		return errf(code.InvalidParameter, "ack queue illegal: queueId %d, reviveQid %d (want 0 and %d)", r.QueueID, ei.ReviveQid, ReviveQid)
	}
	next := p.commit(r.Group, lmq, r.Offset, func(orderinfo.Key) int64 { return ei.PopTime })
	if next == orderinfo.Illegal {
		return errf(code.MessageIllegal, "ack offset illegal: %s offset %d was not popped", lmq, r.Offset)
	}
	return nil
}

// commit acks offset of lmq for group under the (group, lmq) lock: the
// order state marks it (popTime picks the pop it belongs to) and the group's
// offset moves to the first un-acked one. An offset already behind the
// committed one is a no-op (returns offset+1). If backlog remains and the
// lmq is not blocked, it gets an event.
func (p *Processor) commit(group, lmq string, offset int64, popTime func(orderinfo.Key) int64) int64 {
	if offset < p.d.Offsets.Committed(group, lmq) {
		return offset + 1 // already behind the committed offset
	}
	k := orderinfo.Key{LMQ: lmq, Group: group}
	p.d.Locks.Lock(k)
	if offset < p.d.Offsets.Committed(group, lmq) {
		p.d.Locks.Unlock(k)
		return offset + 1
	}
	next := p.d.Orders.CommitAndNext(k, offset, popTime(k))
	announce := false
	if next >= 0 {
		if !p.d.Offsets.HasReset(group, lmq) {
			p.d.Offsets.Commit(group, lmq, next)
		}
		// Only a remaining backlog gets an event: announcing a drained lmq
		// fills the client's bounded event set with names that pop nothing
		// and pushes real backlog out of it.
		announce = (next < p.d.Store.MaxOffset(lmq, naming.QueueID) || p.d.Offsets.HasReset(group, lmq)) && !p.d.Orders.Blocked(k, "")
	}
	p.d.Locks.Unlock(k)
	if announce {
		// The rest of the backlog gets an event.
		p.d.Dispatcher.Dispatch(group, lmq)
	}
	return next
}

// DeliveryCount is how often group was given the message at offset of lmq
// before its last delivery (the count its pop reported), -1 when the order
// state does not know it (acked, another pop, or lost in a restart).
func (p *Processor) DeliveryCount(group, lmq string, offset int64) int32 {
	n, _, ok := p.d.Orders.Delivered(orderinfo.Key{LMQ: lmq, Group: group}, offset)
	if !ok {
		return -1
	}
	return n
}

// DeadLettered acks the message at offset of lmq for group after its copy
// went to %DLQ%<group> (docs/lite-topics.md §6.10, CONSUMER_SEND_MSG_BACK): whichever pop
// delivered it, so the lite topic moves past it.
func (p *Processor) DeadLettered(group, lmq string, offset int64) {
	next := p.commit(group, lmq, offset, func(k orderinfo.Key) int64 {
		_, popTime, _ := p.d.Orders.Delivered(k, offset)
		return popTime
	})
	if next < 0 {
		p.log.Warn("dead-lettered lite message not acked: it is not in its lite topic's last pop", "group", group, "lmq", lmq, "offset", offset, "result", next)
	}
}

// InvisibleResult is the answer to a lite invisibility change.
type InvisibleResult struct {
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
	// Set is false when the offset was already committed (nothing changed;
	// Java answers SUCCESS without the fields).
	Set bool
}

// ChangeInvisible postpones the redelivery of one lite message (docs/lite-topics.md §6.8): only
// the order state's next-visible time changes; lite has no revive topic.
func (p *Processor) ChangeInvisible(r AckRequest) (InvisibleResult, error) {
	ei, err := ParseExtraInfo(r.ExtraInfo)
	if err != nil {
		return InvisibleResult{}, err
	}
	return p.changeInvisible(r, ei)
}

func (p *Processor) changeInvisible(r AckRequest, ei ExtraInfo) (InvisibleResult, error) {
	lmq, err := p.lmqOf(r)
	if err != nil {
		return InvisibleResult{}, err
	}
	if max := p.d.Store.MaxOffset(lmq, naming.QueueID); r.Offset > max {
		return InvisibleResult{}, errf(code.NoMessage, "offset illegal: %s offset %d, max %d", lmq, r.Offset, max)
	}
	if r.InvisibleTime < 0 {
		return InvisibleResult{}, errf(code.InvalidParameter, "invisibleTime %d must not be negative", r.InvisibleTime)
	}
	if r.Offset < p.d.Offsets.Committed(r.Group, lmq) {
		return InvisibleResult{}, nil
	}
	k := orderinfo.Key{LMQ: lmq, Group: r.Group}
	p.d.Locks.Lock(k)
	defer p.d.Locks.Unlock(k)
	if r.Offset < p.d.Offsets.Committed(r.Group, lmq) {
		return InvisibleResult{}, nil
	}
	visibleAt := p.d.Now().UnixMilli() + r.InvisibleTime
	p.d.Orders.UpdateNextVisible(k, r.Offset, ei.PopTime, visibleAt)
	return InvisibleResult{PopTime: ei.PopTime, InvisibleTime: visibleAt - ei.PopTime, ReviveQid: ei.ReviveQid, Set: true}, nil
}

// WrapAck returns an ACK_MESSAGE handler that answers lite acks and passes
// every other request to next (nil: REQUEST_CODE_NOT_SUPPORTED).
func (p *Processor) WrapAck(next remoting.Handler) remoting.Handler {
	return p.wrapLite(next, func(req *remoting.Command, r AckRequest) (*remoting.Command, error) {
		if err := p.Ack(r); err != nil {
			return nil, err
		}
		return remoting.NewResponse(req, code.Success, ""), nil
	})
}

// WrapChangeInvisible is WrapAck for CHANGE_MESSAGE_INVISIBLETIME.
func (p *Processor) WrapChangeInvisible(next remoting.Handler) remoting.Handler {
	return p.wrapLite(next, func(req *remoting.Command, r AckRequest) (*remoting.Command, error) {
		res, err := p.ChangeInvisible(r)
		if err != nil {
			return nil, err
		}
		resp := remoting.NewResponse(req, code.Success, "")
		if res.Set {
			resp.SetExt("popTime", strconv.FormatInt(res.PopTime, 10))
			resp.SetExt("invisibleTime", strconv.FormatInt(res.InvisibleTime, 10))
			resp.SetExt("reviveQid", strconv.Itoa(int(res.ReviveQid)))
		}
		return resp, nil
	})
}

// wrapLite answers the lite requests among those with an ACK_MESSAGE
// style header with answer, on a master only, and passes the others on
// to next.
func (p *Processor) wrapLite(next remoting.Handler, answer func(req *remoting.Command, r AckRequest) (*remoting.Command, error)) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		r, lite, err := ParseAckRequest(req)
		if !lite {
			return passOn(next, ctx, ch, req)
		}
		if err != nil {
			return nil, err
		}
		if err := pop.NotMaster(p.d.Config()); err != nil {
			return nil, err
		}
		return answer(req, r)
	}
}

func passOn(next remoting.Handler, ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if next == nil {
		return remoting.NewResponse(req, code.RequestCodeNotSupported, " request type "+strconv.Itoa(int(req.Code))+" not supported"), nil
	}
	return next(ctx, ch, req)
}

// handleAckLite answers ACK_LITE_MESSAGE: an ACK_MESSAGE header that must
// carry liteTopic.
func (p *Processor) handleAckLite(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if strings.TrimSpace(req.ExtFields["liteTopic"]) == "" {
		return nil, errf(code.InvalidParameter, "ACK_LITE_MESSAGE: the custom field <liteTopic> is null")
	}
	return p.WrapAck(nil)(ctx, ch, req)
}
