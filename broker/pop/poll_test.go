package pop

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

// serve puts the rig's processor behind a real remoting server (long
// polling needs channels) and returns a client and the address.
func serve(t *testing.T, r *rig) (*remoting.Client, string) {
	t.Helper()
	ex := remoting.NewExecutor("test", 8, 1024)
	t.Cleanup(ex.Close) // after the server's shutdown
	srv := remotingtest.Serve(t, func(s *remoting.Server) {
		for c, h := range r.p.Handlers() {
			s.Register(c, h.H, ex)
		}
	})
	r.p.Start()
	return remotingtest.NewClient(t), srv.Addr()
}

type asyncResult struct {
	resp *remoting.Command
	err  error
}

func invokeAsync(t *testing.T, cl *remoting.Client, addr string, req *remoting.Command, timeout time.Duration) <-chan asyncResult {
	t.Helper()
	out := make(chan asyncResult, 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	if err := cl.InvokeAsync(ctx, addr, req, func(resp *remoting.Command, err error) {
		cancel()
		out <- asyncResult{resp, err}
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	return out
}

// await is the answer got delivers within five seconds; what names the
// request in failures.
func await(t *testing.T, got <-chan asyncResult, what string) *remoting.Command {
	t.Helper()
	select {
	case res := <-got:
		if res.err != nil {
			t.Fatalf("%s: %v", what, res.err)
		}
		return res.resp
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not answered", what)
	}
	return nil
}

func pollingPop(r *rig, qid int32, pollMs int64) *remoting.Command {
	req := popReq(testGroup, testTopic, qid, 4, 10_000, nil)
	req.ExtFields["pollTime"] = strconv.FormatInt(pollMs, 10)
	req.ExtFields["bornTime"] = strconv.FormatInt(r.clk.Now().UnixMilli(), 10)
	return req
}

func pollingNum(t *testing.T, r *rig, qid int32) int {
	resp, err := call(t, r.p.handlePollingInfo, remoting.NewRequest(code.PollingInfo,
		map[string]string{"consumerGroup": testGroup, "topic": testTopic, "queueId": strconv.Itoa(int(qid))}, nil))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(resp.Ext("pollingNum"))
	return n
}

func TestLongPollingWakesOnArrival(t *testing.T) {
	r := newRig(t)
	cl, addr := serve(t, r)
	for _, qid := range []int32{0, -1} {
		got := invokeAsync(t, cl, addr, pollingPop(r, qid, 20_000), 10*time.Second)
		testutil.WaitFor(t, 5*time.Second, "the pop to be suspended", func() bool { return pollingNum(t, r, qid) == 1 })
		r.send(testTopic, 0, 1, "A")
		if resp := await(t, got, fmt.Sprintf("queue %d: suspended pop woken by the arrival", qid)); resp.Code != code.Success || len(resp.Body) == 0 {
			t.Fatalf("queue %d: woken pop: %+v", qid, resp)
		}
	}
}

func TestLongPollingTimeoutAndFull(t *testing.T) {
	r := newRig(t)
	r.cfg.PopPollingSize = 1
	cl, addr := serve(t, r)
	first := invokeAsync(t, cl, addr, pollingPop(r, 1, 3_000), 10*time.Second)
	testutil.WaitFor(t, 5*time.Second, "the pop to be suspended", func() bool { return pollingNum(t, r, 1) == 1 })
	second := <-invokeAsync(t, cl, addr, pollingPop(r, 1, 3_000), 5*time.Second)
	if second.err != nil || second.resp.Code != code.PollingFull {
		t.Fatalf("second pop: %v %+v, want POLLING_FULL", second.err, second.resp)
	}
	r.clk.Advance(4 * time.Second)
	if resp := await(t, first, "expired pop"); resp.Code != code.PollingTimeout {
		t.Fatalf("expired pop: %+v, want POLLING_TIMEOUT", resp)
	}
}

func TestLongPollingWakesOnOrderlyAck(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 2, "A")
	cl, addr := serve(t, r)
	order := map[string]string{"order": "true"}
	first := r.pop(0, 1, 60_000, order)
	req := pollingPop(r, 0, 20_000)
	req.ExtFields["order"] = "true"
	got := invokeAsync(t, cl, addr, req, 10*time.Second)
	testutil.WaitFor(t, 5*time.Second, "the orderly pop to be suspended", func() bool { return pollingNum(t, r, 0) == 1 })
	r.mustAck(first.msgs[0])
	if resp := await(t, got, "blocked orderly pop woken by the ack"); resp.Code != code.Success {
		t.Fatalf("pop woken by ack: %+v", resp)
	}
}

func TestNotification(t *testing.T) {
	r := newRig(t)
	cl, addr := serve(t, r)
	notify := func(pollMs int64) *remoting.Command {
		return remoting.NewRequest(code.Notification, map[string]string{
			"consumerGroup": testGroup, "topic": testTopic, "queueId": "-1",
			"pollTime": strconv.FormatInt(pollMs, 10), "bornTime": strconv.FormatInt(r.clk.Now().UnixMilli(), 10),
		}, nil)
	}
	now := <-invokeAsync(t, cl, addr, notify(0), 5*time.Second)
	if now.err != nil || now.resp.Code != code.Success || now.resp.Ext("hasMsg") != "false" {
		t.Fatalf("empty notification: %v %+v", now.err, now.resp)
	}
	got := invokeAsync(t, cl, addr, notify(20_000), 10*time.Second)
	testutil.WaitFor(t, 5*time.Second, "the notification to be suspended", func() bool { return r.p.notices.size() == 1 })
	r.send(testTopic, 1, 1, "A")
	if resp := await(t, got, "notification woken by the arrival"); resp.Ext("hasMsg") != "true" {
		t.Fatalf("woken notification: %+v", resp)
	}
}

func TestPeek(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 3, "A")
	peek := remoting.NewRequest(code.PeekMessage, map[string]string{"consumerGroup": testGroup, "topic": testTopic, "queueId": "0", "maxMsgNums": "2"}, nil)
	for i := 0; i < 2; i++ { // peeking twice sees the same: nothing is taken
		resp, err := call(t, r.p.handlePeek, peek)
		if err != nil || resp.Code != code.Success || resp.Ext("restNum") != "3" {
			t.Fatalf("peek: %v %+v", err, resp)
		}
	}
	if res := r.pop(0, 32, 1000, nil); len(res.msgs) != 3 {
		t.Fatalf("pop after peek got %d", len(res.msgs))
	}
	resp, err := call(t, r.p.handlePeek, peek)
	if err != nil || resp.Code != code.PullNotFound {
		t.Fatalf("peek after pop: %v %+v", err, resp)
	}
}

func TestQueryAssignment(t *testing.T) {
	r := newRig(t)
	r.cons.Register(testGroup, client.ChannelInfo{ClientID: "cid-1"}, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", nil, true)
	query := func() []assignment {
		t.Helper()
		body, _ := json.Marshal(assignmentRequest{ClientID: "cid-1", ConsumerGroup: testGroup, MessageModel: "CLUSTERING", StrategyName: "AVG", Topic: testTopic})
		resp, err := call(t, r.p.handleQueryAssignment, remoting.NewRequest(code.QueryAssignment, nil, body))
		if err != nil || resp.Code != code.Success {
			t.Fatalf("query assignment: %v %+v", err, resp)
		}
		var out assignmentResponse
		if err := json.Unmarshal(resp.Body, &out); err != nil {
			t.Fatal(err)
		}
		return out.MessageQueueAssignments
	}
	got := query()
	if len(got) != 2 || got[0].Mode != ModePull || got[0].MessageQueue.QueueID != 0 || got[0].MessageQueue.BrokerName != "broker-a" {
		t.Fatalf("pull assignment %+v", got)
	}
	resp, err := call(t, r.p.handleSetRequestMode, remoting.NewRequest(code.SetMessageRequestMode, nil,
		[]byte(`{"topic":"PopTopic","consumerGroup":"pop_cg","mode":"POP","popShareQueueNum":0}`)))
	if codeOf(resp, err) != code.Success {
		t.Fatalf("set mode: %v", err)
	}
	got = query()
	if len(got) != 1 || got[0].Mode != ModePop || got[0].MessageQueue.QueueID != -1 {
		t.Fatalf("pop assignment %+v", got)
	}
}

func TestRequestModePersists(t *testing.T) {
	path := t.TempDir() + "/messageRequestMode.json"
	m, err := loadModeTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.set(RequestMode{Topic: "T", ConsumerGroup: "g", Mode: ModePop, PopShareQueueNum: 2}); err != nil {
		t.Fatal(err)
	}
	m2, err := loadModeTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m2.get("T", "g"); !ok || got.Mode != ModePop || got.PopShareQueueNum != 2 {
		t.Fatalf("reloaded %+v %v", got, ok)
	}
}
