package grpcserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

type fakeBackend struct {
	topics map[string]Topic
	sent   chan SendInput // records every Send (buffered)
	result SendResult
}

func (f fakeBackend) Send(_ context.Context, in SendInput) (SendResult, error) {
	f.sent <- in
	return f.result, nil
}

func (f fakeBackend) Topic(name string) (Topic, bool) { t, ok := f.topics[name]; return t, ok }
func (fakeBackend) BrokerName() string                { return "broker-a" }
func (fakeBackend) MaxMessageSize() int               { return 4 << 20 }

func messagingClient(t *testing.T, b Backend) (v2pb.MessagingServiceClient, *Server) {
	t.Helper()
	s := startServer(t, Config{Backend: b, AdvertiseHost: "127.0.0.1"})
	conn, err := grpc.NewClient(s.Addr(), append(withClientID(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return v2pb.NewMessagingServiceClient(conn), s
}

// queues renders a route as "id:PERM" items for comparison.
func queues(r *v2pb.QueryRouteResponse) string {
	var out []string
	for _, q := range r.GetMessageQueues() {
		out = append(out, fmt.Sprintf("%d:%v", q.GetId(), q.GetPermission()))
	}
	return strings.Join(out, " ")
}

func TestQueryRoute(t *testing.T) {
	c, s := messagingClient(t, fakeBackend{topics: map[string]Topic{
		"rw":    {ReadQueues: 2, WriteQueues: 2, Perm: 6},
		"moreR": {ReadQueues: 3, WriteQueues: 1, Perm: 6},
		"moreW": {ReadQueues: 1, WriteQueues: 2, Perm: 6},
		"ro":    {ReadQueues: 2, WriteQueues: 2, Perm: 4},
		"wo":    {ReadQueues: 2, WriteQueues: 1, Perm: 2},
		"fifo":  {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "FIFO"},
		"mixed": {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "MIXED"},
		"unsp":  {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "UNSPECIFIED"},
	}})
	tests := []struct {
		topic  string
		code   v2pb.Code
		queues string
		accept string
	}{
		{"rw", v2pb.Code_OK, "0:READ_WRITE 1:READ_WRITE", "[NORMAL]"},
		{"moreR", v2pb.Code_OK, "0:READ_WRITE 1:READ 2:READ", "[NORMAL]"},
		{"moreW", v2pb.Code_OK, "0:READ_WRITE 1:WRITE", "[NORMAL]"},
		{"ro", v2pb.Code_OK, "0:READ 1:READ", "[NORMAL]"},
		{"wo", v2pb.Code_OK, "0:WRITE", "[NORMAL]"},
		{"fifo", v2pb.Code_OK, "0:READ_WRITE", "[FIFO]"},
		{"mixed", v2pb.Code_OK, "0:READ_WRITE", "[NORMAL FIFO DELAY TRANSACTION]"},
		{"unsp", v2pb.Code_OK, "0:READ_WRITE", "[MESSAGE_TYPE_UNSPECIFIED]"},
		{"missing", v2pb.Code_TOPIC_NOT_FOUND, "", ""},
		{"", v2pb.Code_ILLEGAL_TOPIC, "", ""},
		{"SCHEDULE_TOPIC_XXXX", v2pb.Code_ILLEGAL_TOPIC, "", ""},
	}
	_, port, _ := hostPort(s.Addr())
	for _, tc := range tests {
		t.Run(tc.topic, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: tc.topic}})
			if err != nil {
				t.Fatalf("QueryRoute: %v", err)
			}
			if r.GetStatus().GetCode() != tc.code {
				t.Fatalf("code %v, want %v", r.GetStatus().GetCode(), tc.code)
			}
			if got := queues(r); got != tc.queues {
				t.Fatalf("queues %q, want %q", got, tc.queues)
			}
			for _, q := range r.GetMessageQueues() {
				if got := fmt.Sprint(q.GetAcceptMessageTypes()); got != tc.accept {
					t.Errorf("accept %s, want %s", got, tc.accept)
				}
				b := q.GetBroker()
				ep := b.GetEndpoints()
				if b.GetName() != "broker-a" || ep.GetScheme() != v2pb.AddressScheme_IPv4 || len(ep.GetAddresses()) != 1 ||
					ep.GetAddresses()[0].GetHost() != "127.0.0.1" || int(ep.GetAddresses()[0].GetPort()) != port || q.GetTopic().GetName() != tc.topic {
					t.Errorf("queue %v: broker/endpoint/topic wrong (want broker-a at 127.0.0.1:%d)", q, port)
				}
			}
		})
	}
}

// TestHeartbeat: a client's heartbeat is answered OK once its settings
// came on its Telemetry stream, UNRECOGNIZED_CLIENT_TYPE before.
func TestHeartbeat(t *testing.T) {
	c, _ := messagingClient(t, fakeBackend{topics: map[string]Topic{"T": {ReadQueues: 1, WriteQueues: 1, Perm: 6}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Heartbeat(ctx, &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("Heartbeat before settings: %v %v", r, err)
	}
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "T"}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	r, err = c.Heartbeat(ctx, &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("Heartbeat: %v %v", r, err)
	}
}

// TestTelemetrySettings: a producer's Settings are answered on the stream
// with its own, completed with the broker's body limit and type check; a
// command that is not Settings gets no answer.
func TestTelemetrySettings(t *testing.T) {
	c, _ := messagingClient(t, fakeBackend{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	producer := v2pb.ClientType_PRODUCER
	sent := &v2pb.Settings{
		ClientType:     &producer,
		RequestTimeout: durationpb.New(3 * time.Second),
		BackoffPolicy:  &v2pb.RetryPolicy{MaxAttempts: 3},
		PubSub:         &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "T"}}}},
		UserAgent:      &v2pb.UA{Language: v2pb.Language_JAVA, Version: "5.2.0"},
	}
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_ThreadStackTrace{ThreadStackTrace: &v2pb.ThreadStackTrace{Nonce: "n"}}}); err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: sent}}); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	s := got.GetSettings()
	if got.GetStatus().GetCode() != v2pb.Code_OK || s == nil {
		t.Fatalf("answer %v, want OK with Settings", got)
	}
	p := s.GetPublishing()
	if s.GetClientType() != producer || p.GetMaxBodySize() != 4<<20 || !p.GetValidateMessageType() ||
		len(p.GetTopics()) != 1 || p.GetTopics()[0].GetName() != "T" ||
		s.GetBackoffPolicy().GetMaxAttempts() != 3 || s.GetRequestTimeout().AsDuration() != 3*time.Second {
		t.Fatalf("settings answered %v", s)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if m, err := stream.Recv(); err == nil {
		t.Fatalf("after CloseSend: got %v, want the stream to end", m)
	}
}

// TestShutdownEndsTelemetryStreams: a client's Telemetry stream stays open
// as long as the client; Shutdown ends it at once (with its connection: the
// client sees UNAVAILABLE) instead of waiting for the client (a broker with
// 5.x clients connected stopped only when its shutdown timeout ran out).
func TestShutdownEndsTelemetryStreams(t *testing.T) {
	c, srv := messagingClient(t, fakeBackend{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	producer := v2pb.ClientType_PRODUCER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{ClientType: &producer,
		PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("settings answer: %v", err)
	}
	t0 := time.Now()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown with an open Telemetry stream: %v after %v", err, time.Since(t0))
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Shutdown took %v with an open Telemetry stream", d)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("stream after Shutdown: %v, want UNAVAILABLE", err)
	}
}

// TestShutdownTelemetryEndsWithConnection: at Shutdown a Telemetry stream
// gets neither trailers nor RST_STREAM: it ends with its connection, as
// with the proxy (grpc-java's shutdownNow). Trailers followed by
// RST_STREAM(NO_ERROR) — what ending the stream with a status sends while
// the client's side is open — put the Rust 5.x client (crate rocketmq
// 5.0.0) into an endless loop of telemetry errors that starves it: after a
// broker restart it never sent again (docs/interop.md, Rust).
func TestShutdownTelemetryEndsWithConnection(t *testing.T) {
	s := startServer(t, Config{Backend: fakeBackend{}, AdvertiseHost: "127.0.0.1"})
	c := newH2Client(t, s.Addr())
	c.open(1, v2pb.MessagingService_Telemetry_FullMethodName)
	producer := v2pb.ClientType_PRODUCER
	body, err := proto.Marshal(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &producer, PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	c.send(1, false, grpcFrame(0, uint32(len(body)), body))

	// Read until the connection ends, answering settings and pings; after
	// the settings answer, Shutdown, and record what comes on the stream.
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	answered := false
	var after []string
	shut := make(chan error, 1)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			if !answered {
				t.Fatalf("connection ended before the settings answer: %v", err)
			}
			break
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = c.fr.WritePing(true, f.Data)
			}
		case *http2.DataFrame:
			if f.StreamID == 1 && !answered {
				answered = true
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					shut <- s.Shutdown(ctx)
				}()
			} else if f.StreamID == 1 {
				after = append(after, "DATA")
			}
		case *http2.HeadersFrame:
			fields, err := c.dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatal(err)
			}
			if f.StreamID == 1 && f.StreamEnded() {
				if !answered {
					t.Fatalf("the Telemetry stream ended before the settings answer: %v", fields)
				}
				after = append(after, fmt.Sprint("trailers ", fields))
			}
		case *http2.RSTStreamFrame:
			after = append(after, "RST_STREAM "+f.ErrCode.String())
		}
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	if len(after) != 0 {
		t.Errorf("the Telemetry stream got %v at Shutdown, want it to end with the connection", after)
	}
}

// slowRouteService answers QueryRoute once release is closed.
type slowRouteService struct {
	v2pb.UnimplementedMessagingServiceServer
	started chan struct{}
	release chan struct{}
}

func (s slowRouteService) QueryRoute(context.Context, *v2pb.QueryRouteRequest) (*v2pb.QueryRouteResponse, error) {
	close(s.started)
	<-s.release
	return &v2pb.QueryRouteResponse{Status: ok()}, nil
}

// TestShutdownWaitsForRunningRpcs: Shutdown closes the connections only
// once the rpcs running when it began are answered (the Telemetry streams
// do not count).
func TestShutdownWaitsForRunningRpcs(t *testing.T) {
	svc := slowRouteService{started: make(chan struct{}), release: make(chan struct{})}
	s := startServer(t, Config{Messaging: svc})
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	answer := make(chan error, 1)
	go func() {
		_, err := v2pb.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2pb.QueryRouteRequest{})
		answer <- err
	}()
	<-svc.started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(ctx) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while an rpc was running", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(svc.release)
	if err := <-answer; err != nil {
		t.Errorf("the rpc running at Shutdown: %v, want its answer", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
