package admin

import (
	"errors"
	"fmt"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/remoting/code"
)

// Request-level errors raised by the handlers themselves, besides
// processor.ErrTopicNotExist.
var (
	// errBadRequest: a missing or malformed header field or body.
	errBadRequest = errors.New("bad request")
	// errReservedTopic: an admin request names a system topic.
	errReservedTopic = errors.New("reserved topic")
)

// toCodeError maps an error to the response code clients expect. It is the
// only place that decides codes; handlers return plain (wrapped) errors,
// whose text becomes the remark mqadmin prints.
func toCodeError(err error) error { return processor.CodeError(err, codeOf) }

// codeOf is the admin handlers' table of errors and codes.
func codeOf(err error) int32 {
	switch {
	case errors.Is(err, errBadRequest),
		errors.Is(err, errReservedTopic),
		errors.Is(err, topic.ErrInvalidTopic),
		errors.Is(err, topic.ErrInvalidConfig),
		errors.Is(err, config.ErrUnknownKey),
		errors.Is(err, config.ErrInvalidValue):
		return code.InvalidParameter
	case errors.Is(err, topic.ErrNotFound),
		errors.Is(err, topic.ErrNotInheritable):
		return code.TopicNotExist
	case errors.Is(err, config.ErrReadOnly):
		return code.NoPermission
	}
	return code.SystemError
}

// badRequest builds an errBadRequest with a readable message.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}
