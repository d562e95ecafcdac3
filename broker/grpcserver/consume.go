package grpcserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
)

// Consumer is the part of the broker the consumer rpcs use
// (QueryAssignment, ReceiveMessage, AckMessage, ChangeInvisibleDuration,
// ForwardMessageToDeadLetterQueue). A Backend that does not implement it
// answers those rpcs NOT_IMPLEMENTED.
type Consumer interface {
	// Group looks up (or, as the broker's autoCreateSubscriptionGroup
	// allows, creates) a subscription group.
	Group(name string) (Group, bool)
	// Pop pops messages through the broker's pop path (POP_MESSAGE), each
	// with its receipt handle (Receipt encoding) in the POP_CK property.
	Pop(ctx context.Context, req PopRequest) (PopResult, error)
	// Current is the receipt a message received with r now has — the
	// renewed one of an auto_renew receive, which it takes out of the
	// renewal — else r.
	Current(group string, r Receipt) Receipt
	// Ack acks one popped message (ACK_MESSAGE).
	Ack(ctx context.Context, group, topic string, r Receipt) (Result, error)
	// ChangeInvisible makes a popped message invisible for d from now
	// (CHANGE_MESSAGE_INVISIBLETIME) and returns its new receipt handle.
	ChangeInvisible(ctx context.Context, group, topic string, r Receipt, d time.Duration) (string, Result, error)
	// DeadLetter moves a popped message to the group's DLQ
	// (CONSUMER_SEND_MSG_BACK with delay level -1) and acks it.
	DeadLetter(ctx context.Context, group, topic, msgID string, r Receipt) (Result, error)
	// ConsumeLimits is the consumer configuration of the rpcs.
	ConsumeLimits() ConsumeLimits
	// ConsumerHeartbeat registers a consumer client with its group, as a
	// remoting consumer's HEART_BEAT; ConsumerGone unregisters it.
	ConsumerHeartbeat(ctx context.Context, c ClientInfo) error
	ConsumerGone(c ClientInfo)
}

// ConsumeLimits are the consumer settings Apache's proxy reads from its
// ProxyConfig (keys of the same names).
type ConsumeLimits struct {
	// MinLongPolling and MaxLongPolling bound a receive's long polling
	// (grpcClientConsumerMinLongPollingTimeoutMillis, 5 s;
	// grpcClientConsumerMaxLongPollingTimeoutMillis, 20 s); MaxLongPolling
	// is also the long polling timeout given to clients in their settings.
	MinLongPolling, MaxLongPolling time.Duration
	// BatchSize is the receive batch size given to clients
	// (grpcClientConsumerLongPollingBatchSize, 32).
	BatchSize int32
	// MinInvisible and MaxInvisible bound a receive's invisible duration
	// (minInvisibleTimeMillsForRecv, 10 s; maxInvisibleTimeMills, 12 h).
	MinInvisible, MaxInvisible time.Duration
	// RenewSlice is the invisible duration of a receive that asks the
	// server to renew its messages' receipt handles (auto_renew, the push
	// consumer's): the backend renews them by RenewSlice until they are
	// acked (renewSliceTimeMillis, 60 s).
	RenewSlice time.Duration
}

// DefaultConsumeLimits are the proxy's defaults.
func DefaultConsumeLimits() ConsumeLimits {
	return ConsumeLimits{
		MinLongPolling: 5 * time.Second, MaxLongPolling: 20 * time.Second, BatchSize: 32,
		MinInvisible: 10 * time.Second, MaxInvisible: 12 * time.Hour, RenewSlice: time.Minute,
	}
}

// Group is what the consumer rpcs need of a subscription group.
type Group struct {
	// RetryMaxTimes is retryMaxTimes: a message is delivered at most
	// RetryMaxTimes+1 times, then goes to the DLQ.
	RetryMaxTimes int
	// Orderly is consumeMessageOrderly: the group consumes FIFO.
	Orderly bool
	// Exponential, when set, is the group's exponential retry policy;
	// otherwise Customized lists the customized policy's delays.
	Exponential *ExponentialBackoff
	Customized  []time.Duration
}

// ExponentialBackoff is Apache's ExponentialRetryPolicy.
type ExponentialBackoff struct {
	Initial, Max time.Duration
	Multiplier   float32
}

// PopRequest is one pop for a ReceiveMessage.
type PopRequest struct {
	Group, Topic string
	MaxNum       int32
	Invisible    time.Duration
	PollTime     time.Duration
	// ExpType is TAG or SQL92; Exp the expression.
	ExpType, Exp string
	Order        bool
	AttemptID    string
	// Peer is the client's address (logs).
	Peer string
	// AutoRenew asks the backend to renew the popped messages' receipt
	// handles (by RenewSlice) until they are acked, changed or
	// dead-lettered, or the client (ClientID) goes away; acks and changes
	// then name them by the handle first received.
	AutoRenew bool
	ClientID  string
}

// PopResult is the pop path's answer: a remoting response code
// (remoting/code) and remark, and the popped messages on success.
type PopResult struct {
	Code     int32
	Remark   string
	Messages []*message.Message
}

// Result is the answer of an ack, a change of invisible time or a
// dead-lettering: a remoting response code and remark.
type Result struct {
	Code   int32
	Remark string
}

// Receipt is a decoded receipt handle. It has the layout of Apache's
// ReceiptHandle (common/consumer/ReceiptHandle.java): the pop's extraInfo
// (docs/protocol.md §3.3: ckQueueOffset popTime invisibleTime reviveQid
// retryFlag brokerName queueId queueOffset) followed by the message's
// commit log offset, space-separated.
type Receipt struct {
	Handle string // the whole handle
	// ExtraInfo is the handle without the commit log offset: what
	// ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME take.
	ExtraInfo       string
	PopTime         int64 // ms
	InvisibleTime   int64 // ms
	Retry           string
	BrokerName      string
	QueueID         int32
	Offset          int64
	CommitLogOffset int64
}

// ParseReceipt decodes a receipt handle.
func ParseReceipt(h string) (Receipt, error) {
	if len(h) > 512 {
		return Receipt{}, fmt.Errorf("receipt handle of %d bytes", len(h))
	}
	f := strings.Split(h, " ")
	if len(f) != 9 {
		return Receipt{}, fmt.Errorf("receipt handle %q has %d fields, want 9", h, len(f))
	}
	var err error
	num := func(i int) int64 {
		n, perr := strconv.ParseInt(f[i], 10, 64)
		if (perr != nil || n < 0) && err == nil {
			err = fmt.Errorf("receipt handle %q: field %d %q is not a non-negative number", h, i+1, f[i])
		}
		return n
	}
	r := Receipt{Handle: h, ExtraInfo: strings.Join(f[:8], " ")}
	num(0)
	r.PopTime, r.InvisibleTime = num(1), num(2)
	num(3)
	qid := num(6)
	r.Offset, r.CommitLogOffset = num(7), num(8)
	if err != nil {
		return Receipt{}, err
	}
	if qid > 1<<31-1 {
		return Receipt{}, fmt.Errorf("receipt handle %q: queue id %d", h, qid)
	}
	r.QueueID = int32(qid)
	r.Retry, r.BrokerName = f[4], f[5]
	if r.BrokerName == "" {
		return Receipt{}, fmt.Errorf("receipt handle %q: empty broker name", h)
	}
	return r, nil
}

// Expired is Apache's ReceiptHandle.isExpired: the message became visible
// again, so the handle no longer names a pop.
func (r Receipt) Expired(now time.Time) bool {
	return r.PopTime+r.InvisibleTime < now.UnixMilli()
}

// ReceiptHandle encodes a handle from a pop's extraInfo and the message's
// commit log offset.
func ReceiptHandle(extraInfo string, commitLogOffset int64) string {
	return extraInfo + " " + strconv.FormatInt(commitLogOffset, 10)
}
