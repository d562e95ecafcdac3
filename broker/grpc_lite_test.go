package broker

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// liteGrpcClient is one 5.x lite push consumer: its metadata and its
// Telemetry stream (settings sent and answered).
type liteGrpcClient struct {
	ctx    context.Context
	stream v2pb.MessagingService_TelemetryClient
}

func newLiteGrpcClient(t *testing.T, ctx context.Context, c v2pb.MessagingServiceClient, id, group string) liteGrpcClient {
	t.Helper()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", id, "x-mq-language", "JAVA", "x-mq-client-version", "5.2.0")
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	typ := v2pb.ClientType_LITE_PUSH_CONSUMER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &typ, PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: &v2pb.Resource{Name: group},
			Subscriptions: []*v2pb.SubscriptionEntry{{Topic: &v2pb.Resource{Name: "LP"}, Expression: &v2pb.FilterExpression{Expression: "*"}}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	got, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if s := got.GetSettings().GetSubscription(); s.GetMaxLiteTopicSize() != 64 || s.LiteSubscriptionQuota == nil {
		t.Fatalf("lite settings %v, want max lite topic size 64 and a quota", s)
	}
	return liteGrpcClient{ctx: ctx, stream: stream}
}

func (l liteGrpcClient) sync(t *testing.T, c v2pb.MessagingServiceClient, action v2pb.LiteSubscriptionAction, group string, lites ...string) v2pb.Code {
	t.Helper()
	r, err := c.SyncLiteSubscription(l.ctx, &v2pb.SyncLiteSubscriptionRequest{Action: action, Topic: &v2pb.Resource{Name: "LP"},
		Group: &v2pb.Resource{Name: group}, LiteTopicSet: lites})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetStatus().GetCode()
}

// TestGrpcLitePushConsumer: a lite push consumer over gRPC against the real
// lite machinery: SyncLiteSubscription subscribes; its receive pops only
// the lite topics it subscribed (with lite_topic and a receipt that acks
// with it); the group's per-client quota answers
// LITE_SUBSCRIPTION_QUOTA_EXCEEDED; a group not bound to the topic
// BAD_REQUEST; in an exclusive group a second client taking a lite topic
// makes the broker notify the first on its Telemetry stream; a client's
// goodbye drops its lite subscriptions.
func TestGrpcLitePushConsumer(t *testing.T) {
	b, c := grpcBroker(t, func(cfg *config.Config) {
		cfg.EnableLmq, cfg.EnableMultiDispatch = true, true
		cfg.MinInvisibleTimeMillsForRecv, cfg.GrpcClientConsumerMinLongPollingTimeoutMillis = 1000, 0
	}, 4, map[string]string{"LP": "LITE", "NP": ""})
	for name, attrs := range map[string]map[string]string{
		"LG":  {"+lite.bind.topic": "LP", "+lite.sub.client.quota": "2"},
		"LGX": {"+lite.bind.topic": "LP", "+lite.sub.model": "Exclusive"},
		"NG":  {},
	} {
		g := subscription.NewGroupConfig(name)
		g.Attributes = attrs
		if err := b.msg.subs.Update(g); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c1 := newLiteGrpcClient(t, ctx, c, "cid-1", "LG")
	if code := c1.sync(t, c, v2pb.LiteSubscriptionAction_PARTIAL_ADD, "LG", "a"); code != v2pb.Code_OK {
		t.Fatalf("subscribe a: %v", code)
	}
	if code := c1.sync(t, c, v2pb.LiteSubscriptionAction_PARTIAL_ADD, "LG", "b"); code != v2pb.Code_OK {
		t.Fatalf("subscribe b: %v", code)
	}
	if code := c1.sync(t, c, v2pb.LiteSubscriptionAction_PARTIAL_ADD, "LG", "c"); code != v2pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED {
		t.Fatalf("subscribe a third lite topic past lite.sub.client.quota=2: %v", code)
	}
	if code := c1.sync(t, c, v2pb.LiteSubscriptionAction_PARTIAL_ADD, "NG", "a"); code != v2pb.Code_BAD_REQUEST {
		t.Fatalf("subscribe with a group not bound to the topic: %v", code)
	}

	for _, lite := range []string{"a", "c"} {
		l := lite
		if e := grpcSend(t, ctx, c, "LP", "01LITE"+lite, func(sp *v2pb.SystemProperties) {
			sp.MessageType, sp.LiteTopic = v2pb.MessageType_LITE, &l
		}); e.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("send to lite topic %s: %v", lite, e)
		}
	}
	req := receiveReq("LP", "LG", 10*time.Second, 2*time.Second)
	req.FilterExpression = nil // the Java lite push consumer sends none
	code, msgs := receiveCtx(t, c1.ctx, c, req)
	if code != v2pb.Code_OK || len(msgs) != 1 || msgs[0].GetSystemProperties().GetLiteTopic() != "a" || string(msgs[0].GetBody()) != "body-01LITEa" {
		t.Fatalf("lite receive: %v %v, want the message of lite topic a alone", code, msgs)
	}
	h, a := msgs[0].GetSystemProperties().GetReceiptHandle(), "a"
	ack, err := c.AckMessage(c1.ctx, &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: "LG"}, Topic: &v2pb.Resource{Name: "LP"},
		Entries: []*v2pb.AckMessageEntry{{MessageId: msgs[0].GetSystemProperties().GetMessageId(), ReceiptHandle: h, LiteTopic: &a}}})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("lite ack: %v %v", ack, err)
	}
	req.LongPollingTimeout = durationpb.New(500 * time.Millisecond)
	if code, msgs := receiveCtx(t, c1.ctx, c, req); code != v2pb.Code_MESSAGE_NOT_FOUND || len(msgs) != 0 {
		t.Fatalf("receive after the ack: %v %v, want nothing", code, msgs)
	}

	// c1's goodbye drops its lite subscriptions (COMPLETE_REMOVE).
	key := registry.ClientKey{ClientID: "cid-1", Group: "LG"}
	if lmqs := b.Lite().Registry.LMQs(key); len(lmqs) != 2 {
		t.Fatalf("cid-1 subscribes %v, want a and b", lmqs)
	}
	if n, err := c.NotifyClientTermination(c1.ctx, &v2pb.NotifyClientTerminationRequest{Group: &v2pb.Resource{Name: "LG"}}); err != nil || n.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", n, err)
	}
	if _, ok := b.Lite().Registry.Get(key, 10); ok {
		t.Fatalf("cid-1 still has lite subscriptions after its goodbye: %v", b.Lite().Registry.LMQs(key))
	}

	x1 := newLiteGrpcClient(t, ctx, c, "cid-x1", "LGX")
	x2 := newLiteGrpcClient(t, ctx, c, "cid-x2", "LGX")
	if code := x1.sync(t, c, v2pb.LiteSubscriptionAction_PARTIAL_ADD, "LGX", "a"); code != v2pb.Code_OK {
		t.Fatalf("x1 subscribe a: %v", code)
	}
	if code := x2.sync(t, c, v2pb.LiteSubscriptionAction_PARTIAL_ADD, "LGX", "a"); code != v2pb.Code_OK {
		t.Fatalf("x2 subscribe a: %v", code)
	}
	got, err := x1.stream.Recv()
	if err != nil || got.GetNotifyUnsubscribeLiteCommand().GetLiteTopic() != "a" {
		t.Fatalf("x1's telemetry got %v %v, want the unsubscribe of lite topic a", got, err)
	}
}

// receiveCtx is receive with the caller's metadata (its client id).
func receiveCtx(t *testing.T, ctx context.Context, cli v2pb.MessagingServiceClient, req *v2pb.ReceiveMessageRequest) (v2pb.Code, []*v2pb.Message) {
	t.Helper()
	c, msgs, err := receiveStreamCtx(ctx, cli, req)
	if err != nil {
		t.Fatal(err)
	}
	return c, msgs
}

// TestGrpcLiteAutoRenewAndDeadLetter: a lite message received with
// auto_renew stays invisible past several renewal slices (the renewal
// changes its invisible time on the lite path) and acks by the handle
// first received; ForwardMessageToDeadLetterQueue with lite_topic moves a
// lite message to the group's DLQ with its lite topic.
func TestGrpcLiteAutoRenewAndDeadLetter(t *testing.T) {
	t.Parallel() // waits on renewals
	b, c := grpcBroker(t, func(cfg *config.Config) {
		cfg.EnableLmq, cfg.EnableMultiDispatch = true, true
		cfg.MinInvisibleTimeMillsForRecv, cfg.GrpcClientConsumerMinLongPollingTimeoutMillis = 1000, 0
		// Renewed when 900 ms or less are left: the renewal loop looks
		// every 500 ms (renewTick), so at least 400 ms remain for the
		// renewal itself. With 500 ms ahead, a look could fall a moment
		// before the expiry and a loaded machine lost the race.
		cfg.RenewSliceTimeMillis, cfg.RenewAheadTimeMillis = 1000, 900
	}, 4, map[string]string{"LP": "LITE"})
	g := subscription.NewGroupConfig("LGR")
	g.Attributes = map[string]string{"+lite.bind.topic": "LP"}
	if err := b.msg.subs.Update(g); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newLiteGrpcClient(t, ctx, c, "cid-r", "LGR")
	if code := cl.sync(t, c, v2pb.LiteSubscriptionAction_PARTIAL_ADD, "LGR", "r"); code != v2pb.Code_OK {
		t.Fatalf("subscribe r: %v", code)
	}
	r := "r"
	for _, id := range []string{"01LITER1", "01LITER2"} {
		if e := grpcSend(t, ctx, c, "LP", id, func(sp *v2pb.SystemProperties) {
			sp.MessageType, sp.LiteTopic = v2pb.MessageType_LITE, &r
		}); e.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("send %s: %v", id, e)
		}
	}
	req := receiveReq("LP", "LGR", 0, 500*time.Millisecond)
	req.FilterExpression, req.InvisibleDuration, req.AutoRenew, req.BatchSize = nil, nil, true, 1
	code, got := receiveCtx(t, cl.ctx, c, req)
	if code != v2pb.Code_OK || len(got) != 1 || got[0].GetSystemProperties().GetInvisibleDuration().AsDuration() != time.Second {
		t.Fatalf("auto_renew lite receive: %v %v, want one message invisible for the 1 s slice", code, got)
	}
	// Three slices later it has not come back: it was renewed.
	time.Sleep(3 * time.Second)
	if code, msgs := receiveCtx(t, cl.ctx, c, req); code != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after three slices: %v %v, want the renewed message still invisible (its lite topic blocked)", code, msgs)
	}
	ack, err := c.AckMessage(cl.ctx, &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: "LGR"}, Topic: &v2pb.Resource{Name: "LP"},
		Entries: []*v2pb.AckMessageEntry{{MessageId: "01LITER1", ReceiptHandle: got[0].GetSystemProperties().GetReceiptHandle(), LiteTopic: &r}}})
	if err != nil || ack.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("ack by the first handle of a renewed lite message: %v %v", ack, err)
	}
	req.AutoRenew, req.InvisibleDuration = false, durationpb.New(10*time.Second)
	code, next := receiveCtx(t, cl.ctx, c, req)
	if code != v2pb.Code_OK || len(next) != 1 || next[0].GetSystemProperties().GetMessageId() != "01LITER2" {
		t.Fatalf("receive after the ack: %v %v, want 01LITER2", code, next)
	}
	d, err := c.ForwardMessageToDeadLetterQueue(cl.ctx, &v2pb.ForwardMessageToDeadLetterQueueRequest{Group: &v2pb.Resource{Name: "LGR"},
		Topic: &v2pb.Resource{Name: "LP"}, ReceiptHandle: next[0].GetSystemProperties().GetReceiptHandle(), MessageId: "01LITER2", LiteTopic: &r})
	if err != nil || d.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("lite dead letter: %v %v", d, err)
	}
	dlq := storedN(t, b, "%DLQ%LGR", 1)
	if len(dlq) != 1 || dlq[0].LiteTopic() != "r" || string(dlq[0].Body) != "body-01LITER2" {
		t.Fatalf("DLQ holds %v, want 01LITER2 with lite topic r", dlq)
	}
	req.LongPollingTimeout = durationpb.New(300 * time.Millisecond)
	if code, msgs := receiveCtx(t, cl.ctx, c, req); code != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("after the dead-lettering: %v %v, want nothing", code, msgs)
	}
}
