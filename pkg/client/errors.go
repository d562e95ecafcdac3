package client

import (
	"errors"
	"fmt"

	"github.com/rmqgo/rmq/remoting/code"
)

// Errors returned by producers and consumers; match them with errors.Is.
var (
	// ErrNotStarted: Start has not been called.
	ErrNotStarted = errors.New("client: not started")
	// ErrClosed: Shutdown has been called.
	ErrClosed = errors.New("client: shut down")
	// ErrNoNameServer: the config lists no nameserver.
	ErrNoNameServer = errors.New("client: no name server address configured")
	// ErrNoRoute: the topic has no route, no writable (producer) or readable
	// (consumer) queue, or the broker of a queue is unknown.
	ErrNoRoute = errors.New("client: no route")
	// ErrOffsetNotFound: the broker has no committed offset for the queue
	// (QUERY_NOT_FOUND).
	ErrOffsetNotFound = errors.New("client: consumer offset not found")
	// ErrInvalidMessage: the message cannot be sent as it is (empty body,
	// bad topic, too large...). Wrapped with the reason.
	ErrInvalidMessage = errors.New("client: invalid message")
	// ErrLiteTopicQuotaExceeded: the broker holds as many lite topics
	// (LMQs) as it may and refused a message that would create another
	// (LMQ_QUOTA_EXCEEDED, 2017; Java's LiteTopicQuotaExceededException).
	// The *ResponseError a send returns matches it.
	ErrLiteTopicQuotaExceeded = errors.New("client: lite topic quota exceeded")
	// ErrLiteSubscriptionQuotaExceeded: a broker refused a lite
	// subscription because the client or the broker holds as many as it
	// may (LITE_SUBSCRIPTION_QUOTA_EXCEEDED, 2018; Java's
	// LiteSubscriptionQuotaExceededException).
	ErrLiteSubscriptionQuotaExceeded = errors.New("client: lite subscription quota exceeded")
)

// ResponseError is a response with a code the caller cannot accept.
type ResponseError struct {
	Code    int32  // response code (docs/protocol.md §2)
	Remark  string // the server's remark
	Addr    string // the server that answered
	Request int32  // the request code
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("client: request %d to %s answered code %d (%s)", e.Request, e.Addr, e.Code, code.ResponseName(e.Code))
	if e.Remark != "" {
		msg += ": " + e.Remark
	}
	return msg
}

// Is lets errors.Is match the codes that have sentinel errors:
// ErrLiteTopicQuotaExceeded (2017) and ErrLiteSubscriptionQuotaExceeded
// (2018).
func (e *ResponseError) Is(target error) bool {
	switch target {
	case ErrLiteTopicQuotaExceeded:
		return e.Code == code.LMQQuotaExceeded
	case ErrLiteSubscriptionQuotaExceeded:
		return e.Code == code.LiteSubscriptionQuotaExceeded
	}
	return false
}

// IsCode reports whether err is (or wraps) a *ResponseError with code c.
func IsCode(err error, c int32) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == c
}
