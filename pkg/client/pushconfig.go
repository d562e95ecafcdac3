package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Push consumer defaults (Apache's Java client values unless noted).
const (
	DefaultConsumeGoroutines     = 20
	DefaultConsumeBatchSize      = 1
	DefaultPullThresholdForQueue = 1000
	DefaultMaxReconsumeTimes     = 16
	DefaultSuspendTime           = time.Second
	DefaultRebalanceInterval     = 20 * time.Second
	DefaultLockRenewInterval     = 20 * time.Second
	DefaultOffsetCommitInterval  = 5 * time.Second
	DefaultPushLongPollSuspend   = 15 * time.Second // Java push: brokerSuspendMaxTimeMillis
	DefaultPullErrorBackoff      = 3 * time.Second
	DefaultConsumeTimestampAge   = 30 * time.Minute // CONSUME_FROM_TIMESTAMP default: half an hour ago
	// lockMaxLive: a queue lock not renewed for this long is treated as
	// lost (Java's REBALANCE_LOCK_MAX_LIVE_TIME; brokers expire it at 60 s).
	lockMaxLive = 30 * time.Second
	// sendBackRetryDelay: failed messages whose send-back failed too are
	// consumed again locally after this pause (Java: 5 s).
	sendBackRetryDelay = 5 * time.Second
	// rebalanceRetryDelay: how soon a rebalance that could not lock every
	// queue (orderly) runs again (Java: 500 ms).
	rebalanceRetryDelay = 500 * time.Millisecond
)

// MessageModel says how the consumers of one group share messages.
type MessageModel int

const (
	// Clustering gives each message to one consumer of the group; queues
	// are shared out among the group's consumers and offsets live on the
	// brokers.
	Clustering MessageModel = iota
	// Broadcasting gives every message to every consumer of the group;
	// offsets are kept in a local file.
	Broadcasting
)

var messageModelNames = [...]string{Clustering: messageModelClustering, Broadcasting: messageModelBroadcasting}

func (m MessageModel) String() string { return enumName(int(m), messageModelNames[:], "MessageModel") }

// ConsumeFrom says where a queue with no committed offset starts.
type ConsumeFrom int

const (
	// ConsumeFromLastOffset starts at the end of the queue (retry queues
	// at their start). As in Java, a broker may answer offset 0 for a new
	// group whose queue still holds its whole history.
	ConsumeFromLastOffset ConsumeFrom = iota
	// ConsumeFromFirstOffset starts at the oldest message still stored.
	ConsumeFromFirstOffset
	// ConsumeFromTimestamp starts at the first message stored at or after
	// PushConsumerConfig.ConsumeTimestamp.
	ConsumeFromTimestamp
)

var consumeFromNames = [...]string{ConsumeFromLastOffset: consumeFromLastOffset, ConsumeFromFirstOffset: "CONSUME_FROM_FIRST_OFFSET", ConsumeFromTimestamp: "CONSUME_FROM_TIMESTAMP"}

func (c ConsumeFrom) String() string { return enumName(int(c), consumeFromNames[:], "ConsumeFrom") }

// ConsumeResult is a handler's verdict on the messages it was given.
type ConsumeResult int

const (
	// ConsumeSuccess: the messages are consumed; their offsets may be
	// committed.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater: concurrent consumers send the messages back to the
	// broker, which redelivers them through the group's retry topic after
	// a delay (broadcasting consumers drop them, as Java does); orderly
	// consumers suspend the queue and deliver the same messages again.
	ConsumeRetryLater
)

// consumeResultNames are Java's ConsumeConcurrentlyStatus names.
var consumeResultNames = [...]string{ConsumeSuccess: "CONSUME_SUCCESS", ConsumeRetryLater: "RECONSUME_LATER"}

func (r ConsumeResult) String() string {
	return enumName(int(r), consumeResultNames[:], "ConsumeResult")
}

// ConsumeRequest is one handler call: messages of one queue, in queue
// order. The handler may set DelayLevel or SuspendFor before it returns.
type ConsumeRequest struct {
	Queue    protocol.MessageQueue
	Messages []*message.Message
	// DelayLevel (concurrent consumers) is the delay level of the retry
	// when the handler returns ConsumeRetryLater: 0 lets the broker choose
	// (3 + reconsume times), -1 sends the messages to the DLQ at once.
	DelayLevel int
	// SuspendFor (orderly consumers) is how long the queue pauses before
	// the messages are delivered again; 0 means SuspendTime.
	SuspendFor time.Duration
}

// PushHandler consumes messages for a PushConsumer. Concurrent consumers
// call it from several goroutines at once; orderly ones never call it for
// one queue concurrently. ctx ends when the queue is taken away from this
// consumer (rebalance) or the consumer shuts down. A panic counts as
// ConsumeRetryLater.
type PushHandler func(ctx context.Context, req *ConsumeRequest) ConsumeResult

// PushConsumerConfig configures a PushConsumer. Zero fields take their
// defaults.
type PushConsumerConfig struct {
	CommonConfig

	// Group is the consumer group; default DEFAULT_CONSUMER.
	Group string
	// Model: Clustering (default) or Broadcasting.
	Model MessageModel
	// Orderly consumes each queue one batch at a time in queue order; in
	// Clustering the queues are locked on the brokers (LOCK_BATCH_MQ) so
	// that no two consumers hold one.
	Orderly bool
	// ConsumeFrom positions queues that have no committed offset.
	ConsumeFrom ConsumeFrom
	// ConsumeTimestamp is used with ConsumeFromTimestamp; default 30
	// minutes before Start.
	ConsumeTimestamp time.Time
	// Handler consumes the messages; required.
	Handler PushHandler

	// ConsumeGoroutines caps concurrent handler calls (concurrent
	// consumers); default 20.
	ConsumeGoroutines int
	// ConsumeBatchSize is the most messages per handler call; default 1.
	ConsumeBatchSize int
	// PullBatchSize is the most messages one pull asks for; default 32.
	PullBatchSize int
	// PullThresholdForQueue: pulling a queue pauses while it has this many
	// messages fetched but not consumed; default 1000.
	PullThresholdForQueue int
	// MaxReconsumeTimes: deliveries after which a failing message goes to
	// the DLQ; default 16 (concurrent) or unlimited (orderly).
	MaxReconsumeTimes int
	// SuspendTime is an orderly queue's pause after a failed batch;
	// default 1 s.
	SuspendTime time.Duration

	// RebalanceInterval: how often queues are re-allocated (also on
	// NOTIFY_CONSUMER_IDS_CHANGED); default 20 s.
	RebalanceInterval time.Duration
	// LockRenewInterval: how often orderly clustering consumers renew
	// their queue locks; default 20 s.
	LockRenewInterval time.Duration
	// OffsetCommitInterval: how often consumed offsets are stored (on the
	// brokers, or in the local file when broadcasting); default 5 s. They
	// are stored at Shutdown too.
	OffsetCommitInterval time.Duration
	// LongPollingSuspend is how long a broker may hold a pull that finds
	// nothing; default 15 s (Java's push consumer).
	LongPollingSuspend time.Duration
	// PullErrorBackoff is the pause after a failed pull; default 3 s.
	PullErrorBackoff time.Duration
	// OffsetStoreDir holds broadcasting offsets, in
	// <dir>/<clientID>/<group>/offsets.json as Java's LocalFileOffsetStore;
	// default ~/.rocketmq_offsets. Set InstanceName so that the client id,
	// and with it the file, survives restarts.
	OffsetStoreDir string
	// MaxBodySize bounds a decompressed body; default 64 MiB.
	MaxBodySize int
	// Allocate shares queues among the group's consumers (Clustering);
	// default AllocateAveragely.
	Allocate AllocateStrategy
}

func (c PushConsumerConfig) normalize() (PushConsumerConfig, error) {
	var err error
	if c.CommonConfig, err = c.CommonConfig.normalizeGroup(&c.Group, DefaultConsumerGroup, "consumer"); err != nil {
		return c, err
	}
	if c.Handler == nil {
		return c, fmt.Errorf("client: push consumer %s needs a Handler", c.Group)
	}
	if c.Model != Clustering && c.Model != Broadcasting {
		return c, fmt.Errorf("client: unknown message model %v", c.Model)
	}
	if c.ConsumeFrom < ConsumeFromLastOffset || c.ConsumeFrom > ConsumeFromTimestamp {
		return c, fmt.Errorf("client: unknown ConsumeFrom %v", c.ConsumeFrom)
	}
	if err := nonNegative("push consumer "+c.Group,
		[]int{c.ConsumeGoroutines, c.ConsumeBatchSize, c.PullBatchSize, c.PullThresholdForQueue, c.MaxBodySize},
		[]time.Duration{c.SuspendTime, c.RebalanceInterval, c.LockRenewInterval, c.OffsetCommitInterval, c.LongPollingSuspend, c.PullErrorBackoff}); err != nil {
		return c, err
	}
	orDefault(&c.ConsumeGoroutines, DefaultConsumeGoroutines)
	orDefault(&c.ConsumeBatchSize, DefaultConsumeBatchSize)
	orDefault(&c.PullBatchSize, DefaultPullBatchSize)
	orDefault(&c.PullThresholdForQueue, DefaultPullThresholdForQueue)
	orDefault(&c.MaxBodySize, DefaultMaxBodySize)
	if c.MaxReconsumeTimes <= 0 {
		c.MaxReconsumeTimes = DefaultMaxReconsumeTimes
		if c.Orderly {
			c.MaxReconsumeTimes = int(^uint32(0) >> 1) // Java: Integer.MAX_VALUE
		}
	}
	orDefault(&c.SuspendTime, DefaultSuspendTime)
	orDefault(&c.RebalanceInterval, DefaultRebalanceInterval)
	orDefault(&c.LockRenewInterval, DefaultLockRenewInterval)
	orDefault(&c.OffsetCommitInterval, DefaultOffsetCommitInterval)
	orDefault(&c.LongPollingSuspend, DefaultPushLongPollSuspend)
	orDefault(&c.PullErrorBackoff, DefaultPullErrorBackoff)
	if c.ConsumeTimestamp.IsZero() {
		c.ConsumeTimestamp = time.Now().Add(-DefaultConsumeTimestampAge)
	}
	if c.Allocate == nil {
		c.Allocate = AllocateAveragely
	}
	if c.Model == Broadcasting && c.OffsetStoreDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, fmt.Errorf("client: broadcasting consumer %s: no OffsetStoreDir and no home directory: %w", c.Group, err)
		}
		c.OffsetStoreDir = filepath.Join(home, ".rocketmq_offsets")
	}
	return c, nil
}

// nonNegative refuses a negative size or interval among a consumer's
// settings; who names the consumer in the error.
func nonNegative(who string, sizes []int, intervals []time.Duration) error {
	for _, v := range sizes {
		if v < 0 {
			return fmt.Errorf("client: %s: negative size in config", who)
		}
	}
	for _, d := range intervals {
		if d < 0 {
			return fmt.Errorf("client: %s: negative interval in config", who)
		}
	}
	return nil
}

// orDefault sets *v to d when it is the zero value (a setting left out).
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
