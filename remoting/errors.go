package remoting

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/rmqgo/rmq/remoting/code"
)

// Errors returned by the network layer. Match them with errors.Is.
var (
	// ErrClosed: the Client or Server has been closed.
	ErrClosed = errors.New("remoting: closed")
	// ErrConnClosed: the connection died before the request was written or
	// answered; pending requests fail fast with it.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrTimeout: no response within the deadline. It also matches
	// context.DeadlineExceeded so callers may test either.
	ErrTimeout = fmt.Errorf("remoting: request timed out: %w", context.DeadlineExceeded)
)

// CodeError is an error that carries a RocketMQ response code. Handlers
// return it (possibly wrapped) to answer with that code.
type CodeError struct {
	Code   int32
	Remark string

	cause error // set by Errorf when the format wraps an error with %w
}

// Error returns the remark alone: a bare *CodeError returned by a handler
// becomes exactly this remark on the wire.
func (e *CodeError) Error() string {
	if e.Remark == "" {
		return "remoting: response code " + strconv.Itoa(int(e.Code))
	}
	return e.Remark
}

// Unwrap exposes an error wrapped with %w in Errorf.
func (e *CodeError) Unwrap() error { return e.cause }

// Errorf returns a *CodeError whose remark is the formatted text. %w is
// supported: the wrapped error stays reachable with errors.Is/As.
func Errorf(code int32, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &CodeError{Code: code, Remark: err.Error(), cause: errors.Unwrap(err)}
}

// ResponseFromError maps err to the response for req: the code of the first
// *CodeError in err's chain, else SYSTEM_ERROR; the remark is err.Error().
// A nil err yields SUCCESS. This is the one place errors become codes.
func ResponseFromError(req *Command, err error) *Command {
	if err == nil {
		return NewResponse(req, code.Success, "")
	}
	c := code.SystemError
	var ce *CodeError
	if errors.As(err, &ce) {
		c = ce.Code
	}
	return NewResponse(req, c, err.Error())
}
