// Package store is the broker's message store: it writes messages once to
// the CommitLog and indexes them into consume queues, the key index and
// (for lite topics) LMQ queues, and reads them back for pulls and queries.
//
// The request processors see only the MessageStore interface; the
// implementation (Store) composes commitlog, consumequeue, index and offset.
package store

import (
	"context"
	"errors"

	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/pkg/message"
)

// Errors of the write path. The broker maps them to response codes:
// ErrNotWritable/ErrDiskFull → SERVICE_NOT_AVAILABLE (14), ErrMessageIllegal
// → MESSAGE_ILLEGAL (13), ErrFlushTimeout → FLUSH_DISK_TIMEOUT (10, the
// message IS stored), ErrLMQQuota → LMQ_QUOTA_EXCEEDED (2017).
var (
	ErrNotWritable    = errors.New("store: not writable")
	ErrDiskFull       = errors.New("store: disk full")
	ErrMessageIllegal = errors.New("store: message illegal")
	ErrFlushTimeout   = errors.New("store: flush disk timeout")
	ErrLMQQuota       = errors.New("store: lmq consume queue quota exceeded")
	ErrShutdown       = errors.New("store: shut down")
)

// PutResult describes a stored message (or batch: the first message's
// offsets, every message's offset id).
type PutResult struct {
	PhysicalOffset int64
	// End is the CommitLog offset just past the stored bytes: what a
	// slave must acknowledge before a SYNC_MASTER send completes.
	End            int64
	QueueID        int32
	QueueOffset    int64    // first queue offset
	MsgIDs         []string // offset message ids, one per stored message
	StoreTimestamp int64
	// FlushTimedOut is set when SYNC_FLUSH did not confirm in time: the
	// message is stored, the response code is FLUSH_DISK_TIMEOUT.
	FlushTimedOut bool
}

// GetStatus is the outcome of a consume-queue read (RocketMQ's
// GetMessageStatus).
type GetStatus int

const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
	OffsetReset
)

func (s GetStatus) String() string {
	return [...]string{"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL", "OFFSET_OVERFLOW_BADLY",
		"OFFSET_OVERFLOW_ONE", "OFFSET_TOO_SMALL", "NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE", "OFFSET_RESET"}[s]
}

// GetResult is what a pull reads.
type GetResult struct {
	Status          GetStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Records are the stored records, in queue order, each exactly the bytes
	// of the CommitLog (a pull body is their concatenation). They may alias
	// mapped CommitLog memory: valid until Release is called.
	Records [][]byte
	// QueueOffsets[i] is the queue offset of Records[i].
	QueueOffsets []int64
	TotalSize    int
	release      func()
}

// Release returns buffers; the Records must not be used afterwards.
func (r *GetResult) Release() {
	if r != nil && r.release != nil {
		r.release()
		r.release = nil
	}
}

// MessageFilter selects messages during a read. Tags are checked first by
// hash code from the consume queue (cheap), then, for filters that need
// them, against the stored properties.
type MessageFilter interface {
	// MatchTagsCode is checked against the consume-queue entry.
	MatchTagsCode(tagsCode int64) bool
	// MatchProperties is checked against the stored message properties
	// (SQL92 filters); filters that do not need it return true.
	MatchProperties(props []byte) bool
}

// TagsOnlyFilter is implemented by MessageFilters that decide by tag code
// alone (MatchProperties always answers true): GetMessage then does not
// parse every record it reads to ask them.
type TagsOnlyFilter interface {
	MessageFilter
	TagsOnly()
}

// ArrivalListener is told about the consume-queue entries the dispatcher
// commits (long polling wakes parked pulls with it; lite topics dispatch
// events with it): about every one, except that of consecutive entries of
// one queue with one tag code (a batch send's) only the last is told — an
// entry at a higher offset with the same tag code wakes whatever an earlier
// one would. It runs on the dispatcher goroutine: it must not block.
type ArrivalListener func(topic string, queueID int32, queueOffset int64, tagsCode int64, storeTime int64)

// QueueCreatedListener is told of each queue the dispatcher created (the
// round that created it committed), LMQs excepted. It runs on the
// dispatcher goroutine: it must not block.
type QueueCreatedListener func(topic string, queueID int32)

// QueryResult holds messages found by key.
type QueryResult struct {
	Records                  [][]byte
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyOffset int64
}

// MessageStore is what the broker's request processors use.
type MessageStore interface {
	// PutMessage stores one message (msg.QueueID chosen by the caller).
	PutMessage(ctx context.Context, msg *message.Message) (PutResult, error)
	// PutMessages stores a batch into one queue atomically with consecutive
	// queue offsets.
	PutMessages(ctx context.Context, msgs []*message.Message) (PutResult, error)

	// GetMessage reads up to maxMsgNums messages (and about maxBytes) from a
	// queue starting at offset, applying filter (nil = all).
	GetMessage(ctx context.Context, topic string, queueID int32, offset int64, maxMsgNums int, maxBytes int, filter MessageFilter) (*GetResult, error)

	MaxOffset(topic string, queueID int32) int64
	MinOffset(topic string, queueID int32) int64
	SearchOffsetByTime(topic string, queueID int32, ts int64, boundary consumequeue.BoundaryType) (int64, error)
	// EarliestMessageTime is the store time of the queue's first message (-1 if none).
	EarliestMessageTime(topic string, queueID int32) int64
	// MessageStoreTime is the store time of the message at offset (-1 if none).
	MessageStoreTime(topic string, queueID int32, offset int64) int64

	// ReadRecord returns the stored record at a CommitLog offset (VIEW_MESSAGE_BY_ID, send-back).
	ReadRecord(phyOffset int64) ([]byte, error)
	// QueryMessage finds messages by KEYS (uniq=false) or UNIQ_KEY (uniq=true).
	QueryMessage(topic, key string, uniq bool, maxNum int, begin, end int64) (*QueryResult, error)

	// Consumer offsets.
	CommitOffset(group, topic string, queueID int32, offset int64)
	// AdvanceOffset commits offset only when it is ahead of the committed
	// one (a pull's piggybacked commit, which may arrive after a newer
	// explicit one); it reports whether it did.
	AdvanceOffset(group, topic string, queueID int32, offset int64) bool
	QueryOffset(group, topic string, queueID int32) (int64, bool)

	// DeleteTopic drops a topic's queues, index and offsets.
	DeleteTopic(topic string) error
	// Queues returns the queue ids present in the store for a topic.
	Queues(topic string) []int32

	AddArrivalListener(l ArrivalListener)
	// Stats for GET_BROKER_RUNTIME_INFO.
	Stats() Stats
}

// Stats are counters for runtime info and metrics.
type Stats struct {
	CommitLogMinOffset  int64
	CommitLogMaxOffset  int64
	DispatchBehind      int64
	PutMessageCount     int64
	GetMessageCount     int64 // messages served by reads (not reads)
	PutTps              float64
	GetTransferredTps   float64
	DiskRatio           float64
	EarliestMessageTime int64
}
