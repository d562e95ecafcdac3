package grpcserver

import (
	"context"
	"math"
	"time"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// Lite push consumers (client type LITE_PUSH_CONSUMER, docs/lite-topics.md
// §5 and §6): SyncLiteSubscription adds and removes the client's lite
// topics of its group's bind topic; its receives pop the lite topics the
// broker dispatched to the client (POP_LITE_MESSAGE) instead of the bind
// topic's queues; its acks, invisible-time changes and dead-letterings name
// the message's lite topic. As Apache's proxy (proxy/.../grpc/v2/client/
// ClientActivity.java syncLiteSubscription, consumer/ReceiveMessageActivity.java).

// LiteConsumer is the part of the broker lite push consumers use. A
// Backend that does not implement it answers their rpcs NOT_IMPLEMENTED.
type LiteConsumer interface {
	// SyncLite applies one subscription change (LITE_SUBSCRIPTION_CTL).
	SyncLite(ctx context.Context, s LiteSync) (Result, error)
	// PopLite pops the lite topics dispatched to the client
	// (POP_LITE_MESSAGE); each message has its receipt in POP_CK.
	PopLite(ctx context.Context, req PopRequest) (PopResult, error)
	// AckLite, ChangeInvisibleLite and DeadLetterLite are Ack,
	// ChangeInvisible and DeadLetter for a message of lite topic lite.
	AckLite(ctx context.Context, group, topic, lite string, r Receipt) (Result, error)
	ChangeInvisibleLite(ctx context.Context, group, topic, lite string, r Receipt, d time.Duration) (string, Result, error)
	DeadLetterLite(ctx context.Context, group, topic, lite, msgID string, r Receipt) (Result, error)
	// LiteLimits are the limits a lite push consumer of group gets in its
	// settings.
	LiteLimits(group string) LiteLimits
}

// LiteLimits are the lite_subscription_quota and max_lite_topic_size of a
// lite push consumer's settings.
type LiteLimits struct {
	// Quota is how many lite topics one client may subscribe (the group's
	// lite.sub.client.quota).
	Quota int32
	// MaxLiteTopicSize is the longest lite topic name (maxLiteTopicSize).
	MaxLiteTopicSize int32
}

// LiteSync is one SyncLiteSubscription request as the broker's
// LITE_SUBSCRIPTION_CTL takes it (docs/lite-topics.md §5.1).
type LiteSync struct {
	// Action is PARTIAL_ADD, PARTIAL_REMOVE, COMPLETE_ADD or COMPLETE_REMOVE.
	Action                 string
	ClientID, Group, Topic string
	LiteTopics             []string
	Version                int64
	Offset                 *LiteOffset // nil: none
	Peer                   string      // the client's address
}

// LiteOffset is an ADD's offset option: Type POLICY (Value 0 LAST, 1 MIN,
// 2 MAX), OFFSET, TAIL_N or TIMESTAMP.
type LiteOffset struct {
	Type  string
	Value int64
}

func (m *messaging) lite() LiteConsumer {
	l, _ := m.backend.(LiteConsumer)
	return l
}

// liteSync translates a SyncLiteSubscriptionRequest, checking it as the
// proxy does: a legal group and bind topic, a client id, an action, and
// lite topic names that are legal and at most maxSize bytes. It answers
// the status of the first failed check.
func liteSync(req *v2pb.SyncLiteSubscriptionRequest, clientID string, maxSize int) (LiteSync, *v2pb.Status) {
	group, topic := req.GetGroup().GetName(), req.GetTopic().GetName()
	if group == "" || protocol.ValidateGroup(group) != nil {
		return LiteSync{}, newStatus(v2pb.Code_ILLEGAL_CONSUMER_GROUP, "illegal consumer group: "+group)
	}
	if topic == "" || protocol.ValidateTopic(topic) != nil {
		return LiteSync{}, newStatus(v2pb.Code_ILLEGAL_TOPIC, "illegal topic: "+topic)
	}
	if clientID == "" {
		return LiteSync{}, newStatus(v2pb.Code_CLIENT_ID_REQUIRED, "the request has no "+mdClientID)
	}
	s := LiteSync{ClientID: clientID, Group: group, Topic: topic, Version: req.GetVersion(), LiteTopics: []string{}}
	switch req.GetAction() {
	case v2pb.LiteSubscriptionAction_PARTIAL_ADD:
		s.Action = "PARTIAL_ADD"
	case v2pb.LiteSubscriptionAction_PARTIAL_REMOVE:
		s.Action = "PARTIAL_REMOVE"
	case v2pb.LiteSubscriptionAction_COMPLETE_ADD:
		s.Action = "COMPLETE_ADD"
	case v2pb.LiteSubscriptionAction_COMPLETE_REMOVE:
		s.Action = "COMPLETE_REMOVE"
	default:
		return LiteSync{}, newStatus(v2pb.Code_BAD_REQUEST, "unknown lite subscription action "+req.GetAction().String())
	}
	seen := map[string]bool{}
	for _, l := range req.GetLiteTopicSet() {
		if err := protocol.ValidateLiteTopic(l, maxSize); err != nil {
			return LiteSync{}, newStatus(v2pb.Code_ILLEGAL_LITE_TOPIC, "lite topic "+l+": "+err.Error())
		}
		if !seen[l] {
			seen[l] = true
			s.LiteTopics = append(s.LiteTopics, l)
		}
	}
	if (s.Action == "PARTIAL_ADD" || s.Action == "PARTIAL_REMOVE") && len(s.LiteTopics) == 0 {
		return LiteSync{}, newStatus(v2pb.Code_BAD_REQUEST, s.Action+" without a lite topic")
	}
	if o := req.GetOffsetOption(); o != nil && s.Action == "PARTIAL_ADD" {
		switch t := o.GetOffsetType().(type) {
		case *v2pb.OffsetOption_Policy_:
			s.Offset = &LiteOffset{Type: "POLICY", Value: int64(t.Policy)}
		case *v2pb.OffsetOption_Offset:
			s.Offset = &LiteOffset{Type: "OFFSET", Value: t.Offset}
		case *v2pb.OffsetOption_TailN:
			s.Offset = &LiteOffset{Type: "TAIL_N", Value: t.TailN}
		case *v2pb.OffsetOption_Timestamp:
			s.Offset = &LiteOffset{Type: "TIMESTAMP", Value: t.Timestamp}
		}
	}
	return s, nil
}

// liteCode maps a LITE_SUBSCRIPTION_CTL answer to a gRPC code.
func liteCode(rc int32) v2pb.Code {
	switch rc {
	case code.Success:
		return v2pb.Code_OK
	case code.LiteSubscriptionQuotaExceeded:
		return v2pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED
	case code.LMQQuotaExceeded:
		return v2pb.Code_LITE_TOPIC_QUOTA_EXCEEDED
	case code.InvalidParameter:
		return v2pb.Code_ILLEGAL_LITE_TOPIC
	case code.IllegalOperation:
		// The group is missing, may not consume or is not bound to the
		// topic, or the topic is not LITE.
		return v2pb.Code_BAD_REQUEST
	case code.SubscriptionGroupNotExist:
		return v2pb.Code_CONSUMER_GROUP_NOT_FOUND
	case code.TopicNotExist:
		return v2pb.Code_TOPIC_NOT_FOUND
	case code.NoPermission:
		return v2pb.Code_FORBIDDEN
	case code.SystemBusy:
		return v2pb.Code_TOO_MANY_REQUESTS
	}
	return v2pb.Code_INTERNAL_SERVER_ERROR
}

// SyncLiteSubscription applies a lite push consumer's subscription change
// through the broker's LITE_SUBSCRIPTION_CTL (docs/lite-topics.md §5.1):
// subscribeLite sends PARTIAL_ADD, unsubscribeLite PARTIAL_REMOVE, the
// client's 30 s round COMPLETE_ADD with its whole set, and its shutdown
// COMPLETE_REMOVE.
func (m *messaging) SyncLiteSubscription(ctx context.Context, req *v2pb.SyncLiteSubscriptionRequest) (*v2pb.SyncLiteSubscriptionResponse, error) {
	l := m.lite()
	if l == nil {
		return &v2pb.SyncLiteSubscriptionResponse{Status: newStatus(v2pb.Code_NOT_IMPLEMENTED, "lite topics are not served by this broker")}, nil
	}
	s, st := liteSync(req, mdValue(ctx, mdClientID), int(l.LiteLimits(req.GetGroup().GetName()).MaxLiteTopicSize))
	if st != nil {
		return &v2pb.SyncLiteSubscriptionResponse{Status: st}, nil
	}
	if _, found := m.backend.Topic(s.Topic); !found {
		return &v2pb.SyncLiteSubscriptionResponse{Status: newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic not found: "+s.Topic)}, nil
	}
	s.Peer = peerAddr(ctx)
	res, err := m.liteOrder.apply(arrivalOf(ctx), s, func(s LiteSync) (Result, error) { return l.SyncLite(ctx, s) })
	if err != nil {
		return &v2pb.SyncLiteSubscriptionResponse{Status: newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, err.Error())}, nil
	}
	if res.Code != code.Success {
		return &v2pb.SyncLiteSubscriptionResponse{Status: newStatus(liteCode(res.Code), res.Remark)}, nil
	}
	return &v2pb.SyncLiteSubscriptionResponse{Status: ok()}, nil
}

// receiveLite is ReceiveMessage for a lite push consumer: the pop drains
// the lite topics dispatched to the client (POP_LITE_MESSAGE, keyed by its
// client id), with no filter; messages delivered max-attempts times
// already go to the DLQ instead of the client.
func (m *messaging) receiveLite(stream v2pb.MessagingService_ReceiveMessageServer, l LiteConsumer, c Consumer, g Group,
	req *v2pb.ReceiveMessageRequest, pr PopRequest, finish func(*v2pb.Status) error) error {
	ctx := stream.Context()
	if pr.ClientID == "" {
		return finish(newStatus(v2pb.Code_CLIENT_ID_REQUIRED, "the request has no "+mdClientID))
	}
	res, err := l.PopLite(ctx, pr)
	if err != nil {
		return finish(newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "pop lite: "+err.Error()))
	}
	if res.Code == code.InvalidParameter {
		// The topic is not LITE, or the group is not bound to it.
		return finish(newStatus(v2pb.Code_BAD_REQUEST, res.Remark))
	}
	if st := popStatus(res.Code, res.Remark); st != nil {
		return finish(st)
	}
	maxAttempts := int32(g.RetryMaxTimes) + 1
	msgs := res.Messages[:0]
	for _, msg := range res.Messages {
		if msg.ReconsumeTimes >= maxAttempts {
			if r, err := ParseReceipt(msg.Property(message.PropertyPopCK)); err == nil {
				r = c.Current(pr.Group, r)
				_, _ = l.DeadLetterLite(ctx, pr.Group, pr.Topic, msg.LiteTopic(), messageID(msg), r)
				continue
			}
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return finish(newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no match message"))
	}
	nack := func(rest []*message.Message) {
		nctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for _, msg := range rest {
			if r, err := ParseReceipt(msg.Property(message.PropertyPopCK)); err == nil {
				_, _, _ = l.ChangeInvisibleLite(nctx, pr.Group, pr.Topic, msg.LiteTopic(), c.Current(pr.Group, r), nackInvisible)
			}
		}
	}
	if err := stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: ok()}}); err != nil {
		nack(msgs)
		return err
	}
	for i, msg := range msgs {
		pb := buildMessage(msg, req.GetMessageQueue().GetTopic(), pr.Invisible)
		if err := stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Message{Message: pb}}); err != nil {
			nack(msgs[i:])
			return err
		}
	}
	return finish(nil)
}

// liteOf is the lite backend for a request naming lite topic lite: nil
// for a request without one; a bad name is ILLEGAL_LITE_TOPIC, a backend
// without lite topics NOT_IMPLEMENTED.
func (m *messaging) liteOf(lite *string) (LiteConsumer, *v2pb.Status) {
	if lite == nil {
		return nil, nil
	}
	l := m.lite()
	if l == nil {
		return nil, newStatus(v2pb.Code_NOT_IMPLEMENTED, "lite topics are not served by this broker")
	}
	if err := protocol.ValidateLiteTopic(*lite, math.MaxInt32); err != nil {
		return nil, newStatus(v2pb.Code_ILLEGAL_LITE_TOPIC, "lite topic "+*lite+": "+err.Error())
	}
	return l, nil
}

// NotifyUnsubscribeLite tells a lite push consumer that it lost a lite
// topic (an exclusive group gave it to another client, docs/lite-topics.md
// §5.4) with a NotifyUnsubscribeLiteCommand on its Telemetry stream, as the
// proxy turns the broker's NOTIFY_UNSUBSCRIBE_LITE into one; the client
// drops the name from its set. It reports whether the client has a
// stream; the command is written in the background.
func (p *Producers) NotifyUnsubscribeLite(clientID, lite string) bool {
	p.mu.Lock()
	s := p.clients[clientID]
	p.mu.Unlock()
	if s == nil {
		return false
	}
	select {
	case s.pushes <- struct{}{}:
	default:
		return false // the client does not read its stream
	}
	cmd := &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_NotifyUnsubscribeLiteCommand{
		NotifyUnsubscribeLiteCommand: &v2pb.NotifyUnsubscribeLiteCommand{LiteTopic: lite},
	}}
	go func() {
		defer func() { <-s.pushes }()
		_ = s.send(cmd)
	}()
	return true
}
