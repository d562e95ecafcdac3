package e2e

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// rawProto sends a []byte request as it is (malformed protobuf) and
// decodes answers as protobuf.
type rawProto struct{}

func (rawProto) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.([]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawProto) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawProto) Name() string { return "proto" }

// TestGrpcBadInputKeepsServing: the broker process's gRPC endpoint gets
// bad input of every kind (malformed protobuf, no client id, unknown
// topic and group, a wrong message type, an oversize body, bad tags, keys
// and property keys, bad settings, heartbeats without settings, 300 idle
// Telemetry streams) and answers each with the proxy's code (an ack for
// an unknown group excepted: docs/compatibility.md); then a message acked
// before is not delivered again, one sent before and one sent after are
// each received once: the broker kept serving and lost nothing.
func TestGrpcBadInputKeepsServing(t *testing.T) {
	t.Parallel() // waits on a long polling and an invisible time
	const topic, fifo, group = "GrpcBadT", "GrpcBadF", "GID_GRPC_BAD"
	c, endpoint := startGrpcCluster(t, map[string]string{
		"maxMessageSize": "65536", "autoCreateSubscriptionGroup": "false",
		"minInvisibleTimeMillsForRecv": "1000", "grpcClientConsumerMinLongPollingTimeoutMillis": "500",
	})
	addr := c.Brokers()[0].Addr()
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", fifo, "-r", "1", "-w", "1", "-a", "+message.type=FIFO")
	mqadmin(t, c, "updateSubGroup", "-b", addr, "-g", group)

	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cli := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := func(id string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", id, "x-mq-language", "GOLANG", "x-mq-client-version", "5.1.0")
	}
	good := as("badinput-good")
	res := func(n string) *v2pb.Resource { return &v2pb.Resource{Name: n} }

	// The good client: settings, then the group's first receive (the
	// group starts at the queue's end when it is new).
	ts, err := cli.Telemetry(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: v2pb.ClientType_SIMPLE_CONSUMER.Enum(), PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group: res(group), Subscriptions: []*v2pb.SubscriptionEntry{{Topic: res(topic), Expression: &v2pb.FilterExpression{Expression: "*"}}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := ts.Recv(); err != nil || got.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("settings: %v %v", got, err)
	}
	if hb, err := cli.Heartbeat(good, &v2pb.HeartbeatRequest{Group: res(group), ClientType: v2pb.ClientType_SIMPLE_CONSUMER}); err != nil || hb.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("heartbeat: %v %v", hb, err)
	}
	receiveOnce := func(ctx context.Context, invisible time.Duration) (v2pb.Code, []*v2pb.Message) {
		t.Helper()
		rs, err := cli.ReceiveMessage(ctx, &v2pb.ReceiveMessageRequest{
			Group: res(group), MessageQueue: &v2pb.MessageQueue{Topic: res(topic), Id: -1},
			FilterExpression: &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"}, BatchSize: 16,
			InvisibleDuration: durationpb.New(invisible), LongPollingTimeout: durationpb.New(time.Second),
		})
		if err != nil {
			t.Fatal(err)
		}
		var code v2pb.Code
		var msgs []*v2pb.Message
		for {
			r, err := rs.Recv()
			if err != nil {
				break
			}
			if st := r.GetStatus(); st != nil {
				code = st.GetCode()
			}
			if m := r.GetMessage(); m != nil {
				msgs = append(msgs, m)
			}
		}
		return code, msgs
	}
	if code, msgs := receiveOnce(good, time.Second); code != v2pb.Code_MESSAGE_NOT_FOUND || len(msgs) != 0 {
		t.Fatalf("first receive of the new group: %v with %d messages", code, len(msgs))
	}
	message := func(topic, id string, size int) *v2pb.Message {
		body := []byte(id)
		if size > 0 {
			body = make([]byte, size)
		}
		return &v2pb.Message{Topic: res(topic), Body: body, UserProperties: map[string]string{},
			SystemProperties: &v2pb.SystemProperties{MessageId: id, Tag: proto.String("TagA"), MessageType: v2pb.MessageType_NORMAL}}
	}
	send := func(ctx context.Context, m *v2pb.Message) *v2pb.Status {
		t.Helper()
		r, err := cli.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}})
		if err != nil {
			t.Fatalf("send %s: %v", m.GetSystemProperties().GetMessageId(), err)
		}
		if len(r.GetEntries()) == 1 {
			return r.GetEntries()[0].GetStatus()
		}
		return r.GetStatus()
	}
	for _, id := range []string{"01BADINPUTACKED", "01BADINPUTBEFORE"} {
		if st := send(good, message(topic, id, 0)); st.GetCode() != v2pb.Code_OK {
			t.Fatalf("send %s: %v", id, st)
		}
	}
	// Receive both; ack the first only, the second stays un-acked until
	// its invisible second ends.
	var acked, beforeHandle string
	received := map[string]bool{}
	for len(received) < 2 && ctx.Err() == nil {
		code, msgs := receiveOnce(good, time.Second)
		if code != v2pb.Code_OK && code != v2pb.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("receive before the bad input: %v", code)
		}
		for _, m := range msgs {
			id := m.GetSystemProperties().GetMessageId()
			received[id] = true
			if id == "01BADINPUTBEFORE" {
				// An ack naming an unknown group acks nothing of this
				// one: the message comes back after the bad input. The
				// broker knows the handle names no pop of that group
				// (NO_MESSAGE: INVALID_RECEIPT_HANDLE; Apache's broker
				// records such an ack blindly and the proxy answers OK).
				beforeHandle = m.GetSystemProperties().GetReceiptHandle()
				r, err := cli.AckMessage(good, &v2pb.AckMessageRequest{Group: res("GID_GRPC_BAD_UNKNOWN"), Topic: res(topic),
					Entries: []*v2pb.AckMessageEntry{{MessageId: id, ReceiptHandle: beforeHandle}}})
				if err != nil || r.GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE {
					t.Errorf("ack for an unknown group: %v %v, want INVALID_RECEIPT_HANDLE", r, err)
				}
			}
			if id == "01BADINPUTACKED" {
				r, err := cli.AckMessage(good, &v2pb.AckMessageRequest{Group: res(group), Topic: res(topic),
					Entries: []*v2pb.AckMessageEntry{{MessageId: id, ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()}}})
				if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
					t.Fatalf("ack: %v %v", r, err)
				}
				acked = id
			}
		}
	}
	if acked == "" || beforeHandle == "" || !received["01BADINPUTBEFORE"] {
		t.Fatalf("received %v before the bad input", received)
	}
	ackedAt := time.Now()

	// Bad input.
	for _, b := range [][]byte{{0xff, 0xff, 0xff}, {0x0a, 0x7f, 0x01}} {
		var resp v2pb.SendMessageResponse
		if err := conn.Invoke(good, v2pb.MessagingService_SendMessage_FullMethodName, b, &resp, grpc.ForceCodecV2(rawProto{})); status.Code(err) != codes.Internal {
			t.Errorf("malformed SendMessage % x: %v, want INTERNAL", b, err)
		}
		st, err := conn.NewStream(good, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, v2pb.MessagingService_Telemetry_FullMethodName, grpc.ForceCodecV2(rawProto{}))
		if err != nil {
			t.Fatal(err)
		}
		_ = st.SendMsg(b)
		if err := st.RecvMsg(&v2pb.TelemetryCommand{}); status.Code(err) != codes.Internal {
			t.Errorf("malformed Telemetry command % x: %v, want INTERNAL", b, err)
		}
	}
	if st := send(ctx, message(topic, "01NOCLIENTID", 0)); st.GetCode() != v2pb.Code_CLIENT_ID_REQUIRED {
		t.Errorf("send without a client id: %v", st)
	}
	if code, _ := receiveOnce(ctx, time.Second); code != v2pb.Code_CLIENT_ID_REQUIRED {
		t.Errorf("receive without a client id: %v", code)
	}
	tag := func(m *v2pb.Message, tag string) *v2pb.Message { m.SystemProperties.Tag = &tag; return m }
	keys := func(m *v2pb.Message, keys ...string) *v2pb.Message { m.SystemProperties.Keys = keys; return m }
	prop := func(m *v2pb.Message, k string) *v2pb.Message { m.UserProperties[k] = "v"; return m }
	for _, tc := range []struct {
		name string
		msg  *v2pb.Message
		code v2pb.Code
	}{
		{"unknown topic", message("GrpcBadMissing", "01B1", 0), v2pb.Code_TOPIC_NOT_FOUND},
		{"system topic", message("RMQ_SYS_TRANS_HALF_TOPIC", "01B2", 0), v2pb.Code_ILLEGAL_TOPIC},
		{"NORMAL to a FIFO topic", message(fifo, "01B3", 0), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"body over maxMessageSize", message(topic, "01B4", 65537), v2pb.Code_MESSAGE_BODY_TOO_LARGE},
		{"tag with |", tag(message(topic, "01B5", 0), "a|b"), v2pb.Code_ILLEGAL_MESSAGE_TAG},
		{"blank key", keys(message(topic, "01B6", 0), " "), v2pb.Code_ILLEGAL_MESSAGE_KEY},
		{"system property key", prop(message(topic, "01B7", 0), "UNIQ_KEY"), v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"control character in a property key", prop(message(topic, "01B8", 0), "k\x01"), v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
	} {
		if st := send(good, tc.msg); st.GetCode() != tc.code {
			t.Errorf("%s: %v, want %v", tc.name, st, tc.code)
		}
	}
	rs, err := cli.ReceiveMessage(good, &v2pb.ReceiveMessageRequest{Group: res("GID_GRPC_BAD_UNKNOWN"), MessageQueue: &v2pb.MessageQueue{Topic: res(topic), Id: -1},
		FilterExpression: &v2pb.FilterExpression{Expression: "*"}, BatchSize: 1, InvisibleDuration: durationpb.New(time.Second), LongPollingTimeout: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := rs.Recv(); err != nil || r.GetStatus().GetCode() != v2pb.Code_CONSUMER_GROUP_NOT_FOUND {
		t.Errorf("receive for an unknown group: %v %v", r, err)
	}
	if r, err := cli.AckMessage(good, &v2pb.AckMessageRequest{Group: res(group), Topic: res("GrpcBadMissing"),
		Entries: []*v2pb.AckMessageEntry{{MessageId: "m", ReceiptHandle: "h"}}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_TOPIC_NOT_FOUND {
		t.Errorf("ack on an unknown topic: %v %v", r, err)
	}
	if hb, err := cli.Heartbeat(as("badinput-nosettings"), &v2pb.HeartbeatRequest{Group: res(group), ClientType: v2pb.ClientType_PUSH_CONSUMER}); err != nil ||
		hb.GetStatus().GetCode() != v2pb.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Errorf("heartbeat without settings: %v %v", hb, err)
	}
	bad, err := cli.Telemetry(as("badinput-badsettings"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{ClientType: v2pb.ClientType_PRODUCER.Enum()}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := bad.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("settings without publishing: %v %v, want INVALID_ARGUMENT", r, err)
	}
	// Idle Telemetry streams, some with settings, some without.
	idleCtx, stopIdle := context.WithCancel(ctx)
	for i := 0; i < 300; i++ {
		s, err := cli.Telemetry(metadata.AppendToOutgoingContext(idleCtx, "x-mq-client-id", "badinput-idle-"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			continue
		}
		if err := s.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
			ClientType: v2pb.ClientType_PRODUCER.Enum(), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{res(topic)}}}}}}); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Recv(); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("idle stream %d settings: %v %v", i, r, err)
		}
	}

	// Still serving, nothing lost: the acked message does not come back
	// (its invisible second is over), the un-acked one and one sent now
	// come once each.
	start := time.Now()
	if st := send(good, message(topic, "01BADINPUTAFTER", 0)); st.GetCode() != v2pb.Code_OK {
		t.Fatalf("send after the bad input: %v", st)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a send took %v beside the idle streams", d)
	}
	stopIdle()
	time.Sleep(time.Until(ackedAt.Add(1500 * time.Millisecond)))
	var got []string
	for deadline := time.Now().Add(15 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		code, msgs := receiveOnce(good, 30*time.Second)
		if code != v2pb.Code_OK && code != v2pb.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("receive after the bad input: %v", code)
		}
		for _, m := range msgs {
			got = append(got, m.GetSystemProperties().GetMessageId())
			r, err := cli.AckMessage(good, &v2pb.AckMessageRequest{Group: res(group), Topic: res(topic),
				Entries: []*v2pb.AckMessageEntry{{MessageId: m.GetSystemProperties().GetMessageId(), ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()}}})
			if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
				t.Fatalf("ack after the bad input: %v %v", r, err)
			}
		}
	}
	sort.Strings(got)
	if strings.Join(got, " ") != "01BADINPUTAFTER 01BADINPUTBEFORE" {
		t.Fatalf("received %v after the bad input, want 01BADINPUTAFTER and 01BADINPUTBEFORE once each (and not the acked %s)", got, acked)
	}
}
