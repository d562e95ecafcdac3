package pop

import (
	"context"
)

// LiteHandler takes acks and invisible-time changes of lite messages
// (lite-topic.md §6.7–6.8). ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME
// carry an optional liteTopic field; when it is set this package does no
// checkpoint work and hands the parsed header to the installed handler
// (Processor.SetLiteHandler, called by wire_lite.go). The receipt handle is
// already parsed and syntactically valid (h.Extra); everything else
// (parent topic binding, queue 0, reviveQid 999, the LMQ's offsets and
// order info) is the handler's to check.
//
// A nil error answers SUCCESS; a *remoting.CodeError answers its code and
// remark; any other error answers SYSTEM_ERROR. BATCH_ACK_MESSAGE entries
// of lite messages are refused with ILLEGAL_OPERATION before any handler
// is called.
type LiteHandler interface {
	// AckLite acknowledges one lite message.
	AckLite(ctx context.Context, h AckHeader) error
	// ChangeInvisibleLite moves a lite message's next-visible time and
	// returns the values of the response header.
	ChangeInvisibleLite(ctx context.Context, h ChangeInvisibleHeader) (ChangeInvisibleResult, error)
}

// AckHeader is ACK_MESSAGE's request header (AckMessageRequestHeader).
type AckHeader struct {
	ConsumerGroup string
	Topic         string // the topic the message is stored in (pop retry topic included)
	QueueID       int32
	ExtraInfo     string
	Extra         ExtraInfo // ExtraInfo parsed
	Offset        int64     // the message's queue offset
	LiteTopic     string    // bare lite topic name; "" for ordinary pops
	BrokerName    string    // bname (static topics), may be ""
}

// ChangeInvisibleHeader is CHANGE_MESSAGE_INVISIBLETIME's request header
// (ChangeInvisibleTimeRequestHeader).
type ChangeInvisibleHeader struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	ExtraInfo     string
	Extra         ExtraInfo
	Offset        int64
	InvisibleTime int64 // ms from now
	LiteTopic     string
	BrokerName    string
}

// ChangeInvisibleResult is ChangeInvisibleTimeResponseHeader: the new
// receipt is built by the client from these and the message's offset.
type ChangeInvisibleResult struct {
	PopTime       int64
	InvisibleTime int64
	ReviveQid     int32
}
