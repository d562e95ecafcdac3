package send

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// Topics is the part of the topic table the send path uses;
// *topic.Manager implements it.
type Topics interface {
	// GetShared is Get without copying the Attributes map, which the send
	// path only reads (one map copy per send otherwise).
	GetShared(name string) (protocol.TopicConfig, bool)
	IsOrder(name string) bool
	// CreateFromDefault is the auto-create from TBW102 (docs/protocol.md §5.2).
	CreateFromDefault(topic, defaultTopic string, clientQueueNums, topicSysFlag int) (protocol.TopicConfig, bool, error)
	// CreateIfAbsent creates retry and DLQ topics.
	CreateIfAbsent(tc protocol.TopicConfig) (protocol.TopicConfig, bool, error)
}

// Store is the part of the message store the send path uses;
// store.MessageStore implements it.
type Store interface {
	PutMessage(ctx context.Context, msg *message.Message) (store.PutResult, error)
	PutMessages(ctx context.Context, msgs []*message.Message) (store.PutResult, error)
}

// Replicas makes a stored send wait for its slaves (SYNC_MASTER with
// inSyncReplicas > 1; the implementation decides from the live config
// whether to wait at all). An error means not enough replicas acknowledged
// in time: the send is answered FLUSH_SLAVE_TIMEOUT, the message stays
// stored.
type Replicas interface {
	WaitReplicas(ctx context.Context, end int64) error
}

// Groups looks up subscription groups for sends to %RETRY%<group> topics.
type Groups interface {
	// RetryMaxTimes returns the group's retryMaxTimes and whether the group
	// exists. Like Java's findSubscriptionGroupConfig, an implementation
	// auto-creates the group when autoCreateSubscriptionGroup is on.
	RetryMaxTimes(group string) (int32, bool)
}

// OrderLocks reports orderly-consumption locks (LOCK_BATCH_MQ): Java sends a
// retry message of a group that holds unexpired locks straight to its DLQ.
type OrderLocks interface {
	HasLiveLocks(group string) bool
}

// TransactionHook turns a transactional PREPARED message into what is stored
// (docs/protocol.md §6.5). It runs after every check, just before the store.
type TransactionHook interface {
	PrepareHalf(msg *message.Message) error
}

// HalfMessage is the default TransactionHook (Java's
// TransactionalMessageBridge.parseHalfMessageInner): the message is parked
// in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC/REAL_QID, its
// transaction bits cleared and __transactionId__ = UNIQ_KEY. END_TRANSACTION
// and the check service re-store it to the real topic later.
type HalfMessage struct{}

// PrepareHalf rewrites msg in place.
func (HalfMessage) PrepareHalf(msg *message.Message) error {
	if msg.Properties == nil {
		msg.Properties = make(map[string]string, 4)
	}
	if uniq := msg.Properties[message.PropertyUniqClientMessageIDKeyIdx]; uniq != "" {
		msg.Properties[message.PropertyTransactionID] = uniq
	}
	msg.Properties[message.PropertyRealTopic] = msg.Topic
	msg.Properties[message.PropertyRealQueueID] = strconv.Itoa(int(msg.QueueID))
	msg.SysFlag = message.SetTransactionType(msg.SysFlag, message.TransactionNotType)
	msg.Topic = protocol.TransHalfTopic
	msg.QueueID = 0
	return nil
}

// ScheduleHook parks delayed messages: it is called for a message (not a
// transactional half message) that carries DELAY > 0 or a TIMER_DELIVER_MS /
// TIMER_DELAY_SEC / TIMER_DELAY_MS property, after every check and just
// before the store. It rewrites msg (e.g. to SCHEDULE_TOPIC_XXXX queue
// level−1 or rmq_sys_wheel_timer, with REAL_TOPIC/REAL_QID; Java's
// HookUtils.handleScheduleMessage) or rejects it with an error (wrap
// store.ErrMessageIllegal for MESSAGE_ILLEGAL, e.g. a timer beyond the max
// delay). Without a hook such messages are stored for immediate delivery and
// the broker logs that once.
type ScheduleHook interface {
	Schedule(msg *message.Message) error
}

// RecallHandler is implemented by a ScheduleHook whose timers can be
// recalled (RECALL_MESSAGE): a single message's send response then carries
// recallHandle = RecallHandle(the stored message, brokerName) when that is
// not "" (Java's SendMessageProcessor.attachRecallHandle).
type RecallHandler interface {
	RecallHandle(msg *message.Message, brokerName string) string
}

// MessageChecker vets a message against its topic before anything rewrites
// it (message.type, per-type size limits; package broker/msgtype). It sees
// the topic's config, the message as built from the request (Topic, Body,
// Properties, QueueID, ReconsumeTimes set) and the request's sysFlag. An
// error rejects the send: wrap ErrMessageIllegal for MESSAGE_ILLEGAL, or
// return a *remoting.CodeError.
type MessageChecker interface {
	CheckMessage(tc *protocol.TopicConfig, msg *message.Message, sysFlag int32) error
}

// checkMessage runs Deps.MessageTypeCheck, if any.
func (p *Processor) checkMessage(tc *protocol.TopicConfig, msg *message.Message, sysFlag int32) error {
	if p.d.MessageTypeCheck == nil {
		return nil
	}
	return p.d.MessageTypeCheck.CheckMessage(tc, msg, sysFlag)
}

// ErrNoReplyChannel is returned by a ReplyPusher when the requester has no
// live connection to this broker.
var ErrNoReplyChannel = errors.New("no channel for the reply's client")

// ReplyPusher delivers a reply (SEND_REPLY_MESSAGE) to the requesting
// producer: req is a ready PUSH_REPLY_MESSAGE_TO_CLIENT (326) request and
// clientID the reply's REPLY_TO_CLIENT property; the pusher finds that
// client's channel (the producer registry) and returns its answer.
type ReplyPusher interface {
	PushReply(ctx context.Context, clientID string, req *remoting.Command) (*remoting.Command, error)
}

// DefaultReplyTimeout is how long a reply push waits for the client (Java's
// Broker2Client.callClient).
const DefaultReplyTimeout = 10 * time.Second

// ChannelPusher is a ReplyPusher over a channel lookup, for a registry that
// maps client ids to channels.
type ChannelPusher struct {
	// Find returns the channel of a client id, or nil.
	Find func(clientID string) *remoting.Channel
	// Timeout bounds the call (0: DefaultReplyTimeout).
	Timeout time.Duration
}

// PushReply sends req on the client's channel and waits for the answer.
func (c ChannelPusher) PushReply(ctx context.Context, clientID string, req *remoting.Command) (*remoting.Command, error) {
	var ch *remoting.Channel
	if c.Find != nil {
		ch = c.Find(clientID)
	}
	if ch == nil || !ch.IsActive() {
		return nil, ErrNoReplyChannel
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultReplyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return ch.Invoke(ctx, req)
}
