package broker

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// TestGrpcServerOffByDefault: enableGrpcServer defaults to false (issue 17
// is in development) and grpcServerPort to the proxy's 8081.
func TestGrpcServerOffByDefault(t *testing.T) {
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	if cfg.EnableGrpcServer || cfg.GrpcServerPort != 8081 {
		t.Fatalf("enableGrpcServer=%v grpcServerPort=%d, want false/8081", cfg.EnableGrpcServer, cfg.GrpcServerPort)
	}
	b := startBroker(t, cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
	if a := b.GrpcAddr(); a != "" {
		t.Fatalf("gRPC listening on %s with enableGrpcServer=false", a)
	}
}

// TestGrpcServerStartsAndStopsWithBroker: enabled, the endpoint listens on
// brokerIP1:grpcServerPort, routes the broker's topics to itself, and
// closes with the broker.
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
	conn, err := grpcDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tc := protocol.NewTopicConfig("GrpcTopic")
	tc.ReadQueueNums, tc.WriteQueueNums = 3, 3
	if _, err := b.Topics().Update(tc); err != nil {
		t.Fatal(err)
	}
	cli := v2pb.NewMessagingServiceClient(conn)
	r, err := cli.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "GrpcTopic"}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK || len(r.GetMessageQueues()) != 3 {
		t.Fatalf("QueryRoute: %v %v, want OK with 3 queues", r, err)
	}
	host, port, _ := net.SplitHostPort(addr)
	for _, q := range r.GetMessageQueues() {
		a := q.GetBroker().GetEndpoints().GetAddresses()
		if q.GetPermission() != v2pb.Permission_READ_WRITE || q.GetBroker().GetName() != cfg.BrokerName ||
			len(a) != 1 || a[0].GetHost() != host || fmt.Sprint(a[0].GetPort()) != port {
			t.Fatalf("queue %v, want READ_WRITE on %s at %s", q, cfg.BrokerName, addr)
		}
	}
	r, err = cli.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "NoSuchTopic"}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("QueryRoute of a missing topic: %v %v, want TOPIC_NOT_FOUND", r, err)
	}
	// Served by the broker (the pull consumer rpcs, wire_grpc_offset.go):
	// an empty request gets the proxy's status, not an rpc error.
	stream, err := cli.PullMessage(ctx, &v2pb.PullMessageRequest{})
	var first *v2pb.PullMessageResponse
	if err == nil {
		first, err = stream.Recv()
	}
	if err != nil || first.GetStatus().GetCode() != v2pb.Code_ILLEGAL_TOPIC {
		t.Fatalf("empty PullMessage: %v %v, want ILLEGAL_TOPIC (the topic is checked first)", first, err)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("gRPC port still open after Shutdown")
	}
}

// TestGrpcSendMessageStored: a NORMAL message sent over gRPC goes through
// the broker's send path into the store, with its id as UNIQ_KEY, tag,
// keys, user properties, born time and body as a remoting send stores them.
func TestGrpcSendMessageStored(t *testing.T) {
	b, cli := grpcBroker(t, nil, 1, map[string]string{"GrpcSend": ""})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	born := time.UnixMilli(1700000000123)
	ids := []string{"01000000000000000000000001", "01000000000000000000000002"}
	for i, e := range sendNormal(ctx, t, cli, "GrpcSend", born, ids...) {
		if e.GetMessageId() != ids[i] || e.GetOffset() != int64(i) {
			t.Fatalf("entry %v, want id %s offset %d", e, ids[i], i)
		}
	}
	// The consume queue is built asynchronously.
	ms := storedN(t, b, "GrpcSend", 2)
	if len(ms) != 2 {
		t.Fatalf("%d records stored, want 2", len(ms))
	}
	m := ms[1]
	p := m.Properties
	if string(m.Body) != "body-01000000000000000000000002" || p["UNIQ_KEY"] != "01000000000000000000000002" ||
		p["TAGS"] != "TagA" || p["KEYS"] != "k1 k2" || p["color"] != "red" || m.BornTimestamp != born.UnixMilli() {
		t.Fatalf("stored %+v", m)
	}
	// An unknown topic is refused (no auto-creation from TBW102 over gRPC).
	resp, err := cli.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
		Topic: &v2pb.Resource{Name: "NoSuchTopic"}, SystemProperties: &v2pb.SystemProperties{MessageId: "01X"}, Body: []byte("x"),
	}}})
	if err != nil || resp.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Fatalf("send to a missing topic: %v %v, want TOPIC_NOT_FOUND", resp, err)
	}
}
