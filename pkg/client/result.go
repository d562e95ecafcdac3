package client

import (
	"strconv"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// SendStatus is how the broker stored a delivered message. Every status is a
// delivery: the message is in the commit log; the non-OK ones say that sync
// flush or sync replication did not finish in time.
type SendStatus int

const (
	SendOK SendStatus = iota
	SendFlushDiskTimeout
	SendFlushSlaveTimeout
	SendSlaveNotAvailable
)

// sendStatusNames are Java's SendStatus names.
var sendStatusNames = [...]string{SendOK: "SEND_OK", SendFlushDiskTimeout: "FLUSH_DISK_TIMEOUT", SendFlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT", SendSlaveNotAvailable: "SLAVE_NOT_AVAILABLE"}

func (s SendStatus) String() string { return enumName(int(s), sendStatusNames[:], "SendStatus") }

// enumName is names[v], Java's name of an enum value, or typ(v) for a
// value without one.
func enumName(v int, names []string, typ string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(v) + ")"
}

// SendResult describes a delivered message (or batch).
type SendResult struct {
	Status SendStatus
	// MsgID is the client id (UNIQ_KEY) users see; batches: the inner
	// messages' ids joined by commas.
	MsgID string
	// OffsetMsgID is the broker's offset id (store host + commit-log
	// offset); batches: comma-joined.
	OffsetMsgID string
	// Queue is where it went (Queue.QueueID is the broker's answer).
	Queue protocol.MessageQueue
	// QueueOffset is the consume-queue offset (a batch's first message).
	QueueOffset   int64
	TransactionID string
	RegionID      string // MSG_REGION, "DefaultRegion" unless configured
	TraceOn       bool
	RecallHandle  string // timer messages on 5.3+ brokers
	Attempts      int    // sends it took, retries included
}

// PullStatus is the outcome of a pull.
type PullStatus int

const (
	PullFound         PullStatus = iota // messages returned
	PullNoNewMsg                        // nothing at this offset (after long polling)
	PullNoMatchedMsg                    // messages examined, none matched the filter
	PullOffsetIllegal                   // offset out of range: continue at NextBeginOffset
)

// pullStatusNames are Java's PullStatus names.
var pullStatusNames = [...]string{PullFound: "FOUND", PullNoNewMsg: "NO_NEW_MSG", PullNoMatchedMsg: "NO_MATCHED_MSG", PullOffsetIllegal: "OFFSET_ILLEGAL"}

func (s PullStatus) String() string { return enumName(int(s), pullStatusNames[:], "PullStatus") }

// PullResult is one pull's answer. Continue at NextBeginOffset whatever the
// status.
type PullResult struct {
	Status          PullStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64 // exclusive: the next offset to be written
	// SuggestWhichBrokerID is the replica the broker suggests for the next
	// pull (0 = master); this client always reads from the master.
	SuggestWhichBrokerID int64
	// Messages are decoded with bodies decompressed (the compressed bit of
	// SysFlag cleared; it stays set on a body that could not be inflated),
	// re-filtered by tag, and MIN_OFFSET / MAX_OFFSET properties set, as
	// Java's client does.
	Messages []*message.Message
}
