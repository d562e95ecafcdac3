package broker

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// TestGrpcServerOffByDefault: enableGrpcServer defaults to false (issue 17
// is in development) and grpcServerPort to the proxy's 8081.
func TestGrpcServerOffByDefault(t *testing.T) {
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	if cfg.EnableGrpcServer || cfg.GrpcServerPort != 8081 {
		t.Fatalf("enableGrpcServer=%v grpcServerPort=%d, want false/8081", cfg.EnableGrpcServer, cfg.GrpcServerPort)
	}
	b, err := New(cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Shutdown(context.Background()) }()
	if a := b.GrpcAddr(); a != "" {
		t.Fatalf("gRPC listening on %s with enableGrpcServer=false", a)
	}
}

// TestGrpcServerStartsAndStopsWithBroker: enabled, the endpoint listens on
// brokerIP1:grpcServerPort, answers gRPC, and closes with the broker.
func TestGrpcServerStartsAndStopsWithBroker(t *testing.T) {
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	cfg.EnableGrpcServer, cfg.GrpcServerPort = true, 0
	b, err := New(cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	addr := b.GrpcAddr()
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("GrpcAddr %q, want 127.0.0.1:<port>", addr)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// No rpc is written yet: Unimplemented proves the request crossed
	// HTTP/2 and reached the MessagingService registration.
	_, err = v2pb.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2pb.QueryRouteRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("QueryRoute: %v, want Unimplemented", err)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("gRPC port still open after Shutdown")
	}
}
