package statictopic

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

func TestDeposedQueues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hosted hosted
		want   []int32
	}{
		{"leads everything", hosted{0: {it("a", 0, 0, 0)}, 1: {it("c", 0, 0, 0), it("a", 1, 1, 10000)}}, nil},
		{"moved away", hosted{0: {it("a", 0, 0, 0), it("c", 1, 0, -1)}}, []int32{0}},
		{"moved back onto a new queue", hosted{0: {it("a", 0, 0, 0), it("c", 1, 0, 10000), it("a", 2, 3, 20000)}}, []int32{0}},
		{"backup two generations old", hosted{2: {it("a", 0, 2, 0), it("c", 1, 1, 10000)}, 5: {it("a", 0, 5, 0)}}, []int32{2}},
		{"other brokers only", hosted{0: {it("b", 0, 0, 0), it("c", 1, 0, 10000)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := deposedQueues(detail("a", 1, 8, tc.hosted), "a")
			if !slices.Equal(got, tc.want) {
				t.Fatalf("deposed %v, want %v", got, tc.want)
			}
		})
	}
}

// serve puts node n's handlers on a real server (parking needs a channel).
func serve(t *testing.T, n *node) (*remoting.Client, string) {
	t.Helper()
	srv := remotingtest.Serve(t, func(s *remoting.Server) {
		for c, h := range n.handlers {
			s.Register(c, h, nil)
		}
	})
	return remotingtest.NewClient(t), srv.Addr()
}

// TestRemapAnswersParkedPulls: a pull parked on the leader is answered
// NOT_LEADER_FOR_QUEUE as soon as request 513 moves its logic queue away,
// not at its 15 s deadline; an update that keeps the leader leaves it
// parked.
func TestRemapAnswersParkedPulls(t *testing.T) {
	c := newCluster(t, "a", "c")
	a := c.nodes["a"]
	const e1, e2 = int64(1_000_000), int64(1_001_000)
	c.apply(2, detail("a", e1, 2, hosted{0: {it("a", 0, 0, 0)}, 1: {it("a", 0, 1, 0)}}))
	c.apply(0, detail("c", e1, 2, nil))
	cl, addr := serve(t, a)

	type result struct {
		resp *remoting.Command
		err  error
		took time.Duration
	}
	park := func(logicQueue int) <-chan result {
		req := pullReq(logicQueue, 0, flagSuspend)
		req.ExtFields["suspendTimeoutMillis"] = "15000"
		out := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			t0 := time.Now()
			resp, err := cl.Invoke(ctx, addr, req)
			out <- result{resp, err, time.Since(t0)}
		}()
		return out
	}
	waitParked := func(n int) {
		t.Helper()
		testutil.Eventually(t, 5*time.Second, func() error {
			if got := a.svc.hold.Len(); got != n {
				return fmt.Errorf("parked %d, want %d", got, n)
			}
			return nil
		})
	}
	q0, q1 := park(0), park(1)
	waitParked(2)

	// Same epoch, same leaders (the admin's last step re-sends): parked
	// pulls stay.
	c.apply(2, detail("a", e1, 2, hosted{0: {it("a", 0, 0, 0)}, 1: {it("a", 0, 1, 0)}}))
	time.Sleep(50 * time.Millisecond)
	waitParked(2)

	// Logic queue 0 moves to c (the admin's steps 1 and 2).
	moved := []protocol.LogicQueueMappingItem{it("a", 0, 0, 0), it("c", 1, 0, -1)}
	c.apply(1, detail("c", e2, 2, hosted{0: moved}))
	c.apply(2, detail("a", e2, 2, hosted{0: moved, 1: {it("a", 0, 1, 0)}}))
	select {
	case r := <-q0:
		if r.err != nil || r.resp.Code != code.NotLeaderForQueue || r.took > 5*time.Second {
			t.Fatalf("parked pull of the moved queue: %v code %v after %v", r.err, r.resp, r.took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked pull of the moved logic queue was not answered")
	}
	waitParked(1)
	select {
	case r := <-q1:
		t.Fatalf("the pull of the logic queue a still leads was answered: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestSettleDropsStaleBackups: outside the deleteWhen hour, a backup two
// generations old goes SettleDelay after the last request 513 (so that the
// Java admin's next remap does not trip over it), but not while the
// epochs still differ.
func TestSettleDropsStaleBackups(t *testing.T) {
	const e = int64(5000)
	full := []protocol.LogicQueueMappingItem{it("a", 0, 0, 0), it("c", 1, 0, 10000), it("b", 2, 0, 20000)}
	route := globalRoute(e, 1, map[string]map[int]int{"a": {}, "b": {0: 0}, "c": {}})
	var leaderEpoch atomic.Int64
	leaderEpoch.Store(e + 1000) // b has moved on: a remap is under way
	remote := scriptedRemote{"b": func(req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, code.Success, "")
		d := detail("b", leaderEpoch.Load(), 1, hosted{0: full})
		resp.Body = protocol.MustMarshal(protocol.TopicConfigAndQueueMapping{TopicName: tpc, MappingDetail: &d})
		return resp
	}}
	m, err := OpenManager(ManagerOptions{BrokerName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 4)
	cs, err := NewCleanService(CleanDeps{Mappings: m, Store: storetest.New(), Remote: remote, Routes: fakeRoutes{tpc: route},
		DeleteWhen:  func() string { return "04" },
		Now:         func() time.Time { return time.Date(2024, 1, 1, 12, 0, 0, 0, time.Local) },
		Interval:    time.Hour,
		SettleDelay: 20 * time.Millisecond,
		Changed:     func() { changed <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	// a's copy still says c leads (with c's logic offset undecided, as the
	// Java admin leaves old leaders).
	if err := m.Update(detail("a", e, 1, hosted{0: {it("a", 0, 0, 0), it("c", 1, 0, -1)}}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs.Start()
	defer cs.Close()
	if cs.RunOnce(context.Background()) {
		t.Fatal("RunOnce worked outside deleteWhen")
	}

	cs.Settle(tpc)
	select {
	case <-changed:
		t.Fatal("dropped while the leader's epoch differs")
	case <-time.After(200 * time.Millisecond):
	}
	leaderEpoch.Store(e) // the operation is over
	for range 3 {
		cs.Settle(tpc) // a burst of 513s: one run after the last
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the stale backup was not dropped after Settle")
	}
	if d, _ := m.Get(tpc); len(d.HostedQueues) != 0 {
		t.Fatalf("hosted %+v", d.HostedQueues)
	}
}
