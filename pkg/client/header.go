package client

import (
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// sendHeaderV2 builds the SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE header with
// the short names (docs/protocol.md §5.1): a producerGroup, b topic,
// c defaultTopic, d defaultTopicQueueNums, e queueId, f sysFlag,
// g bornTimestamp, h flag, i properties, j reconsumeTimes, k unitMode,
// l maxReconsumeTimes (only when set), m batch, n brokerName; room more
// fields fit without growing the map (the credentials hook adds them).
func sendHeaderV2(group string, out *outgoing, mq protocol.MessageQueue, defaultTopic string, defaultQueues int, bornMS int64, room int) map[string]string {
	h := make(map[string]string, 14+room)
	h["a"] = group
	h["b"] = out.topic
	h["c"] = defaultTopic
	h["d"] = strconv.Itoa(defaultQueues)
	h["e"] = strconv.Itoa(mq.QueueID)
	h["f"] = strconv.Itoa(int(out.sysFlag))
	h["g"] = strconv.FormatInt(bornMS, 10)
	h["h"] = strconv.Itoa(int(out.flag))
	h["i"] = out.props
	h["j"] = strconv.Itoa(int(out.reconsumeTimes))
	h["k"] = "false"
	if out.maxReconsumeTimes != "" {
		h["l"] = out.maxReconsumeTimes
	}
	h["m"] = strconv.FormatBool(out.batch)
	h["n"] = mq.BrokerName
	return h
}

// Pull request sysFlag bits (docs/protocol.md §5.7).
const (
	pullFlagCommitOffset = 0x1
	pullFlagSuspend      = 0x2
	pullFlagSubscription = 0x4
)

// pullHeader builds the PULL_MESSAGE header. The subscription always travels
// in the request (sysFlag bit 2), as Java's pull consumers do, so the broker
// needs no heartbeat registration of the group.
func pullHeader(group string, req PullRequest, suspendMS int64) map[string]string {
	sysFlag := pullFlagSubscription
	if req.CommitOffset > 0 {
		sysFlag |= pullFlagCommitOffset
	}
	if suspendMS > 0 {
		sysFlag |= pullFlagSuspend
	}
	expr, typ := req.Expression, req.ExpressionType
	if expr == "" {
		expr = subAll
	}
	if typ == "" {
		typ = ExpressionTypeTag
	}
	h := map[string]string{
		"consumerGroup":        group,
		"topic":                req.Queue.Topic,
		"queueId":              strconv.Itoa(req.Queue.QueueID),
		"queueOffset":          strconv.FormatInt(req.Offset, 10),
		"maxMsgNums":           strconv.Itoa(req.MaxNums),
		"sysFlag":              strconv.Itoa(sysFlag),
		"commitOffset":         strconv.FormatInt(max(req.CommitOffset, 0), 10),
		"suspendTimeoutMillis": strconv.FormatInt(suspendMS, 10),
		"subscription":         expr,
		"subVersion":           strconv.FormatInt(time.Now().UnixMilli(), 10), // Java: the subscription's build time
		"expressionType":       typ,
		"bname":                req.Queue.BrokerName,
	}
	if req.MaxBytes > 0 {
		h["maxMsgBytes"] = strconv.Itoa(req.MaxBytes)
	}
	return h
}

// queueHeader is the header of the per-queue offset requests.
func queueHeader(mq protocol.MessageQueue) map[string]string {
	return map[string]string{
		"topic":   mq.Topic,
		"queueId": strconv.Itoa(mq.QueueID),
		"bname":   mq.BrokerName,
	}
}
