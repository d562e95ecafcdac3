package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/msgtype"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// grpcBackend is the broker as the gRPC rpcs see it (broker/grpcserver).
type grpcBackend struct{ b *Broker }

// Topic reads the topic table. The permission is the topic's and the
// broker's together, as the nameserver's queue data the proxy reads.
func (g grpcBackend) Topic(name string) (grpcserver.Topic, bool) {
	// Read only: no copy of the attributes per send.
	tc, ok := g.b.topics.GetShared(name)
	if !ok {
		return grpcserver.Topic{}, false
	}
	t := grpcserver.Topic{
		ReadQueues:  tc.ReadQueueNums,
		WriteQueues: tc.WriteQueueNums,
		Perm:        tc.Perm & g.b.cfg.Get().BrokerPermission,
		MessageType: msgtype.TopicType(&tc),
	}
	if led, ok := g.b.maps.(interface {
		Led(topic string) ([]int32, bool)
	}); ok {
		t.Logic, t.Static = led.Led(name)
	}
	return t, true
}

func (g grpcBackend) BrokerName() string { return g.b.cfg.Get().BrokerName }

func (g grpcBackend) MaxMessageSize() int { return g.b.cfg.Get().MaxMessageSize }

// Send stores a message through the SEND_MESSAGE handler as registered
// (with every wrapper: fencing, static topics, checks), so gRPC and
// remoting sends share one path. No remoting channel: the gRPC peer's
// address reaches the handler through send.WithOrigin.
func (g grpcBackend) Send(ctx context.Context, in grpcserver.SendInput) (grpcserver.SendResult, error) {
	h, _, ok := g.b.server.Handler(code.SendMessage)
	if !ok {
		return grpcserver.SendResult{}, errors.New("no SEND_MESSAGE handler registered")
	}
	// The properties go to the handler as the map they are
	// (send.WithOrigin), not encoded for it to decode; what the
	// encoding refused is refused here.
	if err := message.CheckProperties(in.Properties); err != nil {
		return grpcserver.SendResult{}, fmt.Errorf("encode properties: %w", err)
	}
	req := remoting.NewRequest(code.SendMessage, map[string]string{
		"producerGroup":         in.ProducerGroup,
		"topic":                 in.Topic,
		"defaultTopic":          protocol.AutoCreateTopicKey,
		"defaultTopicQueueNums": "4",
		"queueId":               strconv.Itoa(int(in.QueueID)),
		"sysFlag":               strconv.Itoa(int(in.SysFlag)),
		"bornTimestamp":         strconv.FormatInt(in.BornTimestamp, 10),
		"flag":                  "0",
		// reconsumeTimes, unitMode and batch are left at their defaults
		// (0, false, false): eight fields keep the map in one small group
		// of Go's maps, eleven took a table of several allocations.
	}, in.Body)
	resp, err := h(send.WithOrigin(ctx, in.BornHost, in.Properties), nil, req)
	if ce := (*remoting.CodeError)(nil); errors.As(err, &ce) {
		// A refusal with a response code (NOT_LEADER_FOR_QUEUE from the
		// static-topic rewriting, docs/static-topics.md §7.1) is an answer.
		return grpcserver.SendResult{Code: ce.Code, Remark: ce.Remark}, nil
	}
	if err != nil {
		return grpcserver.SendResult{}, fmt.Errorf("send: %w", err)
	}
	res := grpcserver.SendResult{Code: resp.Code, Remark: resp.Remark}
	if resp.Code == code.Success {
		if res.Offset, err = strconv.ParseInt(resp.Ext("queueOffset"), 10, 64); err != nil {
			return grpcserver.SendResult{}, fmt.Errorf("send answered queueOffset %q: %w", resp.Ext("queueOffset"), err)
		}
		res.TransactionID = resp.Ext("transactionId")
		res.RecallHandle = resp.Ext("recallHandle")
		if res.TransactionID != "" {
			// A half message: END_TRANSACTION names it by its CommitLog
			// offset, which the offset message id carries.
			if _, res.CommitLogOffset, err = message.ParseOffsetMsgID(resp.Ext("msgId")); err != nil {
				return grpcserver.SendResult{}, fmt.Errorf("send answered msgId %q: %w", resp.Ext("msgId"), err)
			}
		}
	}
	return res, nil
}
