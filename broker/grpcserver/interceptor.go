package grpcserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// The proxy refuses every request of a client that does not name itself
// (Apache proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/
// GrpcMessagingApplication.java validateContext): a blank x-mq-client-id
// is answered CLIENT_ID_REQUIRED in the rpc's own response, the rpc is
// not run. A unary rpc gets its response with that status; a server
// stream (ReceiveMessage, PullMessage) one response with that status and
// its end; on the Telemetry stream each command the client sends is
// answered by a command with that status, and the stream ends (the proxy
// completes it). The check applies to every rpc of the service, those
// written later included: the refusal is built from the method's
// response type.
//
// The other request metadata is not checked: x-mq-language and
// x-mq-client-version are recorded for the admin tools as sent. (The
// proxy parses the language as one of its LanguageCode names when it
// registers a client, and fails the settings, heartbeat or goodbye of a
// client whose language is not one with an INTERNAL error; the 5.x
// clients all send one.)

// clientIDRequired is the status of a request without a client id.
func clientIDRequired() *v2pb.Status {
	return newStatus(v2pb.Code_CLIENT_ID_REQUIRED, "client id cannot be empty (the request has no "+mdClientID+" metadata)")
}

func hasClientID(ctx context.Context) bool {
	return strings.TrimSpace(mdValue(ctx, mdClientID)) != ""
}

// unaryClientID refuses a unary rpc without a client id.
func unaryClientID(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if hasClientID(ctx) {
		return handler(ctx, req)
	}
	resp, err := statusResponse(info.FullMethod, clientIDRequired())
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// streamClientID refuses a streaming rpc without a client id.
func streamClientID(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if hasClientID(ss.Context()) {
		return handler(srv, ss)
	}
	resp, err := statusResponse(info.FullMethod, clientIDRequired())
	if err != nil {
		return err
	}
	if !info.IsClientStream {
		// The request is read (a malformed one fails as without the
		// check), then refused.
		req, err := requestOf(info.FullMethod)
		if err != nil {
			return err
		}
		if err := ss.RecvMsg(req); err != nil {
			return err
		}
		return ss.SendMsg(resp)
	}
	return handler(srv, &refusingStream{ServerStream: ss, refusal: resp})
}

// refusingStream answers the first message the client sends with the
// refusal and ends the stream there (the handler reads io.EOF, as when
// the client half-closes).
type refusingStream struct {
	grpc.ServerStream
	refusal proto.Message
	done    bool
}

func (s *refusingStream) RecvMsg(m any) error {
	if s.done {
		return io.EOF
	}
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	s.done = true
	if err := s.ServerStream.SendMsg(s.refusal); err != nil {
		return err
	}
	return io.EOF
}

// method is the descriptor of a MessagingService method by its full name
// ("/apache.rocketmq.v2.MessagingService/SendMessage").
func method(fullMethod string) (protoreflect.MethodDescriptor, error) {
	i := strings.LastIndexByte(fullMethod, '/')
	svc := v2pb.File_rmqgo_v2_messaging_proto.Services().ByName("MessagingService")
	if svc == nil || i < 0 {
		return nil, grpcstatus.Errorf(codes.Unimplemented, "unknown method %s", fullMethod)
	}
	md := svc.Methods().ByName(protoreflect.Name(fullMethod[i+1:]))
	if md == nil {
		return nil, grpcstatus.Errorf(codes.Unimplemented, "unknown method %s", fullMethod)
	}
	return md, nil
}

func newMessage(d protoreflect.MessageDescriptor) (protoreflect.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
	if err != nil {
		return nil, grpcstatus.Errorf(codes.Internal, "message type %s: %v", d.FullName(), err)
	}
	return mt.New(), nil
}

// requestOf is an empty request of a method.
func requestOf(fullMethod string) (proto.Message, error) {
	md, err := method(fullMethod)
	if err != nil {
		return nil, err
	}
	m, err := newMessage(md.Input())
	if err != nil {
		return nil, err
	}
	return m.Interface(), nil
}

// statusResponse is a method's response carrying st alone (every
// response of the service has a status field, in a oneof for the
// streams).
func statusResponse(fullMethod string, st *v2pb.Status) (proto.Message, error) {
	md, err := method(fullMethod)
	if err != nil {
		return nil, err
	}
	m, err := newMessage(md.Output())
	if err != nil {
		return nil, err
	}
	f := m.Descriptor().Fields().ByName("status")
	if f == nil || f.Message() == nil || f.Message().FullName() != st.ProtoReflect().Descriptor().FullName() {
		return nil, grpcstatus.Errorf(codes.Internal, "%s has no status field", md.Output().FullName())
	}
	m.Set(f, protoreflect.ValueOfMessage(st.ProtoReflect()))
	return m.Interface(), nil
}

// recoverUnary turns a unary handler's panic into gRPC INTERNAL, as the
// proxy's GlobalExceptionInterceptor turns a handler's exception: one bad
// request cannot take the broker down.
func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, panicked(ctx, log, info.FullMethod, r)
			}
		}()
		return handler(ctx, req)
	}
}

// recoverStream is recoverUnary for the streaming rpcs.
func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = panicked(ss.Context(), log, info.FullMethod, r)
			}
		}()
		return handler(srv, ss)
	}
}

func panicked(ctx context.Context, log *slog.Logger, method string, r any) error {
	log.Error("grpc: handler panicked", "method", method, "remote", peerAddr(ctx), "client", mdValue(ctx, mdClientID),
		"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return grpcstatus.Errorf(codes.Internal, "internal error handling %s: %v", method, r)
}
