package grpcserver

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// The producer rpcs of fakeBackend: END_TRANSACTION is not expected.
func (fakeBackend) EndTransaction(context.Context, EndTxInput) (SendResult, error) {
	return SendResult{Code: code.SystemError, Remark: "fakeBackend: no END_TRANSACTION"}, nil
}

func (fakeBackend) MaxDelay() time.Duration { return 24 * time.Hour }

// txBackend records END_TRANSACTION.
type txBackend struct {
	fakeBackend
	ended     chan EndTxInput
	endResult SendResult
}

func (b txBackend) EndTransaction(_ context.Context, in EndTxInput) (SendResult, error) {
	b.ended <- in
	return b.endResult, nil
}

// TestJumpHashIsGuavas: the queue of a message group is Guava's
// Hashing.consistentHash(group.hashCode(), queues), as behind Apache's
// proxy (values printed by Guava 32.0.1).
func TestJumpHashIsGuavas(t *testing.T) {
	tests := []struct {
		group string
		hash  int32
		want  []int // for 1, 2, 4, 8, 16, 1000 buckets
	}{
		{"group-0", 293427298, []int{0, 1, 1, 1, 1, 168}},
		{"group-1", 293427299, []int{0, 1, 1, 7, 15, 36}},
		{"order-42", 1234255197, []int{0, 0, 3, 3, 10, 753}},
		{"é中文", 870307, []int{0, 1, 3, 4, 4, 273}},
		{"zzzzzzzzzzzzzzzzzzzz", 1718487168, []int{0, 1, 3, 3, 10, 916}},
	}
	for _, tc := range tests {
		if h := javaHashCode(tc.group); h != tc.hash {
			t.Errorf("javaHashCode(%q) = %d, want %d", tc.group, h, tc.hash)
		}
		for i, n := range []int{1, 2, 4, 8, 16, 1000} {
			if got := jumpHash(int64(tc.hash), n); got != tc.want[i] {
				t.Errorf("jumpHash(%q, %d) = %d, want %d", tc.group, n, got, tc.want[i])
			}
		}
	}
}

func typedMessage(topic, id string, edit func(sp *v2pb.SystemProperties)) *v2pb.Message {
	m := normalMessage(topic, id, []byte("body-"+id))
	edit(m.SystemProperties)
	return m
}

func ptr[T any](v T) *T { return &v }

// TestSendMessageTypes: the message types against the topic's
// message.type, and the properties each type is stored with.
func TestSendMessageTypes(t *testing.T) {
	topics := map[string]Topic{
		"N":   {ReadQueues: 8, WriteQueues: 8, Perm: 6},
		"F":   {ReadQueues: 8, WriteQueues: 8, Perm: 6, MessageType: "FIFO"},
		"D":   {ReadQueues: 2, WriteQueues: 2, Perm: 6, MessageType: "DELAY"},
		"TX":  {ReadQueues: 2, WriteQueues: 2, Perm: 6, MessageType: "TRANSACTION"},
		"MIX": {ReadQueues: 8, WriteQueues: 8, Perm: 6, MessageType: "MIXED"},
		"L":   {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "LITE"},
		"P":   {ReadQueues: 2, WriteQueues: 2, Perm: 6, MessageType: "PRIORITY"},
	}
	fifo := func(group string) func(sp *v2pb.SystemProperties) {
		return func(sp *v2pb.SystemProperties) { sp.MessageType, sp.MessageGroup = v2pb.MessageType_FIFO, &group }
	}
	delay := func(d time.Duration) func(sp *v2pb.SystemProperties) {
		return func(sp *v2pb.SystemProperties) {
			sp.MessageType, sp.DeliveryTimestamp = v2pb.MessageType_DELAY, timestamppb.New(time.Now().Add(d))
		}
	}
	lite := func(name string) func(sp *v2pb.SystemProperties) {
		return func(sp *v2pb.SystemProperties) { sp.MessageType, sp.LiteTopic = v2pb.MessageType_LITE, &name }
	}
	priority := func(p int32) func(sp *v2pb.SystemProperties) {
		return func(sp *v2pb.SystemProperties) { sp.MessageType, sp.Priority = v2pb.MessageType_PRIORITY, &p }
	}
	tx := func(sp *v2pb.SystemProperties) {
		sp.MessageType, sp.OrphanedTransactionRecoveryDuration = v2pb.MessageType_TRANSACTION, durationpb.New(30*time.Second)
	}
	tests := []struct {
		name  string
		msg   *v2pb.Message
		code  v2pb.Code
		check func(t *testing.T, in SendInput, e *v2pb.SendResultEntry)
	}{
		{"fifo", typedMessage("F", "01F1", fifo("order-42")), v2pb.Code_OK, func(t *testing.T, in SendInput, _ *v2pb.SendResultEntry) {
			if in.Properties[message.PropertyShardingKey] != "order-42" || in.QueueID != 3 || in.SysFlag != 0 {
				t.Errorf("FIFO stored with %v on queue %d sysFlag %d, want __SHARDINGKEY=order-42 on queue 3", in.Properties, in.QueueID, in.SysFlag)
			}
		}},
		{"fifo on a mixed topic", typedMessage("MIX", "01F2", fifo("group-1")), v2pb.Code_OK, func(t *testing.T, in SendInput, _ *v2pb.SendResultEntry) {
			if in.QueueID != 7 {
				t.Errorf("queue %d, want 7 (Guava's consistentHash of group-1 over 8)", in.QueueID)
			}
		}},
		{"fifo on a NORMAL topic", typedMessage("N", "01F3", fifo("g")), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, nil},
		{"normal on a FIFO topic", normalMessage("F", "01F4", []byte("x")), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, nil},
		{"fifo declared without a group", typedMessage("F", "01F5", func(sp *v2pb.SystemProperties) { sp.MessageType = v2pb.MessageType_FIFO }),
			v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, nil},
		{"fifo group of blanks", typedMessage("F", "01F6", fifo("  ")), v2pb.Code_ILLEGAL_MESSAGE_GROUP, nil},
		{"delay", typedMessage("D", "01D1", delay(time.Minute)), v2pb.Code_OK, func(t *testing.T, in SendInput, _ *v2pb.SendResultEntry) {
			at, err := strconv.ParseInt(in.Properties[message.PropertyTimerDeliverMS], 10, 64)
			if err != nil || time.Until(time.UnixMilli(at)) < 50*time.Second {
				t.Errorf("TIMER_DELIVER_MS %q, want a minute ahead", in.Properties[message.PropertyTimerDeliverMS])
			}
		}},
		{"delay in the past is delivered at once", typedMessage("D", "01D2", delay(-time.Hour)), v2pb.Code_OK, nil},
		{"delay beyond the max", typedMessage("D", "01D3", delay(25*time.Hour)), v2pb.Code_ILLEGAL_DELIVERY_TIME, nil},
		{"delay on a NORMAL topic", typedMessage("N", "01D4", delay(time.Minute)), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, nil},
		{"transaction", typedMessage("TX", "01T1", tx), v2pb.Code_OK, func(t *testing.T, in SendInput, e *v2pb.SendResultEntry) {
			p := in.Properties
			if in.SysFlag != txPreparedType || p[message.PropertyTransactionPrepared] != "true" || p[message.PropertyCheckImmunityTimeInSec] != "30" ||
				p[message.PropertyProducerGroup] != "TX" || in.ProducerGroup != "TX" {
				t.Errorf("half message sent as sysFlag %d group %q %v", in.SysFlag, in.ProducerGroup, p)
			}
			if e.GetTransactionId() != "01T1" {
				t.Errorf("transaction id %q, want the send's 01T1", e.GetTransactionId())
			}
		}},
		{"transaction on a NORMAL topic", typedMessage("N", "01T2", tx), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, nil},
		{"lite", typedMessage("L", "01L1", lite("order-7")), v2pb.Code_OK, func(t *testing.T, in SendInput, _ *v2pb.SendResultEntry) {
			if in.Properties[message.PropertyLiteTopic] != "order-7" {
				t.Errorf("lite message stored with %v", in.Properties)
			}
		}},
		{"lite on a NORMAL topic", typedMessage("N", "01L2", lite("order-7")), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, nil},
		{"lite topic with bad characters", typedMessage("L", "01L3", lite("a/b")), v2pb.Code_ILLEGAL_LITE_TOPIC, nil},
		{"lite topic of blanks", typedMessage("L", "01L4", lite("  ")), v2pb.Code_ILLEGAL_LITE_TOPIC, nil},
		{"priority", typedMessage("P", "01P1", priority(3)), v2pb.Code_OK, func(t *testing.T, in SendInput, _ *v2pb.SendResultEntry) {
			if in.Properties[message.PropertyPriority] != "3" {
				t.Errorf("priority message stored with %v", in.Properties)
			}
		}},
		{"negative priority", typedMessage("P", "01P2", priority(-1)), v2pb.Code_BAD_REQUEST, nil},
		{"priority on a FIFO topic", typedMessage("F", "01P3", priority(1)), v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, nil},
		{"system topic", normalMessage("RMQ_SYS_TRANS_HALF_TOPIC", "01Y1", []byte("x")), v2pb.Code_ILLEGAL_TOPIC, nil},
		{"illegal topic name", normalMessage("a/b", "01Y2", []byte("x")), v2pb.Code_ILLEGAL_TOPIC, nil},
		{"system property as a user one", func() *v2pb.Message {
			m := normalMessage("N", "01S1", []byte("x"))
			m.UserProperties[message.PropertyDelayTimeLevel] = "3"
			return m
		}(), v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, nil},
		{"normal: group, born host and time", normalMessage("N", "01N1", []byte("x")), v2pb.Code_OK, func(t *testing.T, in SendInput, _ *v2pb.SendResultEntry) {
			p := in.Properties
			if p[message.PropertyProducerGroup] != "N" || p[message.PropertyBornHost] != "10.0.0.9" || p[message.PropertyBornTimestamp] != "1700000000123" ||
				in.BornHost.Addr() != netip.MustParseAddr("127.0.0.1") || in.BornHost.Port() == 0 {
				t.Errorf("stored with born host %v and %v", in.BornHost, p)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := fakeBackend{topics: topics, sent: make(chan SendInput, 1), result: SendResult{Offset: 5, TransactionID: tc.msg.GetSystemProperties().GetMessageId(), CommitLogOffset: 777}}
			c, _ := messagingClient(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{tc.msg}})
			if err != nil {
				t.Fatal(err)
			}
			e := resp.GetEntries()[0]
			if e.GetStatus().GetCode() != tc.code {
				t.Fatalf("answer %v, want %v", resp, tc.code)
			}
			if tc.code != v2pb.Code_OK {
				if e.GetStatus().GetMessage() == "" {
					t.Errorf("status %v without a message", e.GetStatus())
				}
				select {
				case in := <-b.sent:
					t.Fatalf("refused message reached the backend: %+v", in)
				default:
				}
				return
			}
			in := <-b.sent
			if tc.check != nil {
				tc.check(t, in, e)
			}
		})
	}
}

// TestFIFOGroupStaysOnOneQueue: every message of a group goes to one queue.
func TestFIFOGroupStaysOnOneQueue(t *testing.T) {
	b := fakeBackend{topics: map[string]Topic{"F": {ReadQueues: 8, WriteQueues: 8, Perm: 6, MessageType: "FIFO"}}, sent: make(chan SendInput, 1)}
	c, _ := messagingClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	queues := map[string]map[int32]bool{}
	for i := 0; i < 40; i++ {
		g := "g" + strconv.Itoa(i%5)
		group := g
		m := typedMessage("F", "01G"+strconv.Itoa(i), func(sp *v2pb.SystemProperties) { sp.MessageType, sp.MessageGroup = v2pb.MessageType_FIFO, &group })
		if r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("send: %v %v", r, err)
		}
		if queues[g] == nil {
			queues[g] = map[int32]bool{}
		}
		queues[g][(<-b.sent).QueueID] = true
	}
	for g, qs := range queues {
		if len(qs) != 1 {
			t.Errorf("group %s went to queues %v, want one", g, qs)
		}
	}
}

// TestEndTransaction: the transaction id of a half message's send leads to
// END_TRANSACTION with its offsets and the topic as the group; bad ids
// answer INVALID_TRANSACTION_ID; the broker's refusal is passed on.
func TestEndTransaction(t *testing.T) {
	b := txBackend{
		fakeBackend: fakeBackend{
			topics: map[string]Topic{"TX": {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "TRANSACTION"}},
			sent:   make(chan SendInput, 4), result: SendResult{Offset: 11, TransactionID: "01TX", CommitLogOffset: 4096},
		},
		ended: make(chan EndTxInput, 4),
	}
	c, _ := messagingClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	send := func(id string) {
		t.Helper()
		m := typedMessage("TX", id, func(sp *v2pb.SystemProperties) { sp.MessageType = v2pb.MessageType_TRANSACTION })
		if r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}}); err != nil || r.GetEntries()[0].GetTransactionId() != "01TX" {
			t.Fatalf("send: %v %v", r, err)
		}
		<-b.sent
	}
	end := func(id string, res v2pb.TransactionResolution) v2pb.Code {
		t.Helper()
		r, err := c.EndTransaction(ctx, &v2pb.EndTransactionRequest{Topic: &v2pb.Resource{Name: "TX"}, MessageId: "01TX", TransactionId: id,
			Resolution: res, Source: v2pb.TransactionSource_SOURCE_CLIENT})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetStatus().GetCode() != v2pb.Code_OK && r.GetStatus().GetMessage() == "" {
			t.Errorf("status %v without a message", r.GetStatus())
		}
		return r.GetStatus().GetCode()
	}
	send("01TX")
	if got := end("01TX", v2pb.TransactionResolution_COMMIT); got != v2pb.Code_OK {
		t.Fatalf("commit: %v", got)
	}
	if in := <-b.ended; in != (EndTxInput{ProducerGroup: "TX", TranStateTableOffset: 11, CommitLogOffset: 4096, CommitOrRollback: txCommitType,
		MessageID: "01TX", TransactionID: "01TX"}) {
		t.Fatalf("END_TRANSACTION %+v", in)
	}
	if got := end("01TX", v2pb.TransactionResolution_ROLLBACK); got != v2pb.Code_INVALID_TRANSACTION_ID {
		t.Fatalf("second end of an ended transaction: %v, want INVALID_TRANSACTION_ID", got)
	}
	for _, id := range []string{"", "  ", "bogus"} {
		if got := end(id, v2pb.TransactionResolution_COMMIT); got != v2pb.Code_INVALID_TRANSACTION_ID {
			t.Fatalf("end of transaction %q: %v, want INVALID_TRANSACTION_ID", id, got)
		}
	}
	if r, err := c.EndTransaction(ctx, &v2pb.EndTransactionRequest{TransactionId: "01TX"}); err != nil || r.GetStatus().GetCode() != v2pb.Code_ILLEGAL_TOPIC {
		t.Fatalf("end without a topic: %v %v, want ILLEGAL_TOPIC", r, err)
	}
	// An unknown state is passed on as such and keeps the transaction
	// known for the check.
	send("01TX")
	if got := end("01TX", v2pb.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED); got != v2pb.Code_OK {
		t.Fatalf("unknown resolution: %v, want OK (END_TRANSACTION with type 0)", got)
	}
	if in := <-b.ended; in.CommitOrRollback != txNotType {
		t.Fatalf("unknown resolution sent as %d", in.CommitOrRollback)
	}
	if got := end("01TX", v2pb.TransactionResolution_ROLLBACK); got != v2pb.Code_OK {
		t.Fatalf("rollback after unknown: %v", got)
	}
	if in := <-b.ended; in.CommitOrRollback != txRollbackType {
		t.Fatalf("rollback sent as %d", in.CommitOrRollback)
	}
}

// TestEndTransactionRefused: the broker's refusal reaches the client.
func TestEndTransactionRefused(t *testing.T) {
	b := txBackend{
		fakeBackend: fakeBackend{
			topics: map[string]Topic{"TX": {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "TRANSACTION"}},
			sent:   make(chan SendInput, 1), result: SendResult{Offset: 1, TransactionID: "01TY", CommitLogOffset: 1},
		},
		ended: make(chan EndTxInput, 1), endResult: SendResult{Code: code.TransactionFailed, Remark: "already rolled back"},
	}
	c, _ := messagingClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m := typedMessage("TX", "01TY", func(sp *v2pb.SystemProperties) { sp.MessageType = v2pb.MessageType_TRANSACTION })
	if _, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{m}}); err != nil {
		t.Fatal(err)
	}
	r, err := c.EndTransaction(ctx, &v2pb.EndTransactionRequest{Topic: &v2pb.Resource{Name: "TX"}, TransactionId: "01TY", Resolution: v2pb.TransactionResolution_COMMIT})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_PRECONDITION_FAILED || !strings.Contains(r.GetStatus().GetMessage(), "already rolled back") {
		t.Fatalf("refused commit: %v %v, want PRECONDITION_FAILED with the broker's remark", r, err)
	}
}

// TestRecoverOrphanedTransaction: a producer's Telemetry stream, once its
// settings name the topic, gets the broker's check-back as a
// RecoverOrphanedTransactionCommand, and its EndTransaction ends the
// checked copy; the closed stream is no longer a target.
func TestRecoverOrphanedTransaction(t *testing.T) {
	prods := NewProducers()
	b := txBackend{
		fakeBackend: fakeBackend{topics: map[string]Topic{"TX": {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "TRANSACTION"}}},
		ended:       make(chan EndTxInput, 1),
	}
	s := startServer(t, Config{Backend: b, AdvertiseHost: "127.0.0.1", Producers: prods})
	conn, err := grpc.NewClient(s.Addr(), append(withClientID(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if prods.Pick("TX") != nil {
		t.Fatal("a producer before any stream")
	}
	sctx, scancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "client-1"))
	stream, err := c.Telemetry(sctx)
	if err != nil {
		t.Fatal(err)
	}
	settings := &v2pb.Settings{ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{
		Topics: []*v2pb.Resource{{Name: "TX"}}}}}
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: settings}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	sess := prods.Pick("TX")
	if sess == nil || !strings.HasPrefix(sess.RemoteAddr(), "127.0.0.1:") {
		t.Fatalf("no producer session of TX after settings (%v)", sess)
	}
	half := &message.Message{
		Topic: "TX", Body: []byte("order 7"), QueueID: 0, BornTimestamp: 1700000000123, StoreTimestamp: 1700000000200,
		Properties: map[string]string{
			message.PropertyUniqClientMessageIDKeyIdx: "01OR", message.PropertyTags: "TagA", message.PropertyKeys: "k1 k2",
			message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "TX", "color": "red",
		},
	}
	if err := sess.RecoverOrphaned(OrphanedTransaction{Group: "TX", TransactionID: "01OR", TranStateTableOffset: 3, CommitLogOffset: 999, Message: half}); err != nil {
		t.Fatal(err)
	}
	cmd, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	rc := cmd.GetRecoverOrphanedTransactionCommand()
	m := rc.GetMessage()
	sp := m.GetSystemProperties()
	if rc.GetTransactionId() != "01OR" || m.GetTopic().GetName() != "TX" || string(m.GetBody()) != "order 7" || sp.GetMessageId() != "01OR" ||
		sp.GetTag() != "TagA" || strings.Join(sp.GetKeys(), ",") != "k1,k2" || sp.GetMessageType() != v2pb.MessageType_TRANSACTION ||
		sp.GetBodyDigest().GetType() != v2pb.DigestType_CRC32 || sp.GetBornTimestamp().AsTime().UnixMilli() != 1700000000123 ||
		len(m.GetUserProperties()) != 1 || m.GetUserProperties()["color"] != "red" {
		t.Fatalf("recover command %v", cmd)
	}
	r, err := c.EndTransaction(ctx, &v2pb.EndTransactionRequest{Topic: &v2pb.Resource{Name: "TX"}, MessageId: "01OR", TransactionId: "01OR",
		Resolution: v2pb.TransactionResolution_ROLLBACK, Source: v2pb.TransactionSource_SOURCE_SERVER_CHECK})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("end after check: %v %v", r, err)
	}
	if in := <-b.ended; in.TranStateTableOffset != 3 || in.CommitLogOffset != 999 || !in.FromTransactionCheck || in.CommitOrRollback != txRollbackType {
		t.Fatalf("END_TRANSACTION %+v, want the checked copy's offsets, from the check", in)
	}
	scancel()
	deadline := time.Now().Add(5 * time.Second)
	for prods.Pick("TX") != nil {
		if time.Now().After(deadline) {
			t.Fatal("closed stream still a producer of TX")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTxDataBounded: the transaction table stays under maxTxData, oldest
// (over a minute) first, and a transaction stays known within the bound.
func TestTxDataBounded(t *testing.T) {
	p := NewProducers()
	now := time.Unix(1700000000, 0)
	p.now = func() time.Time { return now }
	for i := 0; i < maxTxData/2; i++ {
		p.remember("T", "old"+strconv.Itoa(i), int64(i), int64(i))
	}
	now = now.Add(2 * time.Minute)
	for i := 0; i < maxTxData; i++ {
		p.remember("T", "new"+strconv.Itoa(i), int64(i), int64(i))
	}
	if n := len(p.tx); n > maxTxData {
		t.Fatalf("%d transactions kept, bound %d", n, maxTxData)
	}
	if _, ok := p.lookup("T", "old0"); ok {
		t.Error("an entry over a minute old survived the sweep")
	}
	if d, ok := p.lookup("T", "new"+strconv.Itoa(maxTxData-1)); !ok || d.commitLogOffset != int64(maxTxData-1) {
		t.Errorf("the newest transaction is gone: %v %v", d, ok)
	}
	now = now.Add(txDataTTL + time.Second)
	if _, ok := p.lookup("T", "new"+strconv.Itoa(maxTxData-1)); ok {
		t.Error("a transaction older than txDataTTL is still known")
	}
}

// blockedStream is a Telemetry stream whose client does not read.
type blockedStream struct {
	v2pb.MessagingService_TelemetryServer
	release chan struct{}
}

func (b blockedStream) Send(*v2pb.TelemetryCommand) error { <-b.release; return nil }

// TestRecoverOrphanedDoesNotBlock: check-backs to a client that does not
// read wait in the background, at most maxPushes; the broker's check is
// never held.
func TestRecoverOrphanedDoesNotBlock(t *testing.T) {
	p := NewProducers()
	st := blockedStream{release: make(chan struct{})}
	s := p.newSession(st, "c", "127.0.0.1:1")
	half := &message.Message{Topic: "TX", Body: []byte("x"), Properties: map[string]string{message.PropertyUniqClientMessageIDKeyIdx: "01"}}
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i <= maxPushes && err == nil; i++ {
			err = s.RecoverOrphaned(OrphanedTransaction{Group: "TX", TransactionID: "01", Message: half})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "does not read") {
			t.Fatalf("check-back %d to a stuck client: %v, want refused", maxPushes+1, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RecoverOrphaned blocked on a client that does not read")
	}
	close(st.release)
	deadline := time.Now().Add(5 * time.Second)
	for len(s.pushes) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.RecoverOrphaned(OrphanedTransaction{Group: "TX", TransactionID: "01", Message: half}); err != nil {
		t.Fatalf("check-back once the client reads again: %v", err)
	}
}

// TestNotifyClientTermination: a producer's goodbye ends its check-back
// registration before its stream closes.
func TestNotifyClientTermination(t *testing.T) {
	prods := NewProducers()
	s := startServer(t, Config{Backend: fakeBackend{}, AdvertiseHost: "127.0.0.1", Producers: prods})
	conn, err := grpc.NewClient(s.Addr(), append(withClientID(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := v2pb.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "client-9"), 5*time.Second)
	defer cancel()
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	settings := &v2pb.Settings{ClientType: ptr(v2pb.ClientType_PRODUCER), PubSub: &v2pb.Settings_Publishing{Publishing: &v2pb.Publishing{
		Topics: []*v2pb.Resource{{Name: "A"}, {Name: "B"}}}}}
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: settings}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if prods.Pick("A") == nil || prods.Pick("B") == nil {
		t.Fatal("producer not registered for A and B")
	}
	r, err := c.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", r, err)
	}
	if prods.Pick("A") != nil || prods.Pick("B") != nil {
		t.Fatal("producer still a check-back target after its goodbye")
	}
}
