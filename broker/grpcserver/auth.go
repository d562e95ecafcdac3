package grpcserver

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// Request metadata of the 5.x clients' signature (Apache
// proxy/.../grpc/interceptor/InterceptorConstants.java): authorization is
// "MQv2-HMAC-SHA1 Credential=AK, SignedHeaders=x-mq-date-time,
// Signature=HEX", signed over x-mq-date-time.
const (
	mdAuthorization = "authorization"
	mdDateTime      = "x-mq-date-time"
)

// RequestMeta is what a request's metadata and connection tell the check.
type RequestMeta struct {
	Authorization string
	DateTime      string
	RemoteAddr    string // ip:port
}

// RequestCheck runs before every request reaches its rpc, as the proxy's
// authentication and authorization pipeline (GrpcMessagingApplication
// addExecutor); a non-nil error refuses the request with UNAUTHORIZED and
// the error's text in the rpc's own response, as the proxy's
// ResponseBuilder answers AuthenticationException and
// AuthorizationException. Each command of a Telemetry stream is checked;
// a refused one is answered and ends the stream.
type RequestCheck func(md RequestMeta, req proto.Message) error

func requestMeta(ctx context.Context) RequestMeta {
	return RequestMeta{Authorization: mdValue(ctx, mdAuthorization), DateTime: mdValue(ctx, mdDateTime), RemoteAddr: peerAddr(ctx)}
}

func unauthorized(err error) *v2pb.Status { return newStatus(v2pb.Code_UNAUTHORIZED, err.Error()) }

func unaryCheck(check RequestCheck) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		m, ok := req.(proto.Message)
		if !ok {
			return handler(ctx, req)
		}
		if err := check(requestMeta(ctx), m); err != nil {
			return statusResponse(info.FullMethod, unauthorized(err))
		}
		return handler(ctx, req)
	}
}

func streamCheck(check RequestCheck) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if info.IsClientStream {
			return handler(srv, &checkedStream{ServerStream: ss, check: check, method: info.FullMethod})
		}
		// A server stream (ReceiveMessage, PullMessage): its one request
		// is read and checked here, then handed to the handler.
		req, err := requestOf(info.FullMethod)
		if err != nil {
			return err
		}
		if err := ss.RecvMsg(req); err != nil {
			return err
		}
		if err := check(requestMeta(ss.Context()), req); err != nil {
			resp, rerr := statusResponse(info.FullMethod, unauthorized(err))
			if rerr != nil {
				return rerr
			}
			return ss.SendMsg(resp)
		}
		return handler(srv, &replayStream{ServerStream: ss, first: req})
	}
}

// replayStream gives the handler the request already read.
type replayStream struct {
	grpc.ServerStream
	first proto.Message
}

func (s *replayStream) RecvMsg(m any) error {
	if s.first == nil {
		return s.ServerStream.RecvMsg(m)
	}
	dst, ok := m.(proto.Message)
	if !ok {
		return s.ServerStream.RecvMsg(m)
	}
	proto.Reset(dst)
	proto.Merge(dst, s.first)
	s.first = nil
	return nil
}

// checkedStream checks every message a client stream (Telemetry) sends;
// a refused one is answered with the refusal and ends the stream (the
// handler reads io.EOF, as when the client half-closes). The refusal is
// sent from the reading goroutine while others may send (transaction
// check-backs): every send goes through sendMu.
type checkedStream struct {
	grpc.ServerStream
	check  RequestCheck
	method string
	done   bool
	sendMu sync.Mutex
}

func (s *checkedStream) SendMsg(m any) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.ServerStream.SendMsg(m)
}

func (s *checkedStream) RecvMsg(m any) error {
	if s.done {
		return io.EOF
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return nil
	}
	err := s.check(requestMeta(s.ServerStream.Context()), pm)
	if err == nil {
		return nil
	}
	s.done = true
	resp, rerr := statusResponse(s.method, unauthorized(err))
	if rerr != nil {
		return rerr
	}
	if err := s.SendMsg(resp); err != nil {
		return err
	}
	return io.EOF
}
