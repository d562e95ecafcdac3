package grpcserver

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeConsumer is a Backend with the consumer rpcs: it records what the
// rpcs ask and answers what the test set.
type fakeConsumer struct {
	fakeBackend
	groups map[string]Group
	limits ConsumeLimits

	mu      sync.Mutex
	pops    []PopRequest
	pop     PopResult
	popErr  error
	acked   []string // receipt handles acked
	dlq     []string // receipt handles dead-lettered
	changed []string // receipt handles changed
	result  Result   // ack / change / dead-letter answer
	beats   []ClientInfo
	gone    []ClientInfo
}

var _ Consumer = (*fakeConsumer)(nil)

func (f *fakeConsumer) ConsumerHeartbeat(_ context.Context, c ClientInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = append(f.beats, c)
	return nil
}

func (f *fakeConsumer) ConsumerGone(c ClientInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone = append(f.gone, c)
}

func (f *fakeConsumer) Current(_ string, r Receipt) Receipt { return r }

func (f *fakeConsumer) Group(name string) (Group, bool) { g, ok := f.groups[name]; return g, ok }
func (f *fakeConsumer) ConsumeLimits() ConsumeLimits    { return f.limits }

func (f *fakeConsumer) Pop(_ context.Context, req PopRequest) (PopResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pops = append(f.pops, req)
	return f.pop, f.popErr
}

func (f *fakeConsumer) Ack(_ context.Context, _, _ string, r Receipt) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acked = append(f.acked, r.Handle)
	return f.result, nil
}

func (f *fakeConsumer) ChangeInvisible(_ context.Context, _, _ string, r Receipt, d time.Duration) (string, Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changed = append(f.changed, r.Handle)
	return fmt.Sprintf("new-%d", d.Milliseconds()), f.result, nil
}

func (f *fakeConsumer) DeadLetter(_ context.Context, _, _, _ string, r Receipt) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dlq = append(f.dlq, r.Handle)
	return f.result, nil
}

func newFakeConsumer() *fakeConsumer {
	lim := DefaultConsumeLimits()
	lim.MinLongPolling = 0
	return &fakeConsumer{
		fakeBackend: fakeBackend{topics: map[string]Topic{
			"T":    {ReadQueues: 3, WriteQueues: 3, Perm: 6},
			"RO":   {ReadQueues: 2, WriteQueues: 2, Perm: 4},
			"WO":   {ReadQueues: 2, WriteQueues: 2, Perm: 2},
			"None": {ReadQueues: 0, WriteQueues: 2, Perm: 6},
		}},
		groups: map[string]Group{
			"G":    {RetryMaxTimes: 2, Customized: []time.Duration{time.Second, 5 * time.Second}},
			"FIFO": {RetryMaxTimes: 16, Orderly: true, Exponential: &ExponentialBackoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}},
		},
		limits: lim,
	}
}

// handle is a receipt handle popped at popTime for invisible ms.
func handle(popTime time.Time, invisible time.Duration, offset int64) string {
	return fmt.Sprintf("%d %d %d 1 0 broker-a 0 %d 4096", offset, popTime.UnixMilli(), invisible.Milliseconds(), offset)
}

func TestParseReceipt(t *testing.T) {
	tests := []struct {
		in  string
		ok  bool
		off int64
	}{
		{"5 1700000000000 60000 3 0 broker-a 2 7 1234", true, 7},
		{"5 1700000000000 60000 999 2 broker-a 2 7 1234", true, 7},
		{"", false, 0},
		{"5 1700000000000 60000 3 0 broker-a 2 7", false, 0},       // extraInfo alone
		{"5 1700000000000 60000 3 0 broker-a 2 -7 1234", false, 0}, // negative
		{"5 x 60000 3 0 broker-a 2 7 1234", false, 0},
		{"5 1700000000000 60000 3 0  2 7 1234", false, 0}, // no broker name
		{"5 1700000000000 60000 3 0 b 9999999999 7 1234", false, 0},
		{strings.Repeat("1 ", 300), false, 0},
	}
	for _, tc := range tests {
		r, err := ParseReceipt(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (r.Offset != tc.off || r.CommitLogOffset != 1234 || r.QueueID != 2 ||
			r.ExtraInfo != strings.TrimSuffix(tc.in, " 1234") || r.BrokerName != "broker-a")) {
			t.Errorf("ParseReceipt(%q) = %+v, %v; want ok=%v", tc.in, r, err, tc.ok)
		}
	}
	now := time.Now()
	if r, _ := ParseReceipt(handle(now.Add(-2*time.Second), time.Second, 1)); !r.Expired(now) {
		t.Error("handle popped 2s ago for 1s not expired")
	}
	if r, _ := ParseReceipt(handle(now, time.Minute, 1)); r.Expired(now) {
		t.Error("fresh handle expired")
	}
}

func TestQueryAssignment(t *testing.T) {
	f := newFakeConsumer()
	c, _ := messagingClient(t, f)
	tests := []struct {
		topic, group string
		code         v2pb.Code
		queues       string
	}{
		{"T", "G", v2pb.Code_OK, "-1:READ_WRITE"},
		{"T", "FIFO", v2pb.Code_OK, "0:READ_WRITE 1:READ_WRITE 2:READ_WRITE"},
		{"RO", "G", v2pb.Code_OK, "-1:READ"},
		{"WO", "G", v2pb.Code_FORBIDDEN, ""},
		{"None", "G", v2pb.Code_FORBIDDEN, ""},
		{"Missing", "G", v2pb.Code_TOPIC_NOT_FOUND, ""},
		{"", "G", v2pb.Code_ILLEGAL_TOPIC, ""},
		{"bad topic!", "G", v2pb.Code_ILLEGAL_TOPIC, ""},
		{"T", "", v2pb.Code_ILLEGAL_CONSUMER_GROUP, ""},
		{"T", "bad group!", v2pb.Code_ILLEGAL_CONSUMER_GROUP, ""},
	}
	for _, tc := range tests {
		t.Run(tc.topic+"/"+tc.group, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.QueryAssignment(ctx, &v2pb.QueryAssignmentRequest{Topic: &v2pb.Resource{Name: tc.topic}, Group: &v2pb.Resource{Name: tc.group}})
			if err != nil || r.GetStatus().GetCode() != tc.code {
				t.Fatalf("QueryAssignment: %v %v, want %v", r, err, tc.code)
			}
			var got []string
			for _, a := range r.GetAssignments() {
				q := a.GetMessageQueue()
				got = append(got, fmt.Sprintf("%d:%v", q.GetId(), q.GetPermission()))
				if q.GetBroker().GetName() != "broker-a" || len(q.GetBroker().GetEndpoints().GetAddresses()) != 1 || q.GetTopic().GetName() != tc.topic {
					t.Errorf("queue %v: want broker-a with its endpoint", q)
				}
			}
			if s := strings.Join(got, " "); s != tc.queues {
				t.Fatalf("assignments %q, want %q", s, tc.queues)
			}
		})
	}
	// Bad input never stops the server.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := c.QueryAssignment(ctx, &v2pb.QueryAssignmentRequest{}); err != nil || r.GetStatus().GetCode() != v2pb.Code_ILLEGAL_TOPIC {
		t.Fatalf("empty QueryAssignment: %v %v", r, err)
	}
}

// recv runs a ReceiveMessage and returns the status code and messages,
// failing on a stream that is not status, messages, delivery timestamp.
func recv(t *testing.T, c v2pb.MessagingServiceClient, timeout time.Duration, req *v2pb.ReceiveMessageRequest) (v2pb.Code, []*v2pb.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := c.ReceiveMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var st *v2pb.Status
	var msgs []*v2pb.Message
	ended := false
	for {
		r, err := s.Recv()
		if err != nil {
			break
		}
		switch x := r.GetContent().(type) {
		case *v2pb.ReceiveMessageResponse_Status:
			if st != nil || ended {
				t.Fatalf("status %v out of place", x.Status)
			}
			st = x.Status
		case *v2pb.ReceiveMessageResponse_Message:
			if st.GetCode() != v2pb.Code_OK || ended {
				t.Fatalf("message out of place after status %v", st)
			}
			msgs = append(msgs, x.Message)
		case *v2pb.ReceiveMessageResponse_DeliveryTimestamp:
			ended = true
		}
	}
	if st == nil || !ended {
		t.Fatalf("stream without status (%v) or delivery timestamp (%v)", st, ended)
	}
	return st.GetCode(), msgs
}

func rreq(topic, group string) *v2pb.ReceiveMessageRequest {
	return &v2pb.ReceiveMessageRequest{
		Group:              &v2pb.Resource{Name: group},
		MessageQueue:       &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: -1},
		FilterExpression:   &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		BatchSize:          8,
		InvisibleDuration:  durationpb.New(30 * time.Second),
		LongPollingTimeout: durationpb.New(time.Second),
	}
}

// TestReceiveMessageRefusals: bad requests and the pop path's refusals get
// the proxy's status codes; requests refused before the pop do not pop.
func TestReceiveMessageRefusals(t *testing.T) {
	tests := []struct {
		name    string
		req     func(r *v2pb.ReceiveMessageRequest)
		timeout time.Duration
		pop     PopResult
		popErr  error
		code    v2pb.Code
		popped  bool
	}{
		{"empty request", func(r *v2pb.ReceiveMessageRequest) { *r = v2pb.ReceiveMessageRequest{} }, 0, PopResult{}, nil, v2pb.Code_ILLEGAL_TOPIC, false},
		{"missing topic", func(r *v2pb.ReceiveMessageRequest) { r.MessageQueue.Topic.Name = "Missing" }, 0, PopResult{}, nil, v2pb.Code_TOPIC_NOT_FOUND, false},
		{"illegal topic", func(r *v2pb.ReceiveMessageRequest) { r.MessageQueue.Topic.Name = "a/b" }, 0, PopResult{}, nil, v2pb.Code_ILLEGAL_TOPIC, false},
		{"unknown group", func(r *v2pb.ReceiveMessageRequest) { r.Group.Name = "Other" }, 0, PopResult{}, nil, v2pb.Code_CONSUMER_GROUP_NOT_FOUND, false},
		{"invisible too small", func(r *v2pb.ReceiveMessageRequest) { r.InvisibleDuration = durationpb.New(time.Second) }, 0, PopResult{}, nil, v2pb.Code_ILLEGAL_INVISIBLE_TIME, false},
		{"invisible missing", func(r *v2pb.ReceiveMessageRequest) { r.InvisibleDuration = nil }, 0, PopResult{}, nil, v2pb.Code_ILLEGAL_INVISIBLE_TIME, false},
		{"invisible too large", func(r *v2pb.ReceiveMessageRequest) { r.InvisibleDuration = durationpb.New(13 * time.Hour) }, 0, PopResult{}, nil, v2pb.Code_ILLEGAL_INVISIBLE_TIME, false},
		{"zero batch", func(r *v2pb.ReceiveMessageRequest) { r.BatchSize = 0 }, 0, PopResult{}, nil, v2pb.Code_BAD_REQUEST, false},
		{"deadline too short", nil, 50 * time.Millisecond, PopResult{}, nil, v2pb.Code_ILLEGAL_POLLING_TIME, false},
		{"nothing came", nil, 0, PopResult{Code: code.PollingTimeout}, nil, v2pb.Code_MESSAGE_NOT_FOUND, true},
		{"polling full", nil, 0, PopResult{Code: code.PollingFull}, nil, v2pb.Code_TOO_MANY_REQUESTS, true},
		{"topic gone", nil, 0, PopResult{Code: code.TopicNotExist, Remark: "gone"}, nil, v2pb.Code_TOPIC_NOT_FOUND, true},
		{"bad filter", nil, 0, PopResult{Code: code.SubscriptionParseFailed}, nil, v2pb.Code_ILLEGAL_FILTER_EXPRESSION, true},
		{"consume disabled", nil, 0, PopResult{Code: code.NoPermission}, nil, v2pb.Code_FORBIDDEN, true},
		{"pop failed", nil, 0, PopResult{}, errors.New("boom"), v2pb.Code_INTERNAL_SERVER_ERROR, true},
		{"found nothing", nil, 0, PopResult{Code: code.Success}, nil, v2pb.Code_MESSAGE_NOT_FOUND, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeConsumer()
			f.limits.MinLongPolling = 100 * time.Millisecond
			f.pop, f.popErr = tc.pop, tc.popErr
			c, _ := messagingClient(t, f)
			req := rreq("T", "G")
			if tc.req != nil {
				tc.req(req)
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			got, msgs := recv(t, c, timeout, req)
			if got != tc.code || len(msgs) != 0 {
				t.Fatalf("status %v with %d messages, want %v", got, len(msgs), tc.code)
			}
			if popped := len(f.pops) > 0; popped != tc.popped {
				t.Fatalf("popped %v, want %v", popped, tc.popped)
			}
		})
	}
}

// popped is a stored message as the pop path hands it over.
func popped(id, tag, body string, reconsume int32, h string) *message.Message {
	m := &message.Message{
		Topic: "T", Body: []byte(body), QueueID: 0, QueueOffset: 7, ReconsumeTimes: reconsume, CommitLogOffset: 4096,
		BornTimestamp: 1700000000123, StoreTimestamp: 1700000000456,
		BornHost:  netip.MustParseAddrPort("10.0.0.9:4321"),
		StoreHost: netip.MustParseAddrPort("10.0.0.1:10911"),
		Properties: map[string]string{
			message.PropertyTags: tag, message.PropertyKeys: "k1 k2", "color": "red",
			message.PropertyPopCK: h, message.PropertyFirstPopTime: "1",
		},
	}
	if id != "" {
		m.Properties[message.PropertyUniqClientMessageIDKeyIdx] = id
	}
	return m
}

// TestReceiveMessageConverts: popped messages go out with the system
// properties the proxy's GrpcConverter gives them; a message whose tag the
// expression does not list is acked, one delivered maxAttempts times goes
// to the DLQ, neither is returned; the pop is asked what the request says.
func TestReceiveMessageConverts(t *testing.T) {
	f := newFakeConsumer()
	now := time.Now()
	h := func(off int64) string { return handle(now, 30*time.Second, off) }
	fifo := popped("01ID3", "TagA", "fifo", 0, h(3))
	fifo.Properties[message.PropertyShardingKey] = "g1"
	f.pop = PopResult{Code: code.Success, Messages: []*message.Message{
		popped("01ID1", "TagA", "one", 0, h(1)),
		popped("", "TagC", "two", 1, h(2)), // no UNIQ_KEY: the offset message id
		popped("01IDX", "TagB", "filtered", 0, h(4)),
		popped("01IDD", "TagA", "dead", 3, h(5)), // G: retryMaxTimes 2, so 3 attempts
		fifo,
	}}
	c, _ := messagingClient(t, f)
	req := rreq("T", "G")
	req.FilterExpression.Expression = "TagA || TagC"
	req.BatchSize = 100
	req.AttemptId = func() *string { s := "att-1"; return &s }()
	got, msgs := recv(t, c, 5*time.Second, req)
	if got != v2pb.Code_OK || len(msgs) != 3 {
		t.Fatalf("status %v with %d messages, want OK with 3", got, len(msgs))
	}
	if len(f.acked) != 1 || f.acked[0] != h(4) || len(f.dlq) != 1 || f.dlq[0] != h(5) {
		t.Fatalf("acked %v dead-lettered %v, want the TagB one acked and the 4th delivery to the DLQ", f.acked, f.dlq)
	}
	p := f.pops[0]
	if p.Group != "G" || p.Topic != "T" || p.MaxNum != 32 || p.Invisible != 30*time.Second || p.ExpType != "TAG" ||
		p.Exp != "TagA || TagC" || p.Order || p.AttemptID != "att-1" || p.PollTime <= 0 || p.PollTime > time.Second {
		t.Fatalf("pop asked %+v", p)
	}
	m := msgs[0]
	sp := m.GetSystemProperties()
	if m.GetTopic().GetName() != "T" || string(m.GetBody()) != "one" || sp.GetMessageId() != "01ID1" || sp.GetTag() != "TagA" ||
		strings.Join(sp.GetKeys(), ",") != "k1,k2" || len(m.GetUserProperties()) != 1 || m.GetUserProperties()["color"] != "red" ||
		sp.GetBodyDigest().GetType() != v2pb.DigestType_MD5 || sp.GetBodyDigest().GetChecksum() != "F97C5D29941BFB1B2FDAB0874906AB82" ||
		sp.GetBodyEncoding() != v2pb.Encoding_IDENTITY || sp.GetMessageType() != v2pb.MessageType_NORMAL ||
		sp.GetBornTimestamp().AsTime().UnixMilli() != 1700000000123 || sp.GetBornHost() != "10.0.0.9" ||
		sp.GetStoreTimestamp().AsTime().UnixMilli() != 1700000000456 || sp.GetStoreHost() != "10.0.0.1:10911" ||
		sp.GetReceiptHandle() != h(1) || sp.GetQueueId() != 0 || sp.GetQueueOffset() != 7 || sp.GetDeliveryAttempt() != 1 ||
		sp.GetInvisibleDuration().AsDuration() != 30*time.Second || sp.MessageGroup != nil {
		t.Fatalf("message converted to %v", m)
	}
	if sp := msgs[1].GetSystemProperties(); sp.GetMessageId() != message.OffsetMsgID(netip.MustParseAddrPort("10.0.0.1:10911"), 4096) || sp.GetDeliveryAttempt() != 2 {
		t.Fatalf("second message %v: want the offset message id and attempt 2", sp)
	}
	if sp := msgs[2].GetSystemProperties(); sp.GetMessageGroup() != "g1" || sp.GetMessageType() != v2pb.MessageType_FIFO {
		t.Fatalf("FIFO message %v: want group g1, type FIFO", sp)
	}

	// SQL filters and a FIFO group reach the pop; auto_renew asks the
	// backend to renew, by the renewal slice.
	f.pop = PopResult{Code: code.PollingTimeout}
	req = rreq("T", "FIFO")
	req.FilterExpression = &v2pb.FilterExpression{Type: v2pb.FilterType_SQL, Expression: "a > 1"}
	req.AutoRenew, req.InvisibleDuration = true, nil
	if got, _ := recv(t, c, 5*time.Second, req); got != v2pb.Code_MESSAGE_NOT_FOUND {
		t.Fatalf("status %v", got)
	}
	if p := f.pops[1]; p.ExpType != "SQL92" || p.Exp != "a > 1" || !p.Order || p.Invisible != f.limits.RenewSlice || !p.AutoRenew {
		t.Fatalf("pop asked %+v", p)
	}
}

func TestAckMessage(t *testing.T) {
	now := time.Now()
	good, expired := handle(now, time.Minute, 1), handle(now.Add(-time.Minute), time.Second, 2)
	tests := []struct {
		name    string
		entries []*v2pb.AckMessageEntry
		result  Result
		code    v2pb.Code
		entry   []v2pb.Code
	}{
		{"ok", []*v2pb.AckMessageEntry{{MessageId: "a", ReceiptHandle: good}}, Result{}, v2pb.Code_OK, []v2pb.Code{v2pb.Code_OK}},
		{"no entries", nil, Result{}, v2pb.Code_INTERNAL_SERVER_ERROR, nil}, // the proxy's "ack message result is empty"
		{"bad handle", []*v2pb.AckMessageEntry{{MessageId: "a", ReceiptHandle: "junk"}}, Result{}, v2pb.Code_INVALID_RECEIPT_HANDLE, []v2pb.Code{v2pb.Code_INVALID_RECEIPT_HANDLE}},
		{"expired", []*v2pb.AckMessageEntry{{MessageId: "a", ReceiptHandle: expired}}, Result{}, v2pb.Code_INVALID_RECEIPT_HANDLE, []v2pb.Code{v2pb.Code_INVALID_RECEIPT_HANDLE}},
		{"broker knows no such pop", []*v2pb.AckMessageEntry{{MessageId: "a", ReceiptHandle: good}}, Result{Code: code.NoMessage, Remark: "no checkpoint"}, v2pb.Code_INVALID_RECEIPT_HANDLE, []v2pb.Code{v2pb.Code_INVALID_RECEIPT_HANDLE}},
		{"mixed", []*v2pb.AckMessageEntry{{MessageId: "a", ReceiptHandle: good}, {MessageId: "b", ReceiptHandle: ""}}, Result{}, v2pb.Code_MULTIPLE_RESULTS, []v2pb.Code{v2pb.Code_OK, v2pb.Code_INVALID_RECEIPT_HANDLE}},
		{"lite", []*v2pb.AckMessageEntry{{MessageId: "a", ReceiptHandle: good, LiteTopic: func() *string { s := "l"; return &s }()}}, Result{}, v2pb.Code_NOT_IMPLEMENTED, []v2pb.Code{v2pb.Code_NOT_IMPLEMENTED}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeConsumer()
			f.result = tc.result
			c, _ := messagingClient(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.AckMessage(ctx, &v2pb.AckMessageRequest{Group: &v2pb.Resource{Name: "G"}, Topic: &v2pb.Resource{Name: "T"}, Entries: tc.entries})
			if err != nil || r.GetStatus().GetCode() != tc.code || len(r.GetEntries()) != len(tc.entry) {
				t.Fatalf("AckMessage: %v %v, want %v", r, err, tc.code)
			}
			for i, e := range r.GetEntries() {
				if e.GetStatus().GetCode() != tc.entry[i] || e.GetMessageId() != tc.entries[i].GetMessageId() || e.GetReceiptHandle() != tc.entries[i].GetReceiptHandle() {
					t.Errorf("entry %d: %v, want %v", i, e, tc.entry[i])
				}
			}
		})
	}
	f := newFakeConsumer()
	c, _ := messagingClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := c.AckMessage(ctx, &v2pb.AckMessageRequest{}); err != nil || r.GetStatus().GetCode() != v2pb.Code_ILLEGAL_TOPIC {
		t.Fatalf("empty AckMessage: %v %v", r, err)
	}
}

func TestChangeInvisibleDurationAndDeadLetter(t *testing.T) {
	f := newFakeConsumer()
	c, _ := messagingClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	good := handle(time.Now(), time.Minute, 1)
	req := func(h string, d *durationpb.Duration) *v2pb.ChangeInvisibleDurationRequest {
		return &v2pb.ChangeInvisibleDurationRequest{Group: &v2pb.Resource{Name: "G"}, Topic: &v2pb.Resource{Name: "T"}, ReceiptHandle: h, InvisibleDuration: d, MessageId: "m"}
	}
	r, err := c.ChangeInvisibleDuration(ctx, req(good, durationpb.New(5*time.Second)))
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK || r.GetReceiptHandle() != "new-5000" {
		t.Fatalf("ChangeInvisibleDuration: %v %v", r, err)
	}
	for _, bad := range []struct {
		r    *v2pb.ChangeInvisibleDurationRequest
		code v2pb.Code
	}{
		{req(good, nil), v2pb.Code_ILLEGAL_INVISIBLE_TIME},
		{req(good, durationpb.New(-time.Second)), v2pb.Code_ILLEGAL_INVISIBLE_TIME},
		{req("junk", durationpb.New(time.Second)), v2pb.Code_INVALID_RECEIPT_HANDLE},
		{&v2pb.ChangeInvisibleDurationRequest{}, v2pb.Code_ILLEGAL_TOPIC},
	} {
		if r, err := c.ChangeInvisibleDuration(ctx, bad.r); err != nil || r.GetStatus().GetCode() != bad.code || r.GetReceiptHandle() != "" {
			t.Errorf("ChangeInvisibleDuration(%v): %v %v, want %v", bad.r, r, err, bad.code)
		}
	}
	f.result = Result{Code: code.NoMessage}
	if r, _ := c.ChangeInvisibleDuration(ctx, req(good, durationpb.New(time.Second))); r.GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE || r.GetReceiptHandle() != "" {
		t.Errorf("change of an unknown pop: %v", r)
	}

	f.result = Result{}
	d, err := c.ForwardMessageToDeadLetterQueue(ctx, &v2pb.ForwardMessageToDeadLetterQueueRequest{
		Group: &v2pb.Resource{Name: "G"}, Topic: &v2pb.Resource{Name: "T"}, ReceiptHandle: good, MessageId: "m", DeliveryAttempt: 3, MaxDeliveryAttempts: 3,
	})
	if err != nil || d.GetStatus().GetCode() != v2pb.Code_OK || len(f.dlq) != 1 || f.dlq[0] != good {
		t.Fatalf("ForwardMessageToDeadLetterQueue: %v %v, dead-lettered %v", d, err, f.dlq)
	}
	d, err = c.ForwardMessageToDeadLetterQueue(ctx, &v2pb.ForwardMessageToDeadLetterQueueRequest{Group: &v2pb.Resource{Name: "G"}, Topic: &v2pb.Resource{Name: "T"}})
	if err != nil || d.GetStatus().GetCode() != v2pb.Code_INVALID_RECEIPT_HANDLE || len(f.dlq) != 1 {
		t.Fatalf("ForwardMessageToDeadLetterQueue without a handle: %v %v", d, err)
	}
	n, err := c.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{})
	if err != nil || n.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", n, err)
	}
}

// TestTelemetrySubscriptionSettings: a consumer's settings are completed
// with its group's: FIFO, max attempts retryMaxTimes+1 and the retry
// policy, the batch size and long polling timeout.
func TestTelemetrySubscriptionSettings(t *testing.T) {
	f := newFakeConsumer()
	c, _ := messagingClient(t, f)
	tests := []struct {
		group string
		check func(s *v2pb.Settings) bool
	}{
		{"G", func(s *v2pb.Settings) bool {
			b := s.GetBackoffPolicy()
			next := b.GetCustomizedBackoff().GetNext()
			return !s.GetSubscription().GetFifo() && b.GetMaxAttempts() == 3 && len(next) == 2 && next[1].AsDuration() == 5*time.Second
		}},
		{"FIFO", func(s *v2pb.Settings) bool {
			e := s.GetBackoffPolicy().GetExponentialBackoff()
			return s.GetSubscription().GetFifo() && s.GetBackoffPolicy().GetMaxAttempts() == 17 &&
				e.GetInitial().AsDuration() == time.Second && e.GetMax().AsDuration() == time.Minute && e.GetMultiplier() == 2
		}},
	}
	for _, tc := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		stream, err := c.Telemetry(ctx)
		if err != nil {
			t.Fatal(err)
		}
		consumer := v2pb.ClientType_SIMPLE_CONSUMER
		sub := []*v2pb.SubscriptionEntry{{Topic: &v2pb.Resource{Name: "T"}, Expression: &v2pb.FilterExpression{Expression: "*"}}}
		if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
			ClientType: &consumer, PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{Group: &v2pb.Resource{Name: tc.group}, Subscriptions: sub}},
		}}}); err != nil {
			t.Fatal(err)
		}
		got, err := stream.Recv()
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		s := got.GetSettings()
		sp := s.GetSubscription()
		if sp.GetGroup().GetName() != tc.group || len(sp.GetSubscriptions()) != 1 || sp.GetReceiveBatchSize() != 32 ||
			sp.GetLongPollingTimeout().AsDuration() != 20*time.Second || !tc.check(s) {
			t.Errorf("group %s: settings %v", tc.group, s)
		}
	}
}

// TestConsumerHeartbeat: a consumer's heartbeat registers it with the
// client id of its metadata and the subscriptions of its settings;
// producers register nothing; NotifyClientTermination unregisters.
func TestConsumerHeartbeat(t *testing.T) {
	f := newFakeConsumer()
	c, _ := messagingClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "cid", "x-mq-language", "GOLANG", "x-mq-client-version", "5.1.0")
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	push := v2pb.ClientType_PUSH_CONSUMER
	if err := stream.Send(&v2pb.TelemetryCommand{Command: &v2pb.TelemetryCommand_Settings{Settings: &v2pb.Settings{
		ClientType: &push, PubSub: &v2pb.Settings_Subscription{Subscription: &v2pb.Subscription{
			Group:         &v2pb.Resource{Name: "G"},
			Subscriptions: []*v2pb.SubscriptionEntry{{Topic: &v2pb.Resource{Name: "T"}, Expression: &v2pb.FilterExpression{Type: v2pb.FilterType_SQL, Expression: "a>1"}}},
		}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	r, err := c.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: "G"}, ClientType: push})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("Heartbeat: %v %v", r, err)
	}
	if r, _ := c.Heartbeat(ctx, &v2pb.HeartbeatRequest{ClientType: v2pb.ClientType_PRODUCER}); r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("producer heartbeat: %v", r)
	}
	if r, _ := c.Heartbeat(ctx, &v2pb.HeartbeatRequest{Group: &v2pb.Resource{Name: "bad group!"}, ClientType: push}); r.GetStatus().GetCode() != v2pb.Code_ILLEGAL_CONSUMER_GROUP {
		t.Fatalf("heartbeat of an illegal group: %v", r)
	}
	f.mu.Lock()
	beats := f.beats
	f.mu.Unlock()
	if len(beats) != 1 || beats[0].ID != "cid" || beats[0].Group != "G" || beats[0].Language != "GOLANG" || beats[0].Version != "5.1.0" ||
		beats[0].Remote == "" || len(beats[0].Subscriptions) != 1 || beats[0].Subscriptions[0] != (SubscriptionEntry{Topic: "T", ExpType: "SQL92", Exp: "a>1"}) {
		t.Fatalf("registered %+v", beats)
	}
	if r, err := c.NotifyClientTermination(ctx, &v2pb.NotifyClientTerminationRequest{}); err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("NotifyClientTermination: %v %v", r, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.gone) != 1 || f.gone[0].ID != "cid" || f.gone[0].Group != "G" {
		t.Fatalf("unregistered %+v, want cid of G (the group from its settings)", f.gone)
	}
}

// upperHex writes the digest as the proxy does: upper-case hex.
func TestUpperHex(t *testing.T) {
	sum := md5.Sum([]byte("body"))
	if got, want := upperHex(sum), strings.ToUpper(hex.EncodeToString(sum[:])); got != want {
		t.Errorf("upperHex %s, want %s", got, want)
	}
}
