package admin_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/admin/admintest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	ns1 = "10.0.0.100:9876"
	ns2 = "10.0.0.101:9876"
	ba0 = "10.0.0.1:10911"
	ba1 = "10.0.0.2:10911"
	bb0 = "10.0.0.3:10911"
)

// fixture: two nameservers, cluster C with broker-a (master + slave) and
// broker-b (master).
func fixture(t *testing.T) (*admintest.Cluster, *admin.Client) {
	t.Helper()
	fc := admintest.New(ns1, ns2)
	fc.AddBroker("C", "broker-a", 0, ba0)
	fc.AddBroker("C", "broker-a", 1, ba1)
	fc.AddBroker("C", "broker-b", 0, bb0)
	c, err := admin.NewWithInvoker(admin.Config{NameServers: []string{ns1 + ";" + ns2}}, fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fc, c
}

func TestParseNameServers(t *testing.T) {
	for in, want := range map[string][]string{
		"a:1;b:2":       {"a:1", "b:2"},
		" a:1 ; ;b:2; ": {"a:1", "b:2"},
		"":              nil,
	} {
		if got := admin.ParseNameServers(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseNameServers(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResponseErrorMapping(t *testing.T) {
	fc, c := fixture(t)
	ctx := context.Background()
	_, err := c.GetTopicRoute(ctx, "Nope")
	var re *admin.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("want *ResponseError, got %T %v", err, err)
	}
	if re.Code != code.TopicNotExist || re.Addr != ns1 || re.Request != code.GetRouteInfoByTopic ||
		re.Remark != "No topic route info in name server for the topic: Nope" {
		t.Fatalf("got %+v", re)
	}
	want := "GET_ROUTEINFO_BY_TOPIC to 10.0.0.100:9876 failed: TOPIC_NOT_EXIST (code 17): No topic route info in name server for the topic: Nope"
	if err.Error() != want {
		t.Fatalf("message:\n got %s\nwant %s", err, want)
	}
	if !admin.IsCode(err, code.TopicNotExist) || admin.IsCode(err, code.SystemError) {
		t.Fatal("IsCode")
	}

	// A broker answering an unknown code.
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code == code.GetBrokerRuntimeInfo {
			return remoting.NewResponse(req, code.RequestCodeNotSupported, " request type 28 not supported"), true
		}
		return nil, false
	}
	_, err = c.GetBrokerRuntimeInfo(ctx, ba0)
	if !admin.IsCode(err, code.RequestCodeNotSupported) || !strings.Contains(err.Error(), "GET_BROKER_RUNTIME_INFO to 10.0.0.1:10911 failed: REQUEST_CODE_NOT_SUPPORTED (code 3)") {
		t.Fatalf("got %v", err)
	}
	// An unnamed code still reads well.
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		return remoting.NewResponse(req, 777, ""), true
	}
	_, err = c.GetBrokerClusterInfo(ctx)
	if err == nil || err.Error() != "GET_BROKER_CLUSTER_INFO to 10.0.0.100:9876 failed: CODE(777) (code 777)" {
		t.Fatalf("got %v", err)
	}
}

func TestNamesrvFailover(t *testing.T) {
	fc, c := fixture(t)
	fc.Down[ns1] = true
	ci, err := c.GetBrokerClusterInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ci.BrokerAddrTable) != 2 {
		t.Fatalf("got %+v", ci)
	}
	// ns2 is now preferred: a second call goes there directly.
	if _, err := c.GetAllTopicList(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := fc.CallCodes(), []string{ns2 + ":106", ns2 + ":206"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	fc.Down[ns2] = true
	_, err = c.GetAllTopicList(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GET_ALL_TOPIC_LIST_FROM_NAMESERVER to 10.0.0.101:9876") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("got %v", err)
	}
}

func TestNoNameServer(t *testing.T) {
	c, err := admin.NewWithInvoker(admin.Config{}, admintest.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBrokerClusterInfo(context.Background()); !errors.Is(err, admin.ErrNoNameServer) {
		t.Fatalf("got %v", err)
	}
	if err := c.PutKVConfig(context.Background(), "n", "k", "v"); !errors.Is(err, admin.ErrNoNameServer) {
		t.Fatalf("got %v", err)
	}
}

func TestCreateTopicFields(t *testing.T) {
	fc, c := fixture(t)
	tc := protocol.TopicConfig{TopicName: "T", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6, TopicSysFlag: 2, Order: true}
	if err := c.CreateTopic(context.Background(), ba0, tc, "+message.type=FIFO"); err != nil {
		t.Fatal(err)
	}
	calls := fc.Calls()
	want := map[string]string{"topic": "T", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "4", "perm": "6",
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": "2", "order": "true", "attributes": "+message.type=FIFO", "force": "false"}
	if len(calls) != 1 || calls[0].Code != code.UpdateAndCreateTopic || !reflect.DeepEqual(calls[0].Ext, want) {
		t.Fatalf("got %+v", calls)
	}
	got, err := c.GetTopicConfig(context.Background(), ba0, "T")
	if err != nil {
		t.Fatal(err)
	}
	if got.ReadQueueNums != 8 || got.Attributes["+message.type"] != "FIFO" || !got.Order {
		t.Fatalf("got %+v", got)
	}
	tc.Perm = 8
	if err := c.CreateTopic(context.Background(), ba0, tc, ""); err == nil || err.Error() != "topicPermission value: 8 is invalid." {
		t.Fatalf("got %v", err)
	}
	if len(fc.Calls()) != 2 {
		t.Fatal("invalid perm must not be sent")
	}
}

func TestCreateTopicInClusterAndDelete(t *testing.T) {
	fc, c := fixture(t)
	ctx := context.Background()
	tc := protocol.NewTopicConfig("T")
	done, err := c.CreateTopicInCluster(ctx, "C", tc, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(done, []string{ba0, bb0}) {
		t.Fatalf("created on %v", done)
	}
	if _, err := c.CreateTopicInCluster(ctx, "Nope", tc, ""); !errors.Is(err, admin.ErrClusterNotFound) {
		t.Fatalf("got %v", err)
	}

	before := len(fc.Calls())
	masters, err := c.DeleteTopic(ctx, "C", "T")
	if err != nil || !reflect.DeepEqual(masters, []string{ba0, bb0}) {
		t.Fatalf("%v %v", masters, err)
	}
	calls := fc.Calls()[before:]
	var got []string
	for _, cl := range calls {
		got = append(got, cl.Addr+":"+strconv.Itoa(int(cl.Code))+":"+cl.Ext["topic"]+":"+cl.Ext["clusterName"])
	}
	want := []string{ns1 + ":106::", ba0 + ":215:T:", bb0 + ":215:T:", ns1 + ":216:T:C", ns2 + ":216:T:C"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("calls\n got %v\nwant %v", got, want)
	}
	if _, err := c.GetTopicRoute(ctx, "T"); !admin.IsCode(err, code.TopicNotExist) {
		t.Fatalf("route after delete: %v", err)
	}
}

// javaStatsBody is a GET_TOPIC_STATS_INFO body as a Java broker writes it.
const javaStatsBody = `{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":120,"minOffset":3}},"topicPutTps":2.5}`

func TestTopicStatsJavaBody(t *testing.T) {
	fc, c := fixture(t)
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code != code.GetTopicStatsInfo {
			return nil, false
		}
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = []byte(javaStatsBody)
		return resp, true
	}
	st, err := c.GetTopicStats(context.Background(), ba0, "T")
	if err != nil {
		t.Fatal(err)
	}
	want := protocol.MQMap[protocol.TopicOffset]{
		{BrokerName: "broker-a", QueueID: 0, Topic: "T"}: {LastUpdateTimestamp: 1700000000000, MaxOffset: 120, MinOffset: 3},
		{BrokerName: "broker-a", QueueID: 1, Topic: "T"}: {},
	}
	if !reflect.DeepEqual(st.OffsetTable, want) || st.TopicPutTps != 2.5 {
		t.Fatalf("got %+v", st)
	}
	// A malformed body is a decode error naming the request.
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = []byte(`{"offsetTable":{{"brokerName":`)
		return resp, true
	}
	if _, err := c.GetTopicStats(context.Background(), ba0, "T"); err == nil || !strings.Contains(err.Error(), "GET_TOPIC_STATS_INFO to 10.0.0.1:10911: decode body") {
		t.Fatalf("got %v", err)
	}
}

func TestExamineTopicStatsStatic(t *testing.T) {
	fc, c := fixture(t)
	ctx := context.Background()
	fc.Lock(func() {
		a, b := fc.Brokers[0], fc.Brokers[2]
		a.Topics["S"] = protocol.TopicConfig{TopicName: "S", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
		b.Topics["S"] = protocol.TopicConfig{TopicName: "S", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
		// Logic queue 0: first on broker-a queue 0 (logic 0..), then on broker-b queue 0 from logic 100.
		items := []protocol.LogicQueueMappingItem{
			{Bname: "broker-a", QueueID: 0, Gen: 0, LogicOffset: 0, EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1},
			{Bname: "broker-b", QueueID: 0, Gen: 1, LogicOffset: 100, EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1},
		}
		b.Mapping["S"] = &protocol.TopicQueueMappingDetail{Bname: "broker-b", Epoch: 2, Scope: protocol.MappingScopeGlobal, Topic: "S", TotalQueues: 1,
			HostedQueues: map[int][]protocol.LogicQueueMappingItem{0: items}}
		a.Mapping["S"] = &protocol.TopicQueueMappingDetail{Bname: "broker-a", Epoch: 2, Scope: protocol.MappingScopeGlobal, Topic: "S", TotalQueues: 1,
			HostedQueues: map[int][]protocol.LogicQueueMappingItem{0: items}}
		a.Stats["S"] = protocol.TopicStatsTable{OffsetTable: protocol.MQMap[protocol.TopicOffset]{{BrokerName: "broker-a", Topic: "S"}: {MinOffset: 5, MaxOffset: 100, LastUpdateTimestamp: 1}}}
		b.Stats["S"] = protocol.TopicStatsTable{OffsetTable: protocol.MQMap[protocol.TopicOffset]{{BrokerName: "broker-b", Topic: "S"}: {MinOffset: 0, MaxOffset: 7, LastUpdateTimestamp: 9}}}
	})
	st, err := c.ExamineTopicStats(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	logic := st.OffsetTable[protocol.MessageQueue{BrokerName: "__syslo__global__", Topic: "S", QueueID: 0}]
	if logic != (protocol.TopicOffset{MinOffset: 5, MaxOffset: 107, LastUpdateTimestamp: 9}) || len(st.OffsetTable) != 3 {
		t.Fatalf("got %+v", st.OffsetTable)
	}
	// 105, then 202 per broker, then 351 per broker (masters).
	calls := fc.CallCodes()
	if want := []string{ns1 + ":105", ba0 + ":202", bb0 + ":202", ba0 + ":351", bb0 + ":351"}; !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls %v", calls)
	}
	if _, err := c.ExamineTopicStats(ctx, "Nope"); !admin.IsCode(err, code.TopicNotExist) {
		t.Fatalf("got %v", err)
	}
}

func TestGetAllTopicConfigPaging(t *testing.T) {
	fc, c := fixture(t)
	pages := []map[string]protocol.TopicConfig{
		{"A": protocol.NewTopicConfig("A"), "B": protocol.NewTopicConfig("B")},
		{"C": protocol.NewTopicConfig("C")},
	}
	var seqs []string
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code != code.GetAllTopicConfig {
			return nil, false
		}
		seqs = append(seqs, req.Ext("topicSeq")+"/"+req.Ext("maxTopicNum")+"/"+req.Ext("dataVersion"))
		p := pages[len(seqs)-1]
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = protocol.MustMarshal(protocol.TopicConfigSerializeWrapper{DataVersion: protocol.DataVersion{Counter: 7}, TopicConfigTable: p})
		resp.SetExt("totalTopicNum", "3")
		return resp, true
	}
	w, err := c.GetAllTopicConfig(context.Background(), ba0)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.TopicConfigTable) != 3 || w.DataVersion.Counter != 7 {
		t.Fatalf("got %+v", w)
	}
	want := []string{"0/2000/", `2/2000/{"counter":7,"stateVersion":0,"timestamp":0}`}
	if !reflect.DeepEqual(seqs, want) {
		t.Fatalf("pages %q", seqs)
	}
}

func TestKVAndNamesrvConfigToEveryNamesrv(t *testing.T) {
	fc, c := fixture(t)
	ctx := context.Background()
	if err := c.PutKVConfig(ctx, "NS", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetKVConfig(ctx, "NS", "k"); err != nil || v != "v" {
		t.Fatalf("%q %v", v, err)
	}
	if err := c.DeleteKVConfig(ctx, "NS", "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetKVConfig(ctx, "NS", "k"); !admin.IsCode(err, code.QueryNotFound) {
		t.Fatalf("got %v", err)
	}
	want := []string{ns1 + ":100", ns2 + ":100", ns1 + ":101", ns1 + ":102", ns2 + ":102", ns1 + ":101"}
	if got := fc.CallCodes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %v", got)
	}

	// One nameserver down: the other still gets the update; the error names the dead one.
	fc.Down[ns1] = true
	err := c.UpdateNamesrvConfig(ctx, map[string]string{"orderMessageEnable": "true"})
	if err == nil || !strings.Contains(err.Error(), "UPDATE_NAMESRV_CONFIG to "+ns1) {
		t.Fatalf("got %v", err)
	}
	if fc.NamesrvConfig[ns2]["orderMessageEnable"] != "true" {
		t.Fatal("ns2 not updated")
	}
	if _, err := c.GetNamesrvConfig(ctx); err == nil {
		t.Fatal("want error with a dead nameserver")
	}
	delete(fc.Down, ns1)
	cfgs, err := c.GetNamesrvConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 || cfgs[0].Addr != ns1 || cfgs[1].Addr != ns2 {
		t.Fatalf("got %+v", cfgs)
	}
	if v, _ := cfgs[1].Config.Get("orderMessageEnable"); v != "true" {
		t.Fatalf("got %+v", cfgs[1])
	}
	err = c.UpdateNamesrvConfig(ctx, map[string]string{"configStorePath": "/x"})
	if !admin.IsCode(err, code.NoPermission) {
		t.Fatalf("got %v", err)
	}
}

func TestWritePerm(t *testing.T) {
	fc, c := fixture(t)
	ctx := context.Background()
	if _, err := c.CreateTopicInCluster(ctx, "C", protocol.NewTopicConfig("T"), ""); err != nil {
		t.Fatal(err)
	}
	res, err := c.WipeWritePerm(ctx, "broker-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].NameServer != ns1 || res[0].Count != 1 || res[1].Count != 1 {
		t.Fatalf("got %+v", res)
	}
	r, err := c.GetTopicRoute(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range r.QueueDatas {
		if q.BrokerName == "broker-a" && q.Perm != 4 {
			t.Fatalf("perm %d", q.Perm)
		}
	}
	fc.Down[ns2] = true
	res, err = c.AddWritePerm(ctx, "broker-a")
	if err == nil || res[0].Err != nil || res[1].Err == nil || res[0].Count != 1 {
		t.Fatalf("got %+v %v", res, err)
	}
}

func TestBrokerConfig(t *testing.T) {
	fc, c := fixture(t)
	ctx := context.Background()
	fc.Override = func(addr string, req *remoting.Command) (*remoting.Command, bool) {
		if req.Code != code.GetBrokerConfig {
			return nil, false
		}
		resp := remoting.NewResponse(req, code.Success, "")
		resp.Body = []byte("#comment\nbrokerName=broker-a\nstorePathRootDir=C\\:\\\\data\nmsg = hello \\\n   world\n")
		return resp, true
	}
	p, err := c.GetBrokerConfig(ctx, ba0)
	if err != nil {
		t.Fatal(err)
	}
	want := admin.Properties{{Key: "brokerName", Value: "broker-a"}, {Key: "storePathRootDir", Value: `C:\data`}, {Key: "msg", Value: "hello world"}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %q", p)
	}
	fc.Override = nil
	if err := c.UpdateBrokerConfig(ctx, ba0, map[string]string{"brokerPermission": "8"}); err == nil || err.Error() != "brokerPermission value: 8 is invalid." {
		t.Fatalf("got %v", err)
	}
	n := len(fc.Calls())
	if err := c.UpdateBrokerConfig(ctx, ba0, map[string]string{"brokerPermission": "4", "flushDiskType": "SYNC_FLUSH"}); err != nil {
		t.Fatal(err)
	}
	calls := fc.Calls()
	if len(calls) != n+1 || calls[n].Body != "brokerPermission=4\nflushDiskType=SYNC_FLUSH\n" {
		t.Fatalf("got %+v", calls[n:])
	}
}

func TestPropertiesRoundTrip(t *testing.T) {
	m := map[string]string{"a b": "x=y", "path": `C:\dir`, "lead": " sp", "nl": "1\n2", "k:1": "#v"}
	text := admin.FormatProperties(m)
	got := admin.ParseProperties(text).Map()
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("text %q\nparsed %q", text, got)
	}
	p := admin.ParseProperties("a=1\n! c\n  b : 2\nc\td\\u0041\nempty\na=3\n")
	want := admin.Properties{{Key: "a", Value: "3"}, {Key: "b", Value: "2"}, {Key: "c", Value: "dA"}, {Key: "empty", Value: ""}}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got %q", p)
	}
}

func TestClusterHelpers(t *testing.T) {
	fc, _ := fixture(t)
	fc.AddBroker("C", "broker-c", 1, "10.0.0.9:10911") // slave without master
	ci := fc.ClusterInfo()
	if got, _ := admin.MasterAddrs(&ci, "C"); !reflect.DeepEqual(got, []string{ba0, bb0}) {
		t.Fatalf("masters %v", got)
	}
	if got, _ := admin.MasterAndSlaveAddrs(&ci, "C"); !reflect.DeepEqual(got, []string{ba0, ba1, bb0, "10.0.0.9:10911"}) {
		t.Fatalf("all %v", got)
	}
	ms, _ := admin.MasterAndSlaves(&ci, "C")
	want := []admin.MasterSlaves{{Master: ba0, Slaves: []string{ba1}}, {Master: bb0}, {Master: admin.NoMasterPlaceholder, Slaves: []string{"10.0.0.9:10911"}}}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("groups %+v", ms)
	}
	if n, err := admin.BrokerNameByAddr(&ci, ba1); n != "broker-a" || err != nil {
		t.Fatalf("%s %v", n, err)
	}
	if _, err := admin.MasterAddrs(&ci, "X"); !errors.Is(err, admin.ErrClusterNotFound) {
		t.Fatalf("got %v", err)
	}
	if admin.ClusterOfBroker(&ci, "broker-b") != "C" || !slices.Equal(admin.ClusterNames(&ci), []string{"C"}) {
		t.Fatal("cluster of broker")
	}
}

// TestOverRemoting runs the client against the fake served by a real
// remoting.Server over TCP.
func TestOverRemoting(t *testing.T) {
	fc := admintest.New()
	srv, err := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, srv, 2*time.Second, t.Logf)
	addr := srv.Addr()
	// The same server plays the nameserver and the broker.
	fc.NameServers = []string{addr}
	fc.NamesrvConfig[addr] = map[string]string{}
	srv.RegisterDefault(fc.Handler(addr), nil)

	c, err := admin.New(admin.Config{NameServers: []string{addr}, Timeout: 3 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil || len(ci.BrokerAddrTable) != 0 {
		t.Fatalf("%+v %v", ci, err)
	}
	_, err = c.GetTopicRoute(ctx, "T")
	if !admin.IsCode(err, code.TopicNotExist) {
		t.Fatalf("got %v", err)
	}
	if err := c.PutKVConfig(ctx, "n", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetKVConfig(ctx, "n", "k"); v != "v" || err != nil {
		t.Fatalf("%q %v", v, err)
	}
	// Unreachable address: a transport error naming the request.
	c2, _ := admin.New(admin.Config{NameServers: []string{"127.0.0.1:1"}, Timeout: time.Second}, nil)
	defer c2.Close()
	if _, err := c2.GetBrokerClusterInfo(ctx); err == nil || !strings.HasPrefix(err.Error(), "GET_BROKER_CLUSTER_INFO to 127.0.0.1:1: ") {
		t.Fatalf("got %v", err)
	}
}
