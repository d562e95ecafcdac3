package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestGrpcStaticTopicPython: a static topic of 4 logic queues made by our
// mqadmin `updateStaticTopic` over broker-a and broker-b, served to the
// RocketMQ 5.x Python client over gRPC (docs/static-topics.md §6.8):
//   - QueryRoute answers logic queues 0..3, each on the broker leading it
//     with that broker's gRPC endpoint;
//   - the Python producer sends; its SimpleConsumer receives and acks
//     every message, and a pkg/client pull consumer reads every logic
//     queue over remoting: the same ids and bodies;
//   - more messages are sent and left unconsumed, then
//     `remappingStaticTopic` moves every logic queue to broker-b: the route
//     follows (broker-a keeps a READ queue -1 for its old segments), a
//     send that reaches broker-a is refused (the client retries
//     elsewhere), one to broker-b answers a logic offset of the new
//     segment; the Python client sends again and its consumer receives
//     the messages of both sides of the remap, and the remoting reader
//     sees all of them, each once;
//   - the gRPC pull rpcs (QueryOffset, PullMessage) on each logic queue at
//     broker-b read them too, at their logic queue and offsets.
//
// Skips when python3 is missing.
func TestGrpcStaticTopicPython(t *testing.T) {
	skipShort(t, "real processes and a Python 5.x client")
	t.Parallel()
	t0 := time.Now()
	const topic, queues = "GrpcStaticTopic", 4
	ports := map[string]int{"broker-a": harness.LatePort(t), "broker-b": harness.LatePort(t)}
	c := startCluster(t, framework.Options{Brokers: 2, BrokerConf: map[string]string{"enableGrpcServer": "true",
		// The test consumer's 2 s await plus its 3 s request timeout
		// leave just under the default 5 s minimum long polling; its
		// receives round robin over the route's queues, and an empty one
		// waits the long polling out: 1 s.
		"grpcClientConsumerMinLongPollingTimeoutMillis": "1000", "grpcClientConsumerMaxLongPollingTimeoutMillis": "1000"},
		PerBroker: func(name string, _ int) map[string]string {
			return map[string]string{"grpcServerPort": strconv.Itoa(ports[name])}
		}})
	endpoint := func(b string) string { return "127.0.0.1:" + strconv.Itoa(ports[b]) }
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ac.Close() })
	py := python5(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "grpc-static-e2e@1", "x-mq-language", "GOLANG", "x-mq-client-version", "5.2.0")
	grpcClient := func(b string) v2pb.MessagingServiceClient {
		conn, err := grpc.NewClient(endpoint(b), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return v2pb.NewMessagingServiceClient(conn)
	}
	ga, gb := grpcClient("broker-a"), grpcClient("broker-b")

	// routeOf renders QueryRoute as "id:broker@port:PERM" sorted.
	routeOf := func(cli v2pb.MessagingServiceClient) string {
		r, err := cli.QueryRoute(ctx, &v2pb.QueryRouteRequest{Topic: &v2pb.Resource{Name: topic}})
		if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			return fmt.Sprintf("QueryRoute: %v %v", r, err)
		}
		var out []string
		for _, q := range r.GetMessageQueues() {
			ep := q.GetBroker().GetEndpoints().GetAddresses()
			port := int32(0)
			if len(ep) > 0 {
				port = ep[0].GetPort()
			}
			out = append(out, fmt.Sprintf("%d:%s@%d:%v", q.GetId(), q.GetBroker().GetName(), port, q.GetPermission()))
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	wantRoute := func(leaders map[int]string, extra ...string) string {
		var out []string
		for g, b := range leaders {
			out = append(out, fmt.Sprintf("%d:%s@%d:READ_WRITE", g, b, ports[b]))
		}
		out = append(out, extra...)
		sort.Strings(out)
		return strings.Join(out, " ")
	}

	mqadmin(t, c, "updateStaticTopic", "-t", topic, "-qn", strconv.Itoa(queues), "-b", "broker-a,broker-b")
	leaders := waitLeaders(t, ac, topic, queues, func(_ int, b string) bool { return b == "broker-a" || b == "broker-b" })
	want := wantRoute(leaders)
	for _, cli := range []v2pb.MessagingServiceClient{ga, gb} {
		if got := routeOf(cli); got != want {
			t.Fatalf("route of the new static topic:\n got %s\nwant %s", got, want)
		}
	}

	bodies := map[string]string{} // message id → body, of every Python send
	produce := func(prefix string, n int) {
		t.Helper()
		var res struct {
			IDs []string `json:"ids"`
		}
		py.run(t, &res, "produce", "--endpoint", endpoint("broker-a"), "--topic", topic, "--count", strconv.Itoa(n), "--prefix", prefix)
		if len(res.IDs) != n {
			t.Fatalf("produce %s: %d ids, want %d", prefix, len(res.IDs), n)
		}
		for i, id := range res.IDs {
			bodies[id] = fmt.Sprintf("%s-%d", prefix, i)
		}
	}
	received := map[string]bool{}
	consume := func(n int, what string) {
		t.Helper()
		var res struct {
			Messages []struct{ ID, Body string }
		}
		// rocketmq-python-client 5.1.2's SimpleConsumer picks each
		// receive's queue at random (__select_topic_queue builds a new
		// selector, with a random start, per receive): after the remap
		// broker-a is one queue of five, and 20 s of receives (~20) all
		// went to broker-b about once in 40 runs under load. 60 s make
		// that ~1e-6; the consume returns as soon as it has n messages.
		py.run(t, &res, "consume", "--endpoint", endpoint("broker-b"), "--topic", topic, "--group", "grpc_static_cg", "--count", strconv.Itoa(n), "--timeout", "60")
		for _, m := range res.Messages {
			if received[m.ID] {
				t.Errorf("%s: %s (%s) received twice", what, m.ID, m.Body)
			}
			received[m.ID] = true
			if bodies[m.ID] != m.Body {
				t.Errorf("%s: received %s with body %q, sent %q", what, m.ID, m.Body, bodies[m.ID])
			}
		}
		if len(received) != len(bodies) {
			t.Fatalf("%s: %d of %d messages received", what, len(received), len(bodies))
		}
	}
	readAll := func(what string) {
		t.Helper()
		// A new reader each time: its route is the current one.
		pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()},
			InstanceName: "grpc_static_" + strings.ReplaceAll(what, " ", "_")}, Group: "grpc_static_remoting"})
		started(t, pc, err)
		defer pc.Shutdown(context.Background())
		got, _ := readLogicQueues(t, context.Background(), pc, topic, queues)
		for id, body := range bodies {
			if _, ok := got[body]; !ok {
				t.Errorf("%s: %s (%s) not read over remoting", what, body, id)
			}
		}
		for body := range got {
			if !strings.HasPrefix(body, "py") && !strings.HasPrefix(body, "direct") {
				t.Errorf("%s: stray message %q", what, body)
			}
		}
	}

	t.Logf("%v: created", time.Since(t0).Round(time.Millisecond))
	produce("py1", 8)
	consume(8, "before the remap")
	readAll("before the remap")
	produce("py2", 8) // left for after the remap

	movedN := 0
	for _, b := range leaders {
		if b == "broker-a" {
			movedN++
		}
	}
	t.Logf("%v: consumed before the remap", time.Since(t0).Round(time.Millisecond))
	mqadmin(t, c, "remappingStaticTopic", "-t", topic, "-b", "broker-b")
	leaders = waitLeaders(t, ac, topic, queues, func(_ int, b string) bool { return b == "broker-b" })
	want = wantRoute(leaders, fmt.Sprintf("-1:broker-a@%d:READ", ports["broker-a"]))
	testutil.Eventually(t, 10*time.Second, func() error {
		for _, cli := range []v2pb.MessagingServiceClient{ga, gb} {
			if got := routeOf(cli); got != want {
				return fmt.Errorf("route after the remap:\n got %s\nwant %s", got, want)
			}
		}
		return nil
	})

	direct := func(cli v2pb.MessagingServiceClient, id string) *v2pb.SendResultEntry {
		r, err := cli.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
			Topic: &v2pb.Resource{Name: topic}, Body: []byte("direct-" + id),
			SystemProperties: &v2pb.SystemProperties{MessageId: id, MessageType: v2pb.MessageType_NORMAL,
				BodyEncoding: v2pb.Encoding_IDENTITY, BornTimestamp: timestamppb.Now()},
		}}})
		if err != nil || len(r.GetEntries()) != 1 {
			t.Fatalf("SendMessage %s: %v %v", id, r, err)
		}
		return r.GetEntries()[0]
	}
	// broker-a leads nothing now: refused as the proxy refuses a broker's
	// NOT_LEADER_FOR_QUEUE, and the message is stored nowhere.
	if e := direct(ga, "0A0000000000000000000000A1"); e.GetStatus().GetCode() != v2pb.Code_INTERNAL_SERVER_ERROR ||
		!strings.Contains(e.GetStatus().GetMessage(), "not led by broker broker-a") {
		t.Errorf("send to the old leader: %v, want INTERNAL_SERVER_ERROR (not led)", e.GetStatus())
	}
	// broker-b, 4 sends, round robin over the 4 logic queues it leads: the
	// moved ones answer logic offsets of their new segment (≥ 10000,
	// docs/static-topics.md §8.4), the others offsets below.
	high := 0
	for i := range queues {
		id := fmt.Sprintf("0A00000000000000000000B%03d", i)
		e := direct(gb, id)
		if e.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("send to the new leader: %v", e.GetStatus())
		}
		bodies[id] = "direct-" + id
		if e.GetOffset() >= 10000 {
			high++
		}
	}
	if high != movedN {
		t.Errorf("%d of %d sends to broker-b answered an offset ≥ 10000, want %d (the moved queues)", high, queues, movedN)
	}

	t.Logf("%v: remapped", time.Since(t0).Round(time.Millisecond))
	produce("py3", 8)
	t.Logf("%v: produced after the remap", time.Since(t0).Round(time.Millisecond))
	consume(len(bodies)-len(received), "after the remap")
	readAll("after the remap")

	t.Logf("%v: consumed after the remap", time.Since(t0).Round(time.Millisecond))
	// The gRPC pull rpcs on the logic queues at their leader: every
	// message once, at its logic queue and increasing logic offsets, the
	// moved queues across both segments (the old one read from broker-a).
	const pullGroup = "grpc_static_pull"
	registerPullConsumer(t, ctx, gb, pullGroup, topic)
	pulled := map[string]bool{}
	for g := range int32(queues) {
		q := &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: g, Broker: &v2pb.Broker{Name: "broker-b"}}
		end, err := gb.QueryOffset(ctx, &v2pb.QueryOffsetRequest{MessageQueue: q, QueryOffsetPolicy: v2pb.QueryOffsetPolicy_END})
		if err != nil || end.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("QueryOffset END of logic queue %d: %v %v", g, end, err)
		}
		off, last := int64(0), int64(-1)
		for steps := 0; off < end.GetOffset(); steps++ {
			if steps > 20 {
				t.Fatalf("logic queue %d: no progress at %d (end %d)", g, off, end.GetOffset())
			}
			a := pullQueue(ctx, t, gb, pullGroup, q, off, 32, "*")
			if c := a.status.GetCode(); a.status != nil && c != v2pb.Code_OK && c != v2pb.Code_MESSAGE_NOT_FOUND {
				t.Fatalf("pull logic queue %d at %d: %v", g, off, a.status)
			}
			for _, m := range a.msgs {
				sp := m.GetSystemProperties()
				if sp.GetQueueId() != g || sp.GetQueueOffset() <= last || sp.GetQueueOffset() < off || pulled[sp.GetMessageId()] {
					t.Fatalf("pull logic queue %d at %d: %s at queue %d offset %d (last %d, seen %v)", g, off, m.GetBody(), sp.GetQueueId(), sp.GetQueueOffset(), last, pulled[sp.GetMessageId()])
				}
				last = sp.GetQueueOffset()
				pulled[sp.GetMessageId()] = true
				if bodies[sp.GetMessageId()] != string(m.GetBody()) {
					t.Errorf("pulled %s with body %q, sent %q", sp.GetMessageId(), m.GetBody(), bodies[sp.GetMessageId()])
				}
			}
			next := a.next
			if next <= off {
				t.Fatalf("pull logic queue %d at %d: next offset %d", g, off, next)
			}
			off = next
		}
	}
	t.Logf("%v: pulled", time.Since(t0).Round(time.Millisecond))
	if len(pulled) != len(bodies) {
		t.Errorf("gRPC pulls read %d of %d messages", len(pulled), len(bodies))
	}
}
