package admin

import (
	"errors"
	"fmt"

	"github.com/rmqgo/rmq/remoting/code"
)

// ErrNoNameServer is returned by calls that need a nameserver when
// Config.NameServers is empty.
var ErrNoNameServer = errors.New("admin: no name server address configured")

// ErrClusterNotFound is returned when a cluster name is not in the
// nameserver's cluster table. Its text is the Java tool's hint.
var ErrClusterNotFound = errors.New("Make sure the specified clusterName exists or the name server connected to is correct.") //nolint:staticcheck // Java's message, verbatim

// ResponseError is a response with a non-zero code.
type ResponseError struct {
	Code    int32  // response code (docs/protocol.md §2)
	Remark  string // the server's remark
	Addr    string // the server that answered
	Request int32  // the request code
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("%s to %s failed: %s (code %d)", code.RequestName(e.Request), e.Addr, code.ResponseName(e.Code), e.Code)
	if e.Remark != "" {
		msg += ": " + e.Remark
	}
	return msg
}

// IsCode reports whether err is (or wraps) a *ResponseError with code c.
func IsCode(err error, c int32) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == c
}
