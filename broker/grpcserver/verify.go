package grpcserver

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// The admin requests the broker sends to a consumer client —
// GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) — reach
// a 5.x client as Telemetry commands, as Apache's proxy relays them (Apache
// proxy/.../grpc/v2/channel/GrpcClientChannel.java, GrpcChannelManager.java
// and proxy/.../grpc/v2/client/ClientActivity.java): a
// PrintThreadStackTraceCommand or a VerifyMessageCommand carrying a nonce,
// which the client's ThreadStackTrace or VerifyMessageResult repeats. The
// waiting request is kept per Telemetry stream under its nonce until the
// reply, its deadline or the stream's end.

// ClientAnswer is a 5.x client's answer to a relayed admin request, as the
// proxy turns it into the remoting response: Code and Remark are the
// response's; Jstack is the thread stack trace of a SUCCESS to
// ThreadStackTrace; ConsumeResult is the CMResult name a VerifyMessage
// answer carries (CR_SUCCESS, CR_LATER, CR_RETURN_NULL; "" for a status the
// proxy does not map).
type ClientAnswer struct {
	Code          int32
	Remark        string
	Jstack        string
	ConsumeResult string
}

// relayTimeoutRemark is the proxy's remark for a request the client did
// not answer in time (GrpcChannelManager.scanExpireResultFuture).
const relayTimeoutRemark = "call remote timeout"

// replies are the relayed requests waiting for one Telemetry stream's
// client, by nonce. The zero value is ready.
type replies struct {
	mu    sync.Mutex
	waits map[string]chan *v2pb.TelemetryCommand
	ended bool // the stream ended: no more requests
}

// add registers a waiting request and returns its nonce; ok is false once
// the stream ended.
func (r *replies) add() (nonce string, ch chan *v2pb.TelemetryCommand, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return "", nil, false
	}
	if r.waits == nil {
		r.waits = map[string]chan *v2pb.TelemetryCommand{}
	}
	// Random, not a counter per stream: a client whose stream was replaced
	// answers an old command on its new stream, where a counter's nonce
	// could name another request.
	for nonce == "" || r.waits[nonce] != nil {
		nonce = strconv.FormatUint(rand.Uint64(), 36)
	}
	ch = make(chan *v2pb.TelemetryCommand, 1)
	r.waits[nonce] = ch
	return nonce, ch, true
}

// take removes the request of nonce (nil when it is not waiting).
func (r *replies) take(nonce string) chan *v2pb.TelemetryCommand {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.waits[nonce]
	delete(r.waits, nonce)
	return ch
}

// end wakes every waiting request (a closed channel: the stream ended) and
// refuses new ones.
func (r *replies) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	for nonce, ch := range r.waits {
		close(ch)
		delete(r.waits, nonce)
	}
}

// reply hands a ThreadStackTrace or VerifyMessageResult to the request
// waiting under its nonce and reports whether cmd was one of those; a
// reply whose nonce nobody waits for (answered too late, or never asked)
// is dropped, as the proxy drops it.
func (s *Session) reply(cmd *v2pb.TelemetryCommand) bool {
	var nonce string
	switch c := cmd.GetCommand().(type) {
	case *v2pb.TelemetryCommand_ThreadStackTrace:
		nonce = c.ThreadStackTrace.GetNonce()
	case *v2pb.TelemetryCommand_VerifyMessageResult:
		nonce = c.VerifyMessageResult.GetNonce()
	default:
		return false
	}
	if ch := s.replies.take(nonce); ch != nil {
		ch <- cmd // buffered, one reply per nonce
	}
	return true
}

// endReplies ends the requests waiting for the stream's client.
func (s *Session) endReplies() { s.replies.end() }

// ThreadStackTrace asks the client for its threads' stack traces with a
// PrintThreadStackTraceCommand on its Telemetry stream and waits for its
// ThreadStackTrace until ctx ends, as the proxy answers the broker's
// GET_CONSUMER_RUNNING_INFO with jstack: status OK is SUCCESS with the
// trace; VERIFY_FIFO_MESSAGE_UNSUPPORTED NO_PERMISSION; another status
// SYSTEM_ERROR (the proxy's remarks). No answer in time — ctx's end, the
// stream's end, no stream — is the proxy's SYSTEM_BUSY.
func (p *Producers) ThreadStackTrace(ctx context.Context, clientID string) ClientAnswer {
	reply, a, ok := p.ask(ctx, clientID, func(nonce string) *v2pb.TelemetryCommand {
		return &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_PrintThreadStackTraceCommand{
			PrintThreadStackTraceCommand: &v2pb.PrintThreadStackTraceCommand{Nonce: nonce},
		}}
	})
	if !ok {
		return a
	}
	switch reply.GetStatus().GetCode() {
	case v2pb.Code_OK:
		return ClientAnswer{Code: code.Success, Jstack: reply.GetThreadStackTrace().GetThreadStackTrace()}
	case v2pb.Code_VERIFY_FIFO_MESSAGE_UNSUPPORTED:
		return ClientAnswer{Code: code.NoPermission, Remark: "forbidden to verify message"}
	}
	return ClientAnswer{Code: code.SystemError, Remark: "verify message failed"}
}

// VerifyMessage hands the client a stored message to consume now with a
// VerifyMessageCommand on its Telemetry stream (the message converted as a
// received one, without invisible duration) and waits for its
// VerifyMessageResult until ctx ends, as the proxy answers the broker's
// CONSUME_MESSAGE_DIRECTLY: SUCCESS with consume result CR_SUCCESS for
// status OK, CR_LATER for FAILED_TO_CONSUME_MESSAGE, CR_RETURN_NULL for
// MESSAGE_CORRUPTED, none for another status (the proxy's
// ConsumeMessageDirectlyResult, remark "from gRPC client", is the caller's
// to build). No answer in time is the proxy's SYSTEM_BUSY.
func (p *Producers) VerifyMessage(ctx context.Context, clientID string, m *message.Message) ClientAnswer {
	msg := buildMessage(m, &v2pb.Resource{Name: m.Topic}, 0)
	msg.SystemProperties.InvisibleDuration = nil
	reply, a, ok := p.ask(ctx, clientID, func(nonce string) *v2pb.TelemetryCommand {
		return &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_VerifyMessageCommand{
			VerifyMessageCommand: &v2pb.VerifyMessageCommand{Nonce: nonce, Message: msg},
		}}
	})
	if !ok {
		return a
	}
	out := ClientAnswer{Code: code.Success}
	switch reply.GetStatus().GetCode() {
	case v2pb.Code_OK:
		out.ConsumeResult = "CR_SUCCESS"
	case v2pb.Code_FAILED_TO_CONSUME_MESSAGE:
		out.ConsumeResult = "CR_LATER"
	case v2pb.Code_MESSAGE_CORRUPTED:
		out.ConsumeResult = "CR_RETURN_NULL"
	}
	return out
}

// ask writes the command build makes for a fresh nonce to the client's
// Telemetry stream and waits for the reply. When it ends without one, ok
// is false and a is the answer to give.
func (p *Producers) ask(ctx context.Context, clientID string, build func(nonce string) *v2pb.TelemetryCommand) (reply *v2pb.TelemetryCommand, a ClientAnswer, ok bool) {
	p.mu.Lock()
	s := p.clients[clientID]
	p.mu.Unlock()
	if s == nil {
		return nil, ClientAnswer{Code: code.SystemBusy, Remark: "client " + clientID + " has no telemetry stream"}, false
	}
	nonce, ch, live := s.replies.add()
	if !live {
		return nil, ClientAnswer{Code: code.SystemBusy, Remark: "the telemetry stream of client " + clientID + " ended"}, false
	}
	defer s.replies.take(nonce)
	select {
	case s.pushes <- struct{}{}:
	default:
		return nil, ClientAnswer{Code: code.SystemBusy, Remark: "client " + clientID + " does not read its telemetry stream"}, false
	}
	// Written in the background: Send blocks while the client's flow
	// control window is full; the wait below is bounded by ctx.
	cmd := build(nonce)
	go func() {
		defer func() { <-s.pushes }()
		_ = s.send(cmd)
	}()
	select {
	case r, got := <-ch:
		if !got {
			return nil, ClientAnswer{Code: code.SystemBusy, Remark: "the telemetry stream of client " + clientID + " ended"}, false
		}
		return r, ClientAnswer{}, true
	case <-ctx.Done():
		return nil, ClientAnswer{Code: code.SystemBusy, Remark: relayTimeoutRemark}, false
	}
}
