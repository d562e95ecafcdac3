package broker

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// TestGrpcRecall: a delay message sent over gRPC comes back with a recall
// handle; RecallMessage with it (or RECALL_MESSAGE over remoting with the
// same kind of handle) cancels the message, which never reaches its
// topic, while a delay message sent alongside does. A forged handle is
// refused as the proxy refuses it (INTERNAL_SERVER_ERROR with the
// broker's remark), and so is a topic that is not DELAY.
func TestGrpcRecall(t *testing.T) {
	t.Parallel() // waits for the delivery time
	b, c := grpcBroker(t, func(cfg *config.Config) { cfg.RecallMessageEnable = true }, 4, map[string]string{"GD": "DELAY", "GN": ""})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	at := time.Now().Add(1500 * time.Millisecond)
	delay := func(id string) *v2pb.SendResultEntry {
		t.Helper()
		e := grpcSend(t, ctx, c, "GD", id, func(sp *v2pb.SystemProperties) {
			sp.MessageType, sp.DeliveryTimestamp = v2pb.MessageType_DELAY, timestamppb.New(at)
		})
		if e.GetStatus().GetCode() != v2pb.Code_OK || e.GetRecallHandle() == "" {
			t.Fatalf("delay send %s: %v, want OK with a recall handle", id, e)
		}
		return e
	}
	byGrpc, byRemoting, kept := delay("01RG"), delay("01RR"), delay("01RK")

	recall := func(topic, handle string) *v2pb.RecallMessageResponse {
		t.Helper()
		r, err := c.RecallMessage(ctx, &v2pb.RecallMessageRequest{Topic: &v2pb.Resource{Name: topic}, RecallHandle: handle})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := recall("GD", byGrpc.GetRecallHandle()); r.GetStatus().GetCode() != v2pb.Code_OK || r.GetMessageId() != "01RG" {
		t.Fatalf("recall over gRPC: %v, want OK for 01RG", r)
	}
	h, _, _ := b.server.Handler(code.RecallMessage)
	req := remoting.NewRequest(code.RecallMessage, map[string]string{"topic": "GD", "recallHandle": byRemoting.GetRecallHandle(), "producerGroup": "pg"}, nil)
	if resp, err := h(ctx, nil, req); err != nil || resp.Code != code.Success || resp.Ext("msgId") != "01RR" {
		t.Fatalf("RECALL_MESSAGE over remoting of a gRPC message: %v %v", resp, err)
	}

	forged := schedule.RecallHandle{Topic: "GD", BrokerName: "broker-x", Timestamp: "1", MessageID: "01RK"}.Encode()
	for _, tc := range []struct {
		name, topic, handle string
		code                v2pb.Code
		message             string
	}{
		{"garbage handle", "GD", "not-a-handle", v2pb.Code_INTERNAL_SERVER_ERROR, "recall handle is invalid"},
		{"forged handle", "GD", forged, v2pb.Code_INTERNAL_SERVER_ERROR, "recall failed, broker service not available"},
		{"handle of another topic", "GN", kept.GetRecallHandle(), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, ""},
	} {
		if r := recall(tc.topic, tc.handle); r.GetStatus().GetCode() != tc.code || !strings.Contains(r.GetStatus().GetMessage(), tc.message) {
			t.Errorf("%s: %v, want %v %q", tc.name, r.GetStatus(), tc.code, tc.message)
		}
	}

	// The kept message arrives at its time; the recalled ones never.
	got := storedN(t, b, "GD", 1)
	time.Sleep(time.Second)
	got = storedAll(t, b, "GD")
	if len(got) != 1 || got[0].UniqKey() != "01RK" {
		var ids []string
		for _, m := range got {
			ids = append(ids, m.UniqKey())
		}
		t.Fatalf("GD holds %v, want only the kept 01RK", ids)
	}
}

// TestGrpcProducerRegistry: a 5.x producer is in the broker's producer
// table (GET_PRODUCER_CONNECTION_LIST) once its settings name the topics
// it publishes, each topic being its group, with its client id, address,
// language and version; it leaves on NotifyClientTermination, and when
// its Telemetry stream ends without one.
func TestGrpcProducerRegistry(t *testing.T) {
	b, c := grpcBroker(t, nil, 1, map[string]string{"PT1": "", "PT2": ""})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	connections := func(group string) []client.Connection {
		t.Helper()
		h, _, _ := b.server.Handler(code.GetProducerConnectionList)
		req := remoting.NewRequest(code.GetProducerConnectionList, map[string]string{"producerGroup": group}, nil)
		resp, err := h(ctx, nil, req)
		if err != nil {
			if remoting.ResponseFromError(req, err).Code == code.SystemError {
				return nil // the group has no producer online
			}
			t.Fatal(err)
		}
		var pc client.ProducerConnection
		if err := json.Unmarshal(resp.Body, &pc); err != nil {
			t.Fatal(err)
		}
		return pc.ConnectionSet
	}
	online := func(id string) (*v2pb.MessagingService_TelemetryClient, context.CancelFunc) {
		t.Helper()
		sctx, stop := context.WithCancel(metadata.AppendToOutgoingContext(ctx,
			"x-mq-client-id", id, "x-mq-language", "JAVA", "x-mq-client-version", "5.2.0"))
		stream, err := c.Telemetry(sctx)
		if err != nil {
			t.Fatal(err)
		}
		pt := v2pb.ClientType_PRODUCER
		if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{ClientType: &pt,
			PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "PT1"}, {Name: "PT2"}}}}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		return &stream, stop
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	_, stop1 := online("producer-1")
	defer stop1()
	for _, group := range []string{"PT1", "PT2"} {
		cs := connections(group)
		if len(cs) != 1 || cs[0].ClientID != "producer-1" || cs[0].Language != "JAVA" ||
			remoting.VersionDesc(cs[0].Version) != "V5_2_0" || !strings.HasPrefix(cs[0].ClientAddr, "127.0.0.1:") {
			t.Fatalf("group %s lists %+v, want producer-1 (JAVA, V5_2_0, 127.0.0.1:port)", group, cs)
		}
	}
	// Its heartbeat registers it again (here after the registration went
	// away on its own, as one that expired).
	unregister, _, _ := b.server.Handler(code.UnregisterClient)
	ch := b.grpcClients.channel("producer-1", "", nil)
	if _, err := unregister(ctx, ch, remoting.NewRequest(code.UnregisterClient,
		map[string]string{"clientID": "producer-1", "producerGroup": "PT1"}, nil)); err != nil || len(connections("PT1")) != 0 {
		t.Fatalf("unregister from PT1: %v, still %+v", err, connections("PT1"))
	}
	hctx := metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "producer-1", "x-mq-language", "JAVA", "x-mq-client-version", "5.2.0")
	if r, err := c.Heartbeat(hctx, &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("heartbeat: %v %v", r, err)
	}
	if cs := connections("PT1"); len(cs) != 1 || cs[0].ClientID != "producer-1" {
		t.Fatalf("after the heartbeat PT1 lists %+v, want producer-1", cs)
	}
	if r, err := c.NotifyClientTermination(hctx, &v2pb.NotifyClientTerminationRequest{}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("termination: %v %v", r, err)
	}
	if cs := connections("PT1"); len(cs) != 0 {
		t.Fatalf("after NotifyClientTermination PT1 lists %+v", cs)
	}

	// A stream that ends without a goodbye.
	_, stop2 := online("producer-2")
	if cs := connections("PT2"); len(cs) != 1 || cs[0].ClientID != "producer-2" {
		t.Fatalf("PT2 lists %+v, want producer-2", cs)
	}
	stop2()
	waitFor("producer-2 to leave PT2 when its stream ends", func() bool { return len(connections("PT2")) == 0 })
}

// TestGrpcRecallOnAnotherBroker: RecallMessage on one broker's endpoint
// with the handle of a message on another broker of the topic's route
// goes to that broker (as the proxy resolves the handle's broker name),
// which recalls it; a handle naming a broker outside the route is refused
// here.
func TestGrpcRecallOnAnotherBroker(t *testing.T) {
	ns := fakens.Start(t)
	start := func(name string, withGrpc bool) *Broker {
		t.Helper()
		cfg := testConfig(t, t.TempDir(), ns.Addr())
		cfg.BrokerName, cfg.RecallMessageEnable = name, true
		cfg.EnableGrpcServer, cfg.GrpcServerPort = withGrpc, 0
		b := startBroker(t, cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
		tc := protocol.NewTopicConfig("GD")
		tc.Attributes = map[string]string{"+message.type": "DELAY"}
		if _, err := b.Topics().Update(tc); err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, other := start("broker-a", true), start("broker-b", false)
	ns.AddBroker("broker-b", other.Addr())
	ns.SetTopic("GD", "broker-b", 4, 6)

	at := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	sent := invoker(t, other)(code.SendMessage, remotingtest.SendExt(t, "pg", "GD", 0,
		message.PropertyTimerDeliverMS, at, message.PropertyUniqClientMessageIDKeyIdx, "01RB"), []byte("on broker-b"))
	handle := sent.Ext("recallHandle")
	if sent.Code != code.Success || handle == "" {
		t.Fatalf("delay send on broker-b: %d %q, recall handle %q", sent.Code, sent.Remark, handle)
	}

	conn, err := grpcDial(a.GrpcAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cli := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := cli.RecallMessage(ctx, &v2pb.RecallMessageRequest{Topic: &v2pb.Resource{Name: "GD"}, RecallHandle: handle})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK || r.GetMessageId() != "01RB" {
		t.Fatalf("recall on broker-a of broker-b's message: %v %v, want OK for 01RB", r, err)
	}
	// The marker is in broker-b's CommitLog when the recall is answered;
	// its consume queue entry is dispatched a moment later.
	markers := 0
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		markers = 0
		for _, m := range stored(t, other, schedule.TimerTopic, 0) {
			if m.Tags() == schedule.RecallTag {
				markers++
			}
		}
		if markers >= 1 || time.Now().After(deadline) {
			break
		}
	}
	if markers != 1 {
		t.Errorf("broker-b's timer holds %d recall markers, want 1", markers)
	}
	outside := schedule.RecallHandle{Topic: "GD", BrokerName: "broker-z", Timestamp: at, MessageID: "01RB"}.Encode()
	r, err = cli.RecallMessage(ctx, &v2pb.RecallMessageRequest{Topic: &v2pb.Resource{Name: "GD"}, RecallHandle: outside})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_INTERNAL_SERVER_ERROR ||
		r.GetStatus().GetMessage() != "recall failed, broker service not available" {
		t.Fatalf("recall naming a broker outside the route: %v %v", r, err)
	}
}
