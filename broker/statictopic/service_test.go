package statictopic

import (
	"context"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

const (
	epoch1 = int64(1_700_000_001_000)
	epoch2 = epoch1 + 1000
)

// remapped builds the worked example of docs/static-topics.md §12 on two
// brokers: logic queue 0 led by a (10 messages stored at t=1000..1009),
// then remapped to b (logic offset 10000) with 10 more (t=2000..2009).
func remapped(t *testing.T) *cluster {
	c := newCluster(t, "a", "b")
	a, b := c.nodes["a"], c.nodes["b"]
	c.apply(1, detail("a", epoch1, 1, map[int][]protocol.LogicQueueMappingItem{0: {it("a", 0, 0, 0)}}))
	c.apply(0, detail("b", epoch1, 1, nil))
	for i := range 10 {
		c.clk.Set(time.UnixMilli(1000 + int64(i)))
		r := a.do(t, sendReq(0, "a"))
		if r.Code != code.Success || remotingtest.ExtInt(t, r, "queueOffset") != int64(i) || r.Ext("queueId") != "0" {
			t.Fatalf("send %d on a: %d %s %v", i, r.Code, r.Remark, r.ExtFields)
		}
	}
	// Remap, as mqadmin remappingStaticTopic does it: new leader first,
	// then fence the old one, then decide the logic offset.
	list := []protocol.LogicQueueMappingItem{it("a", 0, 0, 0), it("b", 1, 0, -1)}
	c.apply(1, detail("b", epoch2, 1, map[int][]protocol.LogicQueueMappingItem{0: list}))
	c.clk.Set(time.UnixMilli(2000))
	if r := b.do(t, sendReq(0, "early")); r.Code != code.Success || remotingtest.ExtInt(t, r, "queueOffset") != -1 {
		t.Fatalf("send to the undecided leader: %d %s offset %s, want success with -1", r.Code, r.Remark, r.Ext("queueOffset"))
	}
	c.apply(1, detail("a", epoch2, 1, map[int][]protocol.LogicQueueMappingItem{0: list}))
	if r := a.do(t, sendReq(0, "fenced")); r.Code != code.NotLeaderForQueue || r.Remark == "" {
		t.Fatalf("send to the old leader: %d %q, want 501 with a remark", r.Code, r.Remark)
	}
	list[1].LogicOffset = 10000
	c.apply(1, detail("b", epoch2, 1, map[int][]protocol.LogicQueueMappingItem{0: list}))
	for i := 1; i < 10; i++ {
		c.clk.Set(time.UnixMilli(2000 + int64(i)))
		r := b.do(t, sendReq(0, "b"))
		if r.Code != code.Success || remotingtest.ExtInt(t, r, "queueOffset") != 10000+int64(i) {
			t.Fatalf("send %d on b: %d %s offset %s", i, r.Code, r.Remark, r.Ext("queueOffset"))
		}
	}
	c.remote.reset()
	return c
}

func TestWorkedExamplePull(t *testing.T) {
	c := remapped(t)
	b := c.nodes["b"]
	type want struct {
		code                 int32
		next, min, max, delt int64
		msgs                 int
		remote               bool
	}
	for _, tc := range []struct {
		name   string
		offset int64
		want   want
	}{
		{"old segment from a", 0, want{code.Success, 10, 0, 10000, 0, 10, true}},
		{"old segment middle", 4, want{code.Success, 10, 0, 10000, 0, 6, true}},
		{"end of old segment steps to the leader", 10, want{code.PullRetryImmediately, 10000, 10000, 10000, 10000, 0, true}},
		{"in the gap", 500, want{code.PullRetryImmediately, 10000, 10000, 10000, 10000, 0, true}},
		{"leader", 10000, want{code.Success, 10010, 10000, 10010, 10000, 10, false}},
		{"leader middle", 10007, want{code.Success, 10010, 10000, 10010, 10000, 3, false}},
		{"caught up", 10010, want{code.PullNotFound, 10010, 10000, 10010, 10000, 0, false}},
		{"beyond the leader's end", 20000, want{code.PullOffsetMoved, 10010, 10000, 10010, 10000, 0, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.remote.reset()
			r := b.do(t, pullReq(0, tc.offset, 0))
			got := want{r.Code, remotingtest.ExtInt(t, r, "nextBeginOffset"), remotingtest.ExtInt(t, r, "minOffset"), remotingtest.ExtInt(t, r, "maxOffset"),
				remotingtest.ExtInt(t, r, "offsetDelta"), 0, len(c.remote.reset()) > 0}
			if len(r.Body) > 0 {
				msgs, err := message.DecodeAll(r.Body, message.DecodeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got.msgs = len(msgs)
				// Physical offsets + offsetDelta are the logic offsets.
				if first := msgs[0].QueueOffset + got.delt; first != tc.offset {
					t.Errorf("first message at logic %d, want %d", first, tc.offset)
				}
			}
			if got != tc.want {
				t.Errorf("pull at %d: got %+v (remark %q), want %+v", tc.offset, got, r.Remark, tc.want)
			}
		})
	}
	// The old leader refuses logic pulls but serves physical ones.
	if r := c.nodes["a"].do(t, pullReq(0, 0, 0)); r.Code != code.NotLeaderForQueue {
		t.Errorf("logic pull on the old leader: %d", r.Code)
	}
	phys := pullReq(0, 0, 0)
	phys.ExtFields[FieldLogic] = "false"
	if r := c.nodes["a"].do(t, phys); r.Code != code.Success || r.Ext("offsetDelta") != "" {
		t.Errorf("physical pull on a: %d %v", r.Code, r.ExtFields)
	}
}

func TestWorkedExampleOffsets(t *testing.T) {
	c := remapped(t)
	a, b := c.nodes["a"], c.nodes["b"]
	for _, tc := range []struct {
		name string
		req  *remoting.Command
		key  string
		want int64
	}{
		{"max", offReq(code.GetMaxOffset, 0), "offset", 10010},
		{"min", offReq(code.GetMinOffset, 0), "offset", 0},
		{"earliest store time lives on a", offReq(code.GetEarliestMsgStoreTime, 0), "timestamp", 1000},
		{"search before everything", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "10"), "offset", 0},
		{"search inside the old segment", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "1005"), "offset", 5},
		{"search on the boundary", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "1500"), "offset", 10000},
		{"search first of the new segment", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "2000"), "offset", 10000},
		{"search inside the new segment", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "2004"), "offset", 10004},
		{"search after everything", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "9999"), "offset", 10010},
		{"upper on the boundary", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "1500", "boundaryType", "UPPER"), "offset", 9},
		{"upper inside the new segment", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "2004", "boundaryType", "upper"), "offset", 10004},
		{"upper before everything", offReq(code.SearchOffsetByTimestamp, 0, "timestamp", "10", "boundaryType", "UPPER"), "offset", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(t, tc.req)
			if r.Code != code.Success || remotingtest.ExtInt(t, r, tc.key) != tc.want {
				t.Errorf("%s: code %d (%s) %s=%s, want %d", tc.name, r.Code, r.Remark, tc.key, r.Ext(tc.key), tc.want)
			}
		})
	}
	for _, rc := range []int32{code.GetMaxOffset, code.GetMinOffset, code.SearchOffsetByTimestamp, code.GetEarliestMsgStoreTime,
		code.QueryConsumerOffset, code.UpdateConsumerOffset} {
		r := a.do(t, offReq(rc, 0, "timestamp", "1", "commitOffset", "1"))
		if r.Code != code.NotLeaderForQueue {
			t.Errorf("code %d on the old leader: %d %s, want 501", rc, r.Code, r.Remark)
		}
	}

	// Nothing committed yet: QUERY_NOT_FOUND whatever setZeroIfNotFound says.
	if r := b.do(t, offReq(code.QueryConsumerOffset, 0)); r.Code != code.QueryNotFound {
		t.Fatalf("query without commits: %d %s", r.Code, r.Remark)
	}
	// Commit 5: stored physically on a; then 10003: on b (q0 = 3).
	if r := b.do(t, offReq(code.UpdateConsumerOffset, 0, "commitOffset", "5")); r.Code != code.Success {
		t.Fatalf("commit 5: %d %s", r.Code, r.Remark)
	}
	if off, ok := a.store.QueryOffset("cg", tpc, 0); !ok || off != 5 {
		t.Fatalf("a stores %d %v, want 5", off, ok)
	}
	if _, ok := b.store.QueryOffset("cg", tpc, 0); ok {
		t.Fatal("commit of an old-segment offset stored on b")
	}
	if r := b.do(t, offReq(code.QueryConsumerOffset, 0)); r.Code != code.Success || remotingtest.ExtInt(t, r, "offset") != 5 {
		t.Fatalf("query after commit 5: %d %s %s", r.Code, r.Remark, r.Ext("offset"))
	}
	if r := b.do(t, offReq(code.UpdateConsumerOffset, 0, "commitOffset", "10003")); r.Code != code.Success {
		t.Fatalf("commit 10003: %d %s", r.Code, r.Remark)
	}
	if off, ok := b.store.QueryOffset("cg", tpc, 0); !ok || off != 3 {
		t.Fatalf("b stores %d %v, want 3", off, ok)
	}
	if r := b.do(t, offReq(code.QueryConsumerOffset, 0)); r.Code != code.Success || remotingtest.ExtInt(t, r, "offset") != 10003 {
		t.Fatalf("query after commit 10003: %d %s %s", r.Code, r.Remark, r.Ext("offset"))
	}
	// A commit carried by a pull is translated the same way.
	p := pullReq(0, 10005, 0x1)
	p.ExtFields["commitOffset"] = "10005"
	if r := b.do(t, p); r.Code != code.Success {
		t.Fatalf("pull with commit: %d %s", r.Code, r.Remark)
	}
	if off, _ := b.store.QueryOffset("cg", tpc, 0); off != 5 {
		t.Fatalf("pull commit stored %d on b, want physical 5", off)
	}

	// Old broker unreachable: reads of its segment fail cleanly.
	c.remote.down["a"] = true
	if r := b.do(t, pullReq(0, 0, 0)); r.Code != code.SystemError || r.Remark == "" {
		t.Errorf("pull from an unreachable segment: %d %q", r.Code, r.Remark)
	}
	if r := b.do(t, offReq(code.GetMinOffset, 0)); r.Code != code.SystemError {
		t.Errorf("min offset with a unreachable: %d", r.Code)
	}
}

func TestSendRewriting(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["a"]
	c.apply(3, detail("a", epoch1, 4, map[int][]protocol.LogicQueueMappingItem{
		0: {it("a", 0, 2, 0)}, 1: {it("a", 0, 0, 0)}, 2: {it("other", 0, 0, 0), it("a", 1, 1, 10000)},
	}))
	for _, tc := range []struct {
		name       string
		logic      int
		wantCode   int32
		wantPhys   int32
		wantLogic  string
		wantOffset int64
	}{
		{"queue 0 → physical 2", 0, code.Success, 2, "0", 0},
		{"queue 1 → physical 0", 1, code.Success, 0, "1", 0},
		{"remapped queue adds the logic offset", 2, code.Success, 1, "2", 10000},
		{"not hosted", 3, code.NotLeaderForQueue, -1, "", 0},
		{"beyond totalQueues", 9, code.NotLeaderForQueue, -1, "", 0},
		{"no queue id picks a led queue", -1, code.Success, 2, "0", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(t, sendReq(tc.logic, "x"))
			if r.Code != tc.wantCode {
				t.Fatalf("code %d (%s), want %d", r.Code, r.Remark, tc.wantCode)
			}
			if tc.wantCode != code.Success {
				return
			}
			if r.Ext("queueId") != tc.wantLogic || remotingtest.ExtInt(t, r, "queueOffset") != tc.wantOffset {
				t.Errorf("answer queueId %s offset %s, want %s %d", r.Ext("queueId"), r.Ext("queueOffset"), tc.wantLogic, tc.wantOffset)
			}
			if m := a.store.MaxOffset(tpc, tc.wantPhys); m == 0 {
				t.Errorf("nothing stored in physical queue %d", tc.wantPhys)
			}
		})
	}
	// lo=false is a physical send: queue 2 is physical queue 2.
	phys := sendReq(2, "p")
	phys.ExtFields[FieldLogic] = "false"
	before := a.store.MaxOffset(tpc, 2)
	if r := a.do(t, phys); r.Code != code.Success || r.Ext("queueId") != "2" || a.store.MaxOffset(tpc, 2) != before+1 {
		t.Errorf("physical send: %d %v", r.Code, r.ExtFields)
	}
	// A normal topic is untouched.
	n := sendReq(1, "n")
	n.ExtFields["b"] = "Normal"
	if r := a.do(t, n); r.Code != code.Success || r.Ext("queueId") != "1" {
		t.Errorf("normal topic send: %d %s %v", r.Code, r.Remark, r.ExtFields)
	}
}

func TestConsumeStatsKeepsMissingOffsets(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["a"]
	c.apply(2, detail("a", epoch1, 2, map[int][]protocol.LogicQueueMappingItem{0: {it("a", 0, 0, 0)}, 1: {it("a", 0, 1, 0)}}))
	a.do(t, sendReq(0, "x"))
	a.store.CommitOffset("cg", tpc, 0, 1)
	r := a.do(t, remoting.NewRequest(code.GetConsumeStats, map[string]string{"consumerGroup": "cg", "topic": tpc}, nil))
	if r.Code != code.Success {
		t.Fatalf("%d %s", r.Code, r.Remark)
	}
	var st consumeStats
	if err := protocol.UnmarshalMQKeyed(r.Body, &st); err != nil {
		t.Fatal(err)
	}
	got := map[int]int64{}
	for mq, w := range st.OffsetTable {
		got[mq.QueueID] = w.ConsumerOffset
	}
	if got[0] != 1 || got[1] != -1 {
		t.Errorf("consumer offsets %v, want {0:1 1:-1}", got)
	}
}

func TestQueryShortcutNeverRemapped(t *testing.T) {
	c := newCluster(t, "a")
	a := c.nodes["a"]
	c.apply(2, detail("a", epoch1, 1, map[int][]protocol.LogicQueueMappingItem{0: {it("a", 0, 1, 0)}}))
	a.do(t, sendReq(0, "x"))
	// Physical rule: the queue starts at 0 and holds data → 0.
	if r := a.do(t, offReq(code.QueryConsumerOffset, 0)); r.Code != code.Success || remotingtest.ExtInt(t, r, "offset") != 0 {
		t.Errorf("query: %d %s %s", r.Code, r.Remark, r.Ext("offset"))
	}
	a.store.CommitOffset("cg", tpc, 1, 1)
	if r := a.do(t, offReq(code.QueryConsumerOffset, 0)); r.Code != code.Success || remotingtest.ExtInt(t, r, "offset") != 1 {
		t.Errorf("query: %d %s %s", r.Code, r.Remark, r.Ext("offset"))
	}
	if r := a.do(t, offReq(code.UpdateConsumerOffset, 0, "commitOffset", "1")); r.Code != code.Success {
		t.Errorf("update: %d %s", r.Code, r.Remark)
	}
}

// TestNonStaticPassThrough: requests for normal topics reach the inner
// handler unchanged (the same request object).
func TestNonStaticPassThrough(t *testing.T) {
	c := newCluster(t, "a")
	s := c.nodes["a"].svc
	var seen *remoting.Command
	inner := func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		seen = req
		return remoting.NewResponse(req, code.Success, ""), nil
	}
	for _, rc := range WrappedCodes {
		req := offReq(rc, 0)
		req.ExtFields["b"] = "Other"
		seen = nil
		if _, err := s.Handler(rc, inner)(context.Background(), nil, req); err != nil || seen != req {
			t.Errorf("code %d: err %v, inner saw the request: %v", rc, err, seen == req)
		}
	}
}

// BenchmarkPassThrough measures what the rewriting costs a request for a
// normal topic while other topics are static: the "lo" and topic lookups.
func BenchmarkPassThrough(b *testing.B) {
	c := newCluster(b, "a")
	n := c.nodes["a"]
	if err := n.mgr.Update(detail("a", 1, 1, hosted{0: {it("a", 0, 0, 0)}}), UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	resp := &remoting.Command{}
	inner := func(context.Context, *remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		return resp, nil
	}
	for _, tc := range []struct {
		name string
		code int32
	}{{"send", code.SendMessageV2}, {"pull", code.PullMessage}, {"maxOffset", code.GetMaxOffset}} {
		h := n.svc.Handler(tc.code, inner)
		req := sendReq(0, "x")
		req.Code = tc.code
		req.ExtFields["b"], req.ExtFields["topic"] = "Normal", "Normal"
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(context.Background(), nil, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type fakeWrapper map[int32]remoting.Handler

func (f fakeWrapper) WrapProcessor(c int32, wrap func(remoting.Handler) remoting.Handler) bool {
	h, ok := f[c]
	if !ok {
		return false
	}
	f[c] = wrap(h)
	return true
}

func TestWrapReportsMissingHandlers(t *testing.T) {
	c := newCluster(t, "a")
	w := fakeWrapper{}
	for _, rc := range WrappedCodes {
		if rc != code.LitePullMessage {
			w[rc] = c.nodes["a"].handlers[rc]
		}
	}
	if missing := c.nodes["a"].svc.Wrap(w); len(missing) != 1 || missing[0] != code.LitePullMessage {
		t.Fatalf("missing %v", missing)
	}
}

func TestLitePullForwardsAsPull(t *testing.T) {
	c := remapped(t)
	req := pullReq(0, 0, 0)
	req.Code = code.LitePullMessage
	r := c.nodes["b"].do(t, req)
	calls := c.remote.reset()
	if r.Code != code.Success || len(calls) != 1 || calls[0].code != code.PullMessage || calls[0].ext[FieldLogic] != "false" || calls[0].ext[FieldBrokerName] != "a" {
		t.Fatalf("lite pull of an old segment: %d %s, forwarded %+v", r.Code, r.Remark, calls)
	}
}
