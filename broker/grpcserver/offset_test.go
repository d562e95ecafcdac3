package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeOffsets is a consumer Backend with the pull consumer rpcs: it
// records what they ask and answers what the test set.
type fakeOffsets struct {
	*fakeConsumer

	om        sync.Mutex
	pulls     []PullRequest
	pull      PullResult
	pullErr   error
	commits   []string // "group topic queue offset"
	reads     []string // "group topic queue" (ConsumerOffset) or "topic queue policy time" (QueueOffset)
	answer    Result   // commits' and offset reads' answer
	answerErr error
	offset    int64 // offset reads' answer
}

var _ Offsets = (*fakeOffsets)(nil)

func newFakeOffsets() *fakeOffsets {
	return &fakeOffsets{fakeConsumer: newFakeConsumer(), answer: Result{Code: code.Success}}
}

func (f *fakeOffsets) Pull(_ context.Context, req PullRequest) (PullResult, error) {
	f.om.Lock()
	defer f.om.Unlock()
	f.pulls = append(f.pulls, req)
	return f.pull, f.pullErr
}

func (f *fakeOffsets) CommitOffset(_ context.Context, group, topic string, queueID int32, offset int64) (Result, error) {
	f.om.Lock()
	defer f.om.Unlock()
	f.commits = append(f.commits, fmt.Sprintf("%s %s %d %d", group, topic, queueID, offset))
	return f.answer, f.answerErr
}

func (f *fakeOffsets) ConsumerOffset(_ context.Context, group, topic string, queueID int32) (int64, Result, error) {
	f.om.Lock()
	defer f.om.Unlock()
	f.reads = append(f.reads, fmt.Sprintf("%s %s %d", group, topic, queueID))
	return f.offset, f.answer, f.answerErr
}

func (f *fakeOffsets) QueueOffset(_ context.Context, topic string, queueID int32, at QueuePosition) (int64, Result, error) {
	f.om.Lock()
	defer f.om.Unlock()
	ms := int64(0)
	if !at.Time.IsZero() {
		ms = at.Time.UnixMilli()
	}
	f.reads = append(f.reads, fmt.Sprintf("%s %d %v %d", topic, queueID, at.Policy, ms))
	return f.offset, f.answer, f.answerErr
}

// mq is queue id of topic on broker-a (the fakes' broker).
func mq(topic string, id int32) *v2pb.MessageQueue {
	return &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: id, Broker: &v2pb.Broker{Name: "broker-a"}}
}

// pulled is what one PullMessage streamed.
type pulled struct {
	status *v2pb.Status
	msgs   []*v2pb.Message
	next   *int64 // nil: no next_offset
}

// pullStream runs a PullMessage and checks the stream's shape: one status
// first, messages only after OK, next_offset last.
func pullStream(t *testing.T, c v2pb.MessagingServiceClient, timeout time.Duration, req *v2pb.PullMessageRequest) pulled {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := c.PullMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var p pulled
	for {
		r, err := s.Recv()
		if err != nil {
			break
		}
		if p.next != nil {
			t.Fatalf("%v after next_offset", r)
		}
		switch x := r.GetContent().(type) {
		case *v2pb.PullMessageResponse_Status:
			if p.status != nil {
				t.Fatalf("second status %v", x.Status)
			}
			p.status = x.Status
		case *v2pb.PullMessageResponse_Message:
			if p.status.GetCode() != v2pb.Code_OK {
				t.Fatalf("message after status %v", p.status)
			}
			p.msgs = append(p.msgs, x.Message)
		case *v2pb.PullMessageResponse_NextOffset:
			if p.status == nil {
				t.Fatal("next_offset before the status")
			}
			n := x.NextOffset
			p.next = &n
		}
	}
	if p.status == nil {
		t.Fatal("stream without a status")
	}
	return p
}

func preq(topic, group string, queue int32, offset int64) *v2pb.PullMessageRequest {
	return &v2pb.PullMessageRequest{
		Group: &v2pb.Resource{Name: group}, MessageQueue: mq(topic, queue), Offset: offset, BatchSize: 8,
		FilterExpression:   &v2pb.FilterExpression{Type: v2pb.FilterType_TAG, Expression: "*"},
		LongPollingTimeout: durationpb.New(time.Second),
	}
}

// pulledMsg is a stored message as the pull path hands it over.
func pulledMsg(id, tag string, offset int64) *message.Message {
	return &message.Message{
		Topic: "T", Body: []byte("body-" + id), QueueID: 1, QueueOffset: offset, CommitLogOffset: 1000 + offset,
		BornTimestamp: 1700000000123, StoreTimestamp: 1700000000456,
		Properties: map[string]string{
			message.PropertyUniqClientMessageIDKeyIdx: id, message.PropertyTags: tag, message.PropertyKeys: "k1", "color": "red",
		},
	}
}

// TestPullMessage: PullMessage refuses bad requests before pulling and
// streams the pull path's answers as the proxy's pull: status, messages
// (after OK only), next_offset; a refusal is a status alone.
func TestPullMessage(t *testing.T) {
	found := PullResult{Code: code.Success, NextOffset: 9, Messages: []*message.Message{
		pulledMsg("01A", "TagA", 7), pulledMsg("01B", "TagB", 8),
	}}
	tests := []struct {
		name    string
		req     func(r *v2pb.PullMessageRequest)
		timeout time.Duration
		pull    PullResult
		pullErr error
		code    v2pb.Code
		ids     string // the messages streamed
		next    int64  // -1: no next_offset
		pulled  bool
	}{
		{"empty request", func(r *v2pb.PullMessageRequest) { *r = v2pb.PullMessageRequest{} }, 0, PullResult{}, nil, v2pb.Code_ILLEGAL_TOPIC, "", -1, false},
		{"no group", func(r *v2pb.PullMessageRequest) { r.Group = nil }, 0, PullResult{}, nil, v2pb.Code_ILLEGAL_CONSUMER_GROUP, "", -1, false},
		{"illegal group", func(r *v2pb.PullMessageRequest) { r.Group.Name = "a b" }, 0, PullResult{}, nil, v2pb.Code_ILLEGAL_CONSUMER_GROUP, "", -1, false},
		{"no queue", func(r *v2pb.PullMessageRequest) { r.MessageQueue = nil }, 0, PullResult{}, nil, v2pb.Code_ILLEGAL_TOPIC, "", -1, false},
		{"illegal topic", func(r *v2pb.PullMessageRequest) { r.MessageQueue.Topic.Name = "a/b" }, 0, PullResult{}, nil, v2pb.Code_ILLEGAL_TOPIC, "", -1, false},
		{"unknown topic", func(r *v2pb.PullMessageRequest) { r.MessageQueue.Topic.Name = "Missing" }, 0, PullResult{}, nil, v2pb.Code_TOPIC_NOT_FOUND, "", -1, false},
		{"negative queue id", func(r *v2pb.PullMessageRequest) { r.MessageQueue.Id = -1 }, 0, PullResult{}, nil, v2pb.Code_BAD_REQUEST, "", -1, false},
		{"queue id past the read queues", func(r *v2pb.PullMessageRequest) { r.MessageQueue.Id = 3 }, 0, PullResult{}, nil, v2pb.Code_BAD_REQUEST, "", -1, false},
		{"queue of another broker", func(r *v2pb.PullMessageRequest) { r.MessageQueue.Broker.Name = "broker-b" }, 0, PullResult{}, nil, v2pb.Code_BAD_REQUEST, "", -1, false},
		{"zero batch", func(r *v2pb.PullMessageRequest) { r.BatchSize = 0 }, 0, PullResult{}, nil, v2pb.Code_BAD_REQUEST, "", -1, false},
		{"deadline too short", nil, 50 * time.Millisecond, PullResult{}, nil, v2pb.Code_ILLEGAL_POLLING_TIME, "", -1, false},
		{"unknown group", nil, 0, PullResult{Code: code.SubscriptionGroupNotExist, Remark: "no group"}, nil, v2pb.Code_CONSUMER_GROUP_NOT_FOUND, "", -1, true},
		{"topic gone", nil, 0, PullResult{Code: code.TopicNotExist}, nil, v2pb.Code_TOPIC_NOT_FOUND, "", -1, true},
		{"bad filter", nil, 0, PullResult{Code: code.SubscriptionParseFailed}, nil, v2pb.Code_ILLEGAL_FILTER_EXPRESSION, "", -1, true},
		{"consume disabled", nil, 0, PullResult{Code: code.NoPermission}, nil, v2pb.Code_FORBIDDEN, "", -1, true},
		{"hold full", nil, 0, PullResult{Code: code.SystemBusy}, nil, v2pb.Code_TOO_MANY_REQUESTS, "", -1, true},
		{"pull failed", nil, 0, PullResult{}, errors.New("boom"), v2pb.Code_INTERNAL_SERVER_ERROR, "", -1, true},
		{"offset out of range", func(r *v2pb.PullMessageRequest) { r.Offset = -4 }, 0, PullResult{Code: code.PullOffsetMoved, NextOffset: 5}, nil, v2pb.Code_ILLEGAL_OFFSET, "", 5, true},
		{"nothing new", nil, 0, PullResult{Code: code.PullNotFound, NextOffset: 7}, nil, v2pb.Code_MESSAGE_NOT_FOUND, "", 7, true},
		{"no matched message", nil, 0, PullResult{Code: code.PullRetryImmediately, NextOffset: 8}, nil, v2pb.Code_MESSAGE_NOT_FOUND, "", 8, true},
		{"no answer from the hold", nil, 0, PullResult{Code: code.PollingTimeout, NextOffset: 7}, nil, v2pb.Code_MESSAGE_NOT_FOUND, "", 7, true},
		{"found", nil, 0, found, nil, v2pb.Code_OK, "01A 01B", 9, true},
		{"found, tag filtered", func(r *v2pb.PullMessageRequest) { r.FilterExpression.Expression = "TagB || TagC" }, 0, found, nil, v2pb.Code_OK, "01B", 9, true},
		{"found, none of the tag", func(r *v2pb.PullMessageRequest) { r.FilterExpression.Expression = "TagC" }, 0, found, nil, v2pb.Code_MESSAGE_NOT_FOUND, "", 9, true},
		{"found, SQL not filtered here", func(r *v2pb.PullMessageRequest) {
			r.FilterExpression = &v2pb.FilterExpression{Type: v2pb.FilterType_SQL, Expression: "color = 'red'"}
		}, 0, found, nil, v2pb.Code_OK, "01A 01B", 9, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOffsets()
			f.limits.MinLongPolling = 100 * time.Millisecond
			f.pull, f.pullErr = tc.pull, tc.pullErr
			c, _ := messagingClient(t, f)
			req := preq("T", "G", 1, 7)
			if tc.req != nil {
				tc.req(req)
			}
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			got := pullStream(t, c, timeout, req)
			if got.status.GetCode() != tc.code {
				t.Fatalf("status %v, want %v", got.status, tc.code)
			}
			ids := ""
			for _, m := range got.msgs {
				if ids != "" {
					ids += " "
				}
				ids += m.GetSystemProperties().GetMessageId()
			}
			if ids != tc.ids {
				t.Fatalf("messages %q, want %q", ids, tc.ids)
			}
			switch {
			case tc.next < 0 && got.next != nil:
				t.Fatalf("next_offset %d after a refusal", *got.next)
			case tc.next >= 0 && (got.next == nil || *got.next != tc.next):
				t.Fatalf("next_offset %v, want %d", got.next, tc.next)
			}
			if pulledAny := len(f.pulls) > 0; pulledAny != tc.pulled {
				t.Fatalf("pulled %v, want %v", pulledAny, tc.pulled)
			}
		})
	}
}

// TestPullMessageConverts: the pull is asked what the request says (batch
// capped at 32, an empty expression is "*", SQL is SQL92, the long polling
// bounded as a receive's) and the messages go out as GrpcConverter builds
// them, without receipt handle or invisible duration.
func TestPullMessageConverts(t *testing.T) {
	f := newFakeOffsets()
	f.pull = PullResult{Code: code.Success, NextOffset: 8, Messages: []*message.Message{pulledMsg("01A", "TagA", 7)}}
	c, _ := messagingClient(t, f)
	req := preq("T", "G", 1, 7)
	req.BatchSize, req.FilterExpression.Expression = 100, " "
	req.LongPollingTimeout = durationpb.New(time.Hour)
	p := pullStream(t, c, time.Minute, req)
	if p.status.GetCode() != v2pb.Code_OK || len(p.msgs) != 1 || p.next == nil || *p.next != 8 {
		t.Fatalf("pull: %+v", p)
	}
	m := p.msgs[0]
	sp := m.GetSystemProperties()
	if string(m.GetBody()) != "body-01A" || m.GetTopic().GetName() != "T" || sp.GetMessageId() != "01A" || sp.GetTag() != "TagA" ||
		sp.GetQueueId() != 1 || sp.GetQueueOffset() != 7 || m.GetUserProperties()["color"] != "red" || sp.GetDeliveryAttempt() != 1 ||
		sp.ReceiptHandle != nil || sp.InvisibleDuration != nil || sp.GetBodyDigest().GetType() != v2pb.DigestType_MD5 {
		t.Fatalf("message %v", m)
	}
	want := PullRequest{Group: "G", Topic: "T", QueueID: 1, Offset: 7, MaxNum: 32, ExpType: "TAG", Exp: "*",
		PollTime: f.limits.MaxLongPolling - pollingReserve}
	got := f.pulls[0]
	got.Peer = ""
	if got != want {
		t.Fatalf("pull asked %+v, want %+v", got, want)
	}
	req = preq("T", "G", 0, 3)
	req.FilterExpression = &v2pb.FilterExpression{Type: v2pb.FilterType_SQL, Expression: "a > 1"}
	pullStream(t, c, 5*time.Second, req)
	if g := f.pulls[1]; g.ExpType != "SQL92" || g.Exp != "a > 1" || g.QueueID != 0 || g.Offset != 3 || g.MaxNum != 8 {
		t.Fatalf("SQL pull asked %+v", g)
	}
}

// TestUpdateAndGetOffset: UpdateOffset commits and GetOffset reads a
// group's offset of a queue; bad requests are refused before the backend
// is asked, the backend's refusals get the proxy's codes.
func TestUpdateAndGetOffset(t *testing.T) {
	tests := []struct {
		name      string
		group     *v2pb.Resource
		queue     *v2pb.MessageQueue
		offset    int64
		answer    Result
		answerErr error
		code      v2pb.Code
		asked     bool
	}{
		{"ok", &v2pb.Resource{Name: "G"}, mq("T", 2), 42, Result{Code: code.Success}, nil, v2pb.Code_OK, true},
		{"queue id from the broker's read queues only", &v2pb.Resource{Name: "G"}, mq("None", 0), 1, Result{}, nil, v2pb.Code_BAD_REQUEST, false},
		{"no broker name: this broker", &v2pb.Resource{Name: "G"}, &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: "T"}, Id: 0}, 1, Result{Code: code.Success}, nil, v2pb.Code_OK, true},
		{"no group", nil, mq("T", 0), 1, Result{}, nil, v2pb.Code_ILLEGAL_CONSUMER_GROUP, false},
		{"illegal group", &v2pb.Resource{Name: "a b"}, mq("T", 0), 1, Result{}, nil, v2pb.Code_ILLEGAL_CONSUMER_GROUP, false},
		{"no queue", &v2pb.Resource{Name: "G"}, nil, 1, Result{}, nil, v2pb.Code_ILLEGAL_TOPIC, false},
		{"unknown topic", &v2pb.Resource{Name: "G"}, mq("Missing", 0), 1, Result{}, nil, v2pb.Code_TOPIC_NOT_FOUND, false},
		{"bad queue id", &v2pb.Resource{Name: "G"}, mq("T", 3), 1, Result{}, nil, v2pb.Code_BAD_REQUEST, false},
		{"negative queue id", &v2pb.Resource{Name: "G"}, mq("T", -1), 1, Result{}, nil, v2pb.Code_BAD_REQUEST, false},
		{"another broker's queue", &v2pb.Resource{Name: "G"}, &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: "T"}, Broker: &v2pb.Broker{Name: "broker-b"}}, 1, Result{}, nil, v2pb.Code_BAD_REQUEST, false},
		{"unknown group", &v2pb.Resource{Name: "G"}, mq("T", 0), 1, Result{Code: code.SubscriptionGroupNotExist, Remark: "Group G not exist!"}, nil, v2pb.Code_CONSUMER_GROUP_NOT_FOUND, true},
		{"topic gone", &v2pb.Resource{Name: "G"}, mq("T", 0), 1, Result{Code: code.TopicNotExist}, nil, v2pb.Code_TOPIC_NOT_FOUND, true},
		{"backend failed", &v2pb.Resource{Name: "G"}, mq("T", 0), 1, Result{}, errors.New("boom"), v2pb.Code_INTERNAL_SERVER_ERROR, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOffsets()
			f.answer, f.answerErr, f.offset = tc.answer, tc.answerErr, tc.offset
			c, _ := messagingClient(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			u, err := c.UpdateOffset(ctx, &v2pb.UpdateOffsetRequest{Group: tc.group, MessageQueue: tc.queue, Offset: tc.offset})
			if err != nil || u.GetStatus().GetCode() != tc.code {
				t.Fatalf("UpdateOffset: %v %v, want %v", u, err, tc.code)
			}
			g, err := c.GetOffset(ctx, &v2pb.GetOffsetRequest{Group: tc.group, MessageQueue: tc.queue})
			if err != nil || g.GetStatus().GetCode() != tc.code || (tc.code == v2pb.Code_OK && g.GetOffset() != tc.offset) {
				t.Fatalf("GetOffset: %v %v, want %v", g, err, tc.code)
			}
			if asked := len(f.commits) == 1 && len(f.reads) == 1; asked != tc.asked || (!tc.asked && len(f.commits)+len(f.reads) > 0) {
				t.Fatalf("commits %q reads %q, want asked=%v", f.commits, f.reads, tc.asked)
			}
			if tc.asked {
				want := fmt.Sprintf("G T %d", tc.queue.GetId())
				if f.commits[0] != fmt.Sprintf("%s %d", want, tc.offset) || f.reads[0] != want {
					t.Fatalf("commits %q reads %q, want %q", f.commits, f.reads, want)
				}
			}
		})
	}

	// A negative offset is not committed; a group without an offset is
	// OFFSET_NOT_FOUND.
	f := newFakeOffsets()
	f.answer = Result{Code: code.QueryNotFound, Remark: "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"}
	c, _ := messagingClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u, err := c.UpdateOffset(ctx, &v2pb.UpdateOffsetRequest{Group: &v2pb.Resource{Name: "G"}, MessageQueue: mq("T", 0), Offset: -1})
	if err != nil || u.GetStatus().GetCode() != v2pb.Code_ILLEGAL_OFFSET || len(f.commits) != 0 {
		t.Fatalf("negative UpdateOffset: %v %v, commits %q", u, err, f.commits)
	}
	g, err := c.GetOffset(ctx, &v2pb.GetOffsetRequest{Group: &v2pb.Resource{Name: "G"}, MessageQueue: mq("T", 0)})
	if err != nil || g.GetStatus().GetCode() != v2pb.Code_OFFSET_NOT_FOUND {
		t.Fatalf("GetOffset without an offset: %v %v, want OFFSET_NOT_FOUND", g, err)
	}
}

// TestQueryOffset: BEGINNING, END and TIMESTAMP ask the backend the
// queue's min, max and by-time offset; no group is needed, any queue of
// the route (write queues too) is accepted; TIMESTAMP without a time and
// unknown policies are BAD_REQUEST.
func TestQueryOffset(t *testing.T) {
	at := time.UnixMilli(1700000000123)
	tests := []struct {
		name   string
		req    *v2pb.QueryOffsetRequest
		answer Result
		code   v2pb.Code
		read   string // what the backend was asked, "" for nothing
	}{
		{"beginning", &v2pb.QueryOffsetRequest{MessageQueue: mq("T", 1), QueryOffsetPolicy: v2pb.QueryOffsetPolicy_BEGINNING}, Result{}, v2pb.Code_OK, "T 1 BEGINNING 0"},
		{"end", &v2pb.QueryOffsetRequest{MessageQueue: mq("T", 2), QueryOffsetPolicy: v2pb.QueryOffsetPolicy_END}, Result{}, v2pb.Code_OK, "T 2 END 0"},
		{"timestamp", &v2pb.QueryOffsetRequest{MessageQueue: mq("T", 0), QueryOffsetPolicy: v2pb.QueryOffsetPolicy_TIMESTAMP, Timestamp: timestamppb.New(at)}, Result{}, v2pb.Code_OK, "T 0 TIMESTAMP 1700000000123"},
		{"a write queue", &v2pb.QueryOffsetRequest{MessageQueue: mq("None", 1), QueryOffsetPolicy: v2pb.QueryOffsetPolicy_END}, Result{}, v2pb.Code_OK, "None 1 END 0"},
		{"timestamp missing", &v2pb.QueryOffsetRequest{MessageQueue: mq("T", 0), QueryOffsetPolicy: v2pb.QueryOffsetPolicy_TIMESTAMP}, Result{}, v2pb.Code_BAD_REQUEST, ""},
		{"unknown policy", &v2pb.QueryOffsetRequest{MessageQueue: mq("T", 0), QueryOffsetPolicy: 7}, Result{}, v2pb.Code_BAD_REQUEST, ""},
		{"empty request", &v2pb.QueryOffsetRequest{}, Result{}, v2pb.Code_ILLEGAL_TOPIC, ""},
		{"unknown topic", &v2pb.QueryOffsetRequest{MessageQueue: mq("Missing", 0)}, Result{}, v2pb.Code_TOPIC_NOT_FOUND, ""},
		{"illegal topic", &v2pb.QueryOffsetRequest{MessageQueue: mq("a b", 0)}, Result{}, v2pb.Code_ILLEGAL_TOPIC, ""},
		{"bad queue id", &v2pb.QueryOffsetRequest{MessageQueue: mq("None", 2)}, Result{}, v2pb.Code_BAD_REQUEST, ""},
		{"backend refused", &v2pb.QueryOffsetRequest{MessageQueue: mq("T", 0)}, Result{Code: code.SystemError, Remark: "x"}, v2pb.Code_INTERNAL_SERVER_ERROR, "T 0 BEGINNING 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeOffsets()
			f.offset = 17
			if tc.answer.Code != 0 {
				f.answer = tc.answer
			}
			c, _ := messagingClient(t, f)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.QueryOffset(ctx, tc.req)
			if err != nil || r.GetStatus().GetCode() != tc.code || (tc.code == v2pb.Code_OK && r.GetOffset() != 17) {
				t.Fatalf("QueryOffset: %v %v, want %v", r, err, tc.code)
			}
			read := ""
			if len(f.reads) > 0 {
				read = f.reads[0]
			}
			if read != tc.read || len(f.reads) > 1 {
				t.Fatalf("asked %q, want %q", f.reads, tc.read)
			}
		})
	}
}

// TestPullRpcsWithoutBackend: a backend without the pull consumer rpcs
// answers them NOT_IMPLEMENTED.
func TestPullRpcsWithoutBackend(t *testing.T) {
	c, _ := messagingClient(t, newFakeConsumer())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if p := pullStream(t, c, 5*time.Second, preq("T", "G", 0, 0)); p.status.GetCode() != v2pb.Code_NOT_IMPLEMENTED || p.next != nil {
		t.Fatalf("PullMessage: %+v", p)
	}
	u, err := c.UpdateOffset(ctx, &v2pb.UpdateOffsetRequest{Group: &v2pb.Resource{Name: "G"}, MessageQueue: mq("T", 0)})
	if err != nil || u.GetStatus().GetCode() != v2pb.Code_NOT_IMPLEMENTED {
		t.Fatalf("UpdateOffset: %v %v", u, err)
	}
	g, err := c.GetOffset(ctx, &v2pb.GetOffsetRequest{Group: &v2pb.Resource{Name: "G"}, MessageQueue: mq("T", 0)})
	if err != nil || g.GetStatus().GetCode() != v2pb.Code_NOT_IMPLEMENTED {
		t.Fatalf("GetOffset: %v %v", g, err)
	}
	q, err := c.QueryOffset(ctx, &v2pb.QueryOffsetRequest{MessageQueue: mq("T", 0)})
	if err != nil || q.GetStatus().GetCode() != v2pb.Code_NOT_IMPLEMENTED {
		t.Fatalf("QueryOffset: %v %v", q, err)
	}
}
