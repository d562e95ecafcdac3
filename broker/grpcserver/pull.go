package grpcserver

import (
	"strings"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// maxPullBatch caps one pull (the proxy's MAX_MSG_NUMS_FOR_PULL_REQUEST
// in apache/rocketmq pull request 6757; the broker caps a pull alike).
const maxPullBatch = 32

// PullMessage reads one queue of a topic from an offset, for a pull
// consumer that keeps its own offsets (UpdateOffset, GetOffset). Apache's
// rocketmq-proxy has no PullMessage yet; this is the one of its pull
// request 6757 (proxy/.../grpc/v2/consumer/PullMessageActivity.java and
// PullMessageResponseStreamWriter.java), over the broker's PULL_MESSAGE
// path with the request's subscription, so filters, long polling and the
// store are those of remoting pulls. The stream is a status, then — after
// OK — the messages, then the offset to pull from next:
//   - OK, messages, next_offset: messages found (a message whose tag the
//     TAG filter does not list is left out, as the remoting clients do;
//     none left: MESSAGE_NOT_FOUND "no match message");
//   - MESSAGE_NOT_FOUND, next_offset: nothing new at the offset once the
//     long polling (as ReceiveMessage's) ended;
//   - ILLEGAL_OFFSET, next_offset: the offset is outside the queue (below
//     its min offset, negative, or past its end); next_offset is the
//     offset to go on from;
//   - another status alone: the request was refused (ILLEGAL_TOPIC,
//     TOPIC_NOT_FOUND, ILLEGAL_CONSUMER_GROUP, CONSUMER_GROUP_NOT_FOUND,
//     ILLEGAL_FILTER_EXPRESSION, FORBIDDEN, BAD_REQUEST for a batch size
//     below 1 or a queue the topic does not have, ILLEGAL_POLLING_TIME,
//     TOO_MANY_REQUESTS, …).
//
// The pull commits no offset: the client does, with UpdateOffset.
func (m *messaging) PullMessage(req *v2pb.PullMessageRequest, stream v2pb.MessagingService_PullMessageServer) error {
	ctx := stream.Context()
	status := func(st *v2pb.Status) error {
		return stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_Status{Status: st}})
	}
	o, st := m.offsetsFor(queueRPC{withGroup: true, group: req.GetGroup(), queue: req.GetMessageQueue()})
	if st != nil {
		return status(st)
	}
	lim := DefaultConsumeLimits()
	if c := m.consumer(); c != nil {
		lim = c.ConsumeLimits()
	}
	poll, st := pollingTime(ctx, &v2pb.ReceiveMessageRequest{LongPollingTimeout: req.GetLongPollingTimeout()}, lim)
	if st != nil {
		return status(st)
	}
	if req.GetBatchSize() <= 0 {
		return status(newStatus(v2pb.Code_BAD_REQUEST, "batch size must be positive"))
	}
	expType, exp := "TAG", req.GetFilterExpression().GetExpression()
	if req.GetFilterExpression().GetType() == v2pb.FilterType_SQL {
		expType = "SQL92"
	}
	if strings.TrimSpace(exp) == "" {
		exp = "*"
	}
	mq := req.GetMessageQueue()
	topic := mq.GetTopic()
	res, err := o.Pull(ctx, PullRequest{
		Group: req.GetGroup().GetName(), Topic: topic.GetName(), QueueID: mq.GetId(), Offset: req.GetOffset(),
		MaxNum: min(req.GetBatchSize(), maxPullBatch), ExpType: expType, Exp: exp, PollTime: poll, Peer: peerAddr(ctx),
	})
	if err != nil {
		return status(newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "pull: "+err.Error()))
	}
	var msgs []*message.Message
	switch res.Code {
	case code.Success:
		tags := tagSet(expType, exp)
		for _, msg := range res.Messages {
			if tags == nil || tags[msg.Tags()] {
				msgs = append(msgs, msg)
			}
		}
		if len(msgs) == 0 {
			st = newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no match message")
		} else {
			st = ok()
		}
	case code.PullOffsetMoved:
		st = newStatus(v2pb.Code_ILLEGAL_OFFSET, v2pb.Code_ILLEGAL_OFFSET.String())
	case code.PullNotFound, code.PullRetryImmediately, code.PollingTimeout:
		st = newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no new message")
	default:
		return status(newStatus(offsetCode(res.Code), res.Remark))
	}
	if err := status(st); err != nil {
		return err
	}
	for _, msg := range msgs {
		pb := buildMessage(msg, topic, 0)
		pb.SystemProperties.InvisibleDuration = nil // pulled messages are not invisible
		if err := stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_Message{Message: pb}}); err != nil {
			return err
		}
	}
	return stream.Send(&v2pb.PullMessageResponse{Content: &v2pb.PullMessageResponse_NextOffset{NextOffset: res.NextOffset}})
}
