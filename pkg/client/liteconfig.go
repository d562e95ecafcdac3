package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Lite push consumer defaults (Java's 5.x client values unless noted).
const (
	DefaultLiteInvisibleTime  = 30 * time.Second
	DefaultLiteLongPolling    = 20 * time.Second
	DefaultLiteSyncInterval   = 30 * time.Second // COMPLETE_ADD full sync (docs/lite-topics.md §5.1)
	DefaultLiteMaxCached      = 1024             // Java push consumer's maxCacheMessageCount
	DefaultLitePopErrorPause  = time.Second
	maxLiteMessagesPerPop     = 32
	liteDeadlineMarginDivisor = 10 // a handler's deadline is InvisibleTime minus a tenth of it (≤ 1 s) before redelivery
)

// LiteHandler consumes one message of a lite topic (msg.LiteTopic() names
// it; msg.ReconsumeTimes counts its earlier deliveries). Messages of one
// lite topic are handed over one at a time in send order: the next one
// only after this one was acked. ctx ends shortly before the message
// becomes visible to the group again (InvisibleTime after it was popped)
// or when the consumer shuts down. A panic counts as ConsumeRetryLater.
type LiteHandler func(ctx context.Context, msg *message.Message) ConsumeResult

// LitePushConsumerConfig configures a LitePushConsumer. Zero fields take
// their defaults.
type LitePushConsumerConfig struct {
	CommonConfig

	// Group is the lite consumer group, required: a subscription group
	// whose lite.bind.topic attribute names BindTopic.
	Group string
	// BindTopic is the LITE parent topic (message.type=LITE), required.
	BindTopic string
	// Handler consumes the messages; required.
	Handler LiteHandler

	// InvisibleTime: how long a popped message stays invisible to the
	// group; unacked, it (and the rest of its lite topic) is delivered
	// again after it. Default 30 s, at least 1 s.
	InvisibleTime time.Duration
	// MaxMessagesPerPop is the most messages one POP_LITE_MESSAGE asks for
	// (1…32); default 32.
	MaxMessagesPerPop int
	// LongPollingTimeout is how long a broker may hold a pop that finds
	// nothing; default 20 s.
	LongPollingTimeout time.Duration
	// ConsumeGoroutines caps handler calls running at once (for different
	// lite topics); default 20.
	ConsumeGoroutines int
	// MaxCachedMessages caps messages popped but not yet handled; popping
	// pauses at the cap. Default 1024.
	MaxCachedMessages int
	// MaxReconsumeTimes: a message whose handler fails after this many
	// redeliveries goes to the group's DLQ (%DLQ%<group>, keeping its
	// __LITE_TOPIC) and is acked; default 16.
	MaxReconsumeTimes int
	// RetryBackoff gives how long a failed message (delivered
	// reconsumeTimes times before) waits before its redelivery: the SDK
	// changes its invisible time (CHANGE_MESSAGE_INVISIBLETIME) to that,
	// and the rest of its lite topic waits too. A result ≤ 0 leaves the
	// invisible time as it is (redelivery InvisibleTime after the pop).
	// Default: 1 s doubling per redelivery, at most 60 s.
	RetryBackoff func(reconsumeTimes int) time.Duration
	// SyncInterval: how often the whole lite subscription is sent again
	// (COMPLETE_ADD) to every broker of BindTopic, refreshing it (brokers
	// drop subscriptions not refreshed for 3 minutes) and reconciling
	// what a broker holds; default 30 s.
	SyncInterval time.Duration
	// PopErrorPause is the pause after a failed pop; default 1 s.
	PopErrorPause time.Duration
	// MaxBodySize bounds a decompressed body; default 64 MiB.
	MaxBodySize int
}

// defaultLiteBackoff is 1 s, 2 s, 4 s … capped at 60 s.
func defaultLiteBackoff(reconsumeTimes int) time.Duration {
	return min(time.Second<<min(reconsumeTimes, 6), time.Minute)
}

func (c LitePushConsumerConfig) normalize() (LitePushConsumerConfig, error) {
	var err error
	if c.CommonConfig, err = c.CommonConfig.normalize(); err != nil {
		return c, err
	}
	if c.Group == "" {
		return c, errors.New("client: lite push consumer needs a Group (bound to BindTopic by lite.bind.topic)")
	}
	if err := protocol.ValidateGroup(c.Group); err != nil {
		return c, fmt.Errorf("client: consumer group: %w", err)
	}
	if err := protocol.ValidateTopic(c.BindTopic); err != nil {
		return c, fmt.Errorf("client: lite push consumer %s: bind topic: %w", c.Group, err)
	}
	if c.Handler == nil {
		return c, fmt.Errorf("client: lite push consumer %s needs a Handler", c.Group)
	}
	if err := nonNegative("lite push consumer "+c.Group,
		[]int{c.MaxMessagesPerPop, c.ConsumeGoroutines, c.MaxCachedMessages, c.MaxReconsumeTimes, c.MaxBodySize},
		[]time.Duration{c.InvisibleTime, c.LongPollingTimeout, c.SyncInterval, c.PopErrorPause}); err != nil {
		return c, err
	}
	if c.MaxMessagesPerPop > maxLiteMessagesPerPop {
		return c, fmt.Errorf("client: lite push consumer %s: MaxMessagesPerPop %d over %d", c.Group, c.MaxMessagesPerPop, maxLiteMessagesPerPop)
	}
	orDefault(&c.MaxMessagesPerPop, maxLiteMessagesPerPop)
	orDefault(&c.ConsumeGoroutines, DefaultConsumeGoroutines)
	orDefault(&c.MaxCachedMessages, DefaultLiteMaxCached)
	orDefault(&c.MaxReconsumeTimes, DefaultMaxReconsumeTimes)
	orDefault(&c.MaxBodySize, DefaultMaxBodySize)
	orDefault(&c.InvisibleTime, DefaultLiteInvisibleTime)
	orDefault(&c.LongPollingTimeout, DefaultLiteLongPolling)
	orDefault(&c.SyncInterval, DefaultLiteSyncInterval)
	orDefault(&c.PopErrorPause, DefaultLitePopErrorPause)
	if c.InvisibleTime < MinInvisibleTime || c.InvisibleTime > MaxInvisibleTime {
		return c, fmt.Errorf("client: lite push consumer %s: InvisibleTime %v out of range %v-%v", c.Group, c.InvisibleTime, MinInvisibleTime, MaxInvisibleTime)
	}
	if c.MaxCachedMessages < c.MaxMessagesPerPop {
		c.MaxCachedMessages = c.MaxMessagesPerPop
	}
	if c.RetryBackoff == nil {
		c.RetryBackoff = defaultLiteBackoff
	}
	return c, nil
}

// Offset option types and policies on the wire (docs/lite-topics.md §5.3).
const (
	liteOffsetPolicy = "POLICY"
	liteOffsetAt     = "OFFSET"
	liteOffsetTailN  = "TAIL_N"
	litePolicyLast   = 0
	litePolicyMin    = 1
	litePolicyMax    = 2
)

// OffsetOption says where a new lite subscription starts for the group
// (SubscribeLite). The broker applies it to the group's position in that
// lite topic, whichever client of the group consumes it.
type OffsetOption struct {
	typ   string
	value int64
}

// OffsetPolicyLast keeps the group's position (the default): where it
// stopped, or the newest message for a lite topic it never consumed.
func OffsetPolicyLast() OffsetOption { return OffsetOption{liteOffsetPolicy, litePolicyLast} }

// OffsetPolicyMin restarts the group at the oldest message kept.
func OffsetPolicyMin() OffsetOption { return OffsetOption{liteOffsetPolicy, litePolicyMin} }

// OffsetPolicyMax moves the group to the end: only messages sent from now
// on are delivered.
func OffsetPolicyMax() OffsetOption { return OffsetOption{liteOffsetPolicy, litePolicyMax} }

// OffsetAt moves the group to offset n of the lite topic.
func OffsetAt(n int64) OffsetOption { return OffsetOption{liteOffsetAt, n} }

// OffsetTailN moves the group n messages back from where it stands, so
// the last n consumed are delivered again (no change for a group that
// never consumed the lite topic).
func OffsetTailN(n int64) OffsetOption { return OffsetOption{liteOffsetTailN, n} }

// String names the option for logs.
func (o OffsetOption) String() string {
	if o.typ == liteOffsetPolicy {
		switch o.value {
		case litePolicyLast:
			return "LAST"
		case litePolicyMin:
			return "MIN"
		case litePolicyMax:
			return "MAX"
		}
	}
	return fmt.Sprintf("%s(%d)", o.typ, o.value)
}

// offsetWire checks opts (at most one) and returns its wire form, nil for
// none.
func offsetWire(opts []OffsetOption) (*protocol.LiteOffsetOption, error) {
	switch len(opts) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("client: subscribe lite: %d offset options, at most one", len(opts))
	}
	o := opts[0]
	switch {
	case o.typ == liteOffsetPolicy && o.value >= litePolicyLast && o.value <= litePolicyMax:
	case (o.typ == liteOffsetAt || o.typ == liteOffsetTailN) && o.value >= 0:
	default:
		return nil, fmt.Errorf("client: subscribe lite: bad offset option %v", o)
	}
	return &protocol.LiteOffsetOption{Type: o.typ, Value: o.value}, nil
}
