// Package processor holds what every request processor of the broker
// shares: the executor a request code runs on (Pool), the Registrar a
// processor installs its handlers through (*broker.Broker implements it),
// the INVALID_PARAMETER answer of a malformed request and the late answer
// of a parked one, the turning of handler errors into response codes
// (CodeError), the SUCCESS answer with an encoded body. It imports
// only the remoting layer and the wire types, so that processor packages
// need not import the broker.
package processor

import (
	"log/slog"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Pool selects the executor a request code runs on.
type Pool int

// Executors, as Java's per-processor thread pools: sends must not wait
// behind slow pulls, and admin requests behind either.
// The broker assigns Apache's request codes to Apache's executors whatever
// a package asks for (broker/pools.go); the pool a package names applies to
// the codes Apache does not list (ours, lite).
const (
	PoolSend Pool = iota
	PoolPull
	PoolAdmin
	PoolLitePull
	PoolAck
	PoolReply
	PoolQuery
	PoolHeartbeat
	PoolClientManage
	PoolConsumerManage
	PoolLoadBalance
	PoolEndTransaction
)

// Registrar installs request handlers on the broker's executors.
type Registrar interface {
	RegisterProcessor(code int32, h remoting.Handler, pool Pool)
}

// RegistrarFunc adapts a function to Registrar.
type RegistrarFunc func(code int32, h remoting.Handler, pool Pool)

// RegisterProcessor calls f.
func (f RegistrarFunc) RegisterProcessor(code int32, h remoting.Handler, pool Pool) { f(code, h, pool) }

// OnServer is a Registrar that puts every handler on s with its default
// executor, whatever the pool: for tests and tools that serve a few
// processors on a bare remoting server.
func OnServer(s *remoting.Server) Registrar {
	return RegistrarFunc(func(c int32, h remoting.Handler, _ Pool) { s.Register(c, h, nil) })
}

// RegisterAll installs every handler of handlers on one pool.
func RegisterAll(r Registrar, handlers map[int32]remoting.Handler, pool Pool) {
	for c, h := range handlers {
		r.RegisterProcessor(c, h, pool)
	}
}

// PooledHandler is a handler with the executor it runs on, for processors
// whose codes run on different executors.
type PooledHandler struct {
	H    remoting.Handler
	Pool Pool
}

// RegisterPooled installs every handler of handlers on its own pool.
func RegisterPooled(r Registrar, handlers map[int32]PooledHandler) {
	for c, h := range handlers {
		r.RegisterProcessor(c, h.H, h.Pool)
	}
}

// BadRequest answers INVALID_PARAMETER with err's text as the remark (a
// missing or malformed header field).
func BadRequest(err error) error {
	return &remoting.CodeError{Code: code.InvalidParameter, Remark: err.Error()}
}

// StrField is the required string header field name of req; a request
// without it is a BadRequest.
func StrField(req *remoting.Command, name string) (string, error) {
	f := protocol.FieldsOf(req.ExtFields)
	v := f.Str(name)
	if err := f.Err(); err != nil {
		return "", BadRequest(err)
	}
	return v, nil
}

// RemoteAddr is the address of the client behind ch, "" without a channel
// (handlers tolerate a nil one, as in tests).
func RemoteAddr(ch *remoting.Channel) string {
	if ch == nil {
		return ""
	}
	return ch.RemoteAddr()
}

// BadRequestf answers INVALID_PARAMETER with a formatted remark.
func BadRequestf(format string, args ...any) error {
	return remoting.Errorf(code.InvalidParameter, format, args...)
}

// WriteResumed answers a request that was parked (a long-polling pull or
// pop) and has been re-run: resp, or err turned into its response, is
// written on ch with the request's opaque. The remoting server does not
// answer such a request itself, its handler having returned nil; what
// names the request in the log line of a failed write.
func WriteResumed(log *slog.Logger, what string, ch *remoting.Channel, req, resp *remoting.Command, err error) {
	if err != nil {
		resp = remoting.ResponseFromError(req, err)
	}
	if resp == nil || ch == nil || req.IsOneway() {
		return
	}
	resp.Opaque = req.Opaque
	resp.Flag |= remoting.FlagResponse
	resp.SerializeType = req.SerializeType
	if err := ch.WriteResponse(resp); err != nil {
		log.Debug("write resumed "+what+" response", "remote", ch.RemoteAddr(), "err", err)
	}
}

// Reply answers req with SUCCESS and v as its JSON body; what names the
// body in the SYSTEM_ERROR of a failed encoding.
func Reply(req *remoting.Command, what string, v any) (*remoting.Command, error) {
	return reply(req, what, v, protocol.Marshal)
}

// ReplyMQKeyed is Reply with the body in the fastjson dialect of
// queue-keyed maps (protocol.MarshalMQKeyed).
func ReplyMQKeyed(req *remoting.Command, what string, v any) (*remoting.Command, error) {
	return reply(req, what, v, protocol.MarshalMQKeyed)
}

func reply(req *remoting.Command, what string, v any, marshal func(any) ([]byte, error)) (*remoting.Command, error) {
	body, err := marshal(v)
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "encode %s: %v", what, err)
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = body
	return resp, nil
}
