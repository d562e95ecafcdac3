package statictopic

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

const t0 = int64(1700000000000)

func clock(ms int64) Options {
	return Options{Now: func() time.Time { return time.UnixMilli(ms) }}
}

// leaderCount counts the logic queues each broker leads in a plan.
func leaderCount(p *Plan) map[string]int {
	out := map[string]int{}
	for _, b := range p.Leaders() {
		out[b]++
	}
	return out
}

func TestAllocator(t *testing.T) {
	a := NewAllocator(nil, map[string]int{"a": 0, "b": 0, "c": 0}, nil, nil)
	a.UpTo(6)
	if !reflect.DeepEqual(a.Count, map[string]int{"a": 2, "b": 2, "c": 2}) {
		t.Fatalf("upTo(6): %v", a.Count)
	}
	a.UpTo(8)
	for b, n := range a.Count {
		if n != 2 && n != 3 {
			t.Fatalf("upTo(8): %s has %d", b, n)
		}
	}
	if len(a.IDToBroker) != 8 {
		t.Fatalf("ids %v", a.IDToBroker)
	}
	// Remapping onto the brokers of before reproduces before.
	for k := 2; k <= 5; k++ {
		before, count := map[string]int{}, map[string]int{}
		for i := range k {
			b := fmt.Sprintf("b%d", i)
			before[b], count[b] = k, 0
		}
		before[fmt.Sprintf("b%d", k/2)] = k + 1
		a := NewAllocator(nil, count, before, nil)
		a.UpTo(k*k + 1)
		if !reflect.DeepEqual(a.Count, before) {
			t.Fatalf("k=%d: got %v, want %v", k, a.Count, before)
		}
	}
	// Java would move one queue here; ours is stable.
	before := map[string]int{"A": 4, "B": 4, "C": 3}
	a = NewAllocator(nil, map[string]int{"A": 0, "B": 0, "C": 0}, before, nil)
	a.UpTo(11)
	if !reflect.DeepEqual(a.Count, before) {
		t.Fatalf("stable: %v", a.Count)
	}
	// Holes are filled, existing ids kept.
	a = NewAllocator(map[int]string{0: "a", 2: "a"}, map[string]int{"a": 2, "b": 0}, nil, nil)
	a.UpTo(4)
	if a.IDToBroker[1] != "b" || a.IDToBroker[3] != "b" || a.IDToBroker[0] != "a" {
		t.Fatalf("holes: %v", a.IDToBroker)
	}
}

// create plans a new topic and returns its configs as the brokers would
// store them.
func create(t *testing.T, topic string, n int, targets []string, now int64) Configs {
	t.Helper()
	p, err := PlanCreate(topic, n, targets, Configs{}, clock(now))
	if err != nil {
		t.Fatal(err)
	}
	return p.BrokerConfigMap
}

func TestPlanCreate(t *testing.T) {
	p, err := PlanCreate("T", 8, []string{"broker-a", "broker-b"}, Configs{}, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	if p.Epoch != t0+1000 || p.Type != TypeCreateOrUpdate || len(p.BrokerToMapIn) != 0 {
		t.Fatalf("plan %+v", p)
	}
	if got := leaderCount(p); !reflect.DeepEqual(got, map[string]int{"broker-a": 4, "broker-b": 4}) {
		t.Fatalf("leaders %v", got)
	}
	for _, b := range []string{"broker-a", "broker-b"} {
		tc := p.BrokerConfigMap[b]
		if tc.ReadQueueNums != 4 || tc.WriteQueueNums != 4 || tc.Perm != 6 || tc.MappingDetail.TotalQueues != 8 || tc.MappingDetail.Epoch != t0+1000 {
			t.Fatalf("%s: %+v %+v", b, tc, tc.MappingDetail)
		}
		var qids []int
		for _, items := range tc.MappingDetail.HostedQueues {
			if len(items) != 1 || items[0].LogicOffset != 0 || items[0].Gen != 0 || items[0].EndOffset != -1 {
				t.Fatalf("%s items %+v", b, items)
			}
			qids = append(qids, items[0].QueueID)
		}
		slices.Sort(qids)
		if !reflect.DeepEqual(qids, []int{0, 1, 2, 3}) {
			t.Fatalf("%s physical queues %v", b, qids)
		}
	}

	// Extend 8 → 12 over a third broker: it gets the 4 new ones.
	cur := p.BrokerConfigMap
	ext, err := PlanCreate("T", 12, []string{"broker-a", "broker-b", "broker-c"}, cur, clock(t0+500))
	if err != nil {
		t.Fatal(err)
	}
	if ext.Epoch != t0+2000 {
		t.Fatalf("epoch %d", ext.Epoch)
	}
	if got := leaderCount(ext); !reflect.DeepEqual(got, map[string]int{"broker-a": 4, "broker-b": 4, "broker-c": 4}) {
		t.Fatalf("extend leaders %v", got)
	}
	for g, b := range ext.Leaders() {
		if g < 8 && b != p.Leaders()[g] {
			t.Fatalf("existing queue %d moved to %s", g, b)
		}
	}
	if cur["broker-a"].MappingDetail.TotalQueues != 8 {
		t.Fatal("the planner changed its input")
	}
}

func TestPlanCreateRefusals(t *testing.T) {
	base := create(t, "T", 4, []string{"a", "b"}, t0)
	mixed := base.Clone()
	mixed["b"].MappingDetail.Epoch++
	normal := base.Clone()
	normal["b"].MappingDetail = nil
	reused := base.Clone()
	for _, items := range reused["b"].MappingDetail.HostedQueues {
		items[0].QueueID = 0 // every queue of b on physical queue 0
	}
	// A history on b that passes through a's physical queue 0, which
	// another logic queue of a still leads.
	reusedAcross := base.Clone()
	for g, items := range reusedAcross["b"].MappingDetail.HostedQueues {
		reusedAcross["b"].MappingDetail.HostedQueues[g] = []Item{NewItem(0, 0, "a", 0), {Gen: 1, QueueID: items[0].QueueID, Bname: "b", LogicOffset: 10000, EndOffset: -1}}
		break
	}
	for _, tc := range []struct {
		name    string
		n       int
		targets []string
		cur     Configs
		err     string
	}{
		{"shrink", 2, []string{"a", "b"}, base, "cannot decrease"},
		{"same", 4, []string{"a", "b"}, base, "do nothing"},
		{"zero", 0, []string{"a"}, Configs{}, "must be positive"},
		{"no target", 4, nil, Configs{}, "find none brokers"},
		{"existing broker not a target", 6, []string{"a"}, base, "does not in target brokers"},
		{"mixed epochs", 6, []string{"a", "b"}, mixed, "epoch does not match"},
		{"normal topic", 6, []string{"a", "b"}, normal, "not a static topic"},
		{"physical queue mapped twice", 6, []string{"a", "b"}, reused, "share the physical queue"},
		{"physical queue in two histories", 6, []string{"a", "b"}, reusedAcross, "share the physical queue"},
	} {
		_, err := PlanCreate("T", tc.n, tc.targets, tc.cur, clock(t0+10))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.err)
		}
	}
}

// apply simulates the brokers after a plan has been applied completely:
// decided logic offsets from the old leaders' max offsets (maxOf), and
// brokers missing from the plan keep their configs.
func apply(t *testing.T, cur Configs, p *Plan, maxOf func(b string, q int) int64) Configs {
	t.Helper()
	for _, g := range p.Undecided() {
		prev, err := p.PreviousLeader(g)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Decide(g, maxOf(prev.Bname, prev.QueueID)); err != nil {
			t.Fatal(err)
		}
	}
	out := cur.Clone()
	maps.Copy(out, p.BrokerConfigMap.Clone())
	return out
}

// TestWorkedExample is docs/static-topics.md §12: one logic queue over three
// brokers, remapped from a to b after 10 messages.
func TestWorkedExample(t *testing.T) {
	p, err := PlanCreate("T", 1, []string{"a"}, Configs{}, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	if added := p.Complete([]string{"a", "b", "c"}); !reflect.DeepEqual(added, []string{"b", "c"}) {
		t.Fatalf("completed %v", added)
	}
	e1 := p.Epoch
	if e1 != t0+1000 {
		t.Fatalf("E1 %d", e1)
	}
	a, b, c := p.BrokerConfigMap["a"], p.BrokerConfigMap["b"], p.BrokerConfigMap["c"]
	if a.ReadQueueNums != 1 || a.WriteQueueNums != 1 || !reflect.DeepEqual(a.MappingDetail.HostedQueues, map[int][]Item{0: {NewItem(0, 0, "a", 0)}}) {
		t.Fatalf("a %+v %+v", a, a.MappingDetail)
	}
	for _, x := range []*protocol.TopicConfigAndQueueMapping{b, c} {
		if x.ReadQueueNums != 0 || x.WriteQueueNums != 0 || len(x.MappingDetail.HostedQueues) != 0 || x.MappingDetail.Epoch != e1 || x.MappingDetail.TotalQueues != 1 {
			t.Fatalf("non-target %+v %+v", x, x.MappingDetail)
		}
	}
	if ep := Endpoints("T", infos(p.BrokerConfigMap)); !reflect.DeepEqual(ep, map[protocol.MessageQueue]string{{Topic: "T", BrokerName: "__syslo__global__", QueueID: 0}: "a"}) {
		t.Fatalf("endpoints %v", ep)
	}

	state := p.BrokerConfigMap
	r, err := PlanRemap("T", []string{"b"}, state, clock(t0+1500))
	if err != nil {
		t.Fatal(err)
	}
	if r.Epoch != e1+1000 || !reflect.DeepEqual(r.BrokerToMapIn, []string{"b"}) || !reflect.DeepEqual(r.BrokerToMapOut, []string{"a"}) {
		t.Fatalf("remap %+v", r)
	}
	want := []Item{NewItem(0, 0, "a", 0), NewItem(1, 0, "b", -1)}
	if got := r.BrokerConfigMap["b"].MappingDetail.HostedQueues[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("step 1 list on b %+v", got)
	}
	if got := r.BrokerConfigMap["a"].MappingDetail.HostedQueues[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("step 2 list on a %+v", got)
	}
	if bc := r.BrokerConfigMap["b"]; bc.ReadQueueNums != 1 || bc.WriteQueueNums != 1 {
		t.Fatalf("b queues %+v", bc)
	}
	if !reflect.DeepEqual(r.Undecided(), []int{0}) {
		t.Fatalf("undecided %v", r.Undecided())
	}
	v, err := r.Decide(0, 10) // a's physical max of q0 after 10 messages
	if err != nil || v != 10000 {
		t.Fatalf("decide %d %v", v, err)
	}
	want[1].LogicOffset = 10000
	if got := r.BrokerConfigMap["b"].MappingDetail.HostedQueues[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("step 4 list on b %+v", got)
	}
	if cc := r.BrokerConfigMap["c"]; cc.MappingDetail.Epoch != r.Epoch || len(cc.MappingDetail.HostedQueues) != 0 {
		t.Fatalf("step 5 c %+v", cc.MappingDetail)
	}
	ep := Endpoints("T", infos(r.BrokerConfigMap))
	if ep[protocol.MessageQueue{Topic: "T", BrokerName: "__syslo__global__", QueueID: 0}] != "b" {
		t.Fatalf("endpoints after remap %v", ep)
	}
	if _, err := CheckAll("T", r.BrokerConfigMap); err != nil {
		t.Fatal(err)
	}
}

func infos(cfgs Configs) map[string]protocol.TopicQueueMappingInfo {
	out := map[string]protocol.TopicQueueMappingInfo{}
	for b, tc := range cfgs {
		out[b] = tc.MappingDetail.Info()
	}
	return out
}

// TestRemapAwayAndBack is the e2e scenario: 8 logic queues over a and b,
// all to c, then back to a and b; physical queues are never reused.
func TestRemapAwayAndBack(t *testing.T) {
	p, _ := PlanCreate("T", 8, []string{"a", "b"}, Configs{}, clock(t0))
	p.Complete([]string{"a", "b", "c"})
	state := p.BrokerConfigMap
	maxOf := func(string, int) int64 { return 120 }

	toC, err := PlanRemap("T", []string{"c"}, state, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(toC.BrokerToMapIn, []string{"c"}) || !reflect.DeepEqual(toC.BrokerToMapOut, []string{"a", "b"}) || len(toC.Undecided()) != 8 {
		t.Fatalf("to c: in %v out %v undecided %v", toC.BrokerToMapIn, toC.BrokerToMapOut, toC.Undecided())
	}
	if cc := toC.BrokerConfigMap["c"]; cc.WriteQueueNums != 8 || cc.ReadQueueNums != 8 {
		t.Fatalf("c queues %d/%d", cc.ReadQueueNums, cc.WriteQueueNums)
	}
	if ac := toC.BrokerConfigMap["a"]; ac.WriteQueueNums != 4 {
		t.Fatalf("a keeps its queues: %d", ac.WriteQueueNums)
	}
	state = apply(t, state, toC, maxOf)
	if got := leaderCount(&Plan{BrokerConfigMap: state}); !reflect.DeepEqual(got, map[string]int{"c": 8}) {
		t.Fatalf("leaders %v", got)
	}

	back, err := PlanRemap("T", []string{"a", "b"}, state, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	if back.Epoch != toC.Epoch+1000 || !reflect.DeepEqual(back.BrokerToMapOut, []string{"c"}) {
		t.Fatalf("back %+v", back)
	}
	state = apply(t, state, back, maxOf)
	if got := leaderCount(&Plan{BrokerConfigMap: state}); !reflect.DeepEqual(got, map[string]int{"a": 4, "b": 4}) {
		t.Fatalf("leaders %v", got)
	}
	leaders, err := CheckAll("T", state)
	if err != nil {
		t.Fatal(err)
	}
	for g, q := range leaders {
		if len(q.Items) != 3 || q.Items[1].LogicOffset != 10000 || q.Items[2].LogicOffset != 20000 || q.Items[2].QueueID < 4 {
			t.Fatalf("queue %d history %+v", g, q.Items)
		}
	}
	if state["a"].WriteQueueNums != 8 {
		t.Fatalf("a queues %d", state["a"].WriteQueueNums)
	}

	// Remapping onto the current leaders moves nothing; only the epoch.
	same, err := PlanRemap("T", []string{"a", "b"}, state, clock(t0))
	if err != nil || len(same.BrokerToMapIn)+len(same.BrokerToMapOut) != 0 || same.Epoch != back.Epoch+1000 {
		t.Fatalf("same: %+v %v", same, err)
	}
}

func TestPlanRemapRefusals(t *testing.T) {
	p, _ := PlanCreate("T", 2, []string{"a"}, Configs{}, clock(t0))
	p.Complete([]string{"a", "b"})
	r, _ := PlanRemap("T", []string{"b"}, p.BrokerConfigMap, clock(t0))
	half := p.BrokerConfigMap.Clone()
	maps.Copy(half, r.BrokerConfigMap.Clone()) // applied up to step 2: undecided
	hole := p.BrokerConfigMap.Clone()
	delete(hole["a"].MappingDetail.HostedQueues, 1)
	for _, tc := range []struct {
		name    string
		targets []string
		cur     Configs
		err     string
	}{
		{"no route", []string{"a"}, Configs{}, "no topic route"},
		{"no targets", nil, p.BrokerConfigMap, "find none brokers"},
		{"undecided leader", []string{"a"}, half, "interrupted"},
		{"missing logic queue", []string{"b"}, hole, "does not match the real hosted queues"},
	} {
		_, err := PlanRemap("T", tc.targets, tc.cur, clock(t0))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestRepair(t *testing.T) {
	p, _ := PlanCreate("T", 4, []string{"a", "b"}, Configs{}, clock(t0))
	p.Complete([]string{"a", "b", "c", "d"})
	clean := p.BrokerConfigMap
	r, err := PlanRemap("T", []string{"c"}, clean, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	partial := func(brokers ...string) Configs {
		out := clean.Clone()
		for _, b := range brokers {
			out[b] = CloneConfig(r.BrokerConfigMap[b])
		}
		return out
	}
	afterStep4 := partial("a", "b", "c")
	for _, g := range r.Undecided() {
		for _, b := range []string{"a", "b", "c"} {
			if items := afterStep4[b].MappingDetail.HostedQueues[g]; len(items) == 2 {
				items[1].LogicOffset = 10000
			}
		}
	}
	for _, tc := range []struct {
		name      string
		cur       Configs
		in, out   []string
		undecided []int
		reasons   int
	}{
		{"clean", clean, nil, nil, nil, 0},
		{"after step 1", partial("c"), []string{"c"}, []string{"a", "b"}, []int{0, 1, 2, 3}, 3 + 4 + 4},
		{"after step 2", partial("a", "b", "c"), []string{"c"}, []string{"a", "b"}, []int{0, 1, 2, 3}, 1 + 4},
		{"after step 4", afterStep4, []string{}, []string{}, nil, 1},
	} {
		rp, reasons, err := Repair("T", tc.cur, clock(t0))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.reasons == 0 {
			if rp != nil {
				t.Fatalf("%s: repair %+v %v", tc.name, rp, reasons)
			}
			continue
		}
		if rp == nil || len(reasons) != tc.reasons {
			t.Fatalf("%s: plan %v reasons %q", tc.name, rp, reasons)
		}
		if !reflect.DeepEqual(rp.BrokerToMapIn, tc.in) || !reflect.DeepEqual(rp.BrokerToMapOut, tc.out) || !reflect.DeepEqual(rp.Undecided(), tc.undecided) {
			t.Fatalf("%s: in %v out %v undecided %v", tc.name, rp.BrokerToMapIn, rp.BrokerToMapOut, rp.Undecided())
		}
		if rp.Epoch <= tc.cur.MaxEpoch() {
			t.Fatalf("%s: epoch %d not above %d", tc.name, rp.Epoch, tc.cur.MaxEpoch())
		}
		done := apply(t, tc.cur, rp, func(string, int) int64 { return 7 })
		if _, err := CheckAll("T", done); err != nil {
			t.Fatalf("%s: repaired state: %v", tc.name, err)
		}
		if got := leaderCount(&Plan{BrokerConfigMap: done}); !reflect.DeepEqual(got, map[string]int{"c": 4}) {
			t.Fatalf("%s: leaders %v", tc.name, got)
		}
		if again, _, err := Repair("T", done, clock(t0)); again != nil || err != nil {
			t.Fatalf("%s: repair of the repaired state: %+v %v", tc.name, again, err)
		}
	}

	// Two brokers claiming one queue at the same epoch cannot be settled.
	conflict := clean.Clone()
	conflict["c"] = CloneConfig(r.BrokerConfigMap["c"])
	conflict["c"].MappingDetail.Epoch = clean["a"].MappingDetail.Epoch
	if _, _, err := Repair("T", conflict, clock(t0)); err == nil || !strings.Contains(err.Error(), "led by both") {
		t.Fatalf("conflict: %v", err)
	}
}

func TestEndpoints(t *testing.T) {
	mq := func(g int) protocol.MessageQueue {
		return protocol.MessageQueue{Topic: "T", BrokerName: "__syslo__global__", QueueID: g}
	}
	got := Endpoints("T", map[string]protocol.TopicQueueMappingInfo{
		"a": {Bname: "a", Epoch: 1, Scope: "__global__", TotalQueues: 3, CurrIDMap: map[int]int{0: 0, 1: 1}},
		"c": {Bname: "c", Epoch: 2, Scope: "__global__", TotalQueues: 3, CurrIDMap: map[int]int{1: 0}},
		"x": {Bname: "x", Epoch: 9, TotalQueues: 5, CurrIDMap: map[int]int{0: 0}}, // no scope: ignored
	})
	want := map[protocol.MessageQueue]string{mq(0): "a", mq(1): "c", mq(2): MockBrokerNone}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	if len(Endpoints("T", nil)) != 0 {
		t.Fatal("no infos")
	}
	if MockBrokerName("__global__") != "__syslo__global__" || MockBrokerName("s1") != "__syslo__s1" || !IsMockBroker("__syslo__none__") || IsMockBroker("broker-a") {
		t.Fatal("mock names")
	}
}

func TestPlanFileRoundTrip(t *testing.T) {
	p, _ := PlanCreate("T", 2, []string{"a", "b"}, Configs{}, clock(t0))
	data := protocol.MustMarshal(p)
	back, err := DecodePlan(data)
	if err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("%v\n%+v\n%+v", err, back, p)
	}
	// The Java tool's file: fastjson writes integer keys bare.
	java := `{"brokerConfigMap":{"a":{"attributes":{},"mappingDetail":{"bname":"a","currIdMap":{},"dirty":false,"epoch":5,"hostedQueues":{0:[{"bname":"a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},"scope":"__global__","topic":"T","totalQueues":1},"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":1}},"brokerToMapIn":[],"brokerToMapOut":[],"epoch":5,"topic":"T","type":"CREATE_OR_UPDATE"}`
	jp, err := DecodePlan([]byte(java))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckAll("T", jp.BrokerConfigMap); err != nil || jp.Epoch != 5 || len(jp.BrokerConfigMap["a"].MappingDetail.HostedQueues[0]) != 1 {
		t.Fatalf("java plan %+v %v", jp, err)
	}
}

// TestJavaUndecidedCopies: the Java tool leaves -1 in the old leaders'
// copies after a remap. That is no reason to repair, and our next plan
// writes the decided value there.
func TestJavaUndecidedCopies(t *testing.T) {
	p, _ := PlanCreate("T", 2, []string{"a"}, Configs{}, clock(t0))
	r, err := PlanRemap("T", []string{"b"}, p.BrokerConfigMap, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	state := r.BrokerConfigMap.Clone() // a's copies: -1, as Java leaves them
	for _, items := range state["b"].MappingDetail.HostedQueues {
		items[1].LogicOffset = 10000
	}
	if rp, reasons, err := Repair("T", state, clock(t0)); rp != nil || err != nil {
		t.Fatalf("repair: %v %v", reasons, err)
	}
	next, err := PlanRemap("T", []string{"b"}, state, clock(t0))
	if err != nil {
		t.Fatal(err)
	}
	for g, items := range next.BrokerConfigMap["a"].MappingDetail.HostedQueues {
		if items[1].LogicOffset != 10000 {
			t.Fatalf("a's copy of %d: %+v", g, items)
		}
	}
	if state["a"].MappingDetail.HostedQueues[0][1].LogicOffset != -1 {
		t.Fatal("the planner changed its input")
	}
}
