package grpcserver

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// testClientID is the x-mq-client-id the tests' clients send when the
// call names none: the server refuses requests without one
// (interceptor.go), as every 5.x client sends it.
const testClientID = "test-client"

// withClientID makes a connection send x-mq-client-id testClientID on
// every call whose context has none.
func withClientID() []grpc.DialOption {
	add := func(ctx context.Context) context.Context {
		if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(mdClientID)) > 0 {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, mdClientID, testClientID)
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(add(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(add(ctx), desc, cc, method, opts...)
		}),
	}
}
