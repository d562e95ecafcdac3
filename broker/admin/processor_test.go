package admin

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/brokerstats"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/config/configtest"
	"github.com/rmqgo/rmq/broker/topic"
	pcfg "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type fixture struct {
	p       *Processor
	cfg     *config.Holder
	topics  *topic.Manager
	changed [][]string
	deleted []string
}

func newFixture(t *testing.T, mutate ...func(*config.Config)) *fixture {
	t.Helper()
	c := configtest.New(t, append([]func(*config.Config){configtest.InCluster("C1")}, mutate...)...)
	f := &fixture{cfg: config.NewHolder(c, true)}
	var err error
	f.topics, err = topic.New(topic.Options{Config: f.cfg.Get, Path: c.TopicConfigPath()})
	if err != nil {
		t.Fatal(err)
	}
	f.p, err = New(Deps{
		Config: f.cfg,
		Topics: f.topics,
		Pools: func() map[string]PoolStat {
			return map[string]PoolStat{PoolSend: {Queued: 3, HeadWait: 1500 * time.Millisecond}}
		},
		RetryTopicsOf: func(tp string) []string {
			return []string{"%RETRY%g1+" + tp, "%RETRY%g1_" + tp, "%RETRY%g2_" + tp, "%RETRY%g3_" + tp}
		},
		Hooks: Hooks{
			ConfigChanged: func(k []string) { f.changed = append(f.changed, k) },
			TopicDeleted:  func(tp string) { f.deleted = append(f.deleted, tp) },
		},
		BootTime: time.Now().Add(-90 * time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// call runs a handler the way the remoting server does, turning an error
// into its response.
func (f *fixture) call(t *testing.T, c int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	h, ok := f.p.Handlers()[c]
	if !ok {
		t.Fatalf("no handler for %d", c)
	}
	req := remoting.NewRequest(c, ext, body)
	req.Opaque = 42
	resp, err := h(context.Background(), nil, req)
	if err != nil {
		return remoting.ResponseFromError(req, err)
	}
	if resp == nil {
		t.Fatalf("handler %d returned nil, nil", c)
	}
	return resp
}

func createExt(topicName string, read, write, perm int) map[string]string {
	return map[string]string{
		"topic": topicName, "defaultTopic": "TBW102", "readQueueNums": strconv.Itoa(read),
		"writeQueueNums": strconv.Itoa(write), "perm": strconv.Itoa(perm), "topicFilterType": "SINGLE_TAG",
		"topicSysFlag": "0", "order": "false",
	}
}

func TestUpdateAndCreateTopic(t *testing.T) {
	with := func(ext map[string]string, k, v string) map[string]string {
		ext[k] = v
		return ext
	}
	without := func(ext map[string]string, k string) map[string]string {
		delete(ext, k)
		return ext
	}
	cases := []struct {
		name   string
		ext    map[string]string
		code   int32
		remark string // substring
	}{
		{"ok", createExt("TopicTest", 8, 8, 6), code.Success, ""},
		{"client-go minimal", map[string]string{"topic": "GoTopic", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, code.Success, ""},
		{"with attributes", with(createExt("Typed", 4, 4, 6), "attributes", "+message.type=FIFO"), code.Success, ""},
		{"retry topic", createExt("%RETRY%group1", 1, 1, 6), code.Success, ""},
		{"127 chars", createExt(strings.Repeat("a", 127), 1, 1, 6), code.Success, ""},
		{"retry 255 chars", createExt("%RETRY%"+strings.Repeat("a", 248), 1, 1, 6), code.Success, ""},

		{"illegal chars", createExt("Topic Test", 8, 8, 6), code.InvalidParameter, "illegal characters"},
		{"illegal char slash", createExt("a/b", 8, 8, 6), code.InvalidParameter, "illegal characters"},
		{"128 chars", createExt(strings.Repeat("a", 128), 8, 8, 6), code.InvalidParameter, "longer than topic max length 127"},
		{"retry 256 chars", createExt("%RETRY%"+strings.Repeat("a", 249), 1, 1, 6), code.InvalidParameter, "255"},
		{"blank", createExt("", 8, 8, 6), code.InvalidParameter, "blank"},
		{"TBW102", createExt("TBW102", 8, 8, 6), code.InvalidParameter, "conflict with system topic"},
		{"schedule", createExt("SCHEDULE_TOPIC_XXXX", 8, 8, 6), code.InvalidParameter, "conflict with system topic"},
		{"rmq_sys_", createExt("rmq_sys_x", 8, 8, 6), code.InvalidParameter, "conflict with system topic"},
		{"trans half", createExt("RMQ_SYS_TRANS_HALF_TOPIC", 1, 1, 6), code.InvalidParameter, "system topic"},
		{"cluster name", createExt("C1", 8, 8, 6), code.InvalidParameter, "system topic"},
		{"broker name", createExt("broker-a", 8, 8, 6), code.InvalidParameter, "system topic"},
		{"reply topic", createExt("C1_REPLY_TOPIC", 8, 8, 6), code.InvalidParameter, "system topic"},
		{"perm 9", createExt("T9", 8, 8, 9), code.InvalidParameter, "perm 9"},
		{"perm -1", createExt("T9", 8, 8, -1), code.InvalidParameter, "perm -1"},
		{"read 0", createExt("T0", 0, 8, 6), code.InvalidParameter, "readQueueNums 0"},
		{"write 0", createExt("T0", 8, 0, 6), code.InvalidParameter, "writeQueueNums 0"},
		{"queues 1025", createExt("TBig", 1025, 1025, 6), code.InvalidParameter, "1024"},
		{"perm missing", without(createExt("TP", 8, 8, 6), "perm"), code.InvalidParameter, "<perm> is null"},
		{"queues not a number", with(createExt("TP", 8, 8, 6), "readQueueNums", "eight"), code.InvalidParameter, "not a number"},
		{"filter type", with(createExt("TF", 8, 8, 6), "topicFilterType", "SQL92"), code.InvalidParameter, "topicFilterType"},
		{"attribute syntax", with(createExt("TA", 8, 8, 6), "attributes", "message.type=FIFO"), code.InvalidParameter, "attribute format"},
		{"attribute unknown", with(createExt("TA", 8, 8, 6), "attributes", "+colour=red"), code.InvalidParameter, "unsupported key"},
		{"attribute bad value", with(createExt("TA", 8, 8, 6), "attributes", "+message.type=BLUE"), code.InvalidParameter, "not in set"},
		{"mixed", with(createExt("TM", 8, 8, 6), "attributes", "+message.type=MIXED"), code.InvalidParameter, "MIXED"},
	}
	f := newFixture(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.topics.DataVersion()
			resp := f.call(t, code.UpdateAndCreateTopic, tc.ext, nil)
			if resp.Code != tc.code || !strings.Contains(resp.Remark, tc.remark) {
				t.Fatalf("code %d remark %q, want %d containing %q", resp.Code, resp.Remark, tc.code, tc.remark)
			}
			if resp.Opaque != 42 || !resp.IsResponse() {
				t.Errorf("bad response framing %+v", resp)
			}
			if tc.code != code.Success && !f.topics.DataVersion().Equal(before) {
				t.Error("a rejected request changed the topic table")
			}
		})
	}
	got, ok := f.topics.Get("TopicTest")
	if !ok || got.ReadQueueNums != 8 || got.Perm != 6 {
		t.Errorf("TopicTest = %+v", got)
	}
	if got, _ := f.topics.Get("Typed"); got.Attributes["message.type"] != "FIFO" {
		t.Errorf("Typed attributes %v", got.Attributes)
	}

	// Updating queue numbers of an existing topic; then the same again is a no-op.
	if r := f.call(t, code.UpdateAndCreateTopic, createExt("TopicTest", 16, 4, 4), nil); r.Code != 0 {
		t.Fatal(r.Remark)
	}
	v := f.topics.DataVersion()
	if r := f.call(t, code.UpdateAndCreateTopic, createExt("TopicTest", 16, 4, 4), nil); r.Code != 0 || !f.topics.DataVersion().Equal(v) {
		t.Errorf("idempotent update: %d, version moved %v", r.Code, !f.topics.DataVersion().Equal(v))
	}

	// With validateSystemTopicWhenUpdateTopic=false system names are allowed.
	f2 := newFixture(t, func(c *config.Config) { c.ValidateSystemTopicWhenUpdateTopic = false })
	if r := f2.call(t, code.UpdateAndCreateTopic, createExt("TBW102", 4, 4, 7), nil); r.Code != 0 {
		t.Errorf("TBW102 update with validation off: %d %s", r.Code, r.Remark)
	}
}

func TestUpdateAndCreateTopicList(t *testing.T) {
	f := newFixture(t)
	body := `{"topicConfigList":[
		{"attributes":{"+message.type":"NORMAL"},"order":false,"perm":6,"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"L1","topicSysFlag":0,"writeQueueNums":2},
		{"topicName":"L2"}]}`
	if r := f.call(t, code.UpdateAndCreateTopicList, nil, []byte(body)); r.Code != 0 {
		t.Fatalf("%d %s", r.Code, r.Remark)
	}
	if l2, _ := f.topics.Get("L2"); l2.ReadQueueNums != 16 || l2.Perm != 6 {
		t.Errorf("L2 should take Java defaults: %+v", l2)
	}
	if l1, _ := f.topics.Get("L1"); l1.Attributes["message.type"] != "NORMAL" {
		t.Errorf("L1 = %+v", l1)
	}
	for _, tc := range []struct {
		name, body string
		code       int32
	}{
		{"system topic", `{"topicConfigList":[{"topicName":"L3"},{"topicName":"TBW102"}]}`, code.InvalidParameter},
		{"bad perm", `{"topicConfigList":[{"topicName":"L3","perm":8}]}`, code.InvalidParameter},
		{"zero queues", `{"topicConfigList":[{"topicName":"L3","readQueueNums":0}]}`, code.InvalidParameter},
		{"not json", `{"topicConfigList":[`, code.InvalidParameter},
		{"empty", ``, code.InvalidParameter},
	} {
		if r := f.call(t, code.UpdateAndCreateTopicList, nil, []byte(tc.body)); r.Code != tc.code {
			t.Errorf("%s: code %d (%s), want %d", tc.name, r.Code, r.Remark, tc.code)
		}
		if f.topics.Contains("L3") {
			t.Errorf("%s: L3 created by a rejected list", tc.name)
		}
	}
}

func TestDeleteTopic(t *testing.T) {
	f := newFixture(t)
	f.call(t, code.UpdateAndCreateTopic, createExt("Gone", 4, 4, 6), nil)
	for _, tc := range []struct {
		topic string
		code  int32
	}{
		{"Gone", code.Success},
		{"NeverExisted", code.Success}, // as Java
		{"", code.InvalidParameter},
		{"SCHEDULE_TOPIC_XXXX", code.InvalidParameter},
		{"C1", code.InvalidParameter},
		{"rmq_sys_wheel_timer", code.InvalidParameter},
	} {
		if r := f.call(t, code.DeleteTopicInBroker, map[string]string{"topic": tc.topic}, nil); r.Code != tc.code {
			t.Errorf("delete %q: %d %s, want %d", tc.topic, r.Code, r.Remark, tc.code)
		}
	}
	if f.topics.Contains("Gone") || !f.topics.Contains("SCHEDULE_TOPIC_XXXX") {
		t.Error("wrong topics deleted")
	}
	if !slices.Equal(f.deleted, []string{"Gone", "NeverExisted"}) {
		t.Errorf("TopicDeleted hook saw %v", f.deleted)
	}
}

// TestDeleteTopicClearsRetryTopics: with clearRetryTopicWhenDeleteTopic
// (Apache's default) the pop retry topics of the topic's groups that exist
// are deleted with it; without, they stay.
func TestDeleteTopicClearsRetryTopics(t *testing.T) {
	for _, clear := range []bool{true, false} {
		f := newFixture(t, func(c *config.Config) { c.ClearRetryTopicWhenDeleteTopic = clear })
		for _, tp := range []string{"T", "%RETRY%g1_T", "%RETRY%g2_T", "%RETRY%g1_Other"} {
			if r := f.call(t, code.UpdateAndCreateTopic, createExt(tp, 1, 1, 6), nil); r.Code != code.Success {
				t.Fatalf("create %s: %d %s", tp, r.Code, r.Remark)
			}
		}
		if r := f.call(t, code.DeleteTopicInBroker, map[string]string{"topic": "T"}, nil); r.Code != code.Success {
			t.Fatalf("delete: %d %s", r.Code, r.Remark)
		}
		want := []string{"T"}
		if clear {
			want = []string{"T", "%RETRY%g1_T", "%RETRY%g2_T"}
		}
		if !slices.Equal(f.deleted, want) {
			t.Errorf("clear=%v: deleted %v, want %v", clear, f.deleted, want)
		}
		for _, tp := range []string{"%RETRY%g1_T", "%RETRY%g2_T"} {
			if f.topics.Contains(tp) == clear {
				t.Errorf("clear=%v: %s still there: %v", clear, tp, f.topics.Contains(tp))
			}
		}
		if !f.topics.Contains("%RETRY%g1_Other") {
			t.Errorf("clear=%v: another topic's retry topic deleted", clear)
		}
	}
}

func TestGetAllTopicConfig(t *testing.T) {
	f := newFixture(t, func(c *config.Config) { c.SplitMetadataSize = 5 })
	r := f.call(t, code.GetAllTopicConfig, nil, nil)
	var w protocol.TopicConfigAndMappingSerializeWrapper
	if err := protocol.Unmarshal(r.Body, &w); err != nil || r.Code != 0 {
		t.Fatalf("%d %v", r.Code, err)
	}
	total := f.topics.Len()
	if len(w.TopicConfigTable) != total || r.Ext("totalTopicNum") != strconv.Itoa(total) || !w.DataVersion.Equal(f.topics.DataVersion()) {
		t.Errorf("got %d topics, total %s, want %d", len(w.TopicConfigTable), r.Ext("totalTopicNum"), total)
	}
	if !strings.Contains(string(r.Body), `"topicQueueMappingDetailMap":{}`) || !strings.Contains(string(r.Body), `"mappingDataVersion":{`) {
		t.Errorf("mapping parts missing: %s", r.Body)
	}

	// Paging: pages of 5 (splitMetadataSize) in name order, restart on a stale version.
	dv := string(protocol.MustMarshal(f.topics.DataVersion()))
	var seen []string
	for seq := 0; seq < total; seq += 5 {
		r := f.call(t, code.GetAllTopicConfig, map[string]string{"topicSeq": strconv.Itoa(seq), "dataVersion": dv, "maxTopicNum": "50"}, nil)
		var page protocol.TopicConfigAndMappingSerializeWrapper
		if err := protocol.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.TopicConfigTable) > 5 {
			t.Fatalf("page of %d", len(page.TopicConfigTable))
		}
		for k := range page.TopicConfigTable {
			seen = append(seen, k)
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, f.topics.Names()) {
		t.Errorf("pages covered %v, want %v", seen, f.topics.Names())
	}
	r = f.call(t, code.GetAllTopicConfig, map[string]string{"topicSeq": "10", "dataVersion": `{"counter":999,"stateVersion":0,"timestamp":1}`}, nil)
	var page protocol.TopicConfigAndMappingSerializeWrapper
	_ = protocol.Unmarshal(r.Body, &page)
	if _, ok := page.TopicConfigTable[f.topics.Names()[0]]; !ok {
		t.Error("a stale dataVersion must restart at the first topic")
	}
}

func TestGetTopicConfig(t *testing.T) {
	f := newFixture(t)
	f.call(t, code.UpdateAndCreateTopic, createExt("T", 3, 5, 6), nil)
	r := f.call(t, code.GetTopicConfig, map[string]string{"topic": "T", "lo": "true"}, nil)
	var got protocol.TopicConfigAndQueueMapping
	if err := protocol.Unmarshal(r.Body, &got); err != nil || r.Code != 0 {
		t.Fatalf("%d %v", r.Code, err)
	}
	if got.TopicName != "T" || got.ReadQueueNums != 3 || got.WriteQueueNums != 5 || got.MappingDetail != nil {
		t.Errorf("got %+v", got)
	}
	r = f.call(t, code.GetTopicConfig, map[string]string{"topic": "Nope", "lo": "true"}, nil)
	if r.Code != code.TopicNotExist || !strings.Contains(r.Remark, "No topic in this broker") {
		t.Errorf("unknown topic: %d %s (mqadmin topicStatus needs 17)", r.Code, r.Remark)
	}
	if r := f.call(t, code.GetTopicConfig, nil, nil); r.Code != code.InvalidParameter {
		t.Errorf("missing topic: %d", r.Code)
	}
}

func TestGetTopicStatsInfo(t *testing.T) {
	f := newFixture(t)
	f.call(t, code.UpdateAndCreateTopic, createExt("T", 2, 3, 6), nil)
	r := f.call(t, code.GetTopicStatsInfo, map[string]string{"topic": "T"}, nil)
	if r.Code != 0 {
		t.Fatal(r.Remark)
	}
	// Java's form: MessageQueue objects as keys.
	if !strings.HasPrefix(string(r.Body), `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},`) {
		t.Errorf("body %s", r.Body)
	}
	var st protocol.TopicStatsTable
	if err := protocol.UnmarshalMQKeyed(r.Body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.OffsetTable) != 3 {
		t.Errorf("%d queues, want max(read, write) = 3", len(st.OffsetTable))
	}
	if r := f.call(t, code.GetTopicStatsInfo, map[string]string{"topic": "Nope"}, nil); r.Code != code.TopicNotExist {
		t.Errorf("unknown topic: %d", r.Code)
	}

	// With a store: offsets and the timestamp of the last message.
	f.p.d.Offsets = fakeOffsets{}
	r = f.call(t, code.GetTopicStatsInfo, map[string]string{"topic": "T"}, nil)
	st = protocol.TopicStatsTable{}
	if err := protocol.UnmarshalMQKeyed(r.Body, &st); err != nil {
		t.Fatal(err)
	}
	got := st.OffsetTable[protocol.MessageQueue{BrokerName: "broker-a", QueueID: 2, Topic: "T"}]
	if got.MinOffset != 0 || got.MaxOffset != 12 || got.LastUpdateTimestamp != 1700000000011 {
		t.Errorf("queue 2: %+v", got)
	}
}

type fakeOffsets struct{}

func (fakeOffsets) MinOffsetInQueue(string, int) int64     { return -1 }
func (fakeOffsets) MaxOffsetInQueue(_ string, q int) int64 { return int64(10 + q) }
func (fakeOffsets) MessageStoreTimestamp(_ string, _ int, off int64) int64 {
	return 1700000000000 + off
}

func TestGetBrokerRuntimeInfo(t *testing.T) {
	f := newFixture(t)
	r := f.call(t, code.GetBrokerRuntimeInfo, nil, nil)
	var kv protocol.KVTable
	if err := protocol.Unmarshal(r.Body, &kv); err != nil || r.Code != 0 {
		t.Fatalf("%d %v", r.Code, err)
	}
	m := kv.Table
	// Every key mqadmin clusterList reads (docs/protocol.md §4.10), with the
	// types it parses.
	longs := []string{"sendThreadPoolQueueSize", "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueSize",
		"pullThreadPoolQueueHeadWaitTimeMills", "ackThreadPoolQueueSize", "ackThreadPoolQueueHeadWaitTimeMills",
		"pageCacheLockTimeMills", "earliestMessageTimeStamp", "timerReadBehind", "timerOffsetBehind", "timerCongestNum",
		"msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgPutTotalTodayNow", "msgGetTotalYesterdayMorning",
		"msgGetTotalTodayMorning", "msgGetTotalTodayNow", "bootTimestamp", "brokerVersion"}
	for _, k := range longs {
		if _, err := strconv.ParseInt(m[k], 10, 64); err != nil {
			t.Errorf("%s = %q: not a long", k, m[k])
		}
	}
	for _, k := range []string{"commitLogDiskRatio", "timerEnqueueTps", "timerDequeueTps"} {
		if _, err := strconv.ParseFloat(m[k], 64); err != nil {
			t.Errorf("%s = %q: not a double", k, m[k])
		}
	}
	if m["getTransferedTps"] != m["getTransferredTps"] {
		t.Errorf("4.x's getTransferedTps %q, 5.x's getTransferredTps %q", m["getTransferedTps"], m["getTransferredTps"])
	}
	for _, k := range []string{"putTps", "getTransferredTps", "getTransferedTps"} {
		if _, err := strconv.ParseFloat(strings.Fields(m[k])[0], 64); err != nil {
			t.Errorf("%s = %q", k, m[k])
		}
	}
	if m["brokerActive"] != "true" || m["brokerVersionDesc"] != "V5_5_0" || m["brokerVersion"] != "513" {
		t.Errorf("active %q version %q/%q", m["brokerActive"], m["brokerVersionDesc"], m["brokerVersion"])
	}
	if m["runtime"] != "[ 0 days, 1 hours, 30 minutes, 0 seconds ]" {
		t.Errorf("runtime %q", m["runtime"])
	}
	if m["sendThreadPoolQueueSize"] != "3" || m["sendThreadPoolQueueCapacity"] != "10000" || m["sendThreadPoolQueueHeadWaitTimeMills"] != "1500" {
		t.Errorf("pool stats %q/%q/%q", m["sendThreadPoolQueueSize"], m["sendThreadPoolQueueCapacity"], m["sendThreadPoolQueueHeadWaitTimeMills"])
	}
	if ratio, _ := strconv.ParseFloat(m["commitLogDiskRatio"], 64); ratio < 0 || ratio > 1 {
		t.Errorf("commitLogDiskRatio %v (the store root exists, so it is measurable)", ratio)
	}

	// The store's runtime info overrides the defaults.
	f.p.d.Runtime = runtimeMap{"putTps": "12.5 10.0 9.0", "commitLogMaxOffset": "4096"}
	r = f.call(t, code.GetBrokerRuntimeInfo, nil, nil)
	kv = protocol.KVTable{}
	_ = protocol.Unmarshal(r.Body, &kv)
	if kv.Table["putTps"] != "12.5 10.0 9.0" || kv.Table["commitLogMaxOffset"] != "4096" {
		t.Errorf("store values not used: %v", kv.Table["putTps"])
	}
}

type runtimeMap map[string]string

func (r runtimeMap) RuntimeInfo() map[string]string { return r }

func TestBrokerConfigRequests(t *testing.T) {
	f := newFixture(t)
	r := f.call(t, code.GetBrokerConfig, nil, nil)
	props, err := pcfg.ParseProperties(r.Body)
	if err != nil || r.Code != 0 || props["brokerName"] != "broker-a" || props["listenPort"] != "10911" {
		t.Fatalf("%d %v %q", r.Code, err, props["brokerName"])
	}
	var v0 protocol.DataVersion
	if err := protocol.Unmarshal([]byte(r.Ext("version")), &v0); err != nil {
		t.Fatalf("version ext %q: %v", r.Ext("version"), err)
	}

	cases := []struct {
		name, body string
		code       int32
		remark     string
	}{
		{"read-only", "brokerName=other\n", code.NoPermission, "brokerName"},
		{"black list", "brokerConfigPath=/tmp/x\n", code.NoPermission, "configBlackList"},
		{"store layout", "storePathRootDir=/tmp/x\n", code.NoPermission, "storePathRootDir"},
		{"listen port", "listenPort=1\n", code.NoPermission, "listenPort"},
		{"unknown", "noSuchKey=1\n", code.InvalidParameter, "noSuchKey"},
		{"bad value", "brokerPermission=abc\n", code.InvalidParameter, "brokerPermission"},
		{"out of range", "brokerPermission=8\n", code.InvalidParameter, "brokerPermission"},
		{"ok", "# comment\nbrokerPermission=4\nautoCreateTopicEnable=false\n", code.Success, ""},
		{"empty", "", code.Success, ""},
	}
	for _, tc := range cases {
		r := f.call(t, code.UpdateBrokerConfig, nil, []byte(tc.body))
		if r.Code != tc.code || !strings.Contains(r.Remark, tc.remark) {
			t.Errorf("%s: code %d remark %q, want %d with %q", tc.name, r.Code, r.Remark, tc.code, tc.remark)
		}
	}
	if c := f.cfg.Get(); c.BrokerPermission != 4 || c.AutoCreateTopicEnable || c.BrokerName != "broker-a" {
		t.Errorf("config after updates: perm %d autoCreate %v name %s", c.BrokerPermission, c.AutoCreateTopicEnable, c.BrokerName)
	}
	if len(f.changed) != 1 || !slices.Equal(f.changed[0], []string{"autoCreateTopicEnable", "brokerPermission"}) {
		t.Errorf("ConfigChanged hook saw %v", f.changed)
	}
	r = f.call(t, code.GetBrokerConfig, nil, nil)
	var v1 protocol.DataVersion
	_ = protocol.Unmarshal([]byte(r.Ext("version")), &v1)
	if v1.Counter != v0.Counter+1 || !strings.Contains(string(r.Body), "brokerPermission=4\n") {
		t.Errorf("version %v → %v; body has new value: %v", v0, v1, strings.Contains(string(r.Body), "brokerPermission=4"))
	}
}

// TestViewBrokerStatsData: 315 answers the item's windows as
// BrokerStatsData, SYSTEM_ERROR "The stats <name> <key> not exist" for an
// item nothing recorded (Apache's remark), INVALID_PARAMETER without
// the fields.
func TestViewBrokerStatsData(t *testing.T) {
	f := newFixture(t)
	now := time.UnixMilli(1_700_000_000_000)
	st := brokerstats.New(func() time.Time { return now })
	f.p.d.Stats = st
	st.TopicPut("T", 6, 60)
	st.SampleMinute()
	st.SampleHour()
	st.SampleDay()
	tests := []struct {
		name     string
		ext      map[string]string
		wantCode int32
		want     string
	}{
		{"topic put", map[string]string{"statsName": brokerstats.TopicPutNums, "statsKey": "T"}, code.Success,
			`{"statsDay":{"avgpt":6,"sum":6,"tps":0.0016666666666666668},"statsHour":{"avgpt":6,"sum":6,"tps":0.01},"statsMinute":{"avgpt":6,"sum":6,"tps":0.6}}`},
		{"unknown key", map[string]string{"statsName": brokerstats.TopicPutNums, "statsKey": "U"}, code.SystemError, "The stats <TOPIC_PUT_NUMS> <U> not exist"},
		{"unknown name", map[string]string{"statsName": "NOPE", "statsKey": "T"}, code.SystemError, "The stats <NOPE> <T> not exist"},
		{"no fields", nil, code.InvalidParameter, "statsName"},
	}
	for _, tt := range tests {
		resp := f.call(t, code.ViewBrokerStatsData, tt.ext, nil)
		got := resp.Remark
		if resp.Code == code.Success {
			got = string(resp.Body)
		}
		if resp.Code != tt.wantCode || !strings.Contains(got, tt.want) {
			t.Errorf("%s: code %d %q, want %d %q", tt.name, resp.Code, got, tt.wantCode, tt.want)
		}
	}
}

// TestSystemTopicList: 305 lists the reserved names and the topics made at
// boot (the cluster's and the broker's among them), not user topics.
func TestSystemTopicList(t *testing.T) {
	f := newFixture(t)
	if r := f.call(t, code.UpdateAndCreateTopic, createExt("UserT", 4, 4, 6), nil); r.Code != code.Success {
		t.Fatalf("create: %d %s", r.Code, r.Remark)
	}
	resp := f.call(t, code.GetSystemTopicListFromBroker, nil, nil)
	var tl protocol.TopicList
	if resp.Code != code.Success {
		t.Fatalf("305: %d %s", resp.Code, resp.Remark)
	}
	if err := protocol.Unmarshal(resp.Body, &tl); err != nil {
		t.Fatal(err)
	}
	cfg := f.cfg.Get()
	for _, want := range []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "CHECKPOINT_TOPIC", cfg.BrokerClusterName, cfg.BrokerName, cfg.BrokerClusterName + "_REPLY_TOPIC"} {
		if !slices.Contains(tl.TopicList, want) {
			t.Errorf("305 lacks %s: %v", want, tl.TopicList)
		}
	}
	if slices.Contains(tl.TopicList, "UserT") {
		t.Errorf("305 lists a user topic: %v", tl.TopicList)
	}
}
