package statictopic

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// scriptedRemote answers forwarded requests from per-broker functions.
type scriptedRemote map[string]func(req *remoting.Command) *remoting.Command

func (r scriptedRemote) Invoke(_ context.Context, b string, req *remoting.Command) (*remoting.Command, error) {
	f := r[b]
	if f == nil {
		return nil, errors.New("unreachable")
	}
	return f(req), nil
}

type fakeRoutes map[string]*protocol.TopicRouteData

func (f fakeRoutes) Route(_ context.Context, topic string) (*protocol.TopicRouteData, error) {
	if r := f[topic]; r != nil {
		return r, nil
	}
	return nil, errors.New("no route")
}

func statsAnswer(t *testing.T, broker string, offsets map[int][2]int64) func(*remoting.Command) *remoting.Command {
	return func(req *remoting.Command) *remoting.Command {
		if req.Code != code.GetTopicStatsInfo || req.Ext(FieldLogic) != "false" || req.Ext(FieldBrokerName) != broker {
			t.Errorf("unexpected request %d %v", req.Code, req.ExtFields)
		}
		st := protocol.TopicStatsTable{OffsetTable: protocol.MQMap[protocol.TopicOffset]{}}
		for q, mm := range offsets {
			st.OffsetTable[protocol.MessageQueue{Topic: req.Ext("topic"), BrokerName: broker, QueueID: q}] = protocol.TopicOffset{MinOffset: mm[0], MaxOffset: mm[1]}
		}
		body, err := protocol.MarshalMQKeyed(st)
		if err != nil {
			t.Fatal(err)
		}
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = body
		return resp
	}
}

func newClean(t *testing.T, me string, remote Remote, routes RouteSource, hour int) (*Manager, *storetest.Store, *CleanService, *int) {
	t.Helper()
	m, err := OpenManager(ManagerOptions{BrokerName: me})
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.New()
	changed := 0
	cs, err := NewCleanService(CleanDeps{Mappings: m, Store: st, Remote: remote, Routes: routes,
		DeleteWhen: func() string { return "04;13" },
		Now:        func() time.Time { return time.Date(2024, 1, 1, hour, 30, 0, 0, time.Local) },
		Changed:    func() { changed++ }})
	if err != nil {
		t.Fatal(err)
	}
	return m, st, cs, &changed
}

func TestCleanExpiredItems(t *testing.T) {
	remote := scriptedRemote{"a": statsAnswer(t, "a", map[int][2]int64{0: {10, 10}, 1: {0, 10}, 2: {0, 0}})}
	m, st, cs, changed := newClean(t, "b", remote, nil, 13)
	st.Put(tpc, 3, "", []byte("x")) // b's own old segment still holds data
	if err := m.Update(detail("b", 1, 5, hosted{
		0: {it("a", 0, 0, 0), it("b", 1, 0, 10000)},                       // a/0 emptied: dropped
		1: {it("a", 0, 1, 0), it("b", 1, 1, 10000)},                       // a/1 holds data: kept
		2: {it("a", 0, 2, 0), it("b", 1, 2, -1)},                          // successor undecided: kept
		3: {it("b", 0, 3, 0), it("b", 1, 4, 10000)},                       // local and holding data: kept
		4: {it("a", 0, 3, 0), it("c", 1, 0, 10000), it("b", 2, 5, 20000)}, // a/3 unknown to the stats: kept
	}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v0 := m.DataVersion()
	if !cs.RunOnce(context.Background()) {
		t.Fatal("nothing cleaned")
	}
	d, _ := m.Get(tpc)
	lens := map[int]int{}
	for g, l := range d.HostedQueues {
		lens[g] = len(l)
	}
	if want := map[int]int{0: 1, 1: 2, 2: 2, 3: 2, 4: 3}; len(lens) != len(want) || lens[0] != 1 || lens[1] != 2 || lens[2] != 2 || lens[3] != 2 || lens[4] != 3 {
		t.Fatalf("list lengths %v, want %v", lens, want)
	}
	if d.HostedQueues[0][0].Gen != 1 || m.DataVersion().Counter != v0.Counter+1 || *changed != 1 {
		t.Fatalf("after clean: %+v version %+v changed %d", d.HostedQueues[0], m.DataVersion(), *changed)
	}
	// The leader item is never removed, however empty.
	remote["a"] = statsAnswer(t, "a", map[int][2]int64{})
	if cs.RunOnce(context.Background()) {
		t.Fatal("second run changed something")
	}
}

func TestCleanOnlyAtDeleteWhen(t *testing.T) {
	remote := scriptedRemote{"a": statsAnswer(t, "a", map[int][2]int64{0: {10, 10}})}
	m, _, cs, _ := newClean(t, "b", remote, nil, 12)
	if err := m.Update(detail("b", 1, 1, hosted{0: {it("a", 0, 0, 0), it("b", 1, 0, 10000)}}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cs.RunOnce(context.Background()) {
		t.Fatal("cleaned outside deleteWhen")
	}
	if d, _ := m.Get(tpc); len(d.HostedQueues[0]) != 2 {
		t.Fatal("list changed")
	}
}

// TestCleanStaleBackups: after b1 → b2 → b3, b1's backup (which names b2)
// goes, b2's (which names b3) stays.
func TestCleanStaleBackups(t *testing.T) {
	const e = int64(5000)
	full := []protocol.LogicQueueMappingItem{it("b1", 0, 0, 0), it("b2", 1, 0, 10000), it("b3", 2, 0, 20000)}
	route := globalRoute(e, 2, map[string]map[int]int{"b1": {}, "b2": {1: 1}, "b3": {0: 0}})
	if got := LogicLeaders(route, ""); got[0] != "b3" || got[1] != "b2" || len(got) != 2 {
		t.Fatalf("leaders %v", got)
	}
	topicConfig := func(d protocol.TopicQueueMappingDetail) func(*remoting.Command) *remoting.Command {
		return func(req *remoting.Command) *remoting.Command {
			if req.Code != code.GetTopicConfig || req.Ext(FieldLogic) != "true" {
				t.Errorf("unexpected %d %v", req.Code, req.ExtFields)
			}
			resp := remoting.NewResponse(req, code.Success, "")
			resp.Body = protocol.MustMarshal(protocol.TopicConfigAndQueueMapping{TopicName: tpc, MappingDetail: &d})
			return resp
		}
	}
	remote := scriptedRemote{"b3": topicConfig(detail("b3", e, 2, hosted{0: full}))}
	routes := fakeRoutes{tpc: route}

	m1, _, cs1, _ := newClean(t, "b1", remote, routes, 4)
	if err := m1.Update(detail("b1", e, 2, hosted{0: full[:2]}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !cs1.RunOnce(context.Background()) {
		t.Fatal("b1 kept its stale backup")
	}
	if d, _ := m1.Get(tpc); len(d.HostedQueues) != 0 {
		t.Fatalf("b1 hosted %+v", d.HostedQueues)
	}

	m2, _, cs2, _ := newClean(t, "b2", remote, routes, 4)
	if err := m2.Update(detail("b2", e, 2, hosted{0: full, 1: {it("b2", 0, 1, 0)}}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cs2.RunOnce(context.Background()) {
		t.Fatal("b2 dropped a backup that names the real leader")
	}

	// The real leader's detail has another epoch: nothing is decided.
	remote["b3"] = topicConfig(detail("b3", e+1000, 2, hosted{0: full}))
	m3, _, cs3, _ := newClean(t, "b1", remote, routes, 4)
	if err := m3.Update(detail("b1", e, 2, hosted{0: full[:2]}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cs3.RunOnce(context.Background()) {
		t.Fatal("dropped on an epoch mismatch")
	}
}

func TestCleanServiceLoop(t *testing.T) {
	remote := scriptedRemote{"a": statsAnswer(t, "a", map[int][2]int64{0: {3, 3}})}
	m, err := OpenManager(ManagerOptions{BrokerName: "b"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 1)
	cs, err := NewCleanService(CleanDeps{Mappings: m, Store: storetest.New(), Remote: remote, Interval: time.Hour,
		Changed: func() { done <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Update(detail("b", 1, 1, hosted{0: {it("a", 0, 0, 0), it("b", 1, 0, 10000)}}), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs.Start()
	defer cs.Close()
	cs.Wakeup()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("woken service did not clean")
	}
}
