package broker

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// grpcConsumeBroker starts a broker with the gRPC endpoint, short consumer
// limits (1 s invisible time allowed, no minimum long polling) and topic
// with one queue; it returns a client of the endpoint.
func grpcConsumeBroker(t *testing.T, topic string, opts ...func(*config.Config)) (*Broker, v2pb.MessagingServiceClient) {
	t.Helper()
	return grpcBroker(t, func(cfg *config.Config) {
		cfg.MinInvisibleTimeMillsForRecv, cfg.GrpcClientConsumerMinLongPollingTimeoutMillis = 1000, 0
		for _, o := range opts {
			o(cfg)
		}
	}, 1, map[string]string{topic: ""})
}

// receive runs one ReceiveMessage and returns the status and messages; it
// checks the stream's shape: a status first, then messages (only after
// OK), then the delivery timestamp last.
func receive(t *testing.T, cli v2pb.MessagingServiceClient, req *v2pb.ReceiveMessageRequest) (v2pb.Code, []*v2pb.Message) {
	t.Helper()
	c, msgs, err := receiveStream(cli, req)
	if err != nil {
		t.Fatal(err)
	}
	return c, msgs
}

func receiveStream(cli v2pb.MessagingServiceClient, req *v2pb.ReceiveMessageRequest) (v2pb.Code, []*v2pb.Message, error) {
	return receiveStreamCtx(context.Background(), cli, req)
}

func receiveStreamCtx(ctx context.Context, cli v2pb.MessagingServiceClient, req *v2pb.ReceiveMessageRequest) (v2pb.Code, []*v2pb.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := cli.ReceiveMessage(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	var (
		st   *v2pb.Status
		msgs []*v2pb.Message
		last bool
	)
	for {
		r, err := stream.Recv()
		if err != nil {
			break
		}
		if last {
			return 0, nil, fmt.Errorf("response after the delivery timestamp: %v", r)
		}
		switch c := r.GetContent().(type) {
		case *v2pb.ReceiveMessageResponse_Status:
			if st != nil {
				return 0, nil, fmt.Errorf("second status %v", c.Status)
			}
			st = c.Status
		case *v2pb.ReceiveMessageResponse_Message:
			if st.GetCode() != v2pb.Code_OK {
				return 0, nil, fmt.Errorf("message before an OK status: %v", st)
			}
			msgs = append(msgs, c.Message)
		case *v2pb.ReceiveMessageResponse_DeliveryTimestamp:
			last = true
		}
	}
	if st == nil || !last {
		return 0, nil, fmt.Errorf("stream ended without status (%v) or delivery timestamp (%v)", st, last)
	}
	return st.GetCode(), msgs, nil
}

func receiveReq(topic, group string, invisible, poll time.Duration) *v2pb.ReceiveMessageRequest {
	return &v2pb.ReceiveMessageRequest{
		Group:              &v2pb.Resource{Name: group},
		MessageQueue:       &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: -1},
		FilterExpression:   &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		BatchSize:          16,
		InvisibleDuration:  durationpb.New(invisible),
		LongPollingTimeout: durationpb.New(poll),
	}
}

// TestGrpcReceiveAckRedeliver: messages sent over gRPC are received over
// gRPC with their properties and receipt handles; acked ones do not come
// back, an un-acked one comes back after its invisible time with
// delivery_attempt 2; a ChangeInvisibleDuration answers a handle that acks.
func TestGrpcReceiveAckRedeliver(t *testing.T) {
	t.Parallel() // waits on invisible times
	const topic, group = "GrpcConsume", "GID_GRPC"
	_, cli := grpcConsumeBroker(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Nothing yet: MESSAGE_NOT_FOUND after the long polling.
	start := time.Now()
	if c, _ := receive(t, cli, receiveReq(topic, group, 2*time.Second, 300*time.Millisecond)); c != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("empty receive: %v, want MESSAGE_NOT_FOUND", c)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
		t.Fatalf("empty receive took %v, want about the 300ms long polling", d)
	}

	// A long-polling receive is woken by a send.
	woken := make(chan []*v2pb.Message, 1)
	go func() {
		_, msgs, err := receiveStream(cli, receiveReq(topic, group, 2*time.Second, 5*time.Second))
		if err != nil {
			t.Error(err)
		}
		woken <- msgs
	}()
	time.Sleep(300 * time.Millisecond)
	born := time.UnixMilli(1700000000123)
	ids := []string{"01000000000000000000000011", "01000000000000000000000012", "01000000000000000000000013"}
	sendNormal(ctx, t, cli, topic, born, ids...)
	var got []*v2pb.Message
	select {
	case got = <-woken:
	case <-time.After(8 * time.Second):
		t.Fatal("long-polling receive not answered")
	}
	if len(got) == 0 {
		t.Fatal("long-polling receive woken with no message")
	}
	for len(got) < 3 {
		c, more := receive(t, cli, receiveReq(topic, group, 2*time.Second, 500*time.Millisecond))
		if c != v2pb.Code_OK {
			t.Fatalf("receive: %v, want the rest of the 3 messages (have %d)", c, len(got))
		}
		got = append(got, more...)
	}
	for i, m := range got {
		sp := m.GetSystemProperties()
		sum := md5.Sum(m.GetBody())
		if sp.GetMessageId() != ids[i] || string(m.GetBody()) != "body-"+ids[i] || sp.GetTag() != "TagA" ||
			strings.Join(sp.GetKeys(), ",") != "k1,k2" || m.GetUserProperties()["color"] != "red" || len(m.GetUserProperties()) != 1 ||
			sp.GetBornTimestamp().AsTime().UnixMilli() != born.UnixMilli() || sp.GetQueueOffset() != int64(i) ||
			sp.GetDeliveryAttempt() != 1 || sp.GetReceiptHandle() == "" || sp.GetMessageType() != v2pb.MessageType_NORMAL ||
			sp.GetBodyDigest().GetChecksum() != strings.ToUpper(hex.EncodeToString(sum[:])) || sp.GetStoreHost() == "" ||
			m.GetTopic().GetName() != topic {
			t.Fatalf("message %d: %v", i, m)
		}
	}

	// Ack the first two in one request; change the third's invisible time.
	ack, err := cli.AckMessage(ctx, &v2pb.AckMessageRequest{
		Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic},
		Entries: []*v2pb.AckMessageEntry{
			{MessageId: ids[0], ReceiptHandle: got[0].GetSystemProperties().GetReceiptHandle()},
			{MessageId: ids[1], ReceiptHandle: got[1].GetSystemProperties().GetReceiptHandle()},
			{MessageId: "x", ReceiptHandle: "not a handle"},
		},
	})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_MULTIPLE_RESULTS || len(ack.GetEntries()) != 3 ||
		ack.GetEntries()[0].GetStatus().GetCode() != v2pb.Code_OK || ack.GetEntries()[1].GetStatus().GetCode() != v2pb.Code_OK ||
		ack.GetEntries()[2].GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE {
		t.Fatalf("AckMessage: %v %v", ack, err)
	}
	ch, err := cli.ChangeInvisibleDuration(ctx, &v2pb.ChangeInvisibleDurationRequest{
		Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic}, MessageId: ids[2],
		ReceiptHandle: got[2].GetSystemProperties().GetReceiptHandle(), InvisibleDuration: durationpb.New(time.Second),
	})
	if err != nil || ch.GetStatus().GetCode() != v2pb.Code_OK || ch.GetReceiptHandle() == "" ||
		ch.GetReceiptHandle() == got[2].GetSystemProperties().GetReceiptHandle() {
		t.Fatalf("ChangeInvisibleDuration: %v %v", ch, err)
	}
	// The old handle no longer acks.
	old, err := cli.AckMessage(ctx, &v2pb.AckMessageRequest{
		Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic},
		Entries: []*v2pb.AckMessageEntry{{MessageId: ids[2], ReceiptHandle: got[2].GetSystemProperties().GetReceiptHandle()}},
	})
	if err != nil || old.GetStatus().GetCode() == v2pb.Code_OK {
		t.Fatalf("ack with the handle ChangeInvisibleDuration replaced: %v %v, want a failure", old, err)
	}

	// The third comes back (attempt 2) once invisible, and only it.
	deadline := time.Now().Add(15 * time.Second)
	var again []*v2pb.Message
	for len(again) == 0 && time.Now().Before(deadline) {
		_, again = receive(t, cli, receiveReq(topic, group, 2*time.Second, time.Second))
	}
	if len(again) != 1 || again[0].GetSystemProperties().GetMessageId() != ids[2] ||
		again[0].GetSystemProperties().GetDeliveryAttempt() != 2 || string(again[0].GetBody()) != "body-"+ids[2] {
		t.Fatalf("redelivered %v, want %s alone with delivery attempt 2", again, ids[2])
	}
	ack, err = cli.AckMessage(ctx, &v2pb.AckMessageRequest{
		Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic},
		Entries: []*v2pb.AckMessageEntry{{MessageId: ids[2], ReceiptHandle: again[0].GetSystemProperties().GetReceiptHandle()}},
	})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack of the redelivered message: %v %v", ack, err)
	}
	if c, msgs := receive(t, cli, receiveReq(topic, group, 2*time.Second, 2500*time.Millisecond)); c != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after acking everything: %v %v, want MESSAGE_NOT_FOUND", c, msgs)
	}
}

// TestGrpcConsumerRegistered: a 5.x consumer's heartbeat registers it with
// its group and the subscriptions of its settings, as a remoting
// consumer's (what consumerConnection lists); NotifyClientTermination
// removes it.
func TestGrpcConsumerRegistered(t *testing.T) {
	const topic, group = "GrpcRegistered", "GID_GRPC_REG"
	b, cli := grpcConsumeBroker(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	simple := v2pb.ClientType_SIMPLE_CONSUMER
	ctx = consumerSettings(t, ctx, cli, "client-1", simple, group, topic, "TagA||TagB")
	hb, err := cli.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: group}, ClientType: simple})
	if err != nil || hb.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("Heartbeat: %v %v", hb, err)
	}
	consumers := b.msg.clients.Consumers()
	if ids := consumers.ClientIDs(group); len(ids) != 1 || ids[0] != "client-1" {
		t.Fatalf("group %s lists clients %v, want client-1", group, ids)
	}
	info, ok := consumers.FindChannel(group, "client-1")
	if !ok || info.Language != remoting.LangJava || remoting.VersionDesc(info.Version) != "V5_2_0" {
		t.Fatalf("client-1 registered as %+v (found %v), want JAVA V5_2_0", info, ok)
	}
	if sd, ok := consumers.FindSubscription(group, topic); !ok || sd.SubString != "TagA||TagB" {
		t.Fatalf("subscription of %s: %+v (found %v)", topic, sd, ok)
	}
	// A second heartbeat keeps one registration.
	if hb, err := cli.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: group}, ClientType: simple}); err != nil || hb.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("Heartbeat: %v %v", hb, err)
	}
	if ids := consumers.ClientIDs(group); len(ids) != 1 {
		t.Fatalf("after two heartbeats: clients %v", ids)
	}
	// Bad heartbeats are refused, nothing registered.
	if hb, _ := cli.Heartbeat(ctx, &v2pb.HeartbeatRequest{ClientType: simple}); hb.GetStatus().GetCode() != v2pb.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("heartbeat without a group: %v", hb)
	}
	if hb, _ := cli.Heartbeat(metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", ""), &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: "GID_OTHER"}, ClientType: simple}); hb.GetStatus().GetCode() != v2pb.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("heartbeat without a client id: %v", hb)
	}
	if n, err := cli.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{Group: &v2pb.Resource{Name: group}}); err != nil || n.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", n, err)
	}
	if ids := consumers.ClientIDs(group); len(ids) != 0 {
		t.Fatalf("after NotifyClientTermination: clients %v", ids)
	}
}

// TestGrpcReceiveEndsAtShutdown: a receive waiting in long polling is
// answered when the broker stops, so the stop does not wait for the poll.
func TestGrpcReceiveEndsAtShutdown(t *testing.T) {
	const topic, group = "GrpcStop", "GID_GRPC_STOP"
	b, cli := grpcConsumeBroker(t, topic)
	done := make(chan v2pb.Code, 1)
	go func() {
		c, _, err := receiveStream(cli, receiveReq(topic, group, 2*time.Second, 8*time.Second))
		if err != nil {
			c = v2pb.Code_CODE_UNSPECIFIED
		}
		done <- c
	}()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Shutdown took %v with a receive in long polling", d)
	}
	select {
	case c := <-done:
		if c != v2pb.Code_MESSAGE_NOT_FOUND {
			t.Fatalf("receive ended with %v, want MESSAGE_NOT_FOUND", c)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("receive not ended by the stop")
	}
}

// TestGrpcReceiveFIFO: a FIFO group (consumeMessageOrderly) pops orderly:
// the messages carry their message group, the queue gives nothing more
// until they are acked or invisible again, and they come back in order
// with delivery attempt 2; a remoting send is received over gRPC.
func TestGrpcReceiveFIFO(t *testing.T) {
	t.Parallel() // waits on invisible times
	const topic, group = "GrpcFifo", "GID_GRPC_FIFO"
	b, cli := grpcConsumeBroker(t, topic)
	sg := subscription.NewGroupConfig(group)
	sg.ConsumeMessageOrderly = true
	if err := b.msg.subs.Update(sg); err != nil {
		t.Fatal(err)
	}
	invoke := invoker(t, b)
	for i := range 3 {
		ext := remotingtest.SendExt(t, "pg", topic, 0, message.PropertyShardingKey, "g1", message.PropertyTags, "TagF",
			message.PropertyUniqClientMessageIDKeyIdx, fmt.Sprintf("0100000000000000000000F00%d", i))
		if resp := invoke(code.SendMessage, ext, []byte(fmt.Sprintf("fifo-%d", i))); resp.Code != code.Success {
			t.Fatalf("send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	// All three in the consume queue first: a send is answered before its
	// dispatch, and an orderly pop of the first two alone holds the queue
	// until they come back (seen under load: 5 messages received).
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := b.Store().MaxOffset(topic, 0); n < 3 {
			return fmt.Errorf("%d of 3 messages dispatched", n)
		}
		return nil
	})
	var got []*v2pb.Message
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		_, msgs := receive(t, cli, receiveReq(topic, group, time.Second, 500*time.Millisecond))
		got = append(got, msgs...)
	}
	check := func(msgs []*v2pb.Message, attempt int32) {
		t.Helper()
		if len(msgs) != 3 {
			t.Fatalf("received %d messages, want 3: %v", len(msgs), msgs)
		}
		for i, m := range msgs {
			sp := m.GetSystemProperties()
			if string(m.GetBody()) != fmt.Sprintf("fifo-%d", i) || sp.GetMessageGroup() != "g1" || sp.GetMessageType() != v2pb.MessageType_FIFO ||
				sp.GetDeliveryAttempt() != attempt || sp.GetTag() != "TagF" {
				t.Fatalf("message %d: %v, want fifo-%d of group g1 (FIFO), attempt %d", i, m, i, attempt)
			}
		}
	}
	check(got, 1)
	// Blocked while they are in flight.
	if c, msgs := receive(t, cli, receiveReq(topic, group, time.Second, 300*time.Millisecond)); c != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("receive while the FIFO queue is in flight: %v %v", c, msgs)
	}
	// Not acked: back in order after the invisible time, attempt 2.
	var again []*v2pb.Message
	deadline = time.Now().Add(8 * time.Second)
	for len(again) < 3 && time.Now().Before(deadline) {
		_, msgs := receive(t, cli, receiveReq(topic, group, 5*time.Second, time.Second))
		again = append(again, msgs...)
	}
	check(again, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var entries []*v2pb.AckMessageEntry
	for _, m := range again {
		entries = append(entries, &v2pb.AckMessageEntry{MessageId: m.GetSystemProperties().GetMessageId(), ReceiptHandle: m.GetSystemProperties().GetReceiptHandle()})
	}
	ack, err := cli.AckMessage(ctx, &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic}, Entries: entries})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack: %v %v", ack, err)
	}
	if c, msgs := receive(t, cli, receiveReq(topic, group, time.Second, 1500*time.Millisecond)); c != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after acking the FIFO messages: %v %v", c, msgs)
	}
}

// TestGrpcDeadLetter: a message already delivered retryMaxTimes+1 times is
// not received again but moved to %DLQ%group (as the proxy's receive
// filter); ForwardMessageToDeadLetterQueue moves a received one at once.
func TestGrpcDeadLetter(t *testing.T) {
	t.Parallel() // waits on invisible times
	const topic, group = "GrpcDlq", "GID_GRPC_DLQ"
	b, cli := grpcConsumeBroker(t, topic)
	sg := subscription.NewGroupConfig(group)
	sg.RetryMaxTimes = 1 // two deliveries
	if err := b.msg.subs.Update(sg); err != nil {
		t.Fatal(err)
	}
	invoke := invoker(t, b)
	for i := range 2 {
		ext := remotingtest.SendExt(t, "pg", topic, 0, message.PropertyUniqClientMessageIDKeyIdx, fmt.Sprintf("0100000000000000000000D00%d", i))
		if resp := invoke(code.SendMessage, ext, []byte(fmt.Sprintf("dlq-%d", i))); resp.Code != code.Success {
			t.Fatalf("send %d: %d %s", i, resp.Code, resp.Remark)
		}
	}
	dlq := protocol.DLQTopic(group)
	inDLQ := func() int64 {
		var n int64
		for q := int32(0); q < 4; q++ {
			n += max(b.Store().MaxOffset(dlq, q), 0)
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// dlq-1 is forwarded by the client at its first delivery; dlq-0 is
	// never acked: delivered twice, then dead-lettered by the receive.
	attempts := map[string][]int32{}
	deadline := time.Now().Add(12 * time.Second)
	for inDLQ() < 2 && time.Now().Before(deadline) {
		_, msgs := receive(t, cli, receiveReq(topic, group, time.Second, 500*time.Millisecond))
		for _, m := range msgs {
			body := string(m.GetBody())
			attempts[body] = append(attempts[body], m.GetSystemProperties().GetDeliveryAttempt())
			if body == "dlq-1" {
				r, err := cli.ForwardMessageToDeadLetterQueue(ctx, &v2pb.ForwardMessageToDeadLetterQueueRequest{
					Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic},
					ReceiptHandle: m.GetSystemProperties().GetReceiptHandle(), MessageId: m.GetSystemProperties().GetMessageId(),
					DeliveryAttempt: m.GetSystemProperties().GetDeliveryAttempt(), MaxDeliveryAttempts: 2,
				})
				if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
					t.Fatalf("ForwardMessageToDeadLetterQueue: %v %v", r, err)
				}
			}
		}
	}
	if fmt.Sprint(attempts["dlq-0"]) != "[1 2]" || fmt.Sprint(attempts["dlq-1"]) != "[1]" {
		t.Fatalf("delivery attempts %v, want dlq-0 twice (1, 2) and dlq-1 once", attempts)
	}
	if n := inDLQ(); n != 2 {
		t.Fatalf("%d messages in %s, want 2", n, dlq)
	}
	// Nothing comes back from the topic.
	if c, msgs := receive(t, cli, receiveReq(topic, group, time.Second, 1500*time.Millisecond)); c != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after dead-lettering: %v %v", c, msgs)
	}
}

// TestGrpcAutoRenew: the messages of an auto_renew receive (a push
// consumer's) are popped for renewSliceTimeMillis and renewed until acked:
// they do not come back after the slice, the ack names them by the handle
// first received; when the client says goodbye an un-acked one comes back
// within seconds.
func TestGrpcAutoRenew(t *testing.T) {
	t.Parallel() // waits on renewals
	const topic, group = "GrpcRenew", "GID_GRPC_RENEW"
	_, cli := grpcConsumeBroker(t, topic, func(c *config.Config) {
		// A renewal 1.4 s ahead of a 2 s slice: late by up to 1.4 s on a
		// loaded machine, it still comes in time.
		c.RenewSliceTimeMillis, c.RenewAheadTimeMillis = 2000, 1400
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "renew-client")
	// The group starts at the queue's start when its first pop finds it new.
	if c, _ := receive(t, cli, receiveReq(topic, group, 2*time.Second, 100*time.Millisecond)); c != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("first receive: %v", c)
	}
	for _, id := range []string{"01000000000000000000000R01", "01000000000000000000000R02"} {
		resp, err := cli.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
			Topic: &v2pb.Resource{Name: topic}, SystemProperties: &v2pb.SystemProperties{MessageId: id}, Body: []byte(id),
		}}})
		if err != nil || resp.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("SendMessage: %v %v", resp, err)
		}
	}
	req := receiveReq(topic, group, 0, 500*time.Millisecond)
	req.InvisibleDuration, req.AutoRenew = nil, true
	var got []*v2pb.Message
	for len(got) < 2 && ctx.Err() == nil {
		_, msgs, err := receiveStreamCtx(ctx, cli, req)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msgs...)
	}
	if len(got) != 2 || got[0].GetSystemProperties().GetInvisibleDuration().AsDuration() != 2*time.Second {
		t.Fatalf("auto_renew receive: %v, want 2 messages invisible for the 2 s slice", got)
	}
	// Two and a half slices later nothing came back: the handles were
	// renewed.
	time.Sleep(5 * time.Second)
	if c, msgs := receive(t, cli, receiveReq(topic, group, 2*time.Second, 300*time.Millisecond)); c != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after the slices: %v %v, want the renewed messages still invisible", c, msgs)
	}
	ack, err := cli.AckMessage(ctx, &v2pb.AckMessageRequest{
		Group: &v2pb.Resource{Name: group}, Topic: &v2pb.Resource{Name: topic},
		Entries: []*v2pb.AckMessageEntry{{MessageId: got[0].GetSystemProperties().GetMessageId(), ReceiptHandle: got[0].GetSystemProperties().GetReceiptHandle()}},
	})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack by the first handle of a renewed message: %v %v", ack, err)
	}
	if n, err := cli.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{Group: &v2pb.Resource{Name: group}}); err != nil || n.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", n, err)
	}
	var again []*v2pb.Message
	deadline := time.Now().Add(6 * time.Second)
	for len(again) == 0 && time.Now().Before(deadline) {
		_, again = receive(t, cli, receiveReq(topic, group, 2*time.Second, 500*time.Millisecond))
	}
	if len(again) != 1 || again[0].GetSystemProperties().GetMessageId() != got[1].GetSystemProperties().GetMessageId() ||
		again[0].GetSystemProperties().GetDeliveryAttempt() != 2 {
		t.Fatalf("after the client left: %v, want %s back with attempt 2", again, got[1].GetSystemProperties().GetMessageId())
	}
}

// consumerSettings opens a Telemetry stream for client id of a Java 5.2.0
// client and sends its settings: a consumer of type typ in group,
// subscribed to topic with a TAG expression; it returns the context that
// carries the client's metadata.
func consumerSettings(t *testing.T, ctx context.Context, cli v2pb.MessagingServiceClient, id string, typ v2pb.ClientType, group, topic, expr string) context.Context {
	t.Helper()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", id, "x-mq-language", "JAVA", "x-mq-client-version", "5.2.0")
	stream, err := cli.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &typ,
		PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group: &v2pb.Resource{Name: group},
			Subscriptions: []*v2pb.SubscriptionEntry{{
				Topic: &v2pb.Resource{Name: topic}, Expression: &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: expr},
			}},
		}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestGrpcConsumerRegistrationTypes: each 5.x consumer type registers with
// the consume type and message model the proxy gives it (Apache 5.5.0
// ClientActivity.buildConsumeType / buildMessageModel), which
// consumerConnection, consumerProgress and the consume_mode metric show; a
// lite group takes only lite consumers subscribed to its bind topic and a
// lite consumer only a lite group (ClientProcessor.validateLiteMode and
// validateLiteSubTopic: the proxy's codes and messages), refused
// registrations leave nothing behind; rejectPullConsumerEnable, which
// refuses remoting pull consumers' heartbeats, does not refuse a gRPC
// SimpleConsumer (the proxy registers past it), while a remoting
// CONSUME_ACTIVELY heartbeat is still skipped.
func TestGrpcConsumerRegistrationTypes(t *testing.T) {
	const topic, liteParent = "GrpcRegTypes", "GrpcRegLite"
	b, cli := grpcBroker(t, func(cfg *config.Config) {
		cfg.EnableLmq, cfg.EnableMultiDispatch = true, true
		cfg.RejectPullConsumerEnable = true
	}, 1, map[string]string{topic: "", liteParent: "LITE"})
	const liteGroup = "GID_REG_LITE"
	lg := subscription.NewGroupConfig(liteGroup)
	lg.Attributes = map[string]string{"+lite.bind.topic": liteParent}
	if err := b.msg.subs.Update(lg); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name               string
		typ                v2pb.ClientType
		group, subTopic    string
		want               v2pb.Code
		remark             string
		consumeType, model string
	}{
		{"simple", v2pb.ClientType_SIMPLE_CONSUMER, "GID_REG_0", topic, v2pb.Code_OK, "", "CONSUME_ACTIVELY", "CLUSTERING"},
		{"push", v2pb.ClientType_PUSH_CONSUMER, "GID_REG_1", topic, v2pb.Code_OK, "", "CONSUME_PASSIVELY", "CLUSTERING"},
		{"pull", v2pb.ClientType_PULL_CONSUMER, "GID_REG_2", topic, v2pb.Code_OK, "", "CONSUME_ACTIVELY", "CLUSTERING"},
		{"lite push", v2pb.ClientType_LITE_PUSH_CONSUMER, liteGroup, liteParent, v2pb.Code_OK, "", "CONSUME_PASSIVELY", "LITE_SELECTIVE"},
		{"lite simple", v2pb.ClientType_LITE_SIMPLE_CONSUMER, liteGroup, liteParent, v2pb.Code_OK, "", "CONSUME_ACTIVELY", "LITE_SELECTIVE"},
		{"lite push, regular group", v2pb.ClientType_LITE_PUSH_CONSUMER, "GID_REG_5", liteParent, v2pb.Code_ILLEGAL_CONSUMER_GROUP,
			"regular group cannot use LITE mode: GID_REG_5", "", ""},
		{"simple, lite group", v2pb.ClientType_SIMPLE_CONSUMER, liteGroup, liteParent, v2pb.Code_ILLEGAL_CONSUMER_GROUP,
			"lite group must use LITE mode: " + liteGroup, "", ""},
		{"lite push, another topic", v2pb.ClientType_LITE_PUSH_CONSUMER, liteGroup, topic, v2pb.Code_ILLEGAL_TOPIC,
			"lite group " + liteGroup + " is expected to bind topic " + liteParent + ", but actual is " + topic, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("client-reg-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ctx = consumerSettings(t, ctx, cli, id, tc.typ, tc.group, tc.subTopic, "*")
			hb, err := cli.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: tc.group}, ClientType: tc.typ})
			if err != nil || hb.GetStatus().GetCode() != tc.want || tc.remark != "" && hb.GetStatus().GetMessage() != tc.remark {
				t.Fatalf("Heartbeat: %v %v, want %v %q", hb, err, tc.want, tc.remark)
			}
			info, _ := b.msg.clients.Consumers().FindChannel(tc.group, id)
			if tc.want != v2pb.Code_OK {
				if info.ClientID != "" {
					t.Fatalf("a refused heartbeat registered %+v", info)
				}
				return
			}
			g, ok := b.msg.clients.Consumers().GroupInfo(tc.group)
			if !ok || info.ClientID != id {
				t.Fatalf("group %s: %+v (found %v), want %s in it", tc.group, g, ok, id)
			}
			if g.ConsumeType != tc.consumeType || g.MessageModel != tc.model {
				t.Fatalf("registered as %s / %s, want %s / %s", g.ConsumeType, g.MessageModel, tc.consumeType, tc.model)
			}
			// Leave the group to the next case (a group's type is its
			// latest registration's).
			if n, err := cli.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{Group: &v2pb.Resource{Name: tc.group}}); err != nil || n.GetStatus().GetCode() != v2pb.Code_OK {
				t.Fatalf("NotifyClientTermination: %v %v", n, err)
			}
		})
	}

	// A remoting pull consumer's heartbeat is still skipped (the broker
	// answers it, registering nothing: Apache's ClientManageProcessor).
	const pullGroup = "GID_REG_REMOTING_PULL"
	hb, _ := json.Marshal(map[string]any{
		"clientID": "remoting-pull",
		"consumerDataSet": []map[string]any{{
			"groupName": pullGroup, "consumeType": "CONSUME_ACTIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": []any{},
		}},
		"producerDataSet": []any{},
	})
	if resp := invoker(t, b)(code.HeartBeat, nil, hb); resp.Code != code.Success {
		t.Fatalf("remoting heartbeat: %d %s", resp.Code, resp.Remark)
	}
	if info, ok := b.msg.clients.Consumers().GroupInfo(pullGroup); ok && len(info.Channels) > 0 {
		t.Fatalf("a remoting CONSUME_ACTIVELY heartbeat registered %+v under rejectPullConsumerEnable", info)
	}
}

// TestGrpcConsumerUnknownGroup: without autoCreateSubscriptionGroup, a 5.x
// consumer's heartbeat for a group that does not exist is refused as the
// proxy refuses it (ClientProcessor.getGroupOrException), and registers
// nothing.
func TestGrpcConsumerUnknownGroup(t *testing.T) {
	const topic, group = "GrpcRegUnknown", "GID_REG_UNKNOWN"
	b, cli := grpcConsumeBroker(t, topic, func(cfg *config.Config) { cfg.AutoCreateSubscriptionGroup = false })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	simple := v2pb.ClientType_SIMPLE_CONSUMER
	ctx = consumerSettings(t, ctx, cli, "client-unknown", simple, group, topic, "*")
	hb, err := cli.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: group}, ClientType: simple})
	if err != nil || hb.GetStatus().GetCode() != v2pb.Code_ILLEGAL_CONSUMER_GROUP || hb.GetStatus().GetMessage() != "group not found: "+group {
		t.Fatalf("Heartbeat: %v %v, want ILLEGAL_CONSUMER_GROUP \"group not found: %s\"", hb, err, group)
	}
	if ids := b.msg.clients.Consumers().ClientIDs(group); len(ids) != 0 {
		t.Fatalf("group %s lists %v after a refused heartbeat", group, ids)
	}
}
