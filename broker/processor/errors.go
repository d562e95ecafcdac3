package processor

import (
	"errors"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Request-level errors more than one processor raises. Handlers return
// them wrapped with details; CodeError answers them with their code, so a
// processor's own table need not list them.
var (
	// ErrBadHeader (INVALID_PARAMETER): a required header field is missing
	// or malformed.
	ErrBadHeader = errors.New("bad request header")
	// ErrNoPermission (NO_PERMISSION): the broker or the topic refuses the
	// request (not writable, forbidden).
	ErrNoPermission = errors.New("no permission")
	// ErrTopicNotExist (TOPIC_NOT_EXIST): the request's topic is unknown.
	ErrTopicNotExist = errors.New("topic not exist")
	// ErrGroupNotExist (SUBSCRIPTION_GROUP_NOT_EXIST): the request's
	// consumer group is unknown.
	ErrGroupNotExist = errors.New("subscription group not exist")
)

// CodeError is how a processor's handler errors become response codes: an
// error that already carries a code (a *remoting.CodeError in its chain,
// e.g. from a hook) is returned as it is; any other becomes a
// *remoting.CodeError with its code (CodeOf) and err's text as the remark.
func CodeError(err error, codeOf func(error) int32) error {
	var ce *remoting.CodeError
	if errors.As(err, &ce) {
		return err
	}
	return &remoting.CodeError{Code: CodeOf(err, codeOf), Remark: err.Error()}
}

// KeepCode is err when it already carries a response code (a
// *remoting.CodeError in its chain), else a *remoting.CodeError with code
// c and the remark format and args give.
func KeepCode(err error, c int32, format string, args ...any) error {
	var ce *remoting.CodeError
	if errors.As(err, &ce) {
		return err
	}
	return remoting.Errorf(c, format, args...)
}

// CodeOf is the response code of err: the code it carries, else that of
// the shared request errors above it wraps, else the one codeOf, the
// processor's own table of its errors, gives it.
func CodeOf(err error, codeOf func(error) int32) int32 {
	var ce *remoting.CodeError
	switch {
	case errors.As(err, &ce):
		return ce.Code
	case errors.Is(err, ErrBadHeader):
		return code.InvalidParameter
	case errors.Is(err, ErrNoPermission):
		return code.NoPermission
	case errors.Is(err, ErrTopicNotExist):
		return code.TopicNotExist
	case errors.Is(err, ErrGroupNotExist):
		return code.SubscriptionGroupNotExist
	}
	return codeOf(err)
}
