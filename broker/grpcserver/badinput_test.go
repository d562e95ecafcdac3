package grpcserver

import (
	"context"
	"errors"
	"flag"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// Bad input on the gRPC endpoint (issue 17): each bad request gets the
// proxy's answer, and the server goes on serving the good ones.

// idleStreams is how many idle Telemetry streams TestIdleStreams holds
// (make grpc-streams runs it with 10000).
var idleStreams = flag.Int("grpc.idle-streams", 1000, "Telemetry streams TestIdleStreams holds open")

// rawCodec sends a []byte request as it is (malformed protobuf) and
// decodes proto messages as the default codec.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.([]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// dial connects to s; id, when not empty, is sent as x-mq-client-id on
// every call.
func dial(t *testing.T, s *Server, id string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if id != "" {
		opts = append(opts, grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, o ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, mdClientID, id), method, req, reply, cc, o...)
		}), grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.AppendToOutgoingContext(ctx, mdClientID, id), desc, cc, method, o...)
		}))
	}
	conn, err := grpc.NewClient(s.Addr(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// badInputConsumer is the backend of these tests: topic T (NORMAL), F
// (FIFO), group G; one message to pop.
func badInputConsumer() *fakeConsumer {
	f := newFakeConsumer()
	f.topics["F"] = Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "FIFO"}
	f.sent = make(chan SendInput, 16)
	f.pop = PopResult{Messages: nil}
	return f
}

// serves checks the server still stores a good message and pops for a
// good receive.
func serves(t *testing.T, c v2pb.MessagingServiceClient, f *fakeConsumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{normalMessage("T", "01GOOD", []byte("good"))}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("a good send after bad input: %v %v", r, err)
	}
	select {
	case in := <-f.sent:
		if string(in.Body) != "good" {
			t.Fatalf("stored %q", in.Body)
		}
	case <-ctx.Done():
		t.Fatal("the good send did not reach the broker")
	}
	f.mu.Lock()
	f.pop = PopResult{Messages: nil}
	pops := len(f.pops)
	f.mu.Unlock()
	if code, _ := recv(t, c, 5*time.Second, rreq("T", "G")); code != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("a good receive after bad input: %v", code)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pops) != pops+1 {
		t.Fatalf("the good receive did not pop")
	}
}

// statusOf is the status field of a response.
func statusOf(m proto.Message) *v2pb.Status {
	r := m.ProtoReflect()
	f := r.Descriptor().Fields().ByName("status")
	if f == nil || !r.Has(f) {
		return nil
	}
	st, _ := r.Get(f).Message().Interface().(*v2pb.Status)
	return st
}

// TestClientIDRequiredOnEveryRpc: every rpc of the service, sent without
// x-mq-client-id (or a blank one), is answered CLIENT_ID_REQUIRED in its
// own response, as the proxy's validateContext; nothing reaches the
// broker; a stream gets that one response and ends.
func TestClientIDRequiredOnEveryRpc(t *testing.T) {
	f := badInputConsumer()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1"})
	svc := v2pb.File_rmqgo_v2_messaging_proto.Services().ByName("MessagingService")
	for _, id := range []string{"", "  "} {
		conn := dial(t, s, id)
		for i := 0; i < svc.Methods().Len(); i++ {
			md := svc.Methods().Get(i)
			full := "/" + string(svc.FullName()) + "/" + string(md.Name())
			t.Run(string(md.Name())+"/id="+id, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				req, err := newMessage(md.Input())
				if err != nil {
					t.Fatal(err)
				}
				resp, err := newMessage(md.Output())
				if err != nil {
					t.Fatal(err)
				}
				if !md.IsStreamingClient() && !md.IsStreamingServer() {
					if err := conn.Invoke(ctx, full, req.Interface(), resp.Interface()); err != nil {
						t.Fatalf("Invoke: %v", err)
					}
					if st := statusOf(resp.Interface()); st.GetCode() != v2pb.Code_CLIENT_ID_REQUIRED || st.GetMessage() == "" {
						t.Fatalf("answered %v, want CLIENT_ID_REQUIRED", resp)
					}
					return
				}
				desc := &grpc.StreamDesc{StreamName: string(md.Name()), ClientStreams: md.IsStreamingClient(), ServerStreams: md.IsStreamingServer()}
				cs, err := conn.NewStream(ctx, desc, full)
				if err != nil {
					t.Fatal(err)
				}
				if md.Name() == "Telemetry" {
					req = (&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
						ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{}}}}}).ProtoReflect()
				}
				if err := cs.SendMsg(req.Interface()); err != nil {
					t.Fatal(err)
				}
				if err := cs.CloseSend(); err != nil {
					t.Fatal(err)
				}
				if err := cs.RecvMsg(resp.Interface()); err != nil {
					t.Fatalf("RecvMsg: %v", err)
				}
				if st := statusOf(resp.Interface()); st.GetCode() != v2pb.Code_CLIENT_ID_REQUIRED {
					t.Fatalf("answered %v, want CLIENT_ID_REQUIRED", resp)
				}
				if err := cs.RecvMsg(resp.Interface()); !errors.Is(err, io.EOF) {
					t.Fatalf("after the refusal: %v, want the stream's end", err)
				}
			})
		}
	}
	f.mu.Lock()
	if len(f.pops)+len(f.acked)+len(f.changed)+len(f.dlq)+len(f.beats)+len(f.gone) != 0 || len(f.sent) != 0 {
		t.Fatalf("refused requests reached the broker: %d pops, %d acks, %d sends, %d beats", len(f.pops), len(f.acked), len(f.sent), len(f.beats))
	}
	f.mu.Unlock()
	serves(t, v2pb.NewMessagingServiceClient(dial(t, s, "good-client")), f)
}

// TestMalformedProtobuf: bytes that are not the request's protobuf end a
// unary rpc, a server stream and the Telemetry stream with gRPC INTERNAL
// (grpc-java's "Invalid protobuf byte sequence" behind the proxy, grpc-go's
// unmarshalling error here); nothing reaches the broker and the server
// goes on serving.
func TestMalformedProtobuf(t *testing.T) {
	f := badInputConsumer()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1"})
	conn := dial(t, s, "bad-bytes")
	garbage := [][]byte{
		{0xff, 0xff, 0xff, 0xff}, // field 0x1fffffff.. of wire type 7
		{0x0a, 0xff},             // field 1, a length cut short
		{0x0a, 0x05, 0x0a, 0x01}, // a message longer than the bytes
		{0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, // a varint of 11 bytes
	}
	for _, b := range garbage {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var resp v2pb.SendMessageResponse
		err := conn.Invoke(ctx, v2pb.MessagingService_SendMessage_FullMethodName, b, &resp, grpc.ForceCodecV2(rawCodec{}))
		if status.Code(err) != codes.Internal {
			t.Errorf("SendMessage % x: %v, want INTERNAL", b, err)
		}
		rs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, v2pb.MessagingService_ReceiveMessage_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		_ = rs.SendMsg(b)
		_ = rs.CloseSend()
		if err := rs.RecvMsg(&v2pb.ReceiveMessageResponse{}); status.Code(err) != codes.Internal {
			t.Errorf("ReceiveMessage % x: %v, want INTERNAL", b, err)
		}
		ts, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, v2pb.MessagingService_Telemetry_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		_ = ts.SendMsg(b)
		if err := ts.RecvMsg(&v2pb.TelemetryCommand{}); status.Code(err) != codes.Internal {
			t.Errorf("Telemetry % x: %v, want INTERNAL", b, err)
		}
		cancel()
	}
	// A good command after a bad one on a fresh stream is served.
	c := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ts, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "T"}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := ts.Recv(); err != nil || got.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("settings after malformed commands: %v %v", got, err)
	}
	f.mu.Lock()
	if len(f.pops) != 0 || len(f.sent) != 0 {
		t.Fatalf("malformed requests reached the broker: %d pops, %d sends", len(f.pops), len(f.sent))
	}
	f.mu.Unlock()
	serves(t, c, f)
}

// TestTelemetryBadSettings: Settings that do not say what the client is,
// or name an illegal or system topic or group, end the stream with gRPC
// INVALID_ARGUMENT, as the proxy's processTelemetryException; no producer
// is registered for them.
func TestTelemetryBadSettings(t *testing.T) {
	f := badInputConsumer()
	prods := NewProducers()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1", Producers: prods})
	c := v2pb.NewMessagingServiceClient(dial(t, s, "bad-settings"))
	pub := func(topics ...string) *v2pb.Settings {
		var rs []*v2pb.Resource
		for _, n := range topics {
			rs = append(rs, &v2pb.Resource{Name: n})
		}
		return &v2pb.Settings{ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: rs}}}
	}
	sub := func(group string) *v2pb.Settings {
		return &v2pb.Settings{ClientType: ptr(v2pb.ClientType_SIMPLE_CONSUMER), PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group: &v2pb.Resource{Name: group}, Subscriptions: []*v2pb.SubscriptionEntry{{Topic: &v2pb.Resource{Name: "T"}}}}}}
	}
	tests := []struct {
		name     string
		settings *v2pb.Settings
	}{
		{"no publishing or subscription", &v2pb.Settings{ClientType: ptr(v2pb.ClientType_PRODUCER)}},
		{"empty settings", &v2pb.Settings{}},
		{"illegal topic", pub("T", "a/b")},
		{"blank topic", pub("")},
		{"system topic", pub("RMQ_SYS_TRANS_HALF_TOPIC")},
		{"topic too long", pub(strings.Repeat("t", 128))},
		{"illegal group", sub("bad group!")},
		{"no group", sub("")},
		{"system group", sub("CID_RMQ_SYS_X")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ts, err := c.Telemetry(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: tc.settings}}); err != nil {
				t.Fatal(err)
			}
			if got, err := ts.Recv(); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("answered %v %v, want INVALID_ARGUMENT", got, err)
			}
			if prods.Pick("T") != nil {
				t.Fatal("a producer registered by refused settings")
			}
		})
	}
	if r, err := c.Heartbeat(context.Background(), &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER}); err != nil ||
		r.GetStatus().GetCode() != v2pb.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("heartbeat after refused settings: %v %v, want UNRECOGNIZED_CLIENT_TYPE", r, err)
	}
	serves(t, c, f)
}

// TestUnknownAndIllegalResources: unknown, illegal and system topics and
// groups, a wrong message type for the topic, bodies over maxMessageSize
// and bad tags, keys and property keys, each over the rpcs that name
// them, get the proxy's codes; nothing reaches the broker.
func TestUnknownAndIllegalResources(t *testing.T) {
	f := badInputConsumer()
	f.topics["TX"] = Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "TRANSACTION"}
	f.topics["U"] = Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "UNSPECIFIED"}
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1"})
	c := v2pb.NewMessagingServiceClient(dial(t, s, "resources"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res := func(n string) *v2pb.Resource { return &v2pb.Resource{Name: n} }
	h := handle(time.Now(), time.Minute, 1)
	send := func(m *v2pb.Message) func() *v2pb.Status {
		return func() *v2pb.Status {
			r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}})
			if err != nil {
				return &v2pb.Status{Message: err.Error()}
			}
			return r.GetEntries()[0].GetStatus()
		}
	}
	msg := func(topic string, edit func(m *v2pb.Message)) *v2pb.Message {
		m := normalMessage(topic, "01BAD", []byte("x"))
		edit(m)
		return m
	}
	fifo := func(m *v2pb.Message) {
		m.SystemProperties.MessageType, m.SystemProperties.MessageGroup = v2pb.MessageType_FIFO, ptr("g")
	}
	route := func(topic string) func() *v2pb.Status {
		return func() *v2pb.Status {
			r, _ := c.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: res(topic)})
			return r.GetStatus()
		}
	}
	assign := func(topic, group string) func() *v2pb.Status {
		return func() *v2pb.Status {
			r, _ := c.QueryAssignment(ctx, &v2pb.QueryAssignmentRequest{Topic: res(topic), Group: res(group)})
			return r.GetStatus()
		}
	}
	receive := func(topic, group string) func() *v2pb.Status {
		return func() *v2pb.Status {
			code, _ := recv(t, c, 5*time.Second, rreq(topic, group))
			return &v2pb.Status{Code: code}
		}
	}
	ack := func(topic, group string) func() *v2pb.Status {
		return func() *v2pb.Status {
			r, _ := c.AckMessage(ctx, &v2pb.AckMessageRequest{Topic: res(topic), Group: res(group), Entries: []*v2pb.AckMessageEntry{{ReceiptHandle: h, MessageId: "m"}}})
			return r.GetStatus()
		}
	}
	change := func(topic, group string) func() *v2pb.Status {
		return func() *v2pb.Status {
			r, _ := c.ChangeInvisibleDuration(ctx, &v2pb.ChangeInvisibleDurationRequest{Topic: res(topic), Group: res(group), ReceiptHandle: h, MessageId: "m"})
			return r.GetStatus()
		}
	}
	dlq := func(topic, group string) func() *v2pb.Status {
		return func() *v2pb.Status {
			r, _ := c.ForwardMessageToDeadLetterQueue(ctx, &v2pb.ForwardMessageToDeadLetterQueueRequest{Topic: res(topic), Group: res(group), ReceiptHandle: h, MessageId: "m"})
			return r.GetStatus()
		}
	}
	endTx := func(topic string) func() *v2pb.Status {
		return func() *v2pb.Status {
			r, _ := c.EndTransaction(ctx, &v2pb.EndTransactionRequest{Topic: res(topic), TransactionId: "tx", MessageId: "m"})
			return r.GetStatus()
		}
	}
	tests := []struct {
		name string
		call func() *v2pb.Status
		code v2pb.Code
	}{
		{"route of an unknown topic", route("Missing"), v2pb.Code_TOPIC_NOT_FOUND},
		{"route of a system topic", route("SCHEDULE_TOPIC_XXXX"), v2pb.Code_ILLEGAL_TOPIC},
		{"route of an illegal topic", route("a b"), v2pb.Code_ILLEGAL_TOPIC},
		{"send to an unknown topic", send(normalMessage("Missing", "01M", []byte("x"))), v2pb.Code_TOPIC_NOT_FOUND},
		{"send to a system topic", send(normalMessage("RMQ_SYS_TRACE_TOPIC", "01M", []byte("x"))), v2pb.Code_ILLEGAL_TOPIC},
		{"send NORMAL to a FIFO topic", send(normalMessage("F", "01M", []byte("x"))), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"send NORMAL to a TRANSACTION topic", send(normalMessage("TX", "01M", []byte("x"))), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"send FIFO to a NORMAL topic", send(msg("T", fifo)), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"send FIFO to an UNSPECIFIED topic", send(msg("U", fifo)), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"send declared FIFO without a group", send(msg("F", func(m *v2pb.Message) { m.SystemProperties.MessageType = v2pb.MessageType_FIFO })),
			v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"body over maxMessageSize", send(msg("T", func(m *v2pb.Message) { m.Body = make([]byte, 4<<20+1) })), v2pb.Code_MESSAGE_BODY_TOO_LARGE},
		{"gzip body over maxMessageSize once decompressed", send(msg("T", func(m *v2pb.Message) {
			m.Body, m.SystemProperties.BodyEncoding = gz(t, make([]byte, 4<<20+1)), v2pb.Encoding_GZIP
		})), v2pb.Code_MESSAGE_BODY_TOO_LARGE},
		{"corrupt gzip body", send(msg("T", func(m *v2pb.Message) {
			m.Body, m.SystemProperties.BodyEncoding = []byte("not gzip"), v2pb.Encoding_GZIP
		})),
			v2pb.Code_MESSAGE_CORRUPTED},
		{"tag with |", send(msg("T", func(m *v2pb.Message) { m.SystemProperties.Tag = ptr("a|b") })), v2pb.Code_ILLEGAL_MESSAGE_TAG},
		{"blank key", send(msg("T", func(m *v2pb.Message) { m.SystemProperties.Keys = []string{"\t"} })), v2pb.Code_ILLEGAL_MESSAGE_KEY},
		{"system property key", send(msg("T", func(m *v2pb.Message) { m.UserProperties = map[string]string{"TAGS": "x"} })), v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"no message id", send(msg("T", func(m *v2pb.Message) { m.SystemProperties.MessageId = "" })), v2pb.Code_ILLEGAL_MESSAGE_ID},
		{"no message at all", func() *v2pb.Status { r, _ := c.SendMessage(ctx, &v2pb.SendMessageRequest{}); return r.GetStatus() }, v2pb.Code_MESSAGE_CORRUPTED},
		{"messages of two topics in one request", func() *v2pb.Status {
			r, _ := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{normalMessage("T", "01A", []byte("a")), normalMessage("F", "01B", []byte("b"))}})
			if len(r.GetEntries()) != 0 {
				return &v2pb.Status{Message: "entries answered"}
			}
			return r.GetStatus()
		}, v2pb.Code_MESSAGE_CORRUPTED},
		{"assignment of an unknown topic", assign("Missing", "G"), v2pb.Code_TOPIC_NOT_FOUND},
		{"assignment of a system group", assign("T", "CID_RMQ_SYS_G"), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"receive from an unknown topic", receive("Missing", "G"), v2pb.Code_TOPIC_NOT_FOUND},
		{"receive from a system topic", receive("RMQ_SYS_TRANS_HALF_TOPIC", "G"), v2pb.Code_ILLEGAL_TOPIC},
		{"receive for an unknown group", receive("T", "Unknown"), v2pb.Code_CONSUMER_GROUP_NOT_FOUND},
		{"receive for an illegal group", receive("T", "a/b"), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"receive for a system group", receive("T", "CID_RMQ_SYS_G"), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"ack on an unknown topic", ack("Missing", "G"), v2pb.Code_TOPIC_NOT_FOUND},
		{"ack for an illegal group", ack("T", "a b"), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"ack on a system topic", ack("TBW102", "G"), v2pb.Code_ILLEGAL_TOPIC},
		{"change on an unknown topic", change("Missing", "G"), v2pb.Code_TOPIC_NOT_FOUND},
		{"change for a system group", change("T", "CID_RMQ_SYS_G"), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"dead-letter on an unknown topic", dlq("Missing", "G"), v2pb.Code_TOPIC_NOT_FOUND},
		{"dead-letter for an illegal group", dlq("T", ""), v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"end a transaction of a system topic", endTx("RMQ_SYS_TRANS_HALF_TOPIC"), v2pb.Code_ILLEGAL_TOPIC},
		{"end an unknown transaction", endTx("TX"), v2pb.Code_INVALID_TRANSACTION_ID},
	}
	for _, tc := range tests {
		if st := tc.call(); st.GetCode() != tc.code {
			t.Errorf("%s: %v, want %v", tc.name, st, tc.code)
		}
	}
	f.mu.Lock()
	if len(f.pops)+len(f.acked)+len(f.changed)+len(f.dlq) != 0 || len(f.sent) != 0 {
		t.Fatalf("refused requests reached the broker: %d pops, %d acks, %d changes, %d dead-letterings, %d sends",
			len(f.pops), len(f.acked), len(f.changed), len(f.dlq), len(f.sent))
	}
	f.mu.Unlock()
	serves(t, c, f)
}

// settle opens a Telemetry stream for the connection's client and sends
// settings (a simple consumer of G on T), returning the stream.
func settle(t *testing.T, ctx context.Context, c v2pb.MessagingServiceClient) v2pb.MessagingService_TelemetryClient {
	t.Helper()
	ts, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: ptr(v2pb.ClientType_SIMPLE_CONSUMER), PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group: &v2pb.Resource{Name: "G"}, Subscriptions: []*v2pb.SubscriptionEntry{{Topic: &v2pb.Resource{Name: "T"}, Expression: &v2pb.FilterExpression{Expression: "*"}}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := ts.Recv(); err != nil || got.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("settings: %v %v", got, err)
	}
	return ts
}

// TestRequestsAfterTermination: after NotifyClientTermination the
// client's settings are gone, as behind the proxy: a late heartbeat is
// UNRECOGNIZED_CLIENT_TYPE and does not register the consumer again; the
// client's other rpcs are still served, and settings sent again make it
// a client again.
func TestRequestsAfterTermination(t *testing.T) {
	f := badInputConsumer()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1"})
	c := v2pb.NewMessagingServiceClient(dial(t, s, "leaving"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	settle(t, ctx, c)
	hb := &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: "G"}, ClientType: v2pb.ClientType_SIMPLE_CONSUMER}
	if r, err := c.Heartbeat(ctx, hb); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("heartbeat: %v %v", r, err)
	}
	if r, err := c.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{Group: &v2pb.Resource{Name: "G"}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", r, err)
	}
	if r, err := c.Heartbeat(ctx, hb); err != nil || r.GetStatus().GetCode() != v2pb.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("heartbeat after the goodbye: %v %v, want UNRECOGNIZED_CLIENT_TYPE", r, err)
	}
	f.mu.Lock()
	beats, gone := len(f.beats), len(f.gone)
	f.mu.Unlock()
	if beats != 1 || gone != 1 {
		t.Fatalf("%d registrations and %d unregistrations, want 1 and 1 (the late heartbeat registered the consumer again)", beats, gone)
	}
	// A second goodbye is harmless.
	if r, err := c.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{Group: &v2pb.Resource{Name: "G"}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("second NotifyClientTermination: %v %v", r, err)
	}
	serves(t, c, f)
	settle(t, ctx, c)
	if r, err := c.Heartbeat(ctx, hb); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("heartbeat after settings again: %v %v", r, err)
	}
}

// TestClientWithoutSettings: a client whose Telemetry stream never sends
// settings holds nothing up: its heartbeats are UNRECOGNIZED_CLIENT_TYPE
// (the proxy's answer), every other client is served at once, and the
// stream's end leaves nothing behind.
func TestClientWithoutSettings(t *testing.T) {
	f := badInputConsumer()
	prods := NewProducers()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1", Producers: prods})
	quiet := v2pb.NewMessagingServiceClient(dial(t, s, "quiet"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	ts, err := quiet.Telemetry(sctx)
	if err != nil {
		t.Fatal(err)
	}
	// A command that is not settings gets no answer and changes nothing.
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_ThreadStackTrace{ThreadStackTrace: &v2pb.ThreadStackTrace{Nonce: "n"}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := quiet.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: "G"}, ClientType: v2pb.ClientType_PUSH_CONSUMER}); err != nil ||
		r.GetStatus().GetCode() != v2pb.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Fatalf("heartbeat without settings: %v %v, want UNRECOGNIZED_CLIENT_TYPE", r, err)
	}
	start := time.Now()
	serves(t, v2pb.NewMessagingServiceClient(dial(t, s, "other")), f)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("another client served in %v", d)
	}
	f.mu.Lock()
	beats := len(f.beats)
	f.mu.Unlock()
	if beats != 0 {
		t.Fatalf("a client without settings was registered")
	}
	stop()
	waitFor(t, "the quiet stream's session to go", func() bool {
		prods.mu.Lock()
		defer prods.mu.Unlock()
		return len(prods.clients) == 0
	})
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// blockingPop is a consumer whose pops long-poll until the receive's
// context ends.
type blockingPop struct {
	*fakeConsumer
	started, ended chan struct{}
}

func (b blockingPop) Pop(ctx context.Context, req PopRequest) (PopResult, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.ended <- struct{}{}
	return PopResult{}, ctx.Err()
}

// TestHalfClosedStreams: a Telemetry stream half-closed by its client
// right after its settings still gets the answer, then ends; one
// half-closed before anything ends at once; a receive whose client goes
// away while it long-polls stops polling (no goroutine stays behind), and
// the server goes on serving.
func TestHalfClosedStreams(t *testing.T) {
	f := badInputConsumer()
	b := blockingPop{fakeConsumer: f, started: make(chan struct{}, 1), ended: make(chan struct{}, 1)}
	prods := NewProducers()
	s := startServer(t, Config{Backend: b, AdvertiseHost: "127.0.0.1", Producers: prods})
	c := v2pb.NewMessagingServiceClient(dial(t, s, "half"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ts, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if got, err := ts.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("half-closed before anything: %v %v, want the stream's end", got, err)
	}

	ts, err = c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "T"}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := ts.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if got, err := ts.Recv(); err != nil || got.GetSettings() == nil {
		t.Fatalf("settings then half-close: %v %v, want the settings", got, err)
	}
	if got, err := ts.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the settings: %v %v, want the stream's end", got, err)
	}
	waitFor(t, "the half-closed producer to go", func() bool { return prods.Pick("T") == nil })

	rctx, rcancel := context.WithCancel(ctx)
	req := rreq("T", "G")
	req.LongPollingTimeout = nil
	rs, err := c.ReceiveMessage(rctx, req)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.started:
	case <-ctx.Done():
		t.Fatal("the receive did not poll")
	}
	rcancel()
	if _, err := rs.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled receive: %v", err)
	}
	select {
	case <-b.ended:
	case <-ctx.Done():
		t.Fatal("the long polling went on after its client went away")
	}
	if r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{normalMessage("T", "01AFTER", []byte("after"))}}); err != nil ||
		r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("send after: %v %v", r, err)
	}
}

// TestIdleStreams: *idleStreams Telemetry streams over a few connections,
// each a producer whose settings were answered, then idle: the server
// keeps answering other clients at once, its memory per stream stays
// small, and when the streams end every session, registration and
// goroutine they held goes.
func TestIdleStreams(t *testing.T) {
	n := *idleStreams
	const conns = 4
	f := badInputConsumer()
	prods := NewProducers()
	baseG := runtime.NumGoroutine()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1", Producers: prods})
	var clients []v2pb.MessagingServiceClient
	var cc []*grpc.ClientConn
	for i := 0; i < conns; i++ {
		conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		cc = append(cc, conn)
		clients = append(clients, v2pb.NewMessagingServiceClient(conn))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	settings := &v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "T"}}}}}}}
	const workers = 64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				err := func() error {
					sctx := metadata.AppendToOutgoingContext(ctx, mdClientID, "idle-"+strconv.Itoa(i))
					ts, err := clients[i%conns].Telemetry(sctx)
					if err != nil {
						return err
					}
					if err := ts.Send(settings); err != nil {
						return err
					}
					got, err := ts.Recv()
					if err != nil {
						return err
					}
					if got.GetStatus().GetCode() != v2pb.Code_OK {
						return errors.New(got.String())
					}
					return nil
				}()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d streams failed, first: %v", len(errs), errs[0])
	}
	opened := time.Since(start)
	prods.mu.Lock()
	sessions, registered := len(prods.clients), len(prods.sessions["T"])
	prods.mu.Unlock()
	if sessions != n || registered != n {
		t.Fatalf("%d sessions, %d producers of T, want %d", sessions, registered, n)
	}
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	perStream := (int64(during.HeapInuse+during.StackInuse) - int64(before.HeapInuse+before.StackInuse)) / int64(n)
	goroutines := runtime.NumGoroutine() - baseG
	t.Logf("%d streams opened in %v; %d B of heap and stacks and %.1f goroutines per stream (client and server)",
		n, opened, perStream, float64(goroutines)/float64(n))
	// Client and server together: the server's handler goroutine and
	// stream state, the client's stream; well under 64 KiB a stream.
	if perStream > 64<<10 {
		t.Errorf("%d B of heap and stacks per idle stream", perStream)
	}
	if goroutines > 4*n {
		t.Errorf("%d goroutines for %d streams", goroutines, n)
	}
	// Others are served at once.
	t0 := time.Now()
	serves(t, v2pb.NewMessagingServiceClient(dial(t, s, "busy")), f)
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("a send and a receive took %v beside %d idle streams", d, n)
	}
	cancel()
	for _, conn := range cc {
		conn.Close()
	}
	waitFor(t, "the streams' sessions to go", func() bool {
		prods.mu.Lock()
		defer prods.mu.Unlock()
		return len(prods.clients) == 0 && len(prods.sessions) == 0
	})
	waitFor(t, "the streams' goroutines to end", func() bool { return runtime.NumGoroutine() < baseG+50 })
}

// TestClientTableForgetsSilentClients: the settings of a client that went
// away without a goodbye are forgotten after clientIdle without settings
// or heartbeats; one that heartbeats is kept.
func TestClientTableForgetsSilentClients(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tab := &clientTable{now: func() time.Time { return now }}
	sub := &v2pb.Subscription{Group: &v2pb.Resource{Name: "G"}}
	for i := 0; i < 1000; i++ {
		tab.settled("gone-"+strconv.Itoa(i), sub)
		tab.setType("gone-"+strconv.Itoa(i), v2pb.ClientType_PUSH_CONSUMER)
	}
	tab.settled("alive", sub)
	tab.setType("alive", v2pb.ClientType_LITE_PUSH_CONSUMER)
	for step := 0; step < 6; step++ {
		now = now.Add(clientIdle / 4)
		if !tab.heard("alive") {
			t.Fatalf("step %d: the heartbeating client was forgotten", step)
		}
	}
	if n := tab.size(); n != 1 {
		t.Fatalf("%d clients kept, want the heartbeating one", n)
	}
	if tab.get("alive") == nil || !tab.isLite("alive") || tab.heard("gone-7") {
		t.Fatalf("kept the wrong client")
	}
	tab.drop("alive")
	if tab.heard("alive") || tab.size() != 0 {
		t.Fatal("a dropped client is still known")
	}
}

// TestIdleConnectionClosed: a connection without streams is sent away
// after IdleTimeout (the proxy's maxConnectionIdle); one holding a
// Telemetry stream is not.
func TestIdleConnectionClosed(t *testing.T) {
	f := badInputConsumer()
	s := startServer(t, Config{Backend: f, AdvertiseHost: "127.0.0.1", IdleTimeout: 300 * time.Millisecond})
	idle := dial(t, s, "idle")
	busy := dial(t, s, "busy")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, conn := range []*grpc.ClientConn{idle, busy} {
		if r, err := v2pb.NewMessagingServiceClient(conn).QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "T"}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("QueryRoute: %v %v", r, err)
		}
	}
	ts := settle(t, ctx, v2pb.NewMessagingServiceClient(busy))
	waitFor(t, "the idle connection to be sent away", func() bool { return idle.GetState() == connectivity.Idle })
	if st := busy.GetState(); st != connectivity.Ready {
		t.Fatalf("the connection with a stream is %v", st)
	}
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: ptr(v2pb.ClientType_SIMPLE_CONSUMER), PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: &v2pb.Resource{Name: "G"}}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Recv(); err != nil {
		t.Fatalf("the stream of the busy connection: %v", err)
	}
	// The client reconnects on its next call.
	if r, err := v2pb.NewMessagingServiceClient(idle).QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: "T"}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("QueryRoute after the idle close: %v %v", r, err)
	}
}

// panickyBackend panics when it stores a message with id 01PANIC or
// pops for group PANIC: a bug behind an rpc.
type panickyBackend struct{ *fakeConsumer }

func (p panickyBackend) Send(ctx context.Context, in SendInput) (SendResult, error) {
	if in.Properties["UNIQ_KEY"] == "01PANIC" {
		var m map[string]int
		m["boom"]++ // a nil map write, as a bug would
	}
	return p.fakeConsumer.Send(ctx, in)
}

func (p panickyBackend) Pop(ctx context.Context, req PopRequest) (PopResult, error) {
	if req.Group == "PANIC" {
		panic("pop bug")
	}
	return p.fakeConsumer.Pop(ctx, req)
}

// TestHandlerPanicKeepsServing: a panic behind an rpc, unary or stream,
// fails that rpc with gRPC INTERNAL (the proxy's GlobalExceptionInterceptor
// answers an exception so) and the broker goes on serving.
func TestHandlerPanicKeepsServing(t *testing.T) {
	f := badInputConsumer()
	f.groups["PANIC"] = Group{}
	s := startServer(t, Config{Backend: panickyBackend{f}, AdvertiseHost: "127.0.0.1"})
	c := v2pb.NewMessagingServiceClient(dial(t, s, "panicky"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{normalMessage("T", "01PANIC", []byte("x"))}}); status.Code(err) != codes.Internal {
		t.Fatalf("send into a panic: %v, want INTERNAL", err)
	}
	rs, err := c.ReceiveMessage(ctx, rreq("T", "PANIC"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Recv(); status.Code(err) != codes.Internal {
		t.Fatalf("receive into a panic: %v, want INTERNAL", err)
	}
	serves(t, c, f)
}
