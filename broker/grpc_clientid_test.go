package broker

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// grpcDial is how the tests connect to the gRPC endpoint: plaintext, every
// call sending x-mq-client-id "test-client" unless it names its own (the
// endpoint refuses requests without one, as every 5.x client sends it);
// a call whose metadata has the key, even empty, sends what it has.
func grpcDial(addr string) (*grpc.ClientConn, error) {
	add := func(ctx context.Context) context.Context {
		if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get("x-mq-client-id")) > 0 {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "test-client")
	}
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(add(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(add(ctx), desc, cc, method, opts...)
		}))
}
