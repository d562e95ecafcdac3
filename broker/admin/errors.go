package admin

import (
	"errors"
	"fmt"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Request-level errors raised by the handlers themselves.
var (
	// errBadRequest: a missing or malformed header field or body.
	errBadRequest = errors.New("bad request")
	// errReservedTopic: an admin request names a system topic.
	errReservedTopic = errors.New("reserved topic")
	// errTopicNotExist: the request's topic is unknown on this broker.
	errTopicNotExist = errors.New("topic not exist")
)

// toCodeError maps an error to the response code clients expect. It is the
// only place that decides codes; handlers return plain (wrapped) errors,
// whose text becomes the remark mqadmin prints.
func toCodeError(err error) error {
	var ce *remoting.CodeError
	if errors.As(err, &ce) {
		return err
	}
	c := code.SystemError
	switch {
	case errors.Is(err, errBadRequest),
		errors.Is(err, errReservedTopic),
		errors.Is(err, topic.ErrInvalidTopic),
		errors.Is(err, topic.ErrInvalidConfig),
		errors.Is(err, config.ErrUnknownKey),
		errors.Is(err, config.ErrInvalidValue):
		c = code.InvalidParameter
	case errors.Is(err, errTopicNotExist),
		errors.Is(err, topic.ErrNotFound),
		errors.Is(err, topic.ErrNotInheritable):
		c = code.TopicNotExist
	case errors.Is(err, config.ErrReadOnly):
		c = code.NoPermission
	}
	return &remoting.CodeError{Code: c, Remark: err.Error()}
}

// badRequest builds an errBadRequest with a readable message.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}
