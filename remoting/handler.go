package remoting

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/rmqgo/rmq/remoting/code"
)

// Handler processes one request. A non-nil response is written back (unless
// the request is one-way). (nil, nil) means the handler answers later itself
// via ch.WriteResponse (long polling). A non-nil error is answered by
// ResponseFromError: the code of a *CodeError found by errors.As, else
// SYSTEM_ERROR, remark = err.Error(). The ctx is cancelled when the endpoint
// shuts down hard (Server.Shutdown past its deadline, Client.Close).
type Handler func(ctx context.Context, ch *Channel, req *Command) (*Command, error)

// RPCHook is the seam for ACL and tracing. On a server, BeforeRequest runs
// before the handler and a non-nil result rejects the request with that
// response; AfterResponse runs when the handler returned a response. On a
// client, BeforeRequest runs before each outgoing request (e.g. to sign it; a
// non-nil result is returned to the caller instead of sending) and
// AfterResponse after its response; both also run for server-initiated
// requests handled by the client, as in Java's NettyRemotingAbstract.
type RPCHook interface {
	BeforeRequest(ch *Channel, req *Command) *Command
	AfterResponse(ch *Channel, req *Command, resp *Command)
}

// hookList is a copy-on-write list: read on every request without locking,
// appended rarely.
type hookList struct {
	mu    sync.Mutex
	hooks atomic.Pointer[[]RPCHook]
}

func (l *hookList) add(h RPCHook) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var next []RPCHook
	if cur := l.hooks.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, h)
	l.hooks.Store(&next)
}

func (l *hookList) load() []RPCHook {
	if p := l.hooks.Load(); p != nil {
		return *p
	}
	return nil
}

// before runs the BeforeRequest hooks; the first non-nil response wins.
func (l *hookList) before(ch *Channel, req *Command) *Command {
	hooks := l.load()
	if len(hooks) > 0 {
		req.Fields() // hooks read ExtFields
	}
	for _, h := range hooks {
		if resp := h.BeforeRequest(ch, req); resp != nil {
			return resp
		}
	}
	return nil
}

func (l *hookList) after(ch *Channel, req, resp *Command) {
	for _, h := range l.load() {
		h.AfterResponse(ch, req, resp)
	}
}

// notSupported is RocketMQ's answer to a request code without a processor.
func notSupported(req *Command) *Command {
	return NewResponse(req, code.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code))
}

// serveRequest runs hooks and handler for one request and writes the answer.
// It is shared by Server (in an executor) and Client (server-initiated
// requests).
func serveRequest(ctx context.Context, log *slog.Logger, hooks *hookList, ch *Channel, req *Command, h Handler) {
	resp := hooks.before(ch, req)
	if resp == nil {
		var err error
		resp, err = callHandler(ctx, log, h, ch, req)
		if err != nil {
			resp = ResponseFromError(req, err)
		}
		if resp == nil {
			return // the handler answers later through ch.WriteResponse
		}
		hooks.after(ch, req, resp)
	}
	if req.IsOneway() {
		return
	}
	// Force the reply fields even if the handler did not use NewResponse: a
	// response with a wrong opaque or flag would hang the peer's request.
	resp.Opaque = req.Opaque
	resp.Flag |= FlagResponse
	resp.SerializeType = req.SerializeType
	if err := ch.WriteResponse(resp); err != nil {
		log.Debug("remoting: write response failed", "remote", ch.RemoteAddr(), "code", req.Code, "opaque", req.Opaque, "err", err)
	}
}

// callHandler turns a handler panic into SYSTEM_ERROR so one bad request
// cannot take the process down.
func callHandler(ctx context.Context, log *slog.Logger, h Handler, ch *Channel, req *Command) (resp *Command, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("remoting: handler panicked", "code", req.Code, "remote", ch.RemoteAddr(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp, err = nil, Errorf(code.SystemError, "internal error handling request %d: %v", req.Code, r)
		}
	}()
	return h(ctx, ch, req)
}
