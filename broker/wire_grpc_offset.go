package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/grpcserver"
	"github.com/rmqgo/rmq/broker/processor/pull"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// The gRPC pull consumer rpcs (broker/grpcserver.Offsets) call the
// PULL_MESSAGE and consumer offset handlers as registered on the remoting
// server, so a gRPC client's pulls and committed offsets are the ones
// remoting consumers and `mqadmin consumerProgress` see.

// Pull pulls through PULL_MESSAGE with the request's subscription
// (sysFlag SUBSCRIPTION and SUSPEND, no commit), as the proxy's pull
// (PullSysFlag.buildSysFlag(false, true, true, false)). A pull the
// handler holds is answered on a local channel when a message comes or the
// hold ends, as a held pop is (suspended, wire_grpc_lite.go).
func (g grpcBackend) Pull(ctx context.Context, in grpcserver.PullRequest) (grpcserver.PullResult, error) {
	req := remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup":        in.Group,
		"topic":                in.Topic,
		"queueId":              strconv.Itoa(int(in.QueueID)),
		"queueOffset":          strconv.FormatInt(in.Offset, 10),
		"maxMsgNums":           strconv.Itoa(int(in.MaxNum)),
		"sysFlag":              strconv.Itoa(pull.FlagSuspend | pull.FlagSubscription),
		"commitOffset":         "0",
		"suspendTimeoutMillis": strconv.FormatInt(in.PollTime.Milliseconds(), 10),
		"subVersion":           strconv.FormatInt(time.Now().UnixMilli(), 10),
		"subscription":         in.Exp,
		"expressionType":       in.ExpType,
	}, nil)
	resp, err := g.suspended(ctx, req, grpcserver.PopRequest{PollTime: in.PollTime, Peer: in.Peer})
	if err != nil {
		return grpcserver.PullResult{}, err
	}
	res := grpcserver.PullResult{Code: resp.Code, Remark: resp.Remark, NextOffset: in.Offset}
	switch resp.Code {
	case code.Success, code.PullNotFound, code.PullRetryImmediately, code.PullOffsetMoved:
	default:
		return res, nil // a refusal, or no answer from the hold (PollingTimeout)
	}
	f := protocol.FieldsOf(resp.ExtFields)
	res.NextOffset = f.Int64("nextBeginOffset")
	if err := f.Err(); err != nil {
		return grpcserver.PullResult{}, fmt.Errorf("pull response: %w", err)
	}
	if resp.Code != code.Success {
		return res, nil
	}
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{})
	if err != nil {
		return grpcserver.PullResult{}, fmt.Errorf("pull response body: %w", err)
	}
	// A static topic's pull answers physical messages with the segment's
	// shift (docs/static-topics.md §7.2): the client sees them at their
	// logic queue and offsets, as remoting clients make them (§6.5).
	var delta int64
	logic := false
	if d := resp.Ext("offsetDelta"); d != "" {
		if delta, err = strconv.ParseInt(d, 10, 64); err != nil {
			return grpcserver.PullResult{}, fmt.Errorf("pull response offsetDelta %q: %w", d, err)
		}
		logic = true
	}
	limit := g.b.cfg.Get().MaxMessageSize
	for _, m := range msgs {
		if logic {
			m.QueueID, m.QueueOffset = in.QueueID, m.QueueOffset+delta
		}
		if m.SysFlag&message.FlagCompressed != 0 {
			body, err := message.Decompress(m.Body, m.SysFlag, limit)
			if err != nil {
				return grpcserver.PullResult{}, fmt.Errorf("decompress message at %s@%d offset %d: %w", m.Topic, m.QueueID, m.QueueOffset, err)
			}
			m.Body, m.SysFlag = body, m.SysFlag&^message.FlagCompressed
		}
	}
	res.Messages = msgs
	return res, nil
}

// CommitOffset commits through UPDATE_CONSUMER_OFFSET.
func (g grpcBackend) CommitOffset(ctx context.Context, group, topic string, queueID int32, offset int64) (grpcserver.Result, error) {
	resp, err := g.handle(ctx, nil, remoting.NewRequest(code.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group,
		"topic":         topic,
		"queueId":       strconv.Itoa(int(queueID)),
		"commitOffset":  strconv.FormatInt(offset, 10),
	}, nil))
	if err != nil {
		return grpcserver.Result{}, err
	}
	return grpcserver.Result{Code: resp.Code, Remark: resp.Remark}, nil
}

// ConsumerOffset reads through QUERY_CONSUMER_OFFSET.
func (g grpcBackend) ConsumerOffset(ctx context.Context, group, topic string, queueID int32) (int64, grpcserver.Result, error) {
	return g.offsetOf(ctx, remoting.NewRequest(code.QueryConsumerOffset, map[string]string{
		"consumerGroup": group,
		"topic":         topic,
		"queueId":       strconv.Itoa(int(queueID)),
	}, nil))
}

// QueueOffset reads through GET_MIN_OFFSET, GET_MAX_OFFSET or
// SEARCH_OFFSET_BY_TIMESTAMP (the lower boundary: the first message stored
// at or after the time).
func (g grpcBackend) QueueOffset(ctx context.Context, topic string, queueID int32, at grpcserver.QueuePosition) (int64, grpcserver.Result, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(int(queueID))}
	rc := code.GetMinOffset
	switch at.Policy {
	case v2pb.QueryOffsetPolicy_END:
		rc = code.GetMaxOffset
	case v2pb.QueryOffsetPolicy_TIMESTAMP:
		rc = code.SearchOffsetByTimestamp
		ext["timestamp"] = strconv.FormatInt(at.Time.UnixMilli(), 10)
	}
	return g.offsetOf(ctx, remoting.NewRequest(rc, ext, nil))
}

// offsetOf runs an offset request and reads its "offset" answer.
func (g grpcBackend) offsetOf(ctx context.Context, req *remoting.Command) (int64, grpcserver.Result, error) {
	resp, err := g.handle(ctx, nil, req)
	if err != nil {
		return 0, grpcserver.Result{}, err
	}
	res := grpcserver.Result{Code: resp.Code, Remark: resp.Remark}
	if resp.Code != code.Success {
		return 0, res, nil
	}
	off, err := strconv.ParseInt(resp.Ext("offset"), 10, 64)
	if err != nil {
		return 0, grpcserver.Result{}, fmt.Errorf("request %d answered offset %q: %w", req.Code, resp.Ext("offset"), err)
	}
	return off, res, nil
}

// grpcBackend serves the pull consumer rpcs.
var _ grpcserver.Offsets = grpcBackend{}
