package pop

import (
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Header limits.
const (
	// MaxPopNums is Java's cap on maxMsgNums.
	MaxPopNums = 32
	// maxInvisibleTime bounds invisibleTime (ours: Java has none; past it
	// due times would overflow long before anyone waits for them).
	maxInvisibleTime = 30 * 24 * 3600 * 1000
)

// popHeader is PopMessageRequestHeader.
type popHeader struct {
	group, topic   string
	queueID        int32
	maxMsgNums     int32
	invisibleTime  int64
	pollTime       int64
	bornTime       int64
	initMode       int32
	expType, exp   string
	order          bool
	attemptID      string
	bornTimeAbsent bool
}

func parsePopHeader(ext map[string]string) (popHeader, error) {
	f := protocol.FieldsOf(ext)
	h := popHeader{
		group:         f.Str("consumerGroup"),
		topic:         f.Str("topic"),
		queueID:       f.Int32("queueId"),
		maxMsgNums:    f.Int32("maxMsgNums"),
		invisibleTime: f.Int64("invisibleTime"),
		pollTime:      f.Int64("pollTime"),
		initMode:      f.Int32("initMode"),
		bornTime:      f.OptInt64("bornTime", 0),
		expType:       f.OptStr("expType", ""),
		exp:           f.OptStr("exp", ""),
		order:         f.OptBool("order", false),
		attemptID:     f.OptStr("attemptId", ""),
	}
	if err := f.Err(); err != nil {
		return h, processor.BadRequestf("%v", err)
	}
	if err := checkNames(h.group, h.topic); err != nil {
		return h, err
	}
	if h.queueID < 0 {
		h.queueID = -1 // Java's getQueueId: any negative id means every queue
	}
	switch {
	case h.maxMsgNums > MaxPopNums:
		return h, processor.BadRequestf("the broker pop message's num is greater than %d", MaxPopNums)
	case h.maxMsgNums <= 0:
		return h, processor.BadRequestf("maxMsgNums %d must be positive", h.maxMsgNums)
	case h.invisibleTime <= 0:
		return h, processor.BadRequestf("invisibleTime %d must be positive", h.invisibleTime)
	case h.invisibleTime > maxInvisibleTime:
		return h, processor.BadRequestf("invisibleTime %d exceeds %d ms", h.invisibleTime, int64(maxInvisibleTime))
	case h.pollTime < 0:
		return h, processor.BadRequestf("pollTime %d is negative", h.pollTime)
	}
	h.bornTimeAbsent = h.bornTime == 0
	return h, nil
}

func checkNames(group, topic string) error {
	if err := checkName("consumerGroup", group); err != nil {
		return processor.BadRequestf("%v", err)
	}
	if err := checkName("topic", topic); err != nil {
		return processor.BadRequestf("%v", err)
	}
	return nil
}

// parseAckHeader reads AckMessageRequestHeader.
func parseAckHeader(ext map[string]string) (AckHeader, error) {
	return parseReceiptHeader(ext, nil)
}

// parseChangeHeader reads ChangeInvisibleTimeRequestHeader.
func parseChangeHeader(ext map[string]string) (ChangeInvisibleHeader, error) {
	var h ChangeInvisibleHeader
	var err error
	h.AckHeader, err = parseReceiptHeader(ext, &h.InvisibleTime)
	return h, err
}

// parseReceiptHeader reads the header of ACK_MESSAGE or, when invisible
// is not nil, of CHANGE_MESSAGE_INVISIBLETIME, which adds invisibleTime
// (stored in *invisible): both name a popped message by its receipt handle.
func parseReceiptHeader(ext map[string]string, invisible *int64) (AckHeader, error) {
	f := protocol.FieldsOf(ext)
	h := AckHeader{
		ConsumerGroup: f.Str("consumerGroup"),
		Topic:         f.Str("topic"),
		QueueID:       f.Int32("queueId"),
		ExtraInfo:     f.Str("extraInfo"),
		Offset:        f.Int64("offset"),
	}
	if invisible != nil {
		*invisible = f.Int64("invisibleTime")
	}
	h.LiteTopic = f.OptStr("liteTopic", "")
	h.BrokerName = f.OptStr("bname", "")
	if err := f.Err(); err != nil {
		return h, processor.BadRequestf("%v", err)
	}
	if err := checkNames(h.ConsumerGroup, h.Topic); err != nil {
		return h, err
	}
	// 0 makes the message visible at once (a nack); negative is nonsense.
	if invisible != nil && (*invisible < 0 || *invisible > maxInvisibleTime) {
		return h, processor.BadRequestf("invisibleTime %d out of range [0, %d]", *invisible, int64(maxInvisibleTime))
	}
	e, err := popcodec.ParseExtraInfo(h.ExtraInfo)
	if err != nil {
		return h, processor.BadRequestf("%v", err)
	}
	h.Extra = e
	return h, nil
}

// queueHeader is the (group, topic, queueId) triple of PEEK_MESSAGE,
// NOTIFICATION and POLLING_INFO.
type queueHeader struct {
	group, topic string
	queueID      int32
	maxMsgNums   int32 // peek
	pollTime     int64 // notification
	bornTime     int64
	order        bool
	attemptID    string
}

func parseQueueHeader(ext map[string]string, kind int32) (queueHeader, error) {
	f := protocol.FieldsOf(ext)
	h := queueHeader{group: f.Str("consumerGroup"), topic: f.Str("topic"), queueID: f.Int32("queueId")}
	switch kind {
	case code.PeekMessage:
		h.maxMsgNums = f.Int32("maxMsgNums")
	case code.Notification:
		h.pollTime = f.Int64("pollTime")
		h.bornTime = f.OptInt64("bornTime", 0)
		h.order = f.OptBool("order", false)
		h.attemptID = f.OptStr("attemptId", "")
	}
	if err := f.Err(); err != nil {
		return h, processor.BadRequestf("%v", err)
	}
	if err := checkNames(h.group, h.topic); err != nil {
		return h, err
	}
	if h.queueID < 0 {
		h.queueID = -1
	}
	if kind == code.PeekMessage && (h.maxMsgNums <= 0 || h.maxMsgNums > MaxPopNums) {
		return h, processor.BadRequestf("maxMsgNums %d out of range [1, %d]", h.maxMsgNums, MaxPopNums)
	}
	if h.pollTime < 0 {
		return h, processor.BadRequestf("pollTime %d is negative", h.pollTime)
	}
	return h, nil
}

// errorf is a CodeError with a formatted remark.
func errorf(c int32, format string, args ...any) error { return remoting.Errorf(c, format, args...) }

// AckHeader is ACK_MESSAGE's request header (AckMessageRequestHeader).
type AckHeader struct {
	ConsumerGroup string
	Topic         string // the topic the message is stored in (pop retry topic included)
	QueueID       int32
	ExtraInfo     string
	Extra         popcodec.ExtraInfo // ExtraInfo parsed
	Offset        int64              // the message's queue offset
	LiteTopic     string             // bare lite topic name: set only by lite consumers, refused here
	BrokerName    string             // bname (static topics), may be ""
}

// ChangeInvisibleHeader is CHANGE_MESSAGE_INVISIBLETIME's request header
// (ChangeInvisibleTimeRequestHeader).
type ChangeInvisibleHeader struct {
	AckHeader           // the message, by its receipt handle
	InvisibleTime int64 // ms from now
}

// ChangeInvisibleResult is ChangeInvisibleTimeResponseHeader: the new
// receipt is built by the client from these and the message's offset.
type ChangeInvisibleResult struct {
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
}
