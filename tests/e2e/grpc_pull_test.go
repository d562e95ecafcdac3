package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestGrpcPullConsumerOffsets: one store, two protocols for pull consumers
// (issue 17). rocketmq-client-java 5.2.0 has no pull consumer (its
// consumers are the push, simple and lite push ones, none calling these
// rpcs), so a Go client on our generated stubs (pkg/grpcapi/v2pb) drives
// PullMessage, UpdateOffset, GetOffset and QueryOffset as a 5.x pull
// consumer would, after its settings (Telemetry) and Heartbeat:
//   - client-go sends over remoting; QueryOffset BEGINNING / END / TIMESTAMP
//     bound what it sent; PullMessage over gRPC returns each message once
//     with client-go's message id, body, tag, keys and user property;
//   - the offsets committed with UpdateOffset are the ones our
//     `mqadmin consumerProgress` shows and a remoting QUERY_CONSUMER_OFFSET
//     answers; one committed by a remoting UPDATE_CONSUMER_OFFSET is what
//     GetOffset answers.
func TestGrpcPullConsumerOffsets(t *testing.T) {
	skipShort(t, "real processes and client-go")
	t.Parallel()
	const topic, group = "GrpcPullTopic", "GID_grpc_pull"
	c, endpoint := startGrpcCluster(t, map[string]string{"grpcClientConsumerMinLongPollingTimeoutMillis": "500"})
	broker := c.Brokers()[0].Addr()
	mqadmin(t, c, "updateTopic", "-b", broker, "-t", topic, "-r", "2", "-w", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := time.Now().Add(-time.Second)

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("grpc_pull_pg"), producer.WithInstanceName("grpc-pull"), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	t.Cleanup(func() { _ = p.Shutdown() })
	type sentMsg struct{ body, keys string }
	sent := map[string]sentMsg{}
	for i := range 6 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("pull-%d", i)))
		m.WithTag("TagP")
		m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		m.WithProperty("color", "blue")
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("client-go send %d: %v %v", i, res, err)
		}
		sent[res.MsgID] = sentMsg{string(m.Body), fmt.Sprintf("key-%d", i)}
	}

	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cli := v2pb.NewMessagingServiceClient(conn)
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "grpc-pull-e2e@1", "x-mq-language", "GOLANG", "x-mq-client-version", "5.2.0")
	registerPullConsumer(t, ctx, cli, group, topic)
	queue := func(id int32) *v2pb.MessageQueue {
		return &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: id, Broker: &v2pb.Broker{Name: c.Brokers()[0].Name()}}
	}
	queryOffset := func(id int32, policy v2pb.QueryOffsetPolicy, at time.Time) int64 {
		t.Helper()
		req := &v2pb.QueryOffsetRequest{MessageQueue: queue(id), QueryOffsetPolicy: policy}
		if policy == v2pb.QueryOffsetPolicy_TIMESTAMP {
			req.Timestamp = timestamppb.New(at)
		}
		r, err := cli.QueryOffset(ctx, req)
		if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("QueryOffset %d %v: %v %v", id, policy, r, err)
		}
		return r.GetOffset()
	}

	got := 0
	next := map[int32]int64{}
	for id := range int32(2) {
		begin, end := queryOffset(id, v2pb.QueryOffsetPolicy_BEGINNING, time.Time{}), queryOffset(id, v2pb.QueryOffsetPolicy_END, time.Time{})
		if atStart := queryOffset(id, v2pb.QueryOffsetPolicy_TIMESTAMP, before); begin != 0 || atStart != 0 {
			t.Fatalf("queue %d: BEGINNING %d, TIMESTAMP before the sends %d; want 0", id, begin, atStart)
		}
		if late := queryOffset(id, v2pb.QueryOffsetPolicy_TIMESTAMP, time.Now().Add(time.Hour)); late != end {
			t.Fatalf("queue %d: TIMESTAMP after the sends %d, want END %d", id, late, end)
		}
		// Two at a time, from the beginning to the end.
		for off := begin; off < end; {
			r := pullQueue(ctx, t, cli, group, queue(id), off, 2, "TagP")
			if r.status.GetCode() != v2pb.Code_OK || len(r.msgs) == 0 || r.next <= off {
				t.Fatalf("pull queue %d from %d: %v, %d messages, next %d", id, off, r.status, len(r.msgs), r.next)
			}
			for i, m := range r.msgs {
				sp := m.GetSystemProperties()
				want, ok := sent[sp.GetMessageId()]
				if !ok || string(m.GetBody()) != want.body || sp.GetTag() != "TagP" || strings.Join(sp.GetKeys(), " ") != want.keys ||
					m.GetUserProperties()["color"] != "blue" || sp.GetQueueId() != id || sp.GetQueueOffset() != off+int64(i) {
					t.Fatalf("pulled %v; sent %+v under its id, tag TagP, property color=blue, at %d@%d", m, want, id, off+int64(i))
				}
				delete(sent, sp.GetMessageId())
				got++
			}
			off = r.next
		}
		next[id] = end
	}
	if got != 6 || len(sent) != 0 {
		t.Fatalf("pulled %d messages, not pulled: %v", got, sent)
	}

	// Offsets committed over gRPC: queue 0 fully consumed, queue 1 one
	// message short.
	commit := map[int32]int64{0: next[0], 1: next[1] - 1}
	for id, off := range commit {
		r, err := cli.UpdateOffset(ctx, &v2pb.UpdateOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: queue(id), Offset: off})
		if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("UpdateOffset %d to %d: %v %v", id, off, r, err)
		}
		q := roundTrip(t, broker, remoting.NewRequest(code.QueryConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(id)),
		}, nil))
		if q.Code != code.Success || q.Ext("offset") != strconv.FormatInt(off, 10) {
			t.Fatalf("QUERY_CONSUMER_OFFSET of queue %d after UpdateOffset %d: %d %v", id, off, q.Code, q.ExtFields)
		}
	}
	// -t: the nameserver learns the group's retry topic (made by the
	// Heartbeat) only at the broker's next registration.
	rows, diff := parseProgress(t, mqadmin(t, c, "consumerProgress", "-g", group, "-t", topic))
	seen := 0
	for _, r := range rows {
		if r.topic != topic {
			continue
		}
		seen++
		if r.consOff != commit[int32(r.qid)] || r.brokerOff != next[int32(r.qid)] {
			t.Fatalf("consumerProgress %+v, want consumer offset %d, broker offset %d", r, commit[int32(r.qid)], next[int32(r.qid)])
		}
	}
	if seen != 2 || diff != 1 {
		t.Fatalf("consumerProgress: %d rows of %s, diff total %d; want 2 and 1: %+v", seen, topic, diff, rows)
	}

	// And the reverse: a remoting commit is what GetOffset answers.
	if r := roundTrip(t, broker, remoting.NewRequest(code.UpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "1", "commitOffset": "1",
	}, nil)); r.Code != code.Success {
		t.Fatalf("UPDATE_CONSUMER_OFFSET: %d %s", r.Code, r.Remark)
	}
	g, err := cli.GetOffset(ctx, &v2pb.GetOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: queue(1)})
	if err != nil || g.GetStatus().GetCode() != v2pb.Code_OK || g.GetOffset() != 1 {
		t.Fatalf("GetOffset after UPDATE_CONSUMER_OFFSET 1: %v %v", g, err)
	}
}

// pullAnswer is one PullMessage's stream: its status, the messages in
// stream order and the next offset (-1: none came).
type pullAnswer struct {
	status *v2pb.Status
	msgs   []*v2pb.Message
	next   int64
}

// pullQueue pulls up to batch messages of q from offset whose tag matches
// the tag expression (long polling 1 s).
func pullQueue(ctx context.Context, t *testing.T, cli v2pb.MessagingServiceClient, group string, q *v2pb.MessageQueue, offset int64, batch int32, tags string) pullAnswer {
	t.Helper()
	s, err := cli.PullMessage(ctx, &v2pb.PullMessageRequest{
		Group: &v2pb.Resource{Name: group}, MessageQueue: q, Offset: offset, BatchSize: batch,
		FilterExpression:   &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: tags},
		LongPollingTimeout: durationpb.New(time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := pullAnswer{next: -1}
	for {
		r, err := s.Recv()
		if err != nil {
			break
		}
		switch x := r.GetContent().(type) {
		case *v2pb.PullMessageResponse_Status:
			a.status = x.Status
		case *v2pb.PullMessageResponse_Message:
			a.msgs = append(a.msgs, x.Message)
		case *v2pb.PullMessageResponse_NextOffset:
			a.next = x.NextOffset
		}
	}
	return a
}

// registerPullConsumer registers a raw gRPC client as a pull consumer of
// group on topic the way 5.x clients do: its Settings on a Telemetry
// stream first (a heartbeat of a client without them is
// UNRECOGNIZED_CLIENT_TYPE, as behind the proxy), then a Heartbeat.
func registerPullConsumer(t *testing.T, ctx context.Context, cli v2pb.MessagingServiceClient, group, topic string) {
	t.Helper()
	ts, err := cli.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: v2pb.ClientType_PULL_CONSUMER.Enum(), PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group: &v2pb.Resource{Name: group}, Subscriptions: []*v2pb.SubscriptionEntry{{Topic: &v2pb.Resource{Name: topic}, Expression: &v2pb.FilterExpression{Expression: "*"}}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if r, err := ts.Recv(); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("settings: %v %v", r, err)
	}
	if r, err := cli.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: group}, ClientType: v2pb.ClientType_PULL_CONSUMER}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("Heartbeat: %v %v", r, err)
	}
}
