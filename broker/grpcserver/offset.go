package grpcserver

import (
	"context"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// Offsets is the part of the broker the pull consumer rpcs use
// (PullMessage, UpdateOffset, GetOffset, QueryOffset): the broker's
// PULL_MESSAGE, UPDATE_CONSUMER_OFFSET, QUERY_CONSUMER_OFFSET,
// GET_MIN_OFFSET, GET_MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP paths, so
// offsets and pulls are shared with remoting clients and the admin tools.
// A Backend that does not implement it answers those rpcs NOT_IMPLEMENTED.
type Offsets interface {
	// Pull reads one queue from an offset (PULL_MESSAGE with the
	// request's subscription, suspended up to PollTime when there is
	// nothing new; no offset committed).
	Pull(ctx context.Context, req PullRequest) (PullResult, error)
	// CommitOffset commits a group's consume offset of a queue
	// (UPDATE_CONSUMER_OFFSET).
	CommitOffset(ctx context.Context, group, topic string, queueID int32, offset int64) (Result, error)
	// ConsumerOffset is a group's committed offset of a queue
	// (QUERY_CONSUMER_OFFSET); a group without one answers QUERY_NOT_FOUND.
	ConsumerOffset(ctx context.Context, group, topic string, queueID int32) (int64, Result, error)
	// QueueOffset is a queue's min or max offset (GET_MIN_OFFSET,
	// GET_MAX_OFFSET) or the offset of the first message stored at or
	// after a time (SEARCH_OFFSET_BY_TIMESTAMP).
	QueueOffset(ctx context.Context, topic string, queueID int32, at QueuePosition) (int64, Result, error)
}

// QueuePosition names the offset QueueOffset answers.
type QueuePosition struct {
	Policy v2pb.QueryOffsetPolicy // BEGINNING, END or TIMESTAMP
	Time   time.Time              // TIMESTAMP's time
}

// PullRequest is one PullMessage.
type PullRequest struct {
	Group, Topic string
	QueueID      int32
	Offset       int64
	MaxNum       int32
	// ExpType is TAG or SQL92; Exp the expression.
	ExpType, Exp string
	PollTime     time.Duration
	Peer         string // the client's address (logs)
}

// PullResult is the pull path's answer: a remoting response code and
// remark, the offset to pull from next and, on success, the messages
// (bodies decompressed).
type PullResult struct {
	Code       int32
	Remark     string
	NextOffset int64
	Messages   []*message.Message
}

func (m *messaging) offsets() Offsets {
	o, _ := m.backend.(Offsets)
	return o
}

// queueRPC is what the pull consumer rpcs check of a request.
type queueRPC struct {
	// withGroup: the rpc names a group (all but QueryOffset).
	withGroup bool
	group     *v2pb.Resource
	queue     *v2pb.MessageQueue
	// anyQueue accepts the topic's write queues too (QueryOffset);
	// otherwise the queue must be one of its read queues.
	anyQueue bool
}

// offsetsFor is the backend of a pull consumer rpc, or the status that
// refuses it: NOT_IMPLEMENTED without one; the group and topic checks of
// the other consumer rpcs (ILLEGAL_CONSUMER_GROUP, ILLEGAL_TOPIC,
// TOPIC_NOT_FOUND), as Apache's proxy validates them
// (proxy/.../grpc/v2/consumer/OffsetActivity.java); then the queue: one of
// another broker (its route names its own endpoint, route.go) or a queue
// id the topic does not have is BAD_REQUEST [our choice: the proxy
// forwards such a queue to the broker, which commits offsets for it or
// answers SYSTEM_ERROR].
func (m *messaging) offsetsFor(r queueRPC) (Offsets, *v2pb.Status) {
	o := m.offsets()
	if o == nil {
		return nil, newStatus(v2pb.Code_NOT_IMPLEMENTED, "no offset backend")
	}
	topic := r.queue.GetTopic()
	if r.withGroup {
		if st := m.checkTopicGroup(topic, r.group); st != nil {
			return nil, st
		}
	} else {
		if topic.GetName() == "" || protocol.ValidateTopic(topic.GetName()) != nil {
			return nil, newStatus(v2pb.Code_ILLEGAL_TOPIC, "illegal topic: "+strconv.Quote(topic.GetName()))
		}
		if _, ok := m.backend.Topic(topic.GetName()); !ok {
			return nil, newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic not found: "+topic.GetName())
		}
	}
	if b := r.queue.GetBroker().GetName(); b != "" && b != m.backend.BrokerName() {
		return nil, newStatus(v2pb.Code_BAD_REQUEST, "the queue is on broker "+b+", not on "+m.backend.BrokerName()+": ask its endpoint")
	}
	t, _ := m.backend.Topic(topic.GetName())
	queues := t.ReadQueues
	if r.anyQueue {
		queues = max(t.ReadQueues, t.WriteQueues)
	}
	// A static topic's queues are logic queues (docs/static-topics.md
	// §7.2-§7.8), checked by the rewriting: NOT_LEADER_FOR_QUEUE for one
	// led elsewhere.
	if id := r.queue.GetId(); id < 0 || int(id) >= queues && !t.Static {
		return nil, newStatus(v2pb.Code_BAD_REQUEST, "queue id "+strconv.Itoa(int(id))+" is not a queue of topic "+topic.GetName()+
			" ("+strconv.Itoa(queues)+" queues)")
	}
	return o, nil
}

// offsetCode maps a pull or offset response code to the gRPC status code
// as consumeCode (the proxy's ResponseBuilder and the broker-side checks);
// a bad parameter is BAD_REQUEST.
func offsetCode(rc int32) v2pb.Code {
	switch rc {
	case code.InvalidParameter:
		return v2pb.Code_BAD_REQUEST
	case code.NoMessage, code.MessageIllegal:
		return v2pb.Code_INTERNAL_SERVER_ERROR // not about receipts here
	}
	return consumeCode(rc)
}

// offsetStatus is the status of an offset answer: nil for SUCCESS;
// QUERY_NOT_FOUND is OFFSET_NOT_FOUND, as in the proxy's pull patch
// (ResponseBuilder of apache/rocketmq pull request 6757).
func offsetStatus(res Result, err error) *v2pb.Status {
	switch {
	case err != nil:
		return newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, err.Error())
	case res.Code == code.Success:
		return nil
	case res.Code == code.QueryNotFound:
		return newStatus(v2pb.Code_OFFSET_NOT_FOUND, "offset not found")
	}
	return newStatus(offsetCode(res.Code), res.Remark)
}

// UpdateOffset commits a group's consume offset of a queue through the
// broker's UPDATE_CONSUMER_OFFSET (Apache's PullMessageActivity.updateOffset,
// pull request 6757): the offset `mqadmin consumerProgress` shows and
// remoting consumers resume from. A group the broker does not have (and
// does not auto-create) is CONSUMER_GROUP_NOT_FOUND; a negative offset is
// ILLEGAL_OFFSET [our choice: the broker would store it].
func (m *messaging) UpdateOffset(ctx context.Context, req *v2pb.UpdateOffsetRequest) (*v2pb.UpdateOffsetResponse, error) {
	o, st := m.offsetsFor(queueRPC{withGroup: true, group: req.GetGroup(), queue: req.GetMessageQueue()})
	if st != nil {
		return &v2pb.UpdateOffsetResponse{Status: st}, nil
	}
	if req.GetOffset() < 0 {
		return &v2pb.UpdateOffsetResponse{Status: newStatus(v2pb.Code_ILLEGAL_OFFSET, "negative offset "+strconv.FormatInt(req.GetOffset(), 10))}, nil
	}
	mq := req.GetMessageQueue()
	res, err := o.CommitOffset(ctx, req.GetGroup().GetName(), mq.GetTopic().GetName(), mq.GetId(), req.GetOffset())
	if st := offsetStatus(res, err); st != nil {
		return &v2pb.UpdateOffsetResponse{Status: st}, nil
	}
	return &v2pb.UpdateOffsetResponse{Status: ok()}, nil
}

// GetOffset answers a group's committed offset of a queue through the
// broker's QUERY_CONSUMER_OFFSET (Apache's OffsetActivity.getOffset). As
// there, a group without one gets 0 while the queue still holds its whole
// history, else OFFSET_NOT_FOUND.
func (m *messaging) GetOffset(ctx context.Context, req *v2pb.GetOffsetRequest) (*v2pb.GetOffsetResponse, error) {
	o, st := m.offsetsFor(queueRPC{withGroup: true, group: req.GetGroup(), queue: req.GetMessageQueue()})
	if st != nil {
		return &v2pb.GetOffsetResponse{Status: st}, nil
	}
	mq := req.GetMessageQueue()
	off, res, err := o.ConsumerOffset(ctx, req.GetGroup().GetName(), mq.GetTopic().GetName(), mq.GetId())
	if st := offsetStatus(res, err); st != nil {
		return &v2pb.GetOffsetResponse{Status: st}, nil
	}
	return &v2pb.GetOffsetResponse{Status: ok(), Offset: off}, nil
}

// QueryOffset answers a queue's offset by policy (Apache's
// OffsetActivity.queryOffset): BEGINNING its min offset, END its max
// offset, TIMESTAMP the offset of the first message stored at or after
// the timestamp (the queue's max offset when none is), through the
// broker's GET_MIN_OFFSET, GET_MAX_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP.
// TIMESTAMP without a timestamp, or an unknown policy, is BAD_REQUEST.
func (m *messaging) QueryOffset(ctx context.Context, req *v2pb.QueryOffsetRequest) (*v2pb.QueryOffsetResponse, error) {
	o, st := m.offsetsFor(queueRPC{queue: req.GetMessageQueue(), anyQueue: true})
	if st != nil {
		return &v2pb.QueryOffsetResponse{Status: st}, nil
	}
	at := QueuePosition{Policy: req.GetQueryOffsetPolicy()}
	switch at.Policy {
	case v2pb.QueryOffsetPolicy_BEGINNING, v2pb.QueryOffsetPolicy_END:
	case v2pb.QueryOffsetPolicy_TIMESTAMP:
		if req.Timestamp == nil {
			return &v2pb.QueryOffsetResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "timestamp is required for TIMESTAMP query offset policy")}, nil
		}
		at.Time = req.GetTimestamp().AsTime()
	default:
		return &v2pb.QueryOffsetResponse{Status: newStatus(v2pb.Code_BAD_REQUEST, "unsupported query offset policy: "+at.Policy.String())}, nil
	}
	mq := req.GetMessageQueue()
	off, res, err := o.QueueOffset(ctx, mq.GetTopic().GetName(), mq.GetId(), at)
	if st := offsetStatus(res, err); st != nil {
		return &v2pb.QueryOffsetResponse{Status: st}, nil
	}
	return &v2pb.QueryOffsetResponse{Status: ok(), Offset: off}, nil
}
