// Package sendback answers CONSUMER_SEND_MSG_BACK (36): a consumer hands
// back a message it failed to consume, by CommitLog offset, and the broker
// stores a copy in %RETRY%<group> through the schedule path (delay level
// 3 + reconsumeTimes by default), or, past the group's retryMaxTimes, in
// %DLQ%<group> (docs/protocol.md §6.4; Java's
// AbstractSendMessageProcessor.consumerSendMsgBack).
package sendback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Java constants.
const (
	// topicFlagUnitSub is TopicSysFlag.buildSysFlag(false, true).
	topicFlagUnitSub = 0x2
)

// Topics is the part of the topic table send-back uses; *topic.Manager
// implements it.
type Topics interface {
	CreateIfAbsent(tc protocol.TopicConfig) (protocol.TopicConfig, bool, error)
}

// Groups finds subscription groups; *subscription.Manager implements it
// (FindOrCreate is Java's findSubscriptionGroupConfig: it auto-creates when
// autoCreateSubscriptionGroup is on).
type Groups interface {
	FindOrCreate(group string) (subscription.GroupConfig, bool)
}

// Store is the part of the message store send-back uses.
type Store interface {
	ReadRecord(phyOffset int64) ([]byte, error)
	PutMessage(ctx context.Context, msg *message.Message) (store.PutResult, error)
}

// LiteHook is the lite-topic side of a send-back (docs/lite-topics.md §6.10):
// broker/lite implements it. A lite message is one whose record carries
// __LITE_TOPIC and names its lite LMQ and offset in the multi-dispatch
// properties.
type LiteHook interface {
	// DeliveryCount is how often group was given the message at offset of
	// lmq before its last delivery (the pop's orderCountInfo), -1 when not
	// known: lite redeliveries leave the stored reconsumeTimes at 0.
	DeliveryCount(group, lmq string, offset int64) int32
	// DeadLettered acks the message for group on lmq once its DLQ copy is
	// stored, so the lite topic moves past it.
	DeadLettered(group, lmq string, offset int64)
}

// Deps are the processor's collaborators; Config, Topics, Groups and Store
// are required.
type Deps struct {
	Config func() *config.Config
	Topics Topics
	Groups Groups
	Store  Store
	// Schedule parks the retry copy for its delay level; nil: the copy is
	// stored in the retry topic at once.
	Schedule send.ScheduleHook
	// StoreHost is brokerIP1:port for the new record (nil: the store's).
	StoreHost func() netip.AddrPort
	// TopicCreated runs after a retry or DLQ topic was created (e.g. to
	// register with the nameservers at once).
	TopicCreated func(topic string)
	// Lite handles lite messages; nil: they are handed back like any other
	// (to %RETRY%, which no lite consumer reads).
	Lite LiteHook
	// RandIntN picks a queue in [0, n) (nil: math/rand/v2).
	RandIntN func(n int) int
	// SentToDLQ counts a message sent to the group's DLQ
	// (rocketmq_send_to_dlq_messages_total, by original topic and group);
	// nil: not counted.
	SentToDLQ func(topic, group string)
	Logger    *slog.Logger
}

// Processor answers CONSUMER_SEND_MSG_BACK. It is safe for concurrent use.
type Processor struct {
	d   Deps
	log *slog.Logger
}

// New validates d.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Topics == nil || d.Groups == nil || d.Store == nil {
		return nil, errors.New("sendback: Deps.Config, Topics, Groups and Store are required")
	}
	if d.RandIntN == nil {
		d.RandIntN = rand.IntN
	}
	defaults.Logger(&d.Logger)
	return &Processor{d: d, log: d.Logger}, nil
}

// Register installs the handler on the send executor (Java registers 36
// with the send processor's executor).
func (p *Processor) Register(r processor.Registrar) {
	r.RegisterProcessor(code.ConsumerSendMsgBack, p.Handle, processor.PoolSend)
}

// header is ConsumerSendMsgBackRequestHeader.
type header struct {
	offset            int64
	group             string
	delayLevel        int32
	originMsgID       string
	originTopic       string
	unitMode          bool
	maxReconsumeTimes int32
	hasMaxReconsume   bool
}

func parseHeader(ext map[string]string) (header, error) {
	f := protocol.FieldsOf(ext)
	h := header{
		offset:      f.Int64("offset"),
		group:       f.Str("group"),
		delayLevel:  f.Int32("delayLevel"),
		originMsgID: f.OptStr("originMsgId", ""),
		originTopic: f.OptStr("originTopic", ""),
		unitMode:    f.OptBool("unitMode", false),
	}
	if f.Has("maxReconsumeTimes") {
		h.maxReconsumeTimes, h.hasMaxReconsume = f.OptInt32("maxReconsumeTimes", 0), true
	}
	if err := f.Err(); err != nil {
		return h, fmt.Errorf("%w: %v", processor.ErrBadHeader, err)
	}
	return h, nil
}

// Handle is the CONSUMER_SEND_MSG_BACK handler.
func (p *Processor) Handle(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if err := p.sendBack(ctx, req); err != nil {
		ce := toCodeError(err)
		if ce.Code == code.SystemError {
			p.log.Warn("send back failed", "group", req.Ext("group"), "offset", req.Ext("offset"), "err", err)
		} else {
			p.log.Debug("send back refused", "group", req.Ext("group"), "offset", req.Ext("offset"), "code", ce.Code, "err", err)
		}
		return nil, ce
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

func (p *Processor) sendBack(ctx context.Context, req *remoting.Command) error {
	h, err := parseHeader(req.ExtFields)
	if err != nil {
		return err
	}
	cfg := p.d.Config()
	if !cfg.IsMaster() && !cfg.EnableSlaveActingMaster {
		return fmt.Errorf("%w: no master available along with %s", errSystem, cfg.BrokerIP1)
	}
	sg, ok := p.d.Groups.FindOrCreate(h.group)
	if !ok {
		return fmt.Errorf("%w: subscription group not exist, %s", processor.ErrGroupNotExist, h.group)
	}
	if cfg.BrokerPermission&protocol.PermWrite == 0 {
		return fmt.Errorf("%w: the broker[%s] sending message is forbidden", processor.ErrNoPermission, cfg.BrokerIP1)
	}
	if sg.RetryQueueNums <= 0 {
		// Java: the group takes no retries; the message is dropped.
		return nil
	}
	// The message is looked up first (Java creates the retry topic first):
	// a lite message must not create a retry topic.
	rec, err := p.d.Store.ReadRecord(h.offset)
	if err != nil {
		return fmt.Errorf("%w: look message by offset failed, %d: %v", errSystem, h.offset, err)
	}
	orig, _, err := message.DecodeStored(rec, message.DecodeOptions{AliasBody: true})
	if err != nil {
		return fmt.Errorf("%w: look message by offset failed, %d: %v", errSystem, h.offset, err)
	}
	if !topicMatches(orig, h.originTopic) {
		return fmt.Errorf("%w: look message by offset failed to check the topic name %d (stored %s, request %s)",
			errSystem, h.offset, orig.Topic, h.originTopic)
	}
	maxTimes := int32(sg.RetryMaxTimes)
	if req.Version >= send.VersionV349 && h.hasMaxReconsume {
		maxTimes = h.maxReconsumeTimes
	}
	reconsumed := orig.ReconsumeTimes
	lmq, lmqOffset, isLite := p.liteOf(orig)
	if isLite {
		if n := p.d.Lite.DeliveryCount(h.group, lmq, lmqOffset); n > reconsumed {
			reconsumed = n
		}
		// Lite topics have no retry topic (docs/lite-topics.md §6.10): a consumer that gives
		// up on a message sends it back with delayLevel -1 (what Apache's
		// proxy does for ForwardMessageToDeadLetterQueue, and at receive
		// time once the delivery count reached the group's max), or once
		// its delivery count reached retryMaxTimes. A lite retry is a nack
		// (CHANGE_MESSAGE_INVISIBLETIME), never a copy. The broker does not
		// dead-letter on its own at pop time: in Apache the consumer side
		// (the proxy's pop result filter, the SDK) decides, with its own
		// maxAttempts, and this is the request it sends.
		if h.delayLevel >= 0 && reconsumed < maxTimes {
			return fmt.Errorf("%w: lite topic messages have no retry topic (%s offset %d delivered %d times, retryMaxTimes %d): nack it with CHANGE_MESSAGE_INVISIBLETIME, or send it back with delayLevel -1 to dead-letter it",
				errLiteRetry, lmq, lmqOffset, reconsumed, maxTimes)
		}
	}
	dlq := reconsumed >= maxTimes || h.delayLevel < 0

	topicFlag := 0
	if h.unitMode {
		topicFlag = topicFlagUnitSub
	}
	newTopic := protocol.RetryTopic(h.group)
	queueID := int32(p.d.RandIntN(sg.RetryQueueNums))
	if !isLite {
		// As Java, also when the message goes on to the DLQ.
		tc, err := p.createTopic(newTopic, sg.RetryQueueNums, topicFlag)
		if err != nil {
			return err
		}
		if tc.Perm&protocol.PermWrite == 0 {
			return fmt.Errorf("%w: the topic[%s] sending message is forbidden", processor.ErrNoPermission, newTopic)
		}
	}

	props := maps.Clone(orig.Properties)
	if props == nil {
		props = map[string]string{}
	}
	if props[message.PropertyRetryTopic] == "" {
		props[message.PropertyRetryTopic] = orig.Topic
	}
	level := h.delayLevel
	if dlq {
		newTopic = protocol.DLQTopic(h.group)
		queueID = int32(p.d.RandIntN(send.DLQNumsPerGroup))
		if _, err := p.createTopic(newTopic, send.DLQNumsPerGroup, 0); err != nil {
			return err
		}
		level = 0
	} else if level == 0 {
		level = 3 + orig.ReconsumeTimes
	}
	props[message.PropertyDelayTimeLevel] = strconv.Itoa(int(level))
	// Retry and DLQ topics take no lite-topic dispatch (docs/lite-topics.md §3.1);
	// __LITE_TOPIC stays, so a DLQ reader sees which lite topic it was.
	delete(props, message.PropertyInnerMultiDispatch)
	delete(props, message.PropertyInnerMultiQueueOffset)
	if props[message.PropertyOriginMessageID] == "" {
		props[message.PropertyOriginMessageID] = message.OffsetMsgID(orig.StoreHost, orig.CommitLogOffset)
	}
	msg := &message.Message{
		Topic:          newTopic,
		QueueID:        queueID,
		Flag:           orig.Flag,
		Body:           orig.Body,
		Properties:     props,
		SysFlag:        orig.SysFlag,
		BornTimestamp:  orig.BornTimestamp,
		BornHost:       orig.BornHost,
		ReconsumeTimes: reconsumed + 1,
	}
	if p.d.StoreHost != nil {
		msg.StoreHost = p.d.StoreHost()
	}
	if !dlq && p.d.Schedule != nil {
		if err := p.d.Schedule.Schedule(msg); err != nil {
			return fmt.Errorf("%w: schedule the retry message: %v", errSystem, err)
		}
	}
	if _, err := p.d.Store.PutMessage(ctx, msg); err != nil && !errors.Is(err, store.ErrFlushTimeout) {
		return fmt.Errorf("%w: put message: %w", errSystem, err)
	}
	if dlq && p.d.SentToDLQ != nil {
		p.d.SentToDLQ(h.originTopic, h.group)
	}
	if dlq {
		p.log.Info("message sent to DLQ", "topic", newTopic, "group", h.group, "originTopic", h.originTopic,
			"uniqKey", props[message.PropertyUniqClientMessageIDKeyIdx], "reconsumeTimes", reconsumed,
			"maxReconsumeTimes", maxTimes, "delayLevel", h.delayLevel, "lmq", lmq)
	}
	if isLite {
		// Ack it here rather than wait for the consumer's ack: one request
		// is enough for a remoting client, and the ack Apache's proxy sends
		// next is then a harmless repeat.
		p.d.Lite.DeadLettered(h.group, lmq, lmqOffset)
	}
	return nil
}

// liteOf reports whether orig is a lite message and returns its lmq and
// offset there.
func (p *Processor) liteOf(orig *message.Message) (lmq string, offset int64, ok bool) {
	if p.d.Lite == nil {
		return "", 0, false
	}
	lite := orig.Properties[message.PropertyLiteTopic]
	lmq = orig.Properties[message.PropertyInnerMultiDispatch]
	if lite == "" || naming.LiteOf(lmq) != lite || naming.ParentOf(lmq) != orig.Topic {
		return "", 0, false
	}
	off, err := strconv.ParseInt(orig.Properties[message.PropertyInnerMultiQueueOffset], 10, 64)
	if err != nil || off < 0 {
		return "", 0, false
	}
	return lmq, off, true
}

// topicMatches is Java's fence against a wrong offset ("for logic
// queue"), relaxed for retry copies: their record lives in %RETRY%<group>
// while consumers report the topic restored from RETRY_TOPIC (Java's broker
// answers SYSTEM_ERROR there and clients fall back to re-sending the message
// themselves; accepting it is our choice).
func topicMatches(orig *message.Message, originTopic string) bool {
	if originTopic == "" || orig.Topic == originTopic {
		return true
	}
	return strings.HasPrefix(orig.Topic, protocol.RetryGroupTopicPrefix) && orig.Properties[message.PropertyRetryTopic] == originTopic
}

// createTopic is Java's createTopicInSendMessageBackMethod.
func (p *Processor) createTopic(name string, queues, sysFlag int) (protocol.TopicConfig, error) {
	tc := protocol.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	tc.Perm = protocol.PermRead | protocol.PermWrite
	tc.TopicSysFlag = sysFlag
	got, created, err := p.d.Topics.CreateIfAbsent(tc)
	if got.TopicName == "" {
		return got, fmt.Errorf("%w: topic[%s] not exist: %v", errSystem, name, err)
	}
	if err != nil {
		// The topic exists in memory; only persisting it failed.
		p.log.Error("persist topic created by send back", "topic", name, "err", err)
	}
	if created {
		p.log.Info("topic created by send back", "topic", name, "queues", queues)
		if p.d.TopicCreated != nil {
			p.d.TopicCreated(name)
		}
	}
	return got, nil
}
