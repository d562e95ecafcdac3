package poplite

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/longpoll"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Lite simple consumers (docs/lite-topics.md §6.11, 5.5.1 #10570) ask NOTIFICATION
// (200054) whether a POP_LITE_MESSAGE would find anything: the header
// carries liteConsumer=true and the clientId whose event set decides.

// notifyHeader is the lite part of NotificationRequestHeader.
type notifyHeader struct {
	clientID, group, topic string
	pollTime, bornTime     int64
}

// IsLiteNotification reports whether a NOTIFICATION comes from a lite
// consumer. Java's header field is liteConsumer (getter isLiteConsumer);
// "isLiteConsumer" is accepted too for encoders that keep the getter name.
func IsLiteNotification(req *remoting.Command) bool {
	for _, k := range []string{"liteConsumer", "isLiteConsumer"} {
		if v, ok := req.ExtFields[k]; ok {
			return strings.EqualFold(strings.TrimSpace(v), "true")
		}
	}
	return false
}

func parseNotify(req *remoting.Command) (notifyHeader, error) {
	f := protocol.FieldsOf(req.ExtFields)
	h := notifyHeader{
		clientID: strings.TrimSpace(f.Str("clientId")),
		group:    f.Str("consumerGroup"),
		topic:    f.Str("topic"),
		pollTime: f.Int64("pollTime"),
		bornTime: f.OptInt64("bornTime", 0),
	}
	if err := f.Err(); err != nil {
		return h, remoting.Errorf(code.InvalidParameter, "NOTIFICATION (lite consumer): %v", err)
	}
	if h.clientID == "" {
		return h, remoting.Errorf(code.InvalidParameter, "NOTIFICATION (lite consumer): the custom field <clientId> is blank")
	}
	if h.pollTime < 0 {
		return h, remoting.Errorf(code.InvalidParameter, "NOTIFICATION (lite consumer): pollTime %d is negative", h.pollTime)
	}
	return h, nil
}

// WrapNotification returns a NOTIFICATION handler that answers lite
// consumers and passes every other request to next (nil:
// REQUEST_CODE_NOT_SUPPORTED).
func (p *Processor) WrapNotification(next remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if !IsLiteNotification(req) {
			return passOn(next, ctx, ch, req)
		}
		return p.processNotify(ch, req)
	}
}

// resumeNotify re-runs a woken or expired notification and writes its
// answer.
func (p *Processor) resumeNotify(_ context.Context, ch *remoting.Channel, req *remoting.Command) {
	resp, err := p.processNotify(ch, req)
	processor.WriteResumed(p.log, "lite notification", ch, req, resp, err)
}

// processNotify answers hasMsg = the client's event set is not empty,
// parking the request (keyed by the client, woken with its pops) until
// bornTime + pollTime when it is empty. The pre-checks are POP_LITE_MESSAGE's
// (the consumer pops right after a hasMsg=true).
func (p *Processor) processNotify(ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h, err := parseNotify(req)
	if err != nil {
		return nil, err
	}
	nowT := p.d.Now()
	now := nowT.UnixMilli()
	if h.bornTime <= 0 {
		// Kept on the request so a re-run keeps the original deadline.
		h.bornTime = now
		req.SetExt("bornTime", strconv.FormatInt(now, 10))
	}
	if err := p.checkTarget(h.topic, h.group); err != nil {
		return nil, err
	}
	key := registry.ClientKey{ClientID: h.clientID, Group: h.group}
	hasMsg := p.d.Dispatcher.Pending(key) > 0
	full := false
	if !hasMsg {
		deadline := pop.PollDeadline(nowT, h.bornTime, h.pollTime)
		if h.pollTime > 0 && nowT.Before(deadline) && ch != nil {
			err := p.notices.Park(longpoll.Request{Channel: ch, Command: req, Topic: pollKey(key), Deadline: deadline})
			if err == nil {
				p.d.Dispatcher.MarkLongPoll(key)
				// An event placed between the check and the park must not
				// wait for the periodic check.
				if p.d.Dispatcher.Pending(key) > 0 {
					p.Wake(key)
				}
				return nil, nil
			}
			full = errors.Is(err, longpoll.ErrFull)
		}
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.SetExt("hasMsg", strconv.FormatBool(hasMsg))
	resp.SetExt("pollingFull", strconv.FormatBool(full))
	return resp, nil
}
