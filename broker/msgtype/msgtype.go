// Package msgtype holds the message-type rules of the send path: the type
// of a message derived from its properties (Java's
// TopicMessageType.parseFromMessageProperty, extended with 5.5's priority
// and lite types), which types a topic's message.type attribute accepts,
// and the per-type body size limits. Checker plugs them into the send
// processor (send.Deps.MessageTypeCheck).
//
// Apache RocketMQ checks the message type only in the gRPC proxy
// (ProxyConfig.enableTopicMessageTypeCheck, enforced by the gRPC clients);
// its broker accepts anything from remoting clients. Here the broker
// checks remoting sends when enableTopicMessageTypeCheck is on (default
// off), with one concession to the remoting protocol: ordering is chosen by
// queue selection, not marked on the message, so NORMAL and FIFO messages
// are accepted on both NORMAL and FIFO topics. DELAY, TRANSACTION, PRIORITY
// and LITE must match exactly; a topic without message.type, or with
// UNSPECIFIED or MIXED, accepts everything.
//
// Size limits (always on): delay/timer messages are limited to
// maxDelayMessageSize and transactional messages to
// maxTransactionMessageSize (both ours, default 64 KiB; ≤ 0 disables);
// every message is also limited to maxMessageSize (4 MiB) by the send path
// itself. Sends to %RETRY% and %DLQ% topics (clients re-sending consumed
// messages, which carry DELAY) are exempt from both checks.
package msgtype

import (
	"fmt"
	"strings"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Message types (values of the message.type topic attribute).
const (
	Normal      = topic.MessageTypeNormal
	FIFO        = topic.MessageTypeFIFO
	Delay       = topic.MessageTypeDelay
	Transaction = topic.MessageTypeTransaction
	Priority    = topic.MessageTypePriority
	Lite        = topic.MessageTypeLite
	Mixed       = topic.MessageTypeMixed
	Unspecified = topic.MessageTypeUnspecified
)

// Of derives a message's type from its properties and the request sysFlag,
// first match wins: a transactional half message (TRAN_MSG=true or the
// PREPARED sysFlag type; not a consumed half message re-sent with
// reconsumeTimes and a delay) is TRANSACTION; a delay level > 0 or any
// TIMER_* delivery property is DELAY; a sharding key (__SHARDINGKEY, or
// client-go's SHARDING_KEY) is FIFO; a priority is PRIORITY; a lite topic is
// LITE; anything else NORMAL.
func Of(props map[string]string, sysFlag, reconsumeTimes int32) string {
	if send.IsPrepared(props, sysFlag, reconsumeTimes) {
		return Transaction
	}
	if message.IsScheduled(props) {
		return Delay
	}
	if props[message.PropertyShardingKey] != "" || props[message.PropertyShardingKeyGo] != "" {
		return FIFO
	}
	if _, ok := props[message.PropertyPriority]; ok {
		return Priority
	}
	if _, ok := props[message.PropertyLiteTopic]; ok {
		return Lite
	}
	return Normal
}

// TopicType is a topic's declared message type ("" when it declares none).
func TopicType(tc *protocol.TopicConfig) string {
	t, _ := tc.Attribute(topic.AttrMessageType)
	return t
}

// Accepts reports whether a topic of type topicType takes a message of
// type msgType (see the package comment).
func Accepts(topicType, msgType string) bool {
	switch topicType {
	case "", Unspecified, Mixed, msgType:
		return true
	case Normal, FIFO:
		return msgType == Normal || msgType == FIFO
	}
	return false
}

// Checker is the send path's send.MessageChecker.
type Checker struct {
	// Config is the live broker configuration.
	Config func() *config.Config
}

var _ send.MessageChecker = Checker{}

// exempt reports the topics whose sends are re-sends of consumed messages.
func exempt(name string) bool {
	return strings.HasPrefix(name, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(name, protocol.DLQGroupTopicPrefix)
}

// CheckMessage rejects, with MESSAGE_ILLEGAL, a message whose type the
// topic does not accept (with enableTopicMessageTypeCheck) and a delay or
// transactional message whose body exceeds its limit.
func (c Checker) CheckMessage(tc *protocol.TopicConfig, msg *message.Message, sysFlag int32) error {
	if exempt(tc.TopicName) {
		return nil
	}
	cfg := c.Config()
	typ := Of(msg.Properties, sysFlag, msg.ReconsumeTimes)
	if cfg.EnableTopicMessageTypeCheck {
		if want := TopicType(tc); !Accepts(want, typ) {
			return fmt.Errorf("%w: the message type [%s] does not match the message.type [%s] of topic [%s] (enableTopicMessageTypeCheck)",
				send.ErrMessageIllegal, typ, want, tc.TopicName)
		}
	}
	limit, key := 0, ""
	switch typ {
	case Delay:
		limit, key = cfg.MaxDelayMessageSize, "maxDelayMessageSize"
	case Transaction:
		limit, key = cfg.MaxTransactionMessageSize, "maxTransactionMessageSize"
	}
	if limit > 0 && len(msg.Body) > limit {
		return fmt.Errorf("%w: the %s message body size %d exceeds %s %d", send.ErrMessageIllegal,
			strings.ToLower(typ), len(msg.Body), key, limit)
	}
	return nil
}
