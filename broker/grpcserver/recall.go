package grpcserver

import (
	"context"
	"fmt"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// RecallResult is the broker's answer to RECALL_MESSAGE: a remoting
// response code (remoting/code) and remark, and on success the recalled
// message's id (its UNIQ_KEY).
type RecallResult struct {
	Code      int32
	Remark    string
	MessageID string
}

// Recaller recalls delay messages through the broker's RECALL_MESSAGE
// (broker/processor/recall). A Backend that does not implement it answers
// RecallMessage NOT_IMPLEMENTED.
type Recaller interface {
	// Recall runs RECALL_MESSAGE for the handle a SendMessage answered,
	// on the broker the handle names.
	Recall(ctx context.Context, topic, handle string) (RecallResult, error)
}

// RecallMessage recalls a delay message before its delivery time, as the
// proxy (Apache proxy/.../grpc/v2/producer/RecallMessageActivity.java,
// proxy/.../processor/ProducerProcessor.java recallMessage, and
// proxy/.../service/message/LocalMessageService.java recallMessage, the
// proxy inside the broker):
//   - a bad topic name or a system topic: ILLEGAL_TOPIC;
//   - the topic must be DELAY or MIXED (DefaultTopicMessageTypeValidator
//     with DELAY; a topic without message.type is NORMAL, an unknown one
//     UNSPECIFIED): MESSAGE_PROPERTY_CONFLICT_WITH_TYPE;
//   - every refusal of the broker (a handle that does not decode, names
//     another topic, a time already past, recall disabled, ...):
//     INTERNAL_SERVER_ERROR with the broker's remark;
//   - success: OK and the recalled message's id.
func (m *messaging) RecallMessage(ctx context.Context, req *v2pb.RecallMessageRequest) (*v2pb.RecallMessageResponse, error) {
	fail := func(c v2pb.Code, format string, args ...any) (*v2pb.RecallMessageResponse, error) {
		return &v2pb.RecallMessageResponse{Status: newStatus(c, fmt.Sprintf(format, args...))}, nil
	}
	name := req.GetTopic().GetName()
	if err := checkTopicName(name); err != nil {
		return fail(v2pb.Code_ILLEGAL_TOPIC, "%v", err)
	}
	r, isRecaller := m.backend.(Recaller)
	if !isRecaller {
		return fail(v2pb.Code_NOT_IMPLEMENTED, "recall is not served by this broker")
	}
	if tt := m.recallTopicType(ctx, name); tt != typeDelay && tt != typeMixed {
		return fail(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
			"TopicMessageType validate failed, the expected type is %s, but actual type is %s", tt, typeDelay)
	}
	res, err := r.Recall(ctx, name, req.GetRecallHandle())
	if err != nil {
		return fail(v2pb.Code_INTERNAL_SERVER_ERROR, "recall: %v", err)
	}
	if res.Code != rcSuccess {
		return fail(v2pb.Code_INTERNAL_SERVER_ERROR, "%s", res.Remark)
	}
	return &v2pb.RecallMessageResponse{Status: newStatus(v2pb.Code_OK, v2pb.Code_OK.String()), MessageId: res.MessageID}, nil
}

// typeUnspecified is Java's TopicMessageType.UNSPECIFIED: what the proxy's
// metadata service answers for a topic it does not know.
const typeUnspecified = "UNSPECIFIED"

// recallTopicType is the topic's message type as the proxy's check reads
// it: this broker's topic, else (a topic on other brokers only) the type
// the nameserver route's brokers declare, else UNSPECIFIED.
func (m *messaging) recallTopicType(ctx context.Context, name string) string {
	typ, found := "", false
	if t, ok := m.backend.Topic(name); ok {
		typ, found = t.MessageType, true
	} else if brokers, tt, ok := m.clusterRoute(ctx, name, Topic{}, false); ok && len(brokers) > 0 {
		typ, found = tt, true
	}
	switch {
	case !found:
		return typeUnspecified
	case typ == "":
		return typeNormal
	}
	return typ
}
