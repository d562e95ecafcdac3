package grpcserver

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeLite is a consumer Backend with the lite rpcs: it records the calls
// and answers what the test set.
type fakeLite struct {
	*fakeConsumer
	syncs     []LiteSync
	sync      Result
	popsLite  []PopRequest
	popLite   PopResult
	liteCalls []string // "ack lite handle", "change lite handle", "dlq lite handle"
}

var _ LiteConsumer = (*fakeLite)(nil)

func (f *fakeLite) SyncLite(_ context.Context, s LiteSync) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs = append(f.syncs, s)
	return f.sync, nil
}

func (f *fakeLite) PopLite(_ context.Context, req PopRequest) (PopResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.popsLite = append(f.popsLite, req)
	return f.popLite, nil
}

func (f *fakeLite) record(op, lite string, r Receipt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.liteCalls = append(f.liteCalls, op+" "+lite+" "+r.Handle)
}

func (f *fakeLite) AckLite(_ context.Context, _, _, lite string, r Receipt) (Result, error) {
	f.record("ack", lite, r)
	return f.result, nil
}

func (f *fakeLite) ChangeInvisibleLite(_ context.Context, _, _, lite string, r Receipt, _ time.Duration) (string, Result, error) {
	f.record("change", lite, r)
	return "renewed", f.result, nil
}

func (f *fakeLite) DeadLetterLite(_ context.Context, _, _, lite, _ string, r Receipt) (Result, error) {
	f.record("dlq", lite, r)
	return f.result, nil
}

func (f *fakeLite) LiteLimits(string) LiteLimits { return LiteLimits{Quota: 7, MaxLiteTopicSize: 10} }

func newFakeLite() *fakeLite {
	f := &fakeLite{fakeConsumer: newFakeConsumer()}
	f.topics["P"] = Topic{ReadQueues: 2, WriteQueues: 2, Perm: 6, MessageType: "LITE"}
	f.groups["LG"] = Group{RetryMaxTimes: 1}
	return f
}

func res(name string) *v2pb.Resource { return &v2pb.Resource{Name: name} }

// TestLiteSyncTranslation: a SyncLiteSubscriptionRequest becomes the
// LITE_SUBSCRIPTION_CTL entry (action, ids, the lite names once each, the
// offset option of a PARTIAL_ADD), and bad requests get the proxy's codes.
func TestLiteSyncTranslation(t *testing.T) {
	tail := &v2pb.OffsetOption{OffsetType: &v2pb.OffsetOption_TailN{TailN: 5}}
	maxPolicy := &v2pb.OffsetOption{OffsetType: &v2pb.OffsetOption_Policy_{Policy: v2pb.OffsetOption_MAX}}
	tests := []struct {
		name   string
		req    *v2pb.SyncLiteSubscriptionRequest
		client string
		want   LiteSync
		code   v2pb.Code
	}{
		{"partial add", &v2pb.SyncLiteSubscriptionRequest{Action: v2pb.LiteSubscriptionAction_PARTIAL_ADD, Topic: res("P"), Group: res("LG"),
			LiteTopicSet: []string{"a", "b", "a"}, Version: ptr(int64(9)), OffsetOption: tail}, "cid",
			LiteSync{Action: "PARTIAL_ADD", ClientID: "cid", Group: "LG", Topic: "P", LiteTopics: []string{"a", "b"}, Version: 9, Offset: &LiteOffset{Type: "TAIL_N", Value: 5}}, v2pb.Code_OK},
		{"policy max", &v2pb.SyncLiteSubscriptionRequest{Action: v2pb.LiteSubscriptionAction_PARTIAL_ADD, Topic: res("P"), Group: res("LG"),
			LiteTopicSet: []string{"a"}, OffsetOption: maxPolicy}, "cid",
			LiteSync{Action: "PARTIAL_ADD", ClientID: "cid", Group: "LG", Topic: "P", LiteTopics: []string{"a"}, Offset: &LiteOffset{Type: "POLICY", Value: 2}}, v2pb.Code_OK},
		{"partial remove drops the option", &v2pb.SyncLiteSubscriptionRequest{Action: v2pb.LiteSubscriptionAction_PARTIAL_REMOVE, Topic: res("P"), Group: res("LG"),
			LiteTopicSet: []string{"a"}, OffsetOption: tail}, "cid",
			LiteSync{Action: "PARTIAL_REMOVE", ClientID: "cid", Group: "LG", Topic: "P", LiteTopics: []string{"a"}}, v2pb.Code_OK},
		{"complete add of nothing", &v2pb.SyncLiteSubscriptionRequest{Action: v2pb.LiteSubscriptionAction_COMPLETE_ADD, Topic: res("P"), Group: res("LG")}, "cid",
			LiteSync{Action: "COMPLETE_ADD", ClientID: "cid", Group: "LG", Topic: "P", LiteTopics: []string{}}, v2pb.Code_OK},
		{"complete remove", &v2pb.SyncLiteSubscriptionRequest{Action: v2pb.LiteSubscriptionAction_COMPLETE_REMOVE, Topic: res("P"), Group: res("LG")}, "cid",
			LiteSync{Action: "COMPLETE_REMOVE", ClientID: "cid", Group: "LG", Topic: "P", LiteTopics: []string{}}, v2pb.Code_OK},
		{"no group", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P"), LiteTopicSet: []string{"a"}}, "cid", LiteSync{}, v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"bad group", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P"), Group: res("bad group!"), LiteTopicSet: []string{"a"}}, "cid", LiteSync{}, v2pb.Code_ILLEGAL_CONSUMER_GROUP},
		{"no topic", &v2pb.SyncLiteSubscriptionRequest{Group: res("LG"), LiteTopicSet: []string{"a"}}, "cid", LiteSync{}, v2pb.Code_ILLEGAL_TOPIC},
		{"bad topic", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P$x"), Group: res("LG"), LiteTopicSet: []string{"a"}}, "cid", LiteSync{}, v2pb.Code_ILLEGAL_TOPIC},
		{"no client id", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P"), Group: res("LG"), LiteTopicSet: []string{"a"}}, "", LiteSync{}, v2pb.Code_CLIENT_ID_REQUIRED},
		{"unknown action", &v2pb.SyncLiteSubscriptionRequest{Action: 9, Topic: res("P"), Group: res("LG"), LiteTopicSet: []string{"a"}}, "cid", LiteSync{}, v2pb.Code_BAD_REQUEST},
		{"partial add of nothing", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P"), Group: res("LG")}, "cid", LiteSync{}, v2pb.Code_BAD_REQUEST},
		{"blank lite", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P"), Group: res("LG"), LiteTopicSet: []string{" "}}, "cid", LiteSync{}, v2pb.Code_ILLEGAL_LITE_TOPIC},
		{"lite with $", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P"), Group: res("LG"), LiteTopicSet: []string{"a$b"}}, "cid", LiteSync{}, v2pb.Code_ILLEGAL_LITE_TOPIC},
		{"lite too long", &v2pb.SyncLiteSubscriptionRequest{Topic: res("P"), Group: res("LG"), LiteTopicSet: []string{"a", strings.Repeat("x", 11)}}, "cid", LiteSync{}, v2pb.Code_ILLEGAL_LITE_TOPIC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st := liteSync(tc.req, tc.client, 10)
			if (st == nil) != (tc.code == v2pb.Code_OK) || (st != nil && st.GetCode() != tc.code) {
				t.Fatalf("status %v, want %v", st, tc.code)
			}
			if st == nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("translated %+v (offset %+v), want %+v (offset %+v)", got, got.Offset, tc.want, tc.want.Offset)
			}
		})
	}
}

// TestSyncLiteSubscription: the rpc passes the translated request with the
// caller's client id to the broker and maps its answer; a missing topic or
// a backend without lite topics is refused before.
func TestSyncLiteSubscription(t *testing.T) {
	tests := []struct {
		name  string
		topic string
		ans   Result
		code  v2pb.Code
		calls int
	}{
		{"ok", "P", Result{Code: code.Success}, v2pb.Code_OK, 1},
		{"subscription quota", "P", Result{Code: code.LiteSubscriptionQuotaExceeded}, v2pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED, 1},
		{"lmq quota", "P", Result{Code: code.LMQQuotaExceeded}, v2pb.Code_LITE_TOPIC_QUOTA_EXCEEDED, 1},
		{"broker refuses the name", "P", Result{Code: code.InvalidParameter}, v2pb.Code_ILLEGAL_LITE_TOPIC, 1},
		{"group not bound", "P", Result{Code: code.IllegalOperation}, v2pb.Code_BAD_REQUEST, 1},
		{"broker failure", "P", Result{Code: code.SystemError}, v2pb.Code_INTERNAL_SERVER_ERROR, 1},
		{"no such topic", "Missing", Result{}, v2pb.Code_TOPIC_NOT_FOUND, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeLite()
			f.sync = tc.ans
			c, _ := messagingClient(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "cid")
			r, err := c.SyncLiteSubscription(ctx, &v2pb.SyncLiteSubscriptionRequest{Action: v2pb.LiteSubscriptionAction_PARTIAL_ADD,
				Topic: res(tc.topic), Group: res("LG"), LiteTopicSet: []string{"a"}})
			if err != nil || r.GetStatus().GetCode() != tc.code || len(f.syncs) != tc.calls {
				t.Fatalf("SyncLiteSubscription: %v %v (%d calls), want %v (%d calls)", r, err, len(f.syncs), tc.code, tc.calls)
			}
			if tc.calls == 1 && (f.syncs[0].ClientID != "cid" || f.syncs[0].Peer == "" || !reflect.DeepEqual(f.syncs[0].LiteTopics, []string{"a"})) {
				t.Fatalf("broker asked %+v", f.syncs[0])
			}
		})
	}
	c, _ := messagingClient(t, newFakeConsumer())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.SyncLiteSubscription(ctx, &v2pb.SyncLiteSubscriptionRequest{Topic: res("T"), Group: res("G"), LiteTopicSet: []string{"a"}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_NOT_IMPLEMENTED {
		t.Fatalf("without lite backend: %v %v", r, err)
	}
}

// TestLitePushConsumerRpcs: a client whose settings say LITE_PUSH_CONSUMER
// or LITE_SIMPLE_CONSUMER gets the lite limits in its settings, receives
// through the lite pop (messages with their lite topic; one delivered
// max-attempts times goes to the DLQ), and its acks, changes and
// dead-letterings with lite_topic take the lite paths. Other clients keep
// the regular pop.
func TestLitePushConsumerRpcs(t *testing.T) {
	for _, typ := range []v2pb.ClientType{v2pb.ClientType_LITE_PUSH_CONSUMER, v2pb.ClientType_LITE_SIMPLE_CONSUMER} {
		t.Run(typ.String(), func(t *testing.T) { testLiteConsumerRpcs(t, typ) })
	}
}

func testLiteConsumerRpcs(t *testing.T, typ v2pb.ClientType) {
	f := newFakeLite()
	now := time.Now()
	lm := func(body, lite string, reconsume int32, off int64) *message.Message {
		m := popped("01"+body, "", body, reconsume, handle(now, time.Minute, off))
		m.Properties[message.PropertyLiteTopic] = lite
		return m
	}
	f.popLite = PopResult{Code: code.Success, Messages: []*message.Message{lm("one", "a", 0, 1), lm("dead", "b", 2, 2)}}
	f.pop = PopResult{Code: code.PollingTimeout}
	c, _ := messagingClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "lite-cid")
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &typ, PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: res("LG"),
			Subscriptions: []*v2pb.SubscriptionEntry{{Topic: res("P"), Expression: &v2pb.FilterExpression{Expression: "*"}}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if s := got.GetSettings().GetSubscription(); s.GetLiteSubscriptionQuota() != 7 || s.GetMaxLiteTopicSize() != 10 {
		t.Fatalf("lite settings %v, want quota 7 and max lite topic size 10", s)
	}

	req := rreq("P", "LG")
	req.AutoRenew = true
	req.AttemptId = ptr("att-1")
	s, err := c.ReceiveMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*v2pb.Message
	for {
		r, err := s.Recv()
		if err != nil {
			break
		}
		if m := r.GetMessage(); m != nil {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) != 1 || string(msgs[0].GetBody()) != "one" || msgs[0].GetSystemProperties().GetLiteTopic() != "a" ||
		msgs[0].GetSystemProperties().GetMessageType() != v2pb.MessageType_LITE {
		t.Fatalf("lite receive gave %v, want message one of lite topic a", msgs)
	}
	if len(f.popsLite) != 1 || len(f.pops) != 0 || f.popsLite[0].ClientID != "lite-cid" || !f.popsLite[0].AutoRenew ||
		f.popsLite[0].AttemptID != "att-1" || f.popsLite[0].Topic != "P" || f.popsLite[0].Group != "LG" {
		t.Fatalf("lite pops %+v, regular pops %+v", f.popsLite, f.pops)
	}
	h := msgs[0].GetSystemProperties().GetReceiptHandle()
	if ack, err := c.AckMessage(ctx, &v2pb.AckMessageRequest{Group: res("LG"), Topic: res("P"),
		Entries: []*v2pb.AckMessageEntry{{MessageId: "01one", ReceiptHandle: h, LiteTopic: ptr("a")}}}); err != nil || ack.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("lite ack: %v %v", ack, err)
	}
	if ch, err := c.ChangeInvisibleDuration(ctx, &v2pb.ChangeInvisibleDurationRequest{Group: res("LG"), Topic: res("P"), ReceiptHandle: h,
		InvisibleDuration: rreq("P", "LG").InvisibleDuration, LiteTopic: ptr("a")}); err != nil || ch.GetStatus().GetCode() != v2pb.Code_OK || ch.GetReceiptHandle() != "renewed" {
		t.Fatalf("lite change: %v %v", ch, err)
	}
	if d, err := c.ForwardMessageToDeadLetterQueue(ctx, &v2pb.ForwardMessageToDeadLetterQueueRequest{Group: res("LG"), Topic: res("P"), ReceiptHandle: h,
		MessageId: "01one", LiteTopic: ptr("a")}); err != nil || d.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("lite dead letter: %v %v", d, err)
	}
	if bad, err := c.AckMessage(ctx, &v2pb.AckMessageRequest{Group: res("LG"), Topic: res("P"),
		Entries: []*v2pb.AckMessageEntry{{MessageId: "01one", ReceiptHandle: h, LiteTopic: ptr("a$b")}}}); err != nil || bad.GetStatus().GetCode() != v2pb.Code_ILLEGAL_LITE_TOPIC {
		t.Fatalf("ack with a bad lite topic: %v %v", bad, err)
	}
	want := []string{"dlq b " + handle(now, time.Minute, 2), "ack a " + h, "change a " + h, "dlq a " + h}
	if !reflect.DeepEqual(f.liteCalls, want) || len(f.acked)+len(f.changed)+len(f.dlq) != 0 {
		t.Fatalf("lite calls %q, want %q; regular acks %v changes %v dlq %v", f.liteCalls, want, f.acked, f.changed, f.dlq)
	}

	// Its goodbye drops its lite subscriptions.
	if n, err := c.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{Group: res("LG")}); err != nil || n.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", n, err)
	}
	if len(f.syncs) != 1 || f.syncs[0].Action != "COMPLETE_REMOVE" || f.syncs[0].ClientID != "lite-cid" || f.syncs[0].Group != "LG" || f.syncs[0].Topic != "P" {
		t.Fatalf("after the goodbye the broker was asked %+v, want one COMPLETE_REMOVE of lite-cid in LG for P", f.syncs)
	}

	// Another client of the same backend still pops regularly.
	other := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "plain-cid")
	rs, err := c.ReceiveMessage(other, rreq("T", "G"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := rs.Recv(); err != nil {
			break
		}
	}
	if len(f.pops) != 1 || len(f.popsLite) != 1 {
		t.Fatalf("a plain client's receive: %d regular pops, %d lite pops; want 1 and 1", len(f.pops), len(f.popsLite))
	}
}

// TestNotifyUnsubscribeLite: the notification reaches the client's
// Telemetry stream (found by its x-mq-client-id) as a
// NotifyUnsubscribeLiteCommand; a client without a stream, or whose stream
// ended, is reported not reached.
func TestNotifyUnsubscribeLite(t *testing.T) {
	p := NewProducers()
	s := startServer(t, Config{Backend: newFakeLite(), Producers: p, AdvertiseHost: "127.0.0.1"})
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "lite-cid"))
	stream, err := c.Telemetry(sctx)
	if err != nil {
		t.Fatal(err)
	}
	typ := v2pb.ClientType_LITE_PUSH_CONSUMER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &typ, PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: res("LG")}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil { // the settings: the session is registered
		t.Fatal(err)
	}
	if p.NotifyUnsubscribeLite("other-cid", "a") {
		t.Fatal("a client without a stream was notified")
	}
	if !p.NotifyUnsubscribeLite("lite-cid", "a") {
		t.Fatal("the client's stream was not found")
	}
	got, err := stream.Recv()
	if err != nil || got.GetNotifyUnsubscribeLiteCommand().GetLiteTopic() != "a" {
		t.Fatalf("stream got %v %v, want the unsubscribe of lite topic a", got, err)
	}
	stop()
	deadline := time.Now().Add(3 * time.Second)
	for p.NotifyUnsubscribeLite("lite-cid", "a") {
		if time.Now().After(deadline) {
			t.Fatal("a client whose stream ended is still notified")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
