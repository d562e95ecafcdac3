package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func mqOf(broker, topic string, q int) protocol.MessageQueue {
	return protocol.MessageQueue{BrokerName: broker, QueueID: q, Topic: topic}
}

// consumersFixture: fixture plus topic T (2 queues) on broker-a and
// broker-b, %RETRY%g on broker-a, and g's offsets on both.
func consumersFixture(t *testing.T) (*admintest.Cluster, *admintest.Consumers, *admin.Client) {
	t.Helper()
	fc, c := fixture(t)
	cs := admintest.AttachConsumers(fc)
	fc.Lock(func() {
		for _, b := range []*admintest.Broker{fc.Brokers[0], fc.Brokers[2]} {
			b.Topics["T"] = protocol.TopicConfig{TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}
		}
		fc.Brokers[0].Topics["%RETRY%g"] = protocol.TopicConfig{TopicName: "%RETRY%g", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
		cs.SetOffset(ba0, "g", mqOf("broker-a", "T", 0), admintest.OffsetWrapper{BrokerOffset: 10, ConsumerOffset: 4, PullOffset: 6, LastTimestamp: 1700000000000})
		cs.SetOffset(ba0, "g", mqOf("broker-a", "T", 1), admintest.OffsetWrapper{BrokerOffset: 3, ConsumerOffset: 3, PullOffset: 3})
		cs.SetOffset(bb0, "g", mqOf("broker-b", "T", 0), admintest.OffsetWrapper{BrokerOffset: 7})
		cs.ConsumeTps[ba0] = map[string]float64{"g": 1.5}
		cs.ConsumeTps[bb0] = map[string]float64{"g": 2}
	})
	return fc, cs, c
}

func TestExamineConsumeStats(t *testing.T) {
	fc, cs, c := consumersFixture(t)
	ctx := context.Background()
	st, err := c.ExamineConsumeStats(ctx, "", "g", "")
	if err != nil {
		t.Fatal(err)
	}
	// %RETRY%g lives on broker-a only: its route has one broker.
	want := protocol.MQMap[admin.OffsetWrapper]{
		mqOf("broker-a", "T", 0): {BrokerOffset: 10, ConsumerOffset: 4, PullOffset: 6, LastTimestamp: 1700000000000},
		mqOf("broker-a", "T", 1): {BrokerOffset: 3, ConsumerOffset: 3, PullOffset: 3},
	}
	if !reflect.DeepEqual(st.OffsetTable, want) || st.ConsumeTps != 1.5 || st.TotalDiff() != 6 {
		t.Fatalf("stats %+v", st)
	}
	// docs/protocol.md §3.6: 105 %RETRY%g, 208 per broker of it, then 105 and
	// 351 (per broker) for every topic found.
	if calls, want := fc.CallCodes(), []string{ns1 + ":105", ba0 + ":208", ns1 + ":105", ba0 + ":351", bb0 + ":351"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls %v", calls)
	}

	// Without %RETRY%h the topic's route is used: both brokers.
	fc.Lock(func() {
		cs.SetOffset(ba0, "h", mqOf("broker-a", "T", 0), admintest.OffsetWrapper{BrokerOffset: 10, ConsumerOffset: 9})
		cs.SetOffset(bb0, "h", mqOf("broker-b", "T", 1), admintest.OffsetWrapper{BrokerOffset: 5, ConsumerOffset: 1})
	})
	st, err = c.ExamineConsumeStats(ctx, "", "h", "T")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.OffsetTable) != 2 || st.TotalDiff() != 5 {
		t.Fatalf("h stats %+v", st)
	}
	// With a cluster no per-topic lookups follow.
	n := len(fc.Calls())
	if _, err := c.ExamineConsumeStats(ctx, "C", "h", "T"); err != nil {
		t.Fatal(err)
	}
	if calls, want := fc.CallCodes()[n:], []string{ns1 + ":105", ns1 + ":105", ba0 + ":208", bb0 + ":208"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("cluster calls %v", calls)
	}

	// Nothing at all: not online, or broadcasting.
	_, err = c.ExamineConsumeStats(ctx, "", "nobody", "T")
	var ce *admin.ClientError
	if !errors.As(err, &ce) || ce.Code != code.ConsumerNotOnline || !strings.Contains(ce.Remark, "maybe the consumer not online") {
		t.Fatalf("not online: %v", err)
	}
	fc.Lock(func() {
		fc.Brokers[0].Topics["%RETRY%bc"] = protocol.TopicConfig{TopicName: "%RETRY%bc", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
		cs.Connections["bc"] = `{"connectionSet":[{"clientAddr":"1.2.3.4:5","clientId":"1.2.3.4@x","language":"JAVA","version":513}],"messageModel":"BROADCASTING","subscriptionTable":{}}`
	})
	if _, err := c.ExamineConsumeStats(ctx, "", "bc", ""); !admin.IsClientCode(err, code.BroadcastConsumption) {
		t.Fatalf("broadcast: %v", err)
	}
	if _, err := c.ExamineConsumeStats(ctx, "", "nobody", ""); !admin.IsCode(err, code.TopicNotExist) {
		t.Fatalf("no route: %v", err)
	}
}

func TestExamineConsumeStatsStatic(t *testing.T) {
	fc, cs, c := consumersFixture(t)
	fc.Lock(func() {
		a, b := fc.Brokers[0], fc.Brokers[2]
		items := []protocol.LogicQueueMappingItem{
			{Bname: "broker-a", QueueID: 0, LogicOffset: 0, EndOffset: -1},
			{Bname: "broker-b", QueueID: 0, Gen: 1, LogicOffset: 100, EndOffset: -1},
		}
		for _, br := range []*admintest.Broker{a, b} {
			br.Topics["S"] = protocol.TopicConfig{TopicName: "S", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
			br.Mapping["S"] = &protocol.TopicQueueMappingDetail{Bname: br.Name, Epoch: 2, Scope: protocol.MappingScopeGlobal, Topic: "S", TotalQueues: 1,
				HostedQueues: map[int][]protocol.LogicQueueMappingItem{0: items}}
		}
		cs.SetOffset(ba0, "g", mqOf("broker-a", "S", 0), admintest.OffsetWrapper{BrokerOffset: 100, ConsumerOffset: 100})
		// The fake's routes carry no mapping info: answer S's route here.
		inner := fc.Override
		fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
			if req.Code != code.GetRouteInfoByTopic || req.Ext("topic") != "S" {
				return inner(addr, req)
			}
			ci := fc.ClusterInfo()
			r := protocol.TopicRouteData{FilterServerTable: map[string][]string{}, TopicQueueMappingByBroker: map[string]protocol.TopicQueueMappingInfo{}}
			for _, name := range []string{"broker-a", "broker-b"} {
				r.QueueDatas = append(r.QueueDatas, protocol.QueueData{BrokerName: name, Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1})
				r.BrokerDatas = append(r.BrokerDatas, ci.BrokerAddrTable[name])
				r.TopicQueueMappingByBroker[name] = protocol.TopicQueueMappingInfo{Bname: name, Epoch: 2, Scope: protocol.MappingScopeGlobal, Topic: "S", TotalQueues: 1}
			}
			resp := remoting.NewResponse(req, code.Success, "")
			resp.Body = protocol.MustMarshal(r)
			return resp, true
		}
	})
	st, err := c.ExamineConsumeStats(context.Background(), "", "g", "")
	if err != nil {
		t.Fatal(err)
	}
	// The logic queue: broker offset from the newest item with a logic
	// offset that has stats (broker-a's 100 at logic 0 → 100), the
	// physical consumer offset as Java.
	logic := st.OffsetTable[mqOf("__syslo__global__", "S", 0)]
	if logic.BrokerOffset != 100 || logic.ConsumerOffset != 100 {
		t.Fatalf("logic queue %+v in %+v", logic, st.OffsetTable)
	}
	// A static topic's physical queues are not listed.
	if _, ok := st.OffsetTable[mqOf("broker-a", "S", 0)]; ok {
		t.Fatalf("physical queue listed: %+v", st.OffsetTable)
	}
}

func TestConnections(t *testing.T) {
	fc, cs, c := consumersFixture(t)
	ctx := context.Background()
	fc.Lock(func() {
		cs.Connections["g"] = `{"connectionSet":[{"clientAddr":"10.0.0.9:53211","clientId":"10.0.0.9@4711","language":"JAVA","version":513},` +
			`{"clientAddr":"10.0.0.8:1","clientId":"10.0.0.8@1","language":"GO","version":317}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
			`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[],` +
			`"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"T"}}}`
		cs.Connections["empty"] = `{"connectionSet":[],"subscriptionTable":{}}`
		fc.Brokers[0].Topics["%RETRY%empty"] = protocol.TopicConfig{TopicName: "%RETRY%empty", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
		cs.Producers["pg"] = `{"connectionSet":[{"clientAddr":"10.0.0.9:1","clientId":"10.0.0.9@p","language":"JAVA","version":513}]}`
	})
	cc, err := c.ExamineConsumerConnection(ctx, "g", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.ConnectionSet) != 2 || cc.MinVersion() != 317 || cc.SubscriptionTable["T"].SubString != "*" || cc.MessageModel != "CLUSTERING" {
		t.Fatalf("connection %+v", cc)
	}
	if calls := fc.CallCodes(); !reflect.DeepEqual(calls, []string{ns1 + ":105", ba0 + ":203"}) {
		t.Fatalf("calls %v", calls)
	}
	if _, err := c.ExamineConsumerConnection(ctx, "g", bb0); err != nil {
		t.Fatalf("with -b: %v", err)
	}
	if _, err := c.ExamineConsumerConnection(ctx, "empty", ""); !admin.IsClientCode(err, code.ConsumerNotOnline) {
		t.Fatalf("empty: %v", err)
	}
	if _, err := c.ExamineConsumerConnection(ctx, "x", ba0); !admin.IsCode(err, code.ConsumerNotOnline) {
		t.Fatalf("unknown: %v", err)
	}
	pc, err := c.ExamineProducerConnection(ctx, "pg", "T")
	if err != nil || len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].ClientID != "10.0.0.9@p" {
		t.Fatalf("producer %+v %v", pc, err)
	}
	if _, err := c.ExamineProducerConnection(ctx, "nope", "T"); !admin.IsCode(err, code.SystemError) {
		t.Fatalf("unknown producer group: %v", err)
	}
}

// clientGoRunningInfo is a client-go answer to 307 (its own encoding).
const clientGoRunningInfo = `{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","PROP_CONSUMEORDERLY":"false","PROP_CONSUMER_START_TIMESTAMP":"1700000000000","PROP_CLIENT_VERSION":"v2.1.2"},` +
	`"statusTable":{"T":{"pullRT":1.5,"pullTPS":2,"consumeRT":0.25,"consumeOKTPS":3,"consumeFailedTPS":0,"consumeFailedMsgs":0}},` +
	`"subscriptionSet":[{"classFilterMode":false,"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],` +
	`"mqTable":{{"topic":"T","brokerName":"broker-a","queueId":0}:{"commitOffset":4,"cachedMsgMinOffset":0,"cachedMsgMaxOffset":0,"cachedMsgCount":0,"cachedMsgSizeInMiB":0,` +
	`"transactionMsgMinOffset":0,"transactionMsgMaxOffset":0,"transactionMsgCount":0,"locked":false,"tryUnlockTimes":0,"lastLockTimestamp":0,"dropped":false,` +
	`"lastPullTimestamp":1700000000000,"lastConsumeTimestamp":1700000000000}}, "jstack":"" }`

func TestGetConsumerRunningInfo(t *testing.T) {
	fc, cs, c := consumersFixture(t)
	fc.Lock(func() {
		cs.RunningInfo["10.0.0.9@4711"] = clientGoRunningInfo
		cs.RunningInfo["java@1"] = `{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","N":5},"mqTable":{},"subscriptionSet":[],"statusTable":{}}`
	})
	info, err := c.GetConsumerRunningInfo(context.Background(), "g", "10.0.0.9@4711", true)
	if err != nil {
		t.Fatal(err)
	}
	pq := info.MqTable[mqOf("broker-a", "T", 0)]
	if info.Properties["PROP_CONSUME_TYPE"] != "CONSUME_PASSIVELY" || pq.CommitOffset != 4 || pq.LastPullTimestamp != 1700000000000 ||
		info.StatusTable["T"].PullRT != 1.5 || len(info.SubscriptionSet) != 1 || info.Jstack == nil || *info.Jstack != "" {
		t.Fatalf("info %+v", info)
	}
	calls := fc.Calls()
	if last := calls[len(calls)-1]; last.Code != code.GetConsumerRunningInfo || last.Addr != ba0 || last.Ext["jstackEnable"] != "true" || last.Ext["clientId"] != "10.0.0.9@4711" {
		t.Fatalf("request %+v", last)
	}
	info, err = c.GetConsumerRunningInfo(context.Background(), "g", "java@1", false)
	if err != nil || info.Properties["N"] != "5" || info.Jstack != nil {
		t.Fatalf("java info %+v %v", info, err)
	}
	if _, err := c.GetConsumerRunningInfo(context.Background(), "g", "nobody", false); !admin.IsCode(err, code.SystemError) {
		t.Fatalf("offline: %v", err)
	}
}

func TestResetOffset(t *testing.T) {
	fc, cs, c := consumersFixture(t)
	ctx := context.Background()
	tables, err := c.ResetOffsetByTimestamp(ctx, "", "T", "g", -1, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 2 || tables[0][mqOf("broker-a", "T", 0)] != 10 || tables[1][mqOf("broker-b", "T", 0)] != 7 {
		t.Fatalf("tables %+v", tables)
	}
	calls := fc.Calls()
	if last := calls[len(calls)-1]; last.Code != code.InvokeBrokerToResetOffset || last.Ext["isForce"] != "true" || last.Ext["offset"] != "-1" || last.Ext["timestamp"] != "-1" {
		t.Fatalf("request %+v", last)
	}
	// One queue to an offset: 15, then 222 for that queue.
	n := len(fc.Calls())
	table, err := c.ResetOffsetByQueueID(ctx, ba0, "g", "T", 1, 2)
	if err != nil || len(table) != 1 || table[mqOf("broker-a", "T", 1)] != 2 {
		t.Fatalf("one queue %v %v", table, err)
	}
	if codes := fc.CallCodes()[n:]; !reflect.DeepEqual(codes, []string{ba0 + ":15", ba0 + ":222"}) {
		t.Fatalf("calls %v", codes)
	}

	// A broker that only resets through online clients, none online.
	fc.Lock(func() { cs.NotOnline["g"] = true })
	if _, err := c.ResetOffsetByTimestamp(ctx, "", "T", "g", 0, true); !admin.IsCode(err, code.ConsumerNotOnline) {
		t.Fatalf("not online: %v", err)
	}
	stats, err := c.ResetOffsetByTimestampOld(ctx, "", "g", "T", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	// Per broker, g's stats of T (the resets above left offsets on every
	// queue); every offset moves back to 0 (timestamp 0), not forced.
	want := []admin.RollbackStats{
		{BrokerName: "broker-a", QueueID: 0, BrokerOffset: 10, ConsumerOffset: 10, TimestampOffset: 0, RollbackOffset: 0},
		{BrokerName: "broker-a", QueueID: 1, BrokerOffset: 3, ConsumerOffset: 2, TimestampOffset: 0, RollbackOffset: 0},
		{BrokerName: "broker-b", QueueID: 0, BrokerOffset: 7, ConsumerOffset: 7, TimestampOffset: 0, RollbackOffset: 0},
		{BrokerName: "broker-b", QueueID: 1, BrokerOffset: 0, ConsumerOffset: 0, TimestampOffset: 0, RollbackOffset: 0},
	}
	if !reflect.DeepEqual(stats, want) {
		t.Fatalf("rollback %+v", stats)
	}
}

func TestConsumeStatusAndTopicsByConsumer(t *testing.T) {
	fc, cs, c := consumersFixture(t)
	ctx := context.Background()
	fc.Lock(func() { cs.Status["c1"] = protocol.MQMap[int64]{mqOf("broker-a", "T", 0): 4} })
	st, err := c.GetConsumeStatus(ctx, "T", "g", "")
	if err != nil || st["c1"][mqOf("broker-a", "T", 0)] != 4 {
		t.Fatalf("status %v %v", st, err)
	}
	tl, err := c.QueryTopicsByConsumer(ctx, ba0, "g")
	if err != nil || !reflect.DeepEqual(tl.TopicList, []string{"T"}) || tl.BrokerAddr != ba0 {
		t.Fatalf("topics %+v %v", tl, err)
	}
}

func TestSubscriptionGroups(t *testing.T) {
	_, _, c := consumersFixture(t)
	ctx := context.Background()
	g := admin.NewSubscriptionGroupConfig("sg")
	g.RetryMaxTimes = 3
	var err error
	if g.GroupRetryPolicy, err = admin.ParseGroupRetryPolicy(`{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000]}}`); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateSubscriptionGroup(ctx, ba0, g); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetSubscriptionGroup(ctx, ba0, "sg")
	if err != nil || got.RetryMaxTimes != 3 || !reflect.DeepEqual(got.GroupRetryPolicy.CustomizedRetryPolicy.Next, []int64{1000, 5000}) {
		t.Fatalf("got %+v %v", got, err)
	}
	if err := c.DeleteSubscriptionGroup(ctx, ba0, "sg", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSubscriptionGroup(ctx, ba0, "sg"); !admin.IsCode(err, code.SubscriptionGroupNotExist) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestGroupRetryPolicy(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, "GroupRetryPolicy{type=CUSTOMIZED, exponentialRetryPolicy=null, customizedRetryPolicy=null}"},
		{`{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":1000}}`,
			"GroupRetryPolicy{type=EXPONENTIAL, exponentialRetryPolicy=ExponentialRetryPolicy{initial=1000, max=7200000, multiplier=2}, customizedRetryPolicy=null}"},
		{`{"customizedRetryPolicy":{}}`,
			"GroupRetryPolicy{type=CUSTOMIZED, exponentialRetryPolicy=null, customizedRetryPolicy=CustomizedRetryPolicy{next=[1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000, 540000, 600000, 1200000, 1800000, 3600000, 7200000]}}"},
	} {
		p, err := admin.ParseGroupRetryPolicy(tc.in)
		if err != nil || p.String() != tc.want {
			t.Errorf("%s: %q %v", tc.in, p.String(), err)
		}
	}
	for _, bad := range []string{`{"type":"NOPE"}`, `{"customizedRetryPolicy":{"next":"x"}}`, `[`} {
		if _, err := admin.ParseGroupRetryPolicy(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	// The body Java's broker and ours decode.
	b, _ := json.Marshal(admin.NewSubscriptionGroupConfig("x"))
	if !strings.Contains(string(b), `"groupRetryPolicy":{"type":"CUSTOMIZED"}`) || !strings.Contains(string(b), `"consumeBroadcastEnable":true`) {
		t.Fatalf("body %s", b)
	}
}

func TestVersionDesc(t *testing.T) {
	for v, want := range map[int]string{0: "V3_0_0_SNAPSHOT", 15: "V3_0_0_FINAL", 16: "V3_0_1_SNAPSHOT", 28: "V3_0_7_SNAPSHOT",
		62: "V3_1_8_SNAPSHOT", 86: "V3_3_1_SNAPSHOT", 317: "V4_5_2", 479: "V5_3_3", 513: "V5_5_0", 611: "V5_9_9", 612: "HIGHER_VERSION", 9999: "HIGHER_VERSION"} {
		if got := admin.VersionDesc(v); got != want {
			t.Errorf("VersionDesc(%d) = %s, want %s", v, got, want)
		}
	}
}

func TestRetryTopicNames(t *testing.T) {
	if admin.PopRetryTopic("T", "g") != "%RETRY%g_T" {
		t.Fatal(admin.PopRetryTopic("T", "g"))
	}
	for in, want := range map[string]string{"%RETRY%g": "g", "%RETRY%g+T": "g", "%RETRY%a_b": "a_b"} {
		if got := admin.GroupOfRetryTopic(in); got != want {
			t.Errorf("GroupOfRetryTopic(%s) = %s", in, got)
		}
	}
}

// TestRunningInfoOfCppClient: the C++ client's running info (as
// rocketmq-client-cpp writes it: 64-bit numbers as strings, -1 unsigned,
// a queue object as each mqTable key) decodes; a number that is neither
// is still an error.
func TestRunningInfoOfCppClient(t *testing.T) {
	body := `{"mqTable":{{
   "brokerName" : "b",
   "queueId" : 1,
   "topic" : "T"
}:{
   "cachedMsgCount" : 2,
   "cachedMsgMaxOffset" : "7",
   "cachedMsgMinOffset" : "6",
   "commitOffset" : "18446744073709551615",
   "droped" : false,
   "lastConsumeTimestamp" : "1796604052299",
   "lastLockTimestamp" : "0",
   "lastPullTimestamp" : "1796604052293",
   "locked" : true,
   "transactionMsgCount" : 0,
   "transactionMsgMaxOffset" : "0",
   "transactionMsgMinOffset" : "0",
   "tryUnlockTimes" : 0
}
},"statusTable":{"T":{"consumeFailedMsgs":"3","consumeFailedTPS":0.0,"consumeOKTPS":"1.5","consumeRT":0.0,"pullRT":"2","pullTPS":0.5}},
"jstack":"","properties":{"PROP_CLIENT_VERSION":"V3_1_8","PROP_CONSUMEORDERLY":"flase","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},
"subscriptionSet":[{"subString":"*","subVersion":"1796604049397","topic":"T"}]}`
	var r admin.ConsumerRunningInfo
	if err := protocol.UnmarshalMQKeyed([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	pq, ok := r.MqTable[protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}]
	want := admin.ProcessQueueInfo{CommitOffset: -1, CachedMsgMinOffset: 6, CachedMsgMaxOffset: 7, CachedMsgCount: 2, Locked: true,
		LastPullTimestamp: 1796604052293, LastConsumeTimestamp: 1796604052299}
	if !ok || pq != want {
		t.Errorf("queue %+v (found %v), want %+v", pq, ok, want)
	}
	if st := r.StatusTable["T"]; st.ConsumeFailedMsgs != 3 || st.ConsumeOKTPS != 1.5 || st.PullRT != 2 || st.PullTPS != 0.5 {
		t.Errorf("status %+v", st)
	}
	if len(r.SubscriptionSet) != 1 || r.SubscriptionSet[0].SubVersion != 1796604049397 || r.Properties["PROP_CONSUME_TYPE"] != "CONSUME_PASSIVELY" {
		t.Errorf("subscriptions %+v, properties %v", r.SubscriptionSet, r.Properties)
	}
	for _, bad := range []string{`{"commitOffset":"x1"}`, `{"commitOffset":true}`, `{"commitOffset":"1e"}`} {
		var p admin.ProcessQueueInfo
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s decoded as %+v", bad, p)
		}
	}
}
