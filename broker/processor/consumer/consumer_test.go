package consumer

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/config/configtest"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

type pullOffsets map[string]int64

func (p pullOffsets) PullOffset(group, topic string, qid int32) (int64, bool) {
	v, ok := p[group+"/"+topic+"/"+strconv.Itoa(int(qid))]
	return v, ok
}

// resets is a table of pending server-side resets, group/topic/queueId.
type resets map[string]int64

func (r resets) Pending(group, topic string, qid int32) (int64, bool) {
	v, ok := r[group+"/"+topic+"/"+strconv.Itoa(int(qid))]
	return v, ok
}

type fixture struct {
	cfg       atomic.Pointer[config.Config]
	resets    resets
	clk       *testutil.FakeClock
	store     *storetest.Store
	topics    *topic.Manager
	subs      *subscription.Manager
	consumers *client.ConsumerManager
	pulled    pullOffsets
	p         *Processor
}

func newFixture(t *testing.T, mutate ...func(*config.Config)) *fixture {
	t.Helper()
	c := configtest.New(t, mutate...)
	f := &fixture{clk: testutil.NewFakeClock(time.UnixMilli(1_700_000_000_000)), consumers: client.NewConsumerManager(client.ManagerOptions{}), pulled: pullOffsets{}, resets: resets{}}
	f.store = storetest.New(storetest.WithClock(f.clk.Now))
	f.cfg.Store(c)
	var err error
	if f.topics, err = topic.New(topic.Options{Config: f.cfg.Load}); err != nil {
		t.Fatal(err)
	}
	if f.subs, err = subscription.New(subscription.Options{Config: f.cfg.Load}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"T", "T2", "%RETRY%g"} {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
		if _, _, err := f.topics.CreateIfAbsent(tc); err != nil {
			t.Fatal(err)
		}
	}
	f.p, err = New(Deps{Config: f.cfg.Load, Store: f.store, Topics: f.topics, Subscriptions: f.subs, Consumers: f.consumers, PullOffsets: f.pulled, PendingResets: f.resets})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) call(t *testing.T, c int32, kv ...string) *remoting.Command {
	t.Helper()
	req := remoting.NewRequest(c, remotingtest.SetFields(map[string]string{}, kv...), nil)
	resp, err := f.p.Handlers()[c](context.Background(), nil, req)
	if err != nil {
		return remoting.ResponseFromError(req, err)
	}
	return resp
}

func (f *fixture) putAt(tp string, qid int32, ms int64, n int) {
	for range n {
		f.clk.Set(time.UnixMilli(ms))
		f.store.Put(tp, qid, "", []byte("x"))
	}
}

func TestQueryConsumerOffset(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(f *fixture)
		kv       []string
		wantCode int32
		want     string
	}{
		{"committed", func(f *fixture) { f.store.CommitOffset("g", "T", 0, 7) }, nil, code.Success, "7"},
		{"committed zero", func(f *fixture) { f.store.CommitOffset("g", "T", 0, 0) }, nil, code.Success, "0"},
		{"not found, complete queue", func(f *fixture) { f.putAt("T", 0, 1, 3) }, nil, code.Success, "0"},
		{"not found, setZeroIfNotFound=false", func(f *fixture) { f.putAt("T", 0, 1, 3) }, []string{"setZeroIfNotFound", "false"}, code.QueryNotFound, ""},
		{"not found, empty queue", func(*fixture) {}, nil, code.QueryNotFound, ""},
		{"not found, history removed", func(f *fixture) { f.putAt("T", 0, 1, 3); f.store.RemoveBefore("T", 0, 1) }, nil, code.QueryNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			tt.setup(f)
			kv := append([]string{"consumerGroup", "g", "topic", "T", "queueId", "0"}, tt.kv...)
			resp := f.call(t, code.QueryConsumerOffset, kv...)
			if resp.Code != tt.wantCode || resp.Ext("offset") != tt.want {
				t.Fatalf("code %d offset %q (%s), want %d %q", resp.Code, resp.Ext("offset"), resp.Remark, tt.wantCode, tt.want)
			}
		})
	}
	f := newFixture(t)
	if resp := f.call(t, code.QueryConsumerOffset, "consumerGroup", "g", "topic", "T"); resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "<queueId>") {
		t.Fatalf("missing queueId: %d %s", resp.Code, resp.Remark)
	}
}

func TestUpdateConsumerOffset(t *testing.T) {
	tests := []struct {
		name     string
		auto     bool
		kv       []string
		wantCode int32
		remark   string
	}{
		{"ok", true, []string{"consumerGroup", "g", "topic", "T", "queueId", "1", "commitOffset", "9"}, code.Success, ""},
		{"unknown group, auto-create off", false, []string{"consumerGroup", "gx", "topic", "T", "queueId", "1", "commitOffset", "9"}, code.SubscriptionGroupNotExist, "Group gx not exist"},
		{"unknown group, auto-create on", true, []string{"consumerGroup", "gx", "topic", "T", "queueId", "1", "commitOffset", "9"}, code.Success, ""},
		{"unknown topic", true, []string{"consumerGroup", "g", "topic", "NOPE", "queueId", "1", "commitOffset", "9"}, code.TopicNotExist, "Topic NOPE not exist"},
		{"missing queueId", true, []string{"consumerGroup", "g", "topic", "T", "commitOffset", "9"}, code.InvalidParameter, "<queueId>"},
		{"missing commitOffset", true, []string{"consumerGroup", "g", "topic", "T", "queueId", "1"}, code.InvalidParameter, "<commitOffset>"},
		{"missing group", true, []string{"topic", "T", "queueId", "1", "commitOffset", "9"}, code.InvalidParameter, "<consumerGroup>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *config.Config) { c.AutoCreateSubscriptionGroup = tt.auto })
			resp := f.call(t, code.UpdateConsumerOffset, tt.kv...)
			if resp.Code != tt.wantCode || !strings.Contains(resp.Remark, tt.remark) {
				t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
			}
			if tt.wantCode == code.Success {
				if off, ok := f.store.QueryOffset(tt.kv[1], "T", 1); !ok || off != 9 {
					t.Fatalf("stored %d %v", off, ok)
				}
			}
		})
	}
}

// A commit of a queue whose offset was reset on the server side, before a
// pull took the reset, carries the client's offset from before the reset:
// it is answered SUCCESS and dropped, as Java's hasOffsetReset check does.
// The other queues and, once the reset is taken, the queue commit again.
func TestUpdateConsumerOffsetWhileResetPending(t *testing.T) {
	f := newFixture(t)
	f.store.CommitOffset("g", "T", 0, 0)
	f.resets["g/T/0"] = 0
	commit := func(qid, off string) {
		t.Helper()
		if resp := f.call(t, code.UpdateConsumerOffset, "consumerGroup", "g", "topic", "T", "queueId", qid, "commitOffset", off); resp.Code != code.Success {
			t.Fatalf("commit %s=%s: code %d %s", qid, off, resp.Code, resp.Remark)
		}
	}
	commit("0", "8")
	commit("1", "8")
	if off, _ := f.store.QueryOffset("g", "T", 0); off != 0 {
		t.Fatalf("queue 0 committed %d while its reset to 0 is pending", off)
	}
	if off, _ := f.store.QueryOffset("g", "T", 1); off != 8 {
		t.Fatalf("queue 1 committed %d, want 8", off)
	}
	delete(f.resets, "g/T/0") // a pull took it
	commit("0", "3")
	if off, _ := f.store.QueryOffset("g", "T", 0); off != 3 {
		t.Fatalf("queue 0 committed %d after the reset was taken, want 3", off)
	}
}

// Commits of one queue apply in the order the server read them: an older
// commit that a worker runs after a newer one is dropped (answered
// SUCCESS), so the queue keeps the newer offset. Other queues, and commits
// not read by a server (Arrival 0), are not held back.
func TestUpdateConsumerOffsetKeepsArrivalOrder(t *testing.T) {
	f := newFixture(t)
	commit := func(qid string, off int64, arrival uint64) {
		t.Helper()
		req := remoting.NewRequest(code.UpdateConsumerOffset, map[string]string{
			"consumerGroup": "g", "topic": "T", "queueId": qid, "commitOffset": strconv.FormatInt(off, 10)}, nil)
		req.Arrival = arrival
		resp, err := f.p.Handlers()[code.UpdateConsumerOffset](context.Background(), nil, req)
		if err != nil || resp.Code != code.Success {
			t.Fatalf("commit %s=%d (arrival %d): %v %+v", qid, off, arrival, err, resp)
		}
	}
	want := func(qid int32, off int64) {
		t.Helper()
		if got, _ := f.store.QueryOffset("g", "T", qid); got != off {
			t.Fatalf("queue %d committed %d, want %d", qid, got, off)
		}
	}
	commit("0", 0, 11) // the reset's offset, read second, runs first
	commit("0", 8, 10) // the periodic persist before it, read first, runs late
	want(0, 0)
	commit("1", 8, 9) // another queue: its own order
	want(1, 8)
	commit("0", 5, 12)
	want(0, 5)
	commit("0", 3, 0) // not from a server: applied
	want(0, 3)
}

func TestStoreOffsets(t *testing.T) {
	f := newFixture(t)
	f.putAt("T", 0, 1000, 2) // offsets 0,1 at 1000
	f.putAt("T", 0, 2000, 2) // offsets 2,3 at 2000
	f.putAt("T", 0, 3000, 1) // offset 4 at 3000
	f.store.RemoveBefore("T", 0, 1)
	q := []string{"topic", "T", "queueId", "0"}
	check := func(c int32, key, want string, kv ...string) {
		t.Helper()
		resp := f.call(t, c, append(append([]string{}, q...), kv...)...)
		if resp.Code != code.Success || resp.Ext(key) != want {
			t.Fatalf("code %d: %s=%q (%s), want %q", c, key, resp.Ext(key), resp.Remark, want)
		}
	}
	check(code.GetMaxOffset, "offset", "5")
	check(code.GetMinOffset, "offset", "1")
	check(code.GetEarliestMsgStoreTime, "timestamp", "1000")
	check(code.SearchOffsetByTimestamp, "offset", "2", "timestamp", "2000")
	check(code.SearchOffsetByTimestamp, "offset", "2", "timestamp", "2000", "boundaryType", "LOWER")
	check(code.SearchOffsetByTimestamp, "offset", "3", "timestamp", "2000", "boundaryType", "UPPER")
	check(code.SearchOffsetByTimestamp, "offset", "3", "timestamp", "2000", "boundaryType", "upper")
	check(code.SearchOffsetByTimestamp, "offset", "2", "timestamp", "2000", "boundaryType", "sideways")
	check(code.SearchOffsetByTimestamp, "offset", "5", "timestamp", "9000")
	check(code.SearchOffsetByTimestamp, "offset", "1", "timestamp", "1", "boundaryType", "UPPER")

	q = []string{"topic", "T", "queueId", "1"} // empty queue
	check(code.GetMaxOffset, "offset", "0")
	check(code.GetMinOffset, "offset", "0")
	check(code.GetEarliestMsgStoreTime, "timestamp", "-1")

	for _, c := range []int32{code.GetMaxOffset, code.GetMinOffset, code.GetEarliestMsgStoreTime, code.SearchOffsetByTimestamp} {
		if resp := f.call(t, c, "topic", "T"); resp.Code != code.InvalidParameter {
			t.Errorf("code %d without queueId: %d", c, resp.Code)
		}
	}
	if resp := f.call(t, code.SearchOffsetByTimestamp, "topic", "T", "queueId", "0"); resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "<timestamp>") {
		t.Errorf("search without timestamp: %d %s", resp.Code, resp.Remark)
	}
}

func TestConsumeStats(t *testing.T) {
	f := newFixture(t)
	f.putAt("T", 0, 1000, 3)
	f.putAt("T", 0, 2000, 2) // T-0: offsets 0..4, 3 at 2000
	f.putAt("T2", 1, 500, 1)
	f.store.CommitOffset("g", "T", 0, 4)
	f.store.CommitOffset("g", "T2", 1, 0)
	f.store.CommitOffset("g", "%RETRY%g", 0, 0)
	f.pulled["g/T/0"] = 5
	f.pulled["g/T/1"] = 3

	decode := func(resp *remoting.Command) map[protocol.MessageQueue]OffsetWrapper {
		t.Helper()
		if resp.Code != code.Success {
			t.Fatalf("208: %d %s", resp.Code, resp.Remark)
		}
		const head = `{"consumeTps":0,"offsetTable":{`
		if b := string(resp.Body); !strings.HasPrefix(b, head) || (b != head+"}}" && !strings.HasPrefix(b[len(head):], `{"brokerName":"broker-a","queueId":`)) {
			t.Fatalf("body not Java-keyed: %s", resp.Body)
		}
		var cs ConsumeStats
		if err := protocol.UnmarshalMQKeyed(resp.Body, &cs); err != nil {
			t.Fatal(err)
		}
		return cs.OffsetTable
	}

	// No topic, no live subscription: every topic with offsets.
	table := decode(f.call(t, code.GetConsumeStats, "consumerGroup", "g"))
	if len(table) != 6 {
		t.Fatalf("entries %d: %v", len(table), table)
	}
	got := table[protocol.MessageQueue{BrokerName: "broker-a", QueueID: 0, Topic: "T"}]
	if got != (OffsetWrapper{BrokerOffset: 5, ConsumerOffset: 4, LastTimestamp: 2000, PullOffset: 5}) {
		t.Fatalf("T-0 %+v", got)
	}
	got = table[protocol.MessageQueue{BrokerName: "broker-a", QueueID: 1, Topic: "T"}]
	if got != (OffsetWrapper{BrokerOffset: 0, ConsumerOffset: 0, LastTimestamp: 0, PullOffset: 3}) {
		t.Fatalf("T-1 %+v", got)
	}
	got = table[protocol.MessageQueue{BrokerName: "broker-a", QueueID: 1, Topic: "T2"}]
	if got != (OffsetWrapper{BrokerOffset: 1, ConsumerOffset: 0, LastTimestamp: 0, PullOffset: 0}) {
		t.Fatalf("T2-1 %+v", got)
	}

	// A live subscription to T only: T2 goes, %RETRY%g stays.
	sd, _ := client.BuildSubscription("T", "*", "TAG")
	f.consumers.Register("g", client.ChannelInfo{ClientID: "c"}, client.ConsumePassively, client.Clustering, "", []client.SubscriptionData{sd}, true)
	table = decode(f.call(t, code.GetConsumeStats, "consumerGroup", "g"))
	for mq := range table {
		if mq.Topic == "T2" {
			t.Fatalf("unsubscribed topic listed: %v", table)
		}
	}
	if len(table) != 4 {
		t.Fatalf("entries %d", len(table))
	}
	// Explicit topic: still filtered by subscription (Java compatibility).
	if table = decode(f.call(t, code.GetConsumeStats, "consumerGroup", "g", "topic", "T2")); len(table) != 0 {
		t.Fatalf("topic T2 with live subscription to T: %v", table)
	}
	// topicList: no subscription check; unknown topics skipped.
	table = decode(f.call(t, code.GetConsumeStats, "consumerGroup", "g", "topicList", "T2;NOPE"))
	if len(table) != 2 {
		t.Fatalf("topicList: %v", table)
	}
	if resp := f.call(t, code.GetConsumeStats); resp.Code != code.InvalidParameter {
		t.Fatalf("missing group: %d", resp.Code)
	}
}
