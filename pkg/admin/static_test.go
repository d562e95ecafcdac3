package admin_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	sa = "10.0.1.1:10911"
	sb = "10.0.1.2:10911"
	sc = "10.0.1.3:10911"
	sd = "10.0.1.4:10911" // another cluster
)

// staticFixture: cluster C with masters broker-a, broker-b, broker-c and
// cluster D with broker-d; a fixed clock that advances 1 s per reading.
func staticFixture(t *testing.T) (*admintest.Cluster, *admin.Client, statictopic.Options) {
	t.Helper()
	fc := admintest.New(ns1)
	fc.AddBroker("C", "broker-a", 0, sa)
	fc.AddBroker("C", "broker-b", 0, sb)
	fc.AddBroker("C", "broker-c", 0, sc)
	fc.AddBroker("D", "broker-d", 0, sd)
	c, err := admin.NewWithInvoker(admin.Config{NameServers: []string{ns1}}, fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1700000000000)
	opt := statictopic.Options{Now: func() time.Time { now += 1000; return time.UnixMilli(now) }}
	return fc, c, opt
}

// brokerState reads what the fake brokers store for topic.
func brokerState(fc *admintest.Cluster, topic string) statictopic.Configs {
	out := statictopic.Configs{}
	fc.Lock(func() {
		for _, b := range fc.Brokers {
			tc, ok := b.Topics[topic]
			if !ok {
				continue
			}
			out[b.Name] = statictopic.CloneConfig(&protocol.TopicConfigAndQueueMapping{
				Attributes: tc.Attributes, Perm: tc.Perm, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
				TopicFilterType: tc.TopicFilterType, TopicName: tc.TopicName, MappingDetail: b.Mapping[topic],
			})
		}
	})
	return out
}

// setMaxOffsets gives every physical queue of topic the max offset f(broker, queue).
func setMaxOffsets(fc *admintest.Cluster, topic string, f func(b string, q int) int64) {
	fc.Lock(func() {
		for _, b := range fc.Brokers {
			tc, ok := b.Topics[topic]
			if !ok {
				continue
			}
			st := protocol.TopicStatsTable{OffsetTable: protocol.MQMap[protocol.TopicOffset]{}}
			for q := 0; q < tc.WriteQueueNums; q++ {
				st.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: b.Name, QueueID: q}] = protocol.TopicOffset{MaxOffset: f(b.Name, q)}
			}
			b.Stats[topic] = st
		}
	})
}

func staticCalls(fc *admintest.Cluster, codes ...int32) []string {
	var out []string
	for _, cl := range fc.Calls() {
		if slices.Contains(codes, cl.Code) {
			out = append(out, fmt.Sprintf("%s:%d", cl.Addr, cl.Code))
		}
	}
	return out
}

func leadersOf(t *testing.T, cfgs statictopic.Configs) map[int]string {
	t.Helper()
	l, err := statictopic.CheckAll("T", cfgs)
	if err != nil {
		t.Fatalf("state fails its checks: %v", err)
	}
	out := map[int]string{}
	for g, q := range l {
		out[g] = q.Leader
	}
	return out
}

// TestStaticWorkedExample is docs/static-topics.md §12 through the admin client
// and the fake brokers: the request order of §9.1/§9.2 and what each
// broker stores.
func TestStaticWorkedExample(t *testing.T) {
	fc, c, opt := staticFixture(t)
	ctx := context.Background()
	var saved []string
	req := admin.StaticTopicRequest{Topic: "T", TotalQueues: 1, Brokers: []string{"broker-a"}, Options: opt,
		Save: func(p *statictopic.Plan, suffix string) (string, error) {
			saved = append(saved, fmt.Sprintf("%s-%d%s", p.Topic, p.Epoch, suffix))
			return saved[len(saved)-1], nil
		}}
	res, err := c.UpdateStaticTopic(ctx, req)
	if err != nil || !res.Applied {
		t.Fatalf("create: %+v %v", res, err)
	}
	e1 := res.Plan.Epoch
	// 106, 351 to every broker, then 513 to a, b, c (not d: another cluster).
	if got, want := staticCalls(fc, code.UpdateAndCreateStaticTopic), []string{sa + ":513", sb + ":513", sc + ":513"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("create writes %v", got)
	}
	if len(saved) != 2 || !strings.HasSuffix(saved[0], ".before") || saved[1] != fmt.Sprintf("T-%d.after", e1) {
		t.Fatalf("files %v", saved)
	}
	st := brokerState(fc, "T")
	if len(st) != 3 || st["broker-b"].WriteQueueNums != 0 || st["broker-a"].WriteQueueNums != 1 {
		t.Fatalf("state %v", st)
	}
	if got := leadersOf(t, st); !reflect.DeepEqual(got, map[int]string{0: "broker-a"}) {
		t.Fatalf("leaders %v", got)
	}

	// 10 messages on a's queue 0, then remap to b.
	setMaxOffsets(fc, "T", func(b string, q int) int64 { return map[string]int64{"broker-a": 10}[b] })
	n := len(fc.Calls())
	req.Brokers = []string{"broker-b"}
	res, err = c.RemapStaticTopic(ctx, req)
	if err != nil || !res.Applied {
		t.Fatalf("remap: %+v %v", res, err)
	}
	var order []string
	for _, cl := range fc.Calls()[n:] {
		if cl.Code == code.UpdateAndCreateStaticTopic || cl.Code == code.GetTopicStatsInfo {
			order = append(order, fmt.Sprintf("%s:%d", cl.Addr, cl.Code))
		}
	}
	want := []string{sb + ":513", sa + ":513", sa + ":202", sb + ":513", sa + ":513", sc + ":513"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("remap order %v, want %v", order, want)
	}
	st = brokerState(fc, "T")
	wantItems := []protocol.LogicQueueMappingItem{statictopic.NewItem(0, 0, "broker-a", 0), statictopic.NewItem(1, 0, "broker-b", 10000)}
	for _, b := range []string{"broker-a", "broker-b"} {
		if got := st[b].MappingDetail.HostedQueues[0]; !reflect.DeepEqual(got, wantItems) {
			t.Fatalf("%s list %+v", b, got)
		}
	}
	if st["broker-b"].WriteQueueNums != 1 || st["broker-a"].WriteQueueNums != 1 || len(st["broker-c"].MappingDetail.HostedQueues) != 0 {
		t.Fatalf("queues %+v", st)
	}
	if e := st.MaxEpoch(); e != res.Plan.Epoch || e < e1+1000 {
		t.Fatalf("epoch %d (create %d)", e, e1)
	}
	route, err := c.GetTopicRoute(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	ep := statictopic.Endpoints("T", route.TopicQueueMappingByBroker)
	if ep[protocol.MessageQueue{Topic: "T", BrokerName: "__syslo__global__", QueueID: 0}] != "broker-b" || len(ep) != 1 {
		t.Fatalf("endpoints %v", ep)
	}
}

// TestStaticBadInput: every refusal comes before any write.
func TestStaticBadInput(t *testing.T) {
	ctx := context.Background()
	type setup func(t *testing.T, fc *admintest.Cluster, c *admin.Client, opt statictopic.Options) admin.StaticTopicRequest
	created := func(n int, brokers ...string) func(*testing.T, *admintest.Cluster, *admin.Client, statictopic.Options) {
		return func(t *testing.T, fc *admintest.Cluster, c *admin.Client, opt statictopic.Options) {
			t.Helper()
			if _, err := c.UpdateStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T", TotalQueues: n, Brokers: brokers, Options: opt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// dryRemap creates T with 4 queues on broker-a and returns the plan
	// of a dry-run remap to broker-b, for a test to tamper with.
	dryRemap := func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) *statictopic.Plan {
		t.Helper()
		created(4, "broker-a")(t, fc, c, o)
		dry, err := c.RemapStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-b"}, DryRun: true, Options: o})
		if err != nil {
			t.Fatal(err)
		}
		return dry.Plan
	}
	for _, tc := range []struct {
		name  string
		remap bool
		setup setup
		err   string
	}{
		{"queue count shrinks", false, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			created(8, "broker-a", "broker-b")(t, fc, c, o)
			return admin.StaticTopicRequest{Topic: "T", TotalQueues: 4, Brokers: []string{"broker-a", "broker-b"}}
		}, "cannot decrease the queue num"},
		{"queue count shrinks during an interrupted change", false, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			created(8, "broker-a", "broker-b")(t, fc, c, o)
			fc.Lock(func() { fc.Brokers[0].Mapping["T"].Epoch += 1000 }) // as if a change stopped after broker-a
			return admin.StaticTopicRequest{Topic: "T", TotalQueues: 4, Brokers: []string{"broker-a", "broker-b"}}
		}, "cannot decrease the queue num"},
		{"same queue count", false, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			created(8, "broker-a", "broker-b")(t, fc, c, o)
			return admin.StaticTopicRequest{Topic: "T", TotalQueues: 8, Brokers: []string{"broker-a"}}
		}, "do nothing"},
		{"unknown broker", false, func(*testing.T, *admintest.Cluster, *admin.Client, statictopic.Options) admin.StaticTopicRequest {
			return admin.StaticTopicRequest{Topic: "T", TotalQueues: 4, Brokers: []string{"broker-a", "broker-x"}}
		}, "broker broker-x is not in the cluster"},
		{"unknown broker remap", true, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			created(4, "broker-a")(t, fc, c, o)
			return admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-x"}}
		}, "broker broker-x is not in the cluster"},
		{"unknown cluster", false, func(*testing.T, *admintest.Cluster, *admin.Client, statictopic.Options) admin.StaticTopicRequest {
			return admin.StaticTopicRequest{Topic: "T", TotalQueues: 4, Clusters: []string{"Nope"}}
		}, "Make sure the specified clusterName exists"},
		{"no brokers", false, func(*testing.T, *admintest.Cluster, *admin.Client, statictopic.Options) admin.StaticTopicRequest {
			return admin.StaticTopicRequest{Topic: "T", TotalQueues: 4, Brokers: []string{" "}}
		}, "find none brokers"},
		{"normal topic", false, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			fc.Lock(func() { fc.Brokers[0].Topics["T"] = protocol.NewTopicConfig("T") })
			return admin.StaticTopicRequest{Topic: "T", TotalQueues: 4, Brokers: []string{"broker-a"}}
		}, "not a static topic"},
		{"remap missing topic", true, func(*testing.T, *admintest.Cluster, *admin.Client, statictopic.Options) admin.StaticTopicRequest {
			return admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-a"}}
		}, "no topic route"},
		{"physical queue mapped twice", true, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			created(4, "broker-a")(t, fc, c, o)
			fc.Lock(func() {
				for _, items := range fc.Brokers[0].Mapping["T"].HostedQueues {
					items[0].QueueID = 0
				}
			})
			return admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-b"}}
		}, "share the physical queue"},
		{"stale epoch file", true, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			plan := dryRemap(t, fc, c, o)
			created(6, "broker-a")(t, fc, c, o) // the cluster moves on
			return admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-b"}, File: plan}
		}, "stale epoch"},
		{"file with a physical queue mapped twice", true, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			plan := dryRemap(t, fc, c, o)
			for _, items := range plan.BrokerConfigMap["broker-b"].MappingDetail.HostedQueues {
				items[len(items)-1].QueueID = 0
			}
			return admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-b"}, File: plan}
		}, "share the physical queue"},
		{"file for another topic", true, func(t *testing.T, fc *admintest.Cluster, c *admin.Client, o statictopic.Options) admin.StaticTopicRequest {
			plan := dryRemap(t, fc, c, o)
			plan.Topic = "U"
			return admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-b"}, File: plan}
		}, "is for topic U"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc, c, opt := staticFixture(t)
			req := tc.setup(t, fc, c, opt)
			req.Options = opt
			before := brokerState(fc, "T")
			n := len(staticCalls(fc, code.UpdateAndCreateStaticTopic))
			var err error
			if tc.remap {
				_, err = c.RemapStaticTopic(ctx, req)
			} else {
				_, err = c.UpdateStaticTopic(ctx, req)
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
			if got := staticCalls(fc, code.UpdateAndCreateStaticTopic); len(got) != n {
				t.Fatalf("writes after the refusal: %v", got[n:])
			}
			if after := brokerState(fc, "T"); !reflect.DeepEqual(after, before) {
				t.Fatal("state changed")
			}
		})
	}
}

// failNth makes the n-th request of code reqCode (counting from now) fail.
func failNth(fc *admintest.Cluster, reqCode int32, n int) {
	seen := 0
	fc.Lock(func() {
		fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
			if req.Code != reqCode {
				return nil, false
			}
			seen++
			if seen == n {
				return remoting.NewResponse(req, code.SystemError, "injected failure"), true
			}
			return nil, false
		}
	})
}

// TestStaticResume: whatever request of a remap (or a create) fails, running
// the same command again finishes the change: one leader per logic queue,
// every broker at one epoch, every logic offset decided.
func TestStaticResume(t *testing.T) {
	ctx := context.Background()
	maxOf := func(b string, q int) int64 { return int64(100 + q) }
	for _, tc := range []struct {
		name    string
		remap   bool
		reqCode int32
		calls   int // how many requests of reqCode one clean run sends
	}{
		{"create 513", false, code.UpdateAndCreateStaticTopic, 3},
		{"remap 513", true, code.UpdateAndCreateStaticTopic, 6},
		{"remap 202", true, code.GetTopicStatsInfo, 2},
	} {
		for k := 1; k <= tc.calls; k++ {
			t.Run(fmt.Sprintf("%s #%d", tc.name, k), func(t *testing.T) {
				fc, c, opt := staticFixture(t)
				create := admin.StaticTopicRequest{Topic: "T", TotalQueues: 8, Brokers: []string{"broker-a", "broker-b"}, Options: opt}
				remap := admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-c"}, Options: opt}
				req, want := create, map[string]int{"broker-a": 4, "broker-b": 4}
				if tc.remap {
					if _, err := c.UpdateStaticTopic(ctx, create); err != nil {
						t.Fatal(err)
					}
					setMaxOffsets(fc, "T", maxOf)
					req, want = remap, map[string]int{"broker-c": 8}
				}
				failNth(fc, tc.reqCode, k)
				var err error
				if tc.remap {
					_, err = c.RemapStaticTopic(ctx, req)
				} else {
					_, err = c.UpdateStaticTopic(ctx, req)
				}
				if err == nil || !strings.Contains(err.Error(), "injected failure") || !strings.Contains(err.Error(), "run the same command again") {
					t.Fatalf("first run: %v", err)
				}
				fc.Lock(func() { fc.Override = nil })
				var res *admin.StaticTopicResult
				if tc.remap {
					res, err = c.RemapStaticTopic(ctx, req)
				} else {
					res, err = c.UpdateStaticTopic(ctx, req)
				}
				if err != nil {
					t.Fatalf("second run: %v", err)
				}
				st := brokerState(fc, "T")
				if len(st) != 3 {
					t.Fatalf("brokers %v", st.Brokers())
				}
				count := map[string]int{}
				for _, b := range leadersOf(t, st) {
					count[b]++
				}
				if !reflect.DeepEqual(count, want) {
					t.Fatalf("leaders %v (repaired %v, plan %v)", count, res.Repaired != nil, res.Plan != nil)
				}
				for _, b := range st.Brokers() {
					for g, items := range st[b].MappingDetail.HostedQueues {
						for _, it := range items {
							if it.LogicOffset < 0 {
								t.Fatalf("%s: logic queue %d undecided: %+v", b, g, items)
							}
						}
						if tc.remap && len(items) == 2 && items[1].LogicOffset != 10000 {
							t.Fatalf("%s: logic queue %d: %+v", b, g, items)
						}
					}
				}
				if again, _, err := statictopic.Repair("T", st, opt); again != nil || err != nil {
					t.Fatalf("still needs repair: %v", err)
				}
			})
		}
	}
}

// TestStaticDryRunAndFile: a dry run writes nothing; its plan applied
// with -mf does what the command would have; applying it again finds it
// done.
func TestStaticDryRunAndFile(t *testing.T) {
	fc, c, opt := staticFixture(t)
	ctx := context.Background()
	if _, err := c.UpdateStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T", TotalQueues: 4, Clusters: []string{"C"}, Options: opt}); err != nil {
		t.Fatal(err)
	}
	before := brokerState(fc, "T")
	n := len(fc.Calls())
	var planned *statictopic.Plan
	dry, err := c.RemapStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-d"}, DryRun: true, Options: opt,
		OnPlan: func(p *statictopic.Plan, cur statictopic.Configs) { planned = p }})
	if err != nil || dry.Applied || planned != dry.Plan {
		t.Fatalf("dry run %+v %v", dry, err)
	}
	for _, cl := range fc.Calls()[n:] {
		if cl.Code != code.GetBrokerClusterInfo && cl.Code != code.GetTopicConfig {
			t.Fatalf("dry run sent %d", cl.Code)
		}
	}
	if !reflect.DeepEqual(brokerState(fc, "T"), before) {
		t.Fatal("dry run changed the state")
	}
	// The plan moves everything to broker-d of cluster D and completes D.
	if !slices.Equal(dry.Plan.BrokerToMapIn, []string{"broker-d"}) || len(dry.Plan.BrokerToMapOut) != 3 {
		t.Fatalf("plan in %v out %v", dry.Plan.BrokerToMapIn, dry.Plan.BrokerToMapOut)
	}
	// Through the file form, as mqadmin -mf reads it.
	p, err := statictopic.DecodePlan(protocol.MustMarshal(dry.Plan))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.RemapStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-d"}, File: p, Options: opt})
	if err != nil || !res.Applied {
		t.Fatalf("apply file: %+v %v", res, err)
	}
	st := brokerState(fc, "T")
	if got := slices.Compact(slices.Sorted(maps.Values(leadersOf(t, st)))); !slices.Equal(got, []string{"broker-d"}) {
		t.Fatalf("leaders %v", got)
	}
	res, err = c.RemapStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T", Brokers: []string{"broker-d"}, File: p, Options: opt})
	if err != nil || !res.NothingToDo || res.Applied {
		t.Fatalf("apply again: %+v %v", res, err)
	}
	// A create plan is not a remap plan.
	cp, err := c.UpdateStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T2", TotalQueues: 2, Brokers: []string{"broker-a"}, DryRun: true, Options: opt})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RemapStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T2", Brokers: []string{"broker-a"}, File: cp.Plan, Options: opt}); err == nil || !strings.Contains(err.Error(), "CREATE_OR_UPDATE plan") {
		t.Fatalf("wrong type: %v", err)
	}
	if _, err := c.RemapStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T2", Brokers: []string{"broker-a"}, Options: opt}); err == nil {
		t.Fatal("the dry run created T2")
	}
	if res, err := c.UpdateStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T2", TotalQueues: 2, Brokers: []string{"broker-a"}, File: cp.Plan, Options: opt}); err != nil || !res.Applied {
		t.Fatalf("create from file: %+v %v", res, err)
	}
	if _, err := c.UpdateStaticTopic(ctx, admin.StaticTopicRequest{Topic: "T2", TotalQueues: 3, Brokers: []string{"broker-a"}, File: cp.Plan, Options: opt}); err == nil || !errors.Is(err, admin.ErrStaleEpoch) && !strings.Contains(err.Error(), "-qn says 3") {
		t.Fatalf("-qn mismatch: %v", err)
	}
}
