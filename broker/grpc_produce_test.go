package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// grpcBroker starts a broker with the gRPC endpoint and the given topics
// (name → message.type, "" for none) of queues queues each, and a client.
func grpcBroker(t *testing.T, edit func(cfg *config.Config), queues int, topics map[string]string) (*Broker, v2pb.MessagingServiceClient) {
	t.Helper()
	ns := fakens.Start(t)
	cfg := testConfig(t, t.TempDir(), ns.Addr())
	cfg.EnableGrpcServer, cfg.GrpcServerPort = true, 0
	if edit != nil {
		edit(cfg)
	}
	b := startBroker(t, cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
	for name, typ := range topics {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
		if typ != "" {
			tc.Attributes = map[string]string{"+message.type": typ}
		}
		if _, err := b.Topics().Update(tc); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := grpcDial(b.GrpcAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return b, v2pb.NewMessagingServiceClient(conn)
}

// sendNormal sends one NORMAL message per id over gRPC (tag TagA, keys k1
// k2, color=red, the body "body-<id>") and returns the send entries.
func sendNormal(ctx context.Context, t *testing.T, cli v2pb.MessagingServiceClient, topic string, born time.Time, ids ...string) []*v2pb.SendResultEntry {
	t.Helper()
	tag := "TagA"
	var out []*v2pb.SendResultEntry
	for _, id := range ids {
		resp, err := cli.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
			Topic:          &v2pb.Resource{Name: topic},
			UserProperties: map[string]string{"color": "red"},
			SystemProperties: &v2pb.SystemProperties{
				Tag: &tag, Keys: []string{"k1", "k2"}, MessageId: id, MessageType: v2pb.MessageType_NORMAL,
				BornTimestamp: timestamppb.New(born),
			},
			Body: []byte("body-" + id),
		}}})
		if err != nil || resp.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("SendMessage %s: %v %v", id, resp, err)
		}
		out = append(out, resp.GetEntries()...)
	}
	return out
}

// stored reads the messages of one queue.
func stored(t *testing.T, b *Broker, topic string, queue int32) []*message.Message {
	t.Helper()
	got, err := b.Store().GetMessage(context.Background(), topic, queue, 0, 32, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	var out []*message.Message
	for _, r := range got.Records {
		m, _, err := message.DecodeStored(r, message.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func storedAll(t *testing.T, b *Broker, topic string) []*message.Message {
	var out []*message.Message
	for q := int32(0); q < 4; q++ {
		out = append(out, stored(t, b, topic, q)...)
	}
	return out
}

// storedN waits (the consume queues are built asynchronously, timers fire
// late on a loaded machine) until topic holds n messages, and returns them.
func storedN(t *testing.T, b *Broker, topic string, n int) []*message.Message {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ms := storedAll(t, b, topic)
		if len(ms) >= n || time.Now().After(deadline) {
			return ms
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func grpcSend(t *testing.T, ctx context.Context, c v2pb.MessagingServiceClient, topic, id string, edit func(*v2pb.SystemProperties)) *v2pb.SendResultEntry {
	t.Helper()
	sp := &v2pb.SystemProperties{MessageId: id, MessageType: v2pb.MessageType_NORMAL, BornTimestamp: timestamppb.Now()}
	if edit != nil {
		edit(sp)
	}
	r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{{
		Topic: &v2pb.Resource{Name: topic}, SystemProperties: sp, Body: []byte("body-" + id),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetEntries()[0]
}

// TestGrpcSendTypesStored: FIFO, delay and normal messages over gRPC are
// stored as the broker's remoting path stores them: a group on one queue
// with __SHARDINGKEY, a delay parked on the timer, the peer as born host.
func TestGrpcSendTypesStored(t *testing.T) {
	b, c := grpcBroker(t, func(cfg *config.Config) { cfg.EnableLmq, cfg.EnableMultiDispatch = true, true }, 4, map[string]string{"GF": "FIFO", "GD": "DELAY", "GN": "", "GL": "LITE", "GP": "PRIORITY"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 6; i++ {
		group := "order-" + strconv.Itoa(i%2)
		e := grpcSend(t, ctx, c, "GF", "01F"+strconv.Itoa(i), func(sp *v2pb.SystemProperties) {
			sp.MessageType, sp.MessageGroup = v2pb.MessageType_FIFO, &group
		})
		if e.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("FIFO send: %v", e)
		}
	}
	perQueue := map[string]map[int32]int{}
	for _, m := range storedN(t, b, "GF", 6) {
		g := m.Property(message.PropertyShardingKey)
		if perQueue[g] == nil {
			perQueue[g] = map[int32]int{}
		}
		perQueue[g][m.QueueID]++
	}
	if len(perQueue) != 2 || len(perQueue["order-0"]) != 1 || len(perQueue["order-1"]) != 1 {
		t.Fatalf("FIFO groups on queues %v, want each group on one queue", perQueue)
	}
	// The wrong type for the topic is refused by the type check.
	if e := grpcSend(t, ctx, c, "GF", "01FX", nil); e.GetStatus().GetCode() != v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE {
		t.Fatalf("NORMAL to a FIFO topic: %v", e)
	}

	at := time.Now().Add(time.Hour)
	if e := grpcSend(t, ctx, c, "GD", "01D1", func(sp *v2pb.SystemProperties) {
		sp.MessageType, sp.DeliveryTimestamp = v2pb.MessageType_DELAY, timestamppb.New(at)
	}); e.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("delay send: %v", e)
	}
	// Parked on the timer until its delivery time, not in its topic.
	parked := stored(t, b, schedule.TimerTopic, 0)
	for deadline := time.Now().Add(5 * time.Second); len(parked) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		parked = stored(t, b, schedule.TimerTopic, 0)
	}
	if len(parked) != 1 || parked[0].Property(message.PropertyRealTopic) != "GD" ||
		parked[0].Property(message.PropertyTimerOutMS) != strconv.FormatInt(at.UnixMilli(), 10) {
		t.Fatalf("timer holds %v, want 01D1 for GD due at %d", parked, at.UnixMilli())
	}
	if n := len(storedAll(t, b, "GD")); n != 0 {
		t.Fatalf("%d delayed messages visible an hour early", n)
	}
	if e := grpcSend(t, ctx, c, "GD", "01D2", func(sp *v2pb.SystemProperties) {
		sp.MessageType, sp.DeliveryTimestamp = v2pb.MessageType_DELAY, timestamppb.New(time.Now().Add(100*24*time.Hour))
	}); e.GetStatus().GetCode() != v2pb.Code_ILLEGAL_DELIVERY_TIME {
		t.Fatalf("delay beyond timerMaxDelaySec: %v", e)
	}

	// Lite: dispatched to the lite topic's queue by the send path.
	lite := "order-7"
	if e := grpcSend(t, ctx, c, "GL", "01L1", func(sp *v2pb.SystemProperties) {
		sp.MessageType, sp.LiteTopic = v2pb.MessageType_LITE, &lite
	}); e.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("lite send: %v", e)
	}
	if ms := storedN(t, b, "GL", 1); len(ms) != 1 || ms[0].Property(message.PropertyLiteTopic) != lite ||
		ms[0].Property(message.PropertyInnerMultiDispatch) == "" {
		t.Fatalf("lite message stored as %v", ms)
	}
	prio := int32(2)
	if e := grpcSend(t, ctx, c, "GP", "01P1", func(sp *v2pb.SystemProperties) {
		sp.MessageType, sp.Priority = v2pb.MessageType_PRIORITY, &prio
	}); e.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("priority send: %v", e)
	}
	if ms := storedN(t, b, "GP", 1); len(ms) != 1 || ms[0].Property(message.PropertyPriority) != "2" {
		t.Fatalf("priority message stored as %v", ms)
	}

	if e := grpcSend(t, ctx, c, "GN", "01N1", nil); e.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("normal send: %v", e)
	}
	ms := storedN(t, b, "GN", 1)
	if len(ms) != 1 {
		t.Fatalf("%d normal messages stored", len(ms))
	}
	m := ms[0]
	if m.BornHost.Addr() != m.StoreHost.Addr() || m.BornHost.Port() == 0 || m.Property(message.PropertyProducerGroup) != "GN" ||
		m.Property(message.PropertyBornHost) != "127.0.0.1" {
		t.Fatalf("stored born host %v (store host %v), properties %v: want the gRPC peer 127.0.0.1:<port>", m.BornHost, m.StoreHost, m.Properties)
	}
}

// TestGrpcTransaction: half messages over gRPC, committed and rolled back
// through EndTransaction, and an undecided one resolved by the broker's
// check through the producer's Telemetry stream.
func TestGrpcTransaction(t *testing.T) {
	b, c := grpcBroker(t, func(cfg *config.Config) {
		cfg.TransactionCheckInterval, cfg.TransactionTimeOut = 200*time.Millisecond, 300*time.Millisecond
	}, 4, map[string]string{"GT": "TRANSACTION"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	half := func(id string) *v2pb.SendResultEntry {
		t.Helper()
		e := grpcSend(t, ctx, c, "GT", id, func(sp *v2pb.SystemProperties) { sp.MessageType = v2pb.MessageType_TRANSACTION })
		if e.GetStatus().GetCode() != v2pb.Code_OK || e.GetTransactionId() == "" {
			t.Fatalf("half message: %v", e)
		}
		return e
	}
	end := func(e *v2pb.SendResultEntry, r v2pb.TransactionResolution, src v2pb.TransactionSource) v2pb.Code {
		t.Helper()
		resp, err := c.EndTransaction(ctx, &v2pb.EndTransactionRequest{Topic: &v2pb.Resource{Name: "GT"}, MessageId: e.GetMessageId(),
			TransactionId: e.GetTransactionId(), Resolution: r, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetStatus().GetCode()
	}
	// Telemetry first: the producer of GT is online for the check.
	sctx := metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "tx-client")
	stream, err := c.Telemetry(sctx)
	if err != nil {
		t.Fatal(err)
	}
	pt := v2pb.ClientType_PRODUCER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{ClientType: &pt,
		PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{Topics: []*v2pb.Resource{{Name: "GT"}}}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}

	committed, rolledBack := half("01TC"), half("01TR")
	if n := len(storedAll(t, b, "GT")); n != 0 {
		t.Fatalf("%d half messages visible before the end", n)
	}
	if got := end(committed, v2pb.TransactionResolution_COMMIT, v2pb.TransactionSource_SOURCE_CLIENT); got != v2pb.Code_OK {
		t.Fatalf("commit: %v", got)
	}
	if got := end(rolledBack, v2pb.TransactionResolution_ROLLBACK, v2pb.TransactionSource_SOURCE_CLIENT); got != v2pb.Code_OK {
		t.Fatalf("rollback: %v", got)
	}
	if got := end(&v2pb.SendResultEntry{MessageId: "x", TransactionId: "bogus"}, v2pb.TransactionResolution_COMMIT,
		v2pb.TransactionSource_SOURCE_CLIENT); got != v2pb.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("bogus transaction id: %v", got)
	}
	// Undecided: the check asks the producer, which commits.
	half("01TU")
	cmd, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	rc := cmd.GetRecoverOrphanedTransactionCommand()
	if rc.GetMessage().GetSystemProperties().GetMessageId() != "01TU" || string(rc.GetMessage().GetBody()) != "body-01TU" ||
		rc.GetMessage().GetTopic().GetName() != "GT" {
		t.Fatalf("check-back %v, want 01TU", cmd)
	}
	if got := end(&v2pb.SendResultEntry{MessageId: "01TU", TransactionId: rc.GetTransactionId()}, v2pb.TransactionResolution_COMMIT,
		v2pb.TransactionSource_SOURCE_SERVER_CHECK); got != v2pb.Code_OK {
		t.Fatalf("commit from the check: %v", got)
	}
	var ids []string
	for _, m := range storedN(t, b, "GT", 2) {
		ids = append(ids, m.UniqKey())
	}
	if len(ids) != 2 || !(ids[0] == "01TC" && ids[1] == "01TU" || ids[0] == "01TU" && ids[1] == "01TC") {
		t.Fatalf("visible %v, want the committed 01TC and the checked 01TU", ids)
	}
}
