package send

import (
	"errors"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// Request-level errors. Handlers return them wrapped with details; toCodeError
// turns them into response codes.
// The shared ones (processor.ErrBadHeader, ErrNoPermission,
// ErrTopicNotExist, ErrGroupNotExist) are answered by processor.CodeError.
var (
	// errInvalidParam: bad topic name, queueId out of range.
	errInvalidParam = errors.New("invalid parameter")
	// ErrMessageIllegal (MESSAGE_ILLEGAL): body or properties too large,
	// malformed batch, bad lite topic (ApplyLite), missing key on a
	// compaction topic.
	ErrMessageIllegal = errors.New("message illegal")
	// errBusy: the broker does not accept sends right now (slave).
	errBusy = errors.New("system busy")
	// errFenced: controller mode has not given the broker a role yet, or
	// its master lease lapsed.
	errFenced = errors.New("service not available")
	// errNotReady: sends refused until startAcceptSendRequestTimeStamp.
	errNotReady = errors.New("broker unable to service")
)

// toCodeError is the one place where send-path errors become response codes
// (docs/protocol.md §2), through processor.CodeError: errors that already
// carry a code keep it, so hooks may return their own *remoting.CodeError.
func toCodeError(err error) error { return processor.CodeError(err, ErrorCode) }

// ErrorCode is the send path's table of errors and response codes; the
// end of a transaction, which stores the committed message, answers its
// store errors by it too.
func ErrorCode(err error) int32 {
	switch {
	case errors.Is(err, errInvalidParam), errors.Is(err, topic.ErrInvalidTopic):
		return code.InvalidParameter
	case errors.Is(err, topic.ErrNotFound), errors.Is(err, topic.ErrNotInheritable):
		return code.TopicNotExist
	case errors.Is(err, ErrMessageIllegal), errors.Is(err, store.ErrMessageIllegal),
		errors.Is(err, message.ErrTooLarge), errors.Is(err, message.ErrInvalidProperty),
		errors.Is(err, message.ErrCorrupt):
		return code.MessageIllegal
	case errors.Is(err, store.ErrNotWritable), errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrShutdown),
		errors.Is(err, errFenced):
		return code.ServiceNotAvailable
	case errors.Is(err, store.ErrFlushTimeout):
		return code.FlushDiskTimeout
	case errors.Is(err, store.ErrLMQQuota):
		return code.LMQQuotaExceeded
	case errors.Is(err, errBusy):
		return code.SystemBusy
	}
	return code.SystemError
}
