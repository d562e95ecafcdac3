package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// grpcPullResult is what one PullMessage streamed.
type grpcPullResult struct {
	code v2pb.Code
	msgs []*v2pb.Message
	next int64 // -1: none
}

func grpcPull(t *testing.T, cli v2pb.MessagingServiceClient, group, topic string, queue int32, offset int64, batch int32, poll time.Duration) grpcPullResult {
	t.Helper()
	r, err := grpcPullErr(cli, group, topic, queue, offset, batch, poll)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// grpcPullErr is grpcPull for other goroutines than the test's.
func grpcPullErr(cli v2pb.MessagingServiceClient, group, topic string, queue int32, offset int64, batch int32, poll time.Duration) (grpcPullResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := cli.PullMessage(ctx, &v2pb.PullMessageRequest{
		Group: &v2pb.Resource{Name: group}, MessageQueue: &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: queue},
		Offset: offset, BatchSize: batch, LongPollingTimeout: durationpb.New(poll),
	})
	if err != nil {
		return grpcPullResult{}, err
	}
	r := grpcPullResult{next: -1}
	for {
		m, err := s.Recv()
		if err != nil {
			break
		}
		switch x := m.GetContent().(type) {
		case *v2pb.PullMessageResponse_Status:
			r.code = x.Status.GetCode()
		case *v2pb.PullMessageResponse_Message:
			r.msgs = append(r.msgs, x.Message)
		case *v2pb.PullMessageResponse_NextOffset:
			r.next = x.NextOffset
		}
	}
	return r, nil
}

// TestGrpcPullAndOffsets: the pull consumer rpcs go through the broker's
// remoting paths. Messages sent over remoting are pulled over gRPC in
// order with their bodies and properties; a pull at the queue's end waits
// (long polling) and is answered when a message comes; an offset past the
// end is ILLEGAL_OFFSET with the end as next offset, a negative one with
// the beginning; UpdateOffset's offset is the one QUERY_CONSUMER_OFFSET
// answers, and UPDATE_CONSUMER_OFFSET's the one GetOffset answers;
// QueryOffset's BEGINNING, END and TIMESTAMP are the queue's min, max and
// by-time offsets; a group the broker does not have is
// CONSUMER_GROUP_NOT_FOUND.
func TestGrpcPullAndOffsets(t *testing.T) {
	t.Parallel() // waits on a long polling
	const topic, group = "GrpcPull", "GID_GRPC_PULL"
	b, cli := grpcBroker(t, func(cfg *config.Config) {
		cfg.GrpcClientConsumerMinLongPollingTimeoutMillis = 0
		cfg.AutoCreateSubscriptionGroup = false
	}, 1, map[string]string{topic: ""})
	invoke := invoker(t, b)
	if err := b.msg.subs.Update(subscription.NewGroupConfig(group)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := time.Now().Add(-time.Second)
	send := func(i int) {
		t.Helper()
		r := invoke(code.SendMessage, remotingtest.SendExt(t, "pg", topic, 0, "TAGS", "TagA", "color", "red"), []byte("m-"+strconv.Itoa(i)))
		if r.Code != code.Success {
			t.Fatalf("send %d: %d %s", i, r.Code, r.Remark)
		}
	}
	queryOffset := func(policy v2pb.QueryOffsetPolicy, at *timestamppb.Timestamp) int64 {
		t.Helper()
		r, err := cli.QueryOffset(ctx, &v2pb.QueryOffsetRequest{
			MessageQueue:      &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: 0},
			QueryOffsetPolicy: policy, Timestamp: at,
		})
		if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
			t.Fatalf("QueryOffset %v: %v %v", policy, r, err)
		}
		return r.GetOffset()
	}
	if end := queryOffset(v2pb.QueryOffsetPolicy_END, nil); end != 0 {
		t.Fatalf("END of an empty queue: %d", end)
	}
	for i := range 3 {
		send(i)
	}
	storedN(t, b, topic, 3)

	p := grpcPull(t, cli, group, topic, 0, 0, 2, time.Second)
	if p.code != v2pb.Code_OK || len(p.msgs) != 2 || p.next != 2 {
		t.Fatalf("pull from 0: %v, %d messages, next %d; want OK, 2, 2", p.code, len(p.msgs), p.next)
	}
	for i, m := range p.msgs {
		sp := m.GetSystemProperties()
		if string(m.GetBody()) != fmt.Sprintf("m-%d", i) || sp.GetQueueOffset() != int64(i) || sp.GetTag() != "TagA" ||
			m.GetUserProperties()["color"] != "red" || sp.GetMessageId() == "" {
			t.Fatalf("pulled %d: %v", i, m)
		}
	}

	// At the end, the pull waits for the next message.
	done := make(chan grpcPullResult, 1)
	go func() {
		r, err := grpcPullErr(cli, group, topic, 0, 3, 8, 5*time.Second)
		if err != nil {
			r.code = v2pb.Code_CODE_UNSPECIFIED
		}
		done <- r
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	send(3)
	select {
	case p = <-done:
		if p.code != v2pb.Code_OK || len(p.msgs) != 1 || string(p.msgs[0].GetBody()) != "m-3" || p.next != 4 {
			t.Fatalf("held pull: %v %v next %d, want m-3 and 4", p.code, p.msgs, p.next)
		}
		if waited := time.Since(start); waited > 3*time.Second {
			t.Fatalf("held pull answered %v after the send", waited)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("held pull not answered")
	}
	if p := grpcPull(t, cli, group, topic, 0, 100, 8, 0); p.code != v2pb.Code_ILLEGAL_OFFSET || p.next != 4 {
		t.Fatalf("pull past the end: %v next %d, want ILLEGAL_OFFSET 4", p.code, p.next)
	}
	if p := grpcPull(t, cli, group, topic, 0, -1, 8, 0); p.code != v2pb.Code_ILLEGAL_OFFSET || p.next != 0 {
		t.Fatalf("pull from a negative offset: %v next %d, want ILLEGAL_OFFSET 0", p.code, p.next)
	}
	if p := grpcPull(t, cli, "GID_NO_SUCH", topic, 0, 0, 8, 0); p.code != v2pb.Code_CONSUMER_GROUP_NOT_FOUND || p.next != -1 {
		t.Fatalf("pull of an unknown group: %v next %d", p.code, p.next)
	}

	// Offsets: one table for both protocols.
	gq := &v2pb.MessageQueue{Topic: &v2pb.Resource{Name: topic}, Id: 0}
	u, err := cli.UpdateOffset(ctx, &v2pb.UpdateOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: gq, Offset: 2})
	if err != nil || u.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("UpdateOffset: %v %v", u, err)
	}
	qext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0"}
	if r := invoke(code.QueryConsumerOffset, qext, nil); r.Code != code.Success || r.Ext("offset") != "2" {
		t.Fatalf("QUERY_CONSUMER_OFFSET after UpdateOffset 2: %d %v", r.Code, r.ExtFields)
	}
	if r := invoke(code.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "3"}, nil); r.Code != code.Success {
		t.Fatalf("UPDATE_CONSUMER_OFFSET: %d %s", r.Code, r.Remark)
	}
	g, err := cli.GetOffset(ctx, &v2pb.GetOffsetRequest{Group: &v2pb.Resource{Name: group}, MessageQueue: gq})
	if err != nil || g.GetStatus().GetCode() != v2pb.Code_OK || g.GetOffset() != 3 {
		t.Fatalf("GetOffset after UPDATE_CONSUMER_OFFSET 3: %v %v", g, err)
	}
	u, err = cli.UpdateOffset(ctx, &v2pb.UpdateOffsetRequest{Group: &v2pb.Resource{Name: "GID_NO_SUCH"}, MessageQueue: gq, Offset: 1})
	if err != nil || u.GetStatus().GetCode() != v2pb.Code_CONSUMER_GROUP_NOT_FOUND {
		t.Fatalf("UpdateOffset of an unknown group: %v %v", u, err)
	}

	if min, max := queryOffset(v2pb.QueryOffsetPolicy_BEGINNING, nil), queryOffset(v2pb.QueryOffsetPolicy_END, nil); min != 0 || max != 4 {
		t.Fatalf("BEGINNING %d END %d, want 0 and 4", min, max)
	}
	if o := queryOffset(v2pb.QueryOffsetPolicy_TIMESTAMP, timestamppb.New(before)); o != 0 {
		t.Fatalf("TIMESTAMP before the first message: %d, want 0", o)
	}
	if o := queryOffset(v2pb.QueryOffsetPolicy_TIMESTAMP, timestamppb.New(time.Now().Add(time.Hour))); o != 4 {
		t.Fatalf("TIMESTAMP after the last message: %d, want 4", o)
	}
}
