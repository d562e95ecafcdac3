package sendback

import (
	"errors"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Request-level errors besides the shared ones of package processor;
// toCodeError turns them into response codes.
var (
	// errSystem: everything Java answers SYSTEM_ERROR for (no master, topic
	// not creatable, message not found by offset, store failure).
	errSystem = errors.New("system error")
	// errLiteRetry: a lite message handed back for a retry (lite topics
	// have no retry topic).
	errLiteRetry = errors.New("illegal operation")
)

// toCodeError is the one place where send-back errors become response
// codes (processor.CodeError): the *remoting.CodeError err carries, or one
// whose remark is the error text.
func toCodeError(err error) *remoting.CodeError {
	var ce *remoting.CodeError
	errors.As(processor.CodeError(err, codeOf), &ce)
	return ce
}

func codeOf(err error) int32 {
	if errors.Is(err, errLiteRetry) {
		return code.IllegalOperation
	}
	return code.SystemError
}
