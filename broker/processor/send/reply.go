package send

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Header fields of PUSH_REPLY_MESSAGE_TO_CLIENT (ReplyMessageRequestHeader;
// long names only).
const (
	extBornHost       = "bornHost"
	extStoreHost      = "storeHost"
	extStoreTimestamp = "storeTimestamp"
)

// replyHandler answers SEND_REPLY_MESSAGE(_V2) like Java's
// ReplyMessageProcessor: the reply is pushed to the requester named by
// REPLY_TO_CLIENT (the response code is the push's outcome: msgId "0",
// queueOffset 0 on success, SYSTEM_ERROR otherwise), then, with
// storeReplyMessageEnable, stored like a normal message; a stored reply's
// msgId/queueOffset replace the placeholders but do not change the code.
// Replies carry no broker-added UNIQ_KEY or CLUSTER, as in Java; they do
// carry MSG_REGION and TRACE_ON (Java's buildMsgContext adds them to the
// request's properties before the reply is pushed or stored).
func (p *Processor) replyHandler(short bool) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		h, err := parseSendRequest(req, short, &p.names)
		if err != nil {
			return nil, err
		}
		cfg := p.d.Config()
		// Java's reply processor never rejects on role (rejectRequest=false).
		_, queueID, err := p.admit(cfg, ch, &h, false)
		if err != nil {
			return nil, err
		}
		props := decodeProps(h.properties, 2)
		props[message.PropertyMsgRegion], props[message.PropertyTraceSwitch] = regionOf(cfg)
		msg := &message.Message{
			Topic:          h.topic,
			Flag:           h.flag,
			Body:           req.Body,
			Properties:     props,
			SysFlag:        h.sysFlag,
			BornTimestamp:  h.bornTimestamp,
			BornHost:       bornHost(ctx, ch),
			StoreHost:      p.storeHost(),
			QueueID:        queueID,
			ReconsumeTimes: h.reconsumeTimes,
		}

		var resp *remoting.Command
		ext := make(map[string]string, 5)
		if err := p.pushReply(ctx, ch, &h, msg); err != nil {
			p.log.Warn("push reply message failed", "topic", h.topic, "err", err)
			resp = remoting.ResponseFromError(req, toCodeError(err))
		} else {
			resp = remoting.NewResponse(req, code.Success, "")
			// Placeholders so that a client decoding the header never sees
			// nulls (Java does the same).
			ext[extMsgID] = "0"
			ext[extQueueID] = strconv.Itoa(int(queueID))
			ext[extQueueOffset] = "0"
		}

		if cfg.StoreReplyMessageEnable {
			if err := p.storeReply(ctx, cfg, msg, queueID, ext); err != nil {
				p.log.Warn("store reply message failed", "topic", h.topic, "err", err)
			}
		}
		p.addRegion(ext, cfg)
		resp.ExtFields = ext
		return resp, nil
	}
}

// storeReply stores a reply and, when it is stored, fills the response's
// msgId/queueId/queueOffset.
func (p *Processor) storeReply(ctx context.Context, cfg *config.Config, msg *message.Message, queueID int32, ext map[string]string) error {
	if err := checkBody(cfg, len(msg.Body)); err != nil {
		return err
	}
	if err := checkPropsLen(msg.Properties); err != nil {
		return err
	}
	res, err := p.d.Store.PutMessage(ctx, msg)
	if err != nil && !(errors.Is(err, store.ErrFlushTimeout) && len(res.MsgIDs) > 0) {
		return err
	}
	ext[extMsgID] = p.msgIDs(res, false)
	ext[extQueueID] = strconv.Itoa(int(queueID))
	ext[extQueueOffset] = strconv.FormatInt(res.QueueOffset, 10)
	return nil
}

// pushReply sends the reply to the requester (Java's pushReplyMessage).
func (p *Processor) pushReply(ctx context.Context, ch *remoting.Channel, h *sendHeader, msg *message.Message) error {
	clientID := msg.Properties[message.PropertyMessageReplyToClient]
	if clientID == "" {
		return fmt.Errorf("reply message properties[%s] is null", message.PropertyMessageReplyToClient)
	}
	if p.d.Replies == nil {
		return fmt.Errorf("push reply message fail, channel of <%s> not found", clientID)
	}
	props, err := pushProperties(msg.Properties, p.d.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("push reply message to %s fail: %w", clientID, err)
	}
	ext := map[string]string{
		"producerGroup":         h.producerGroup,
		"topic":                 h.topic,
		"defaultTopic":          h.defaultTopic,
		"defaultTopicQueueNums": strconv.Itoa(int(h.defaultTopicQueueNums)),
		"queueId":               strconv.Itoa(int(h.queueID)),
		"sysFlag":               strconv.Itoa(int(h.sysFlag)),
		"bornTimestamp":         strconv.FormatInt(h.bornTimestamp, 10),
		"flag":                  strconv.Itoa(int(h.flag)),
		"properties":            props,
		"reconsumeTimes":        strconv.Itoa(int(h.reconsumeTimes)),
		"unitMode":              strconv.FormatBool(h.unitMode),
		extBornHost:             processor.RemoteAddr(ch),
		extStoreHost:            msg.StoreHost.String(),
		extStoreTimestamp:       strconv.FormatInt(p.d.Now().UnixMilli(), 10),
	}
	push := remoting.NewRequest(code.PushReplyMessageToClient, ext, msg.Body)
	resp, err := p.d.Replies.PushReply(ctx, clientID, push)
	switch {
	case errors.Is(err, ErrNoReplyChannel):
		return fmt.Errorf("push reply message fail, channel of <%s> not found", clientID)
	case err != nil:
		return fmt.Errorf("push reply message to %s fail: %w", clientID, err)
	case resp == nil || resp.Code != code.Success:
		remark := ""
		if resp != nil {
			remark = resp.Remark
		}
		return fmt.Errorf("push reply message to %s fail: %s", clientID, remark)
	}
	return nil
}

// pushProperties is the pushed reply's properties: the stored ones (the
// broker's MSG_REGION and TRACE_ON included) and PUSH_REPLY_TIME, as Java's
// ReplyMessageProcessor re-encodes its message's map.
func pushProperties(props map[string]string, now int64) (string, error) {
	m := maps.Clone(props)
	m[message.PropertyPushReplyTime] = strconv.FormatInt(now, 10)
	b, err := message.AppendProperties(nil, m)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
