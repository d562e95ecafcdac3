package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/poplite"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/lite/subscribe"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// The gRPC lite push consumer (broker/grpcserver.LiteConsumer) goes through
// the lite handlers as registered on the remoting server, as Apache's proxy
// forwards to the broker: LITE_SUBSCRIPTION_CTL, POP_LITE_MESSAGE, and
// ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME with liteTopic
// (docs/lite-topics.md §5.1, §6.1, §6.7, §6.8).

// SyncLite sends one LITE_SUBSCRIPTION_CTL entry on the client's local
// channel, which the subscription keeps for NOTIFY_UNSUBSCRIBE_LITE.
func (g grpcBackend) SyncLite(ctx context.Context, s grpcserver.LiteSync) (grpcserver.Result, error) {
	dto := subscribe.DTO{
		Action: s.Action, ClientID: s.ClientID, Group: s.Group, Topic: s.Topic,
		LiteTopicSet: s.LiteTopics, Version: s.Version,
	}
	if s.Offset != nil {
		dto.OffsetOption = &registry.OffsetOption{Type: registry.OffsetOptionType(s.Offset.Type), Value: s.Offset.Value}
	}
	body, err := json.Marshal(subscribe.Body{SubscriptionSet: []subscribe.DTO{dto}})
	if err != nil {
		return grpcserver.Result{}, fmt.Errorf("lite subscription body: %w", err)
	}
	resp, err := g.handle(ctx, g.clientChannel(s.ClientID, s.Peer), remoting.NewRequest(code.LiteSubscriptionCtl, nil, body))
	if err != nil {
		return grpcserver.Result{}, err
	}
	return grpcserver.Result{Code: resp.Code, Remark: resp.Remark}, nil
}

// LiteLimits: the group's lite.sub.client.quota (unlimited: the largest
// int32) and maxLiteTopicSize.
func (g grpcBackend) LiteLimits(group string) grpcserver.LiteLimits {
	cfg := g.b.cfg.Get()
	lim := grpcserver.LiteLimits{Quota: meta.DefaultClientQuota, MaxLiteTopicSize: int32(cfg.MaxLiteTopicSize)}
	if lim.MaxLiteTopicSize <= 0 {
		lim.MaxLiteTopicSize = protocol.DefaultMaxLiteTopicSize
	}
	if g.b.msg == nil || g.b.msg.subs == nil {
		return lim
	}
	if sg, ok := g.b.msg.subs.Find(group); ok {
		q := meta.GroupOf(sg).ClientQuota
		switch {
		case q <= 0 || q > math.MaxInt32:
			lim.Quota = math.MaxInt32
		default:
			lim.Quota = int32(q)
		}
	}
	return lim
}

// PopLite pops through POP_LITE_MESSAGE, suspended as Pop is.
func (g grpcBackend) PopLite(ctx context.Context, in grpcserver.PopRequest) (grpcserver.PopResult, error) {
	req := remoting.NewRequest(code.PopLiteMessage, map[string]string{
		"clientId":      in.ClientID,
		"consumerGroup": in.Group,
		"topic":         in.Topic,
		"maxMsgNum":     strconv.Itoa(int(in.MaxNum)),
		"invisibleTime": strconv.FormatInt(in.Invisible.Milliseconds(), 10),
		"pollTime":      strconv.FormatInt(in.PollTime.Milliseconds(), 10),
		"bornTime":      strconv.FormatInt(time.Now().UnixMilli(), 10),
	}, nil)
	if in.AttemptID != "" {
		req.SetExt("attemptId", in.AttemptID)
	}
	resp, err := g.suspended(ctx, req, in)
	if err != nil || resp.Code != code.Success {
		return grpcserver.PopResult{Code: resp.Code, Remark: resp.Remark}, err
	}
	res := grpcserver.PopResult{Code: resp.Code, Remark: resp.Remark}
	if res.Messages, err = g.poppedLite(resp, in); err != nil {
		return grpcserver.PopResult{}, err
	}
	if in.AutoRenew {
		for _, m := range res.Messages {
			g.renewLater(in.Group, in.Topic, m.LiteTopic(), in.ClientID, []string{m.Property(message.PropertyPopCK)})
		}
	}
	return res, nil
}

// suspended runs a pop request (POP_MESSAGE or POP_LITE_MESSAGE) on a
// local channel; a pop the handler suspends is answered on that channel
// when a message comes or the poll ends. The timer only guards against an
// answer that never comes (its poller closed); when the broker stops, the
// receive ends at once, as remoting pulls held at shutdown are answered, so
// that the endpoint's graceful stop does not wait for the poll's end.
func (g grpcBackend) suspended(ctx context.Context, req *remoting.Command, in grpcserver.PopRequest) (*remoting.Command, error) {
	resumed := make(chan *remoting.Command, 1)
	ch := remoting.NewLocalChannel("grpc", in.Peer, func(c *remoting.Command) {
		select {
		case resumed <- c:
		default:
		}
	})
	defer ch.Close()
	resp, err := g.handle(ctx, ch, req)
	if err != nil {
		return &remoting.Command{}, err
	}
	if resp != nil {
		return resp, nil
	}
	t := time.NewTimer(in.PollTime + popAnswerSlack)
	defer t.Stop()
	select {
	case resp = <-resumed:
		return resp, nil
	case <-ctx.Done():
		return &remoting.Command{}, fmt.Errorf("pop: %w", ctx.Err())
	case <-t.C:
		return &remoting.Command{Code: code.PollingTimeout, Remark: "no answer from the suspended pop"}, nil
	case <-g.b.grpcClients.stopping():
		return &remoting.Command{Code: code.PollingTimeout, Remark: "the broker is stopping"}, nil
	}
}

// poppedLite decodes a POP_LITE_MESSAGE answer as a remoting lite consumer
// reads it (docs/lite-topics.md §6.6): each message's queue is its LMQ's
// (queue 0, the LMQ offset), its receipt names the parent topic, and its
// delivery count comes from orderCountInfo. A message without exactly one
// LMQ offset gets no receipt (it comes back after its invisible time).
func (g grpcBackend) poppedLite(resp *remoting.Command, in grpcserver.PopRequest) ([]*message.Message, error) {
	f := protocol.FieldsOf(resp.ExtFields)
	popTime, invisible := f.Int64("popTime"), f.Int64("invisibleTime")
	reviveQid := f.OptInt32("reviveQid", poplite.ReviveQid)
	counts := f.OptStr("orderCountInfo", "")
	if err := f.Err(); err != nil {
		return nil, fmt.Errorf("pop lite response: %w", err)
	}
	// The bodies alias the answer's, as popped's.
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{AliasBody: true})
	if err != nil {
		return nil, fmt.Errorf("pop lite response body: %w", err)
	}
	var rc []string
	if counts != "" {
		rc = strings.Split(counts, ";")
	}
	if len(rc) != len(msgs) {
		rc = nil
	}
	cfg := g.b.cfg.Get()
	out := msgs[:0]
	for i, m := range msgs {
		lmq, offs := m.Property(message.PropertyInnerMultiDispatch), m.Property(message.PropertyInnerMultiQueueOffset)
		off, perr := strconv.ParseInt(offs, 10, 64)
		if lmq == "" || strings.Contains(lmq, ",") || strings.Contains(offs, ",") || perr != nil || off < 0 {
			g.b.log.Warn("grpc: popped lite message without one LMQ offset; it comes back later", "lmq", lmq, "offset", offs)
			continue
		}
		if m.LiteTopic() == "" {
			m.SetProperty(message.PropertyLiteTopic, strings.TrimPrefix(lmq, protocol.LMQPrefix+"$"+in.Topic+"$"))
		}
		ei := popcodec.ExtraInfo{
			PopTime: popTime, InvisibleTime: invisible, ReviveQid: reviveQid, Retry: popcodec.RetryNone,
			BrokerName: cfg.BrokerName, QueueID: 0, QueueOffset: off, HasQueueOffset: true,
		}
		m.SetProperty(message.PropertyPopCK, grpcserver.ReceiptHandle(ei.String(), m.CommitLogOffset))
		m.QueueID, m.QueueOffset = 0, off
		if rc != nil {
			if n, err := strconv.Atoi(rc[i]); err == nil && n >= 0 {
				m.ReconsumeTimes = int32(n)
			}
		}
		if m.SysFlag&message.FlagCompressed != 0 {
			body, err := message.Decompress(m.Body, m.SysFlag, cfg.MaxMessageSize)
			if err != nil {
				return nil, fmt.Errorf("decompress lite message %s offset %d: %w", lmq, off, err)
			}
			m.Body, m.SysFlag = body, m.SysFlag&^message.FlagCompressed
		}
		m.Topic = in.Topic
		out = append(out, m)
	}
	return out, nil
}

// AckLite acks through ACK_MESSAGE with liteTopic.
func (g grpcBackend) AckLite(ctx context.Context, group, topic, lite string, r grpcserver.Receipt) (grpcserver.Result, error) {
	return g.ackLite(ctx, group, topic, lite, r)
}

func (g grpcBackend) ackLite(ctx context.Context, group, topic, lite string, r grpcserver.Receipt) (grpcserver.Result, error) {
	ext, err := receiptExt(group, topic, r)
	if err != nil {
		return grpcserver.Result{Code: code.MessageIllegal, Remark: err.Error()}, nil
	}
	ext["liteTopic"] = lite
	resp, err := g.handle(ctx, nil, remoting.NewRequest(code.AckMessage, ext, nil))
	if err != nil {
		return grpcserver.Result{}, err
	}
	return grpcserver.Result{Code: resp.Code, Remark: resp.Remark}, nil
}

// ChangeInvisibleLite goes through CHANGE_MESSAGE_INVISIBLETIME with
// liteTopic; the new receipt carries the answer's pop time.
func (g grpcBackend) ChangeInvisibleLite(ctx context.Context, group, topic, lite string, r grpcserver.Receipt, d time.Duration) (string, grpcserver.Result, error) {
	return g.changeInvisibleOf(ctx, group, topic, lite, r, d)
}

// DeadLetterLite sends the message to the group's DLQ
// (CONSUMER_SEND_MSG_BACK with delay level -1, which acks it on its LMQ,
// docs/lite-topics.md §6.10) and acks it on its lite topic, as the proxy.
func (g grpcBackend) DeadLetterLite(ctx context.Context, group, topic, lite, msgID string, r grpcserver.Receipt) (grpcserver.Result, error) {
	if res, err := g.sendToDLQ(ctx, group, topic, msgID, r); err != nil || res.Code != code.Success {
		return res, err
	}
	return g.ackLite(ctx, group, topic, lite, r)
}

// grpcBackend serves lite push consumers.
var _ grpcserver.LiteConsumer = grpcBackend{}

// clientChannel is the 5.x client's local channel (grpcClients.channel).
// A NOTIFY_UNSUBSCRIBE_LITE the broker pushes on it (broker/lite/subscribe
// keeps the channel of a client's last ADD) reaches the client as a
// NotifyUnsubscribeLiteCommand on its Telemetry stream, as the proxy
// relays it; a CHECK_TRANSACTION_STATE (the channel of a producer in the
// producer table) its RecoverOrphanedTransactionCommand;
// GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY are asked on that
// stream and answered on the channel (wire_grpc_admin.go); other pushes
// have no gRPC form and are dropped.
func (g grpcBackend) clientChannel(id, remote string) *remoting.Channel {
	return g.b.grpcClients.channel(id, remote, func(ch *remoting.Channel, c *remoting.Command) {
		if c.Code == code.CheckTransactionState {
			g.producerCheck(id, c) // wire_grpc_producers.go
			return
		}
		if g.relayAdmin(ch, id, c) {
			return
		}
		if c.Code != code.NotifyUnsubscribeLite {
			return
		}
		lite := c.Ext("liteTopic")
		if !g.b.grpcProducers.NotifyUnsubscribeLite(id, lite) {
			g.b.log.Debug("grpc: lite unsubscribe notification not delivered: no telemetry stream", "clientId", id, "liteTopic", lite)
		}
	})
}
