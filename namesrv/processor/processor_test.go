package processor

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/namesrv/kvconfig"
	"github.com/rmqgo/rmq/namesrv/routeinfo"
)

type fixture struct {
	p       *Processor
	routes  *routeinfo.Manager
	kv      *kvconfig.Store
	cfg     *nsconfig.Store
	clk     *testutil.FakeClock
	updated []*nsconfig.Config
}

func newFixture(t testing.TB, mutate func(*nsconfig.Config)) *fixture {
	t.Helper()
	c := nsconfig.Default()
	c.DataDir = t.TempDir()
	c.Resolve("")
	if mutate != nil {
		mutate(&c)
	}
	kv, err := kvconfig.Open(c.KVConfigPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{kv: kv, cfg: nsconfig.NewStore(c), clk: testutil.NewFakeClock(time.UnixMilli(1_700_000_000_000))}
	f.routes = routeinfo.New(routeinfo.Options{Clock: f.clk.Now})
	f.p = New(Options{Config: f.cfg, Routes: f.routes, KV: kv, Clock: f.clk.Now,
		OnConfigUpdate: func(n *nsconfig.Config) { f.updated = append(f.updated, n) }})
	return f
}

func (f *fixture) call(t *testing.T, c int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	req := remoting.NewRequest(c, ext, body)
	req.Opaque = 42
	resp, err := f.p.Handle(context.Background(), nil, req)
	if err != nil {
		t.Fatalf("code %d: error %v", c, err)
	}
	if resp == nil || resp.Opaque != 42 || !resp.IsResponse() {
		t.Fatalf("code %d: bad response %+v", c, resp)
	}
	return resp
}

func (f *fixture) expect(t *testing.T, c int32, ext map[string]string, body []byte, want int32) *remoting.Command {
	t.Helper()
	resp := f.call(t, c, ext, body)
	if resp.Code != want {
		t.Fatalf("code %d: got response %d (%q), want %d", c, resp.Code, resp.Remark, want)
	}
	return resp
}

func brokerExt(cluster, name, addr string, id int) map[string]string {
	return map[string]string{"clusterName": cluster, "brokerName": name, "brokerAddr": addr, "brokerId": fmt.Sprint(id),
		"haServerAddr": addr + "-ha", "enableActingMaster": "false", "compressed": "false", "bodyCrc32": "0"}
}

func regBody(counter int64, topics ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":%d,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{`, counter)
	for i, t := range topics {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%s":{"attributes":{},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"%s","topicSysFlag":0,"writeQueueNums":8}`, t, t)
	}
	b.WriteString(`},"topicQueueMappingInfoMap":{},"topicQueueMappingDetailMap":{},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":0}}}`)
	return []byte(b.String())
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := protocol.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
	return v
}

func TestMissingFieldsAreInvalidParameter(t *testing.T) {
	f := newFixture(t, nil)
	full := brokerExt("C", "a", "a:1", 0)
	without := func(m map[string]string, key string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if k != key {
				out[k] = v
			}
		}
		return out
	}
	cases := []struct {
		name  string
		code  int32
		ext   map[string]string
		field string
	}{
		{"put kv without namespace", code.PutKVConfig, map[string]string{"key": "k", "value": "v"}, "namespace"},
		{"put kv without key", code.PutKVConfig, map[string]string{"namespace": "n", "value": "v"}, "key"},
		{"put kv without value", code.PutKVConfig, map[string]string{"namespace": "n", "key": "k"}, "value"},
		{"get kv without key", code.GetKVConfig, map[string]string{"namespace": "n"}, "key"},
		{"delete kv without namespace", code.DeleteKVConfig, map[string]string{"key": "k"}, "namespace"},
		{"kv list without namespace", code.GetKVListByNamespace, nil, "namespace"},
		{"register without brokerName", code.RegisterBroker, without(full, "brokerName"), "brokerName"},
		{"register without brokerAddr", code.RegisterBroker, without(full, "brokerAddr"), "brokerAddr"},
		{"register without clusterName", code.RegisterBroker, without(full, "clusterName"), "clusterName"},
		{"register without brokerId", code.RegisterBroker, without(full, "brokerId"), "brokerId"},
		{"register without haServerAddr", code.RegisterBroker, without(full, "haServerAddr"), "haServerAddr"},
		{"register with bad brokerId", code.RegisterBroker, merge(full, "brokerId", "x"), "brokerId"},
		{"register with bad timeout", code.RegisterBroker, merge(full, "heartbeatTimeoutMillis", "soon"), "heartbeatTimeoutMillis"},
		{"unregister without brokerId", code.UnregisterBroker, without(full, "brokerId"), "brokerId"},
		{"heartbeat without brokerAddr", code.BrokerHeartbeat, without(full, "brokerAddr"), "brokerAddr"},
		{"query data version without clusterName", code.QueryDataVersion, without(full, "clusterName"), "clusterName"},
		{"route without topic", code.GetRouteInfoByTopic, nil, "topic"},
		{"wipe without brokerName", code.WipeWritePermOfBroker, nil, "brokerName"},
		{"add perm without brokerName", code.AddWritePermOfBroker, nil, "brokerName"},
		{"delete topic without topic", code.DeleteTopicInNamesrv, map[string]string{"clusterName": "C"}, "topic"},
		{"register topic without topic", code.RegisterTopicInNamesrv, nil, "topic"},
		{"topics by cluster without cluster", code.GetTopicsByCluster, nil, "cluster"},
		{"member group without brokerName", code.GetBrokerMemberGroup, map[string]string{"clusterName": "C"}, "brokerName"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.expect(t, tc.code, tc.ext, nil, code.InvalidParameter)
			if !strings.Contains(resp.Remark, "<"+tc.field+">") {
				t.Fatalf("remark %q does not name %s", resp.Remark, tc.field)
			}
		})
	}
	// A boolean reads as Java's Boolean.parseBoolean reads it: "maybe" is
	// false, not an error (the C++ client writes "0" and "1").
	t.Run("register with compressed maybe", func(t *testing.T) {
		f.expect(t, code.RegisterBroker, merge(full, "compressed", "maybe"), nil, code.Success)
	})
}

func merge(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for kk, vv := range m {
		if kk != k {
			out[kk] = vv
		}
	}
	return out
}

func TestBadBodiesNeverPanic(t *testing.T) {
	f := newFixture(t, nil)
	ext := brokerExt("C", "a", "a:1", 0)
	bodies := map[string][]byte{
		"not json":       []byte("{not json"),
		"wrong type":     []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"rw"}}}}`),
		"truncated":      regBody(1, "T")[:40],
		"array":          []byte(`[1,2,3]`),
		"null table val": []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":null}}}`),
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			resp := f.call(t, code.RegisterBroker, ext, body)
			if name == "null table val" {
				if resp.Code != code.Success {
					t.Fatalf("null topic config: %d %q", resp.Code, resp.Remark)
				}
				return
			}
			if resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "RegisterBrokerBody") {
				t.Fatalf("got %d %q", resp.Code, resp.Remark)
			}
		})
	}
	cext := merge(ext, "compressed", "true")
	for name, body := range map[string][]byte{
		"not zlib":  []byte("hello"),
		"truncated": compressBody(t, protocol.DataVersion{Counter: 1}, []string{"T 8 8 6 SINGLE_TAG {}"}, nil, true)[:20],
		"bad topic": compressBody(t, protocol.DataVersion{Counter: 1}, []string{"T 8 x 6 SINGLE_TAG"}, nil, false),
		"bad type":  compressBody(t, protocol.DataVersion{Counter: 1}, []string{"T 8 8 6 NOPE"}, nil, false),
	} {
		t.Run("compressed "+name, func(t *testing.T) {
			resp := f.call(t, code.RegisterBroker, cext, body)
			if resp.Code != code.InvalidParameter || !strings.Contains(resp.Remark, "compressed body") {
				t.Fatalf("got %d %q", resp.Code, resp.Remark)
			}
		})
	}
	f.expect(t, code.QueryDataVersion, ext, []byte("{"), code.InvalidParameter)
	f.expect(t, code.QueryDataVersion, ext, nil, code.InvalidParameter)
	f.expect(t, code.RegisterTopicInNamesrv, map[string]string{"topic": "T"}, []byte("]"), code.InvalidParameter)
	f.expect(t, code.RegisterTopicInNamesrv, map[string]string{"topic": "T"}, nil, code.InvalidParameter)
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("a=\\u12"), code.InvalidParameter)
}

func TestRegisterRouteUnregisterFlow(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.expect(t, code.RegisterBroker, brokerExt("DefaultCluster", "broker-a", "10.0.0.1:10911", 0), regBody(1, "TopicTest", "Other"), code.Success)
	if len(resp.ExtFields) != 0 || resp.Body != nil {
		t.Fatalf("master response carries %v / %s", resp.ExtFields, resp.Body)
	}
	resp = f.expect(t, code.RegisterBroker, brokerExt("DefaultCluster", "broker-a", "10.0.0.2:10911", 1), regBody(1, "TopicTest", "Other"), code.Success)
	if resp.Ext("masterAddr") != "10.0.0.1:10911" || resp.Ext("haServerAddr") != "10.0.0.1:10911-ha" {
		t.Fatalf("slave response ext %v", resp.ExtFields)
	}

	resp = f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil, code.Success)
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`
	if string(resp.Body) != want {
		t.Fatalf("route\n got %s\nwant %s", resp.Body, want)
	}
	resp = f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "Nope"}, nil, code.TopicNotExist)
	if resp.Remark != "No topic route info in name server for the topic: Nope" {
		t.Fatalf("remark %q", resp.Remark)
	}

	ci := decode[protocol.ClusterInfo](t, f.expect(t, code.GetBrokerClusterInfo, nil, nil, code.Success).Body)
	if !reflect.DeepEqual(ci.ClusterAddrTable, map[string][]string{"DefaultCluster": {"broker-a"}}) || len(ci.BrokerAddrTable["broker-a"].BrokerAddrs) != 2 {
		t.Fatalf("cluster info %+v", ci)
	}
	tl := decode[protocol.TopicList](t, f.expect(t, code.GetAllTopicListFromNameserver, nil, nil, code.Success).Body)
	if !reflect.DeepEqual(tl.TopicList, []string{"Other", "TopicTest"}) {
		t.Fatalf("all topics %+v", tl)
	}
	tl = decode[protocol.TopicList](t, f.expect(t, code.GetTopicsByCluster, map[string]string{"cluster": "DefaultCluster"}, nil, code.Success).Body)
	if len(tl.TopicList) != 2 {
		t.Fatalf("by cluster %+v", tl)
	}
	tl = decode[protocol.TopicList](t, f.expect(t, code.GetSystemTopicListFromNS, nil, nil, code.Success).Body)
	if !reflect.DeepEqual(tl.TopicList, []string{"DefaultCluster", "broker-a"}) || tl.BrokerAddr != "10.0.0.1:10911" {
		t.Fatalf("system topics %+v", tl)
	}
	mg := decode[protocol.GetBrokerMemberGroupResponseBody](t, f.expect(t, code.GetBrokerMemberGroup,
		map[string]string{"clusterName": "DefaultCluster", "brokerName": "broker-a"}, nil, code.Success).Body)
	if mg.BrokerMemberGroup.BrokerAddrs[1] != "10.0.0.2:10911" {
		t.Fatalf("member group %+v", mg)
	}

	// QUERY_DATA_VERSION: unchanged for the registered version.
	dv := []byte(`{"counter":1,"stateVersion":0,"timestamp":1700000000000}`)
	resp = f.expect(t, code.QueryDataVersion, brokerExt("DefaultCluster", "broker-a", "10.0.0.1:10911", 0), dv, code.Success)
	if resp.Ext("changed") != "false" || string(resp.Body) != string(dv) {
		t.Fatalf("query data version %v %s", resp.ExtFields, resp.Body)
	}
	resp = f.expect(t, code.QueryDataVersion, brokerExt("DefaultCluster", "broker-a", "10.0.0.1:10911", 0), []byte(`{"counter":2}`), code.Success)
	if resp.Ext("changed") != "true" {
		t.Fatal("changed data version not reported")
	}
	resp = f.expect(t, code.QueryDataVersion, brokerExt("DefaultCluster", "broker-x", "9.9.9.9:1", 0), dv, code.Success)
	if resp.Ext("changed") != "true" || resp.Body != nil {
		t.Fatalf("unknown broker: %v %s", resp.ExtFields, resp.Body)
	}

	for _, addr := range []string{"10.0.0.1:10911", "10.0.0.2:10911"} {
		f.expect(t, code.UnregisterBroker, brokerExt("DefaultCluster", "broker-a", addr, 0), nil, code.Success)
	}
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil, code.TopicNotExist)
}

func TestHeartbeatKeepsBrokerAlive(t *testing.T) {
	f := newFixture(t, nil)
	ext := brokerExt("C", "a", "a:1", 0)
	ext["heartbeatTimeoutMillis"] = "30000"
	f.expect(t, code.RegisterBroker, ext, regBody(1, "T"), code.Success)
	for range 4 {
		f.clk.Advance(20 * time.Second)
		f.expect(t, code.BrokerHeartbeat, brokerExt("C", "a", "a:1", 0), nil, code.Success)
		f.routes.ScanNotActive()
	}
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.Success)
	f.clk.Advance(31 * time.Second)
	f.routes.ScanNotActive()
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.TopicNotExist)
	// A heartbeat from an unknown broker is still answered.
	f.expect(t, code.BrokerHeartbeat, brokerExt("C", "a", "a:1", 0), nil, code.Success)
}

func TestBodyCRC32(t *testing.T) {
	f := newFixture(t, nil)
	body := regBody(1, "T")
	ext := brokerExt("C", "a", "a:1", 0)
	ext["bodyCrc32"] = fmt.Sprint(crc32.ChecksumIEEE(body)&0x7FFFFFFF + 1)
	resp := f.expect(t, code.RegisterBroker, ext, body, code.SystemError)
	if resp.Remark != "crc32 not match" {
		t.Fatalf("remark %q", resp.Remark)
	}
	ext["bodyCrc32"] = fmt.Sprint(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
	f.expect(t, code.RegisterBroker, ext, body, code.Success)
}

// compressBody builds Apache's compressed RegisterBrokerBody.
func compressBody(t *testing.T, dv protocol.DataVersion, topics []string, mappings []protocol.TopicQueueMappingInfo, withMappings bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)
	chunk := func(b []byte) {
		_ = binary.Write(zw, binary.BigEndian, int32(len(b)))
		_, _ = zw.Write(b)
	}
	chunk(protocol.MustMarshal(dv))
	_ = binary.Write(zw, binary.BigEndian, int32(len(topics)))
	for _, tc := range topics {
		chunk([]byte(tc))
	}
	chunk([]byte(`[]`))
	if withMappings {
		_ = binary.Write(zw, binary.BigEndian, int32(len(mappings)))
		for _, m := range mappings {
			// Java writes fastjson's bare numeric keys.
			chunk([]byte(strings.ReplaceAll(string(protocol.MustMarshal(m)), `"0":`, `0:`)))
		}
	}
	_ = zw.Close()
	return buf.Bytes()
}

func TestCompressedRegistration(t *testing.T) {
	f := newFixture(t, nil)
	info := protocol.TopicQueueMappingInfo{Bname: "a", CurrIDMap: map[int]int{0: 0}, Epoch: 7, Scope: protocol.MappingScopeGlobal, Topic: "Static", TotalQueues: 1}
	body := compressBody(t, protocol.DataVersion{Counter: 3, Timestamp: 9},
		[]string{`Plain 4 4 6 SINGLE_TAG {"+message.type":"NORMAL"}`, "Static 1 1 6 SINGLE_TAG", `Spaced 2 2 6 MULTI_TAG {"k":"a b"}`},
		[]protocol.TopicQueueMappingInfo{info}, true)
	ext := brokerExt("C", "a", "a:1", 0)
	ext["compressed"] = "true"
	req := remoting.NewRequest(code.RegisterBroker, ext, body)
	req.Version = 479
	resp, _ := f.p.Handle(context.Background(), nil, req)
	if resp.Code != code.Success {
		t.Fatalf("compressed register: %d %q", resp.Code, resp.Remark)
	}
	rt := decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "Static"}, nil, code.Success).Body)
	if got := rt.TopicQueueMappingByBroker["a"]; got.Epoch != 7 || got.CurrIDMap[0] != 0 {
		t.Fatalf("mapping %+v", rt.TopicQueueMappingByBroker)
	}
	rt = decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "Spaced"}, nil, code.Success).Body)
	if rt.QueueDatas[0].ReadQueueNums != 2 {
		t.Fatalf("Spaced %+v", rt)
	}
	if lb := f.routes.LiveBrokers(); lb[0].DataVersion.Counter != 3 {
		t.Fatalf("data version %+v", lb[0].DataVersion)
	}

	// A pre-5.0 broker's body has no mapping section.
	old := compressBody(t, protocol.DataVersion{Counter: 1}, []string{"Old 4 4 6 SINGLE_TAG"}, nil, false)
	ext = brokerExt("C", "b", "b:1", 0)
	ext["compressed"] = "true"
	req = remoting.NewRequest(code.RegisterBroker, ext, old)
	req.Version = 401
	if resp, _ := f.p.Handle(context.Background(), nil, req); resp.Code != code.Success {
		t.Fatalf("old compressed register: %d %q", resp.Code, resp.Remark)
	}
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "Old"}, nil, code.Success)
}

func TestJavaStyleMappingBody(t *testing.T) {
	f := newFixture(t, nil)
	// As a Java broker sends it: bare numeric keys in currIdMap.
	body := `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1},` +
		`"topicConfigTable":{"S":{"perm":6,"readQueueNums":1,"topicName":"S","writeQueueNums":1}},` +
		`"topicQueueMappingInfoMap":{"S":{"bname":"a","currIdMap":{0:0,3:1},"dirty":false,"epoch":1700000001000,"scope":"__global__","topic":"S","totalQueues":4}}}}`
	f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), []byte(body), code.Success)
	resp := f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "S"}, nil, code.Success)
	if !strings.Contains(string(resp.Body), `"topicQueueMappingByBroker":{"a":{"bname":"a","currIdMap":{"0":0,"3":1},"dirty":false,"epoch":1700000001000,"scope":"__global__","topic":"S","totalQueues":4}}`) {
		t.Fatalf("route %s", resp.Body)
	}
	// The topic name inside the config wins over the map key (as in Java).
	body = `{"topicConfigSerializeWrapper":{"dataVersion":{"counter":2},"topicConfigTable":{"key":{"topicName":"D","perm":6,"readQueueNums":2,"writeQueueNums":2}}}}`
	f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), []byte(body), code.Success)
	rt := decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "D"}, nil, code.Success).Body)
	if q := rt.QueueDatas[0]; q.ReadQueueNums != 2 || q.WriteQueueNums != 2 || q.Perm != 6 {
		t.Fatalf("queue data %+v", q)
	}
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "key"}, nil, code.TopicNotExist)
}

func TestKVConfigAndOrderTopics(t *testing.T) {
	f := newFixture(t, func(c *nsconfig.Config) { c.OrderMessageEnable = true })
	ns := kvconfig.NamespaceOrderTopicConfig
	f.expect(t, code.GetKVConfig, map[string]string{"namespace": ns, "key": "T"}, nil, code.QueryNotFound)
	resp := f.expect(t, code.GetKVListByNamespace, map[string]string{"namespace": ns}, nil, code.QueryNotFound)
	if resp.Remark != "No config item, Namespace: "+ns {
		t.Fatalf("remark %q", resp.Remark)
	}
	// No ORDER_TOPIC_CONFIG yet: registration answers without a body.
	if resp := f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), regBody(1, "T", "U"), code.Success); resp.Body != nil {
		t.Fatalf("body %s", resp.Body)
	}
	f.expect(t, code.PutKVConfig, map[string]string{"namespace": ns, "key": "T", "value": "a:8"}, nil, code.Success)
	f.expect(t, code.PutKVConfig, map[string]string{"namespace": "empty", "key": "k", "value": ""}, nil, code.Success)
	if v := f.expect(t, code.GetKVConfig, map[string]string{"namespace": ns, "key": "T"}, nil, code.Success).Ext("value"); v != "a:8" {
		t.Fatalf("value %q", v)
	}
	if v, ok := f.kv.Get("empty", "k"); !ok || v != "" {
		t.Fatal("empty value not stored")
	}
	kvt := decode[protocol.KVTable](t, f.expect(t, code.GetKVListByNamespace, map[string]string{"namespace": ns}, nil, code.Success).Body)
	if !reflect.DeepEqual(kvt.Table, map[string]string{"T": "a:8"}) {
		t.Fatalf("table %+v", kvt)
	}
	resp = f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), regBody(1, "T", "U"), code.Success)
	if string(resp.Body) != `{"table":{"T":"a:8"}}` {
		t.Fatalf("register body %s", resp.Body)
	}
	rt := decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.Success).Body)
	if rt.OrderTopicConf != "a:8" {
		t.Fatalf("orderTopicConf %q", rt.OrderTopicConf)
	}
	rt = decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "U"}, nil, code.Success).Body)
	if rt.OrderTopicConf != "" {
		t.Fatal("orderTopicConf on U")
	}
	f.expect(t, code.DeleteKVConfig, map[string]string{"namespace": ns, "key": "T"}, nil, code.Success)
	f.expect(t, code.DeleteKVConfig, map[string]string{"namespace": "nope", "key": "T"}, nil, code.Success)
	f.expect(t, code.GetKVConfig, map[string]string{"namespace": ns, "key": "T"}, nil, code.QueryNotFound)

	// Persisted: a fresh store sees the data.
	kv2, err := kvconfig.Open(f.kv.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kv2.Get(ns, "T"); ok {
		t.Fatal("deleted key reloaded")
	}
	if v, ok := kv2.Get("empty", "k"); !ok || v != "" {
		t.Fatal("kv not persisted")
	}
}

func TestOrderTopicConfDisabledByDefault(t *testing.T) {
	f := newFixture(t, nil)
	f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), regBody(1, "T"), code.Success)
	f.expect(t, code.PutKVConfig, map[string]string{"namespace": kvconfig.NamespaceOrderTopicConfig, "key": "T", "value": "a:8"}, nil, code.Success)
	body := f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.Success).Body
	if strings.Contains(string(body), "orderTopicConf") {
		t.Fatalf("orderTopicConf sent with orderMessageEnable=false: %s", body)
	}
}

func TestConfigGetAndUpdate(t *testing.T) {
	f := newFixture(t, nil)
	props, err := config.ParseProperties(f.expect(t, code.GetNamesrvConfig, nil, nil, code.Success).Body)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"listenPort": "9876", "scanNotActiveBrokerInterval": "5000", "orderMessageEnable": "false",
		"kvConfigPath": filepath.Join(f.cfg.Get().DataDir, "kvConfig.json"), "enableAllTopicList": "true", "productEnvName": "center"} {
		if props[k] != want {
			t.Errorf("%s = %q, want %q", k, props[k], want)
		}
	}

	for _, body := range []string{"kvConfigPath=/tmp/x", "KVCONFIGPATH=/tmp/x", "configStorePath=/tmp/y", "rocketmqHome=/", "configBlackList=", "dataDir=/x",
		"enableAllTopicList=false\nkvConfigPath=/tmp/x"} {
		resp := f.expect(t, code.UpdateNamesrvConfig, nil, []byte(body), code.NoPermission)
		if !strings.Contains(resp.Remark, "black list") {
			t.Fatalf("%q: remark %q", body, resp.Remark)
		}
	}
	resp := f.expect(t, code.UpdateNamesrvConfig, nil, []byte("noSuchKey=1\nenableAllTopicList=false"), code.NoPermission)
	if !strings.Contains(resp.Remark, "noSuchKey") {
		t.Fatalf("remark %q", resp.Remark)
	}
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("listenPort=abc"), code.InvalidParameter)
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("scanNotActiveBrokerInterval=0"), code.InvalidParameter)
	if !f.cfg.Get().EnableAllTopicList || len(f.updated) != 0 {
		t.Fatal("refused update changed the config")
	}

	// A user-extended black list is honoured too.
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("enableAllTopicList=false\nenableTopicList=false"), code.Success)
	if len(f.updated) != 1 || f.updated[0].EnableAllTopicList {
		t.Fatalf("OnConfigUpdate not called with the new config")
	}
	resp = f.expect(t, code.GetAllTopicListFromNameserver, nil, nil, code.SystemError)
	if resp.Remark != "disable" {
		t.Fatalf("remark %q", resp.Remark)
	}
	for _, c := range []int32{code.GetTopicsByCluster, code.GetUnitTopicList, code.GetHasUnitSubTopicList, code.GetHasUnitSubUnUnitTopicList} {
		f.expect(t, c, map[string]string{"cluster": "C"}, nil, code.SystemError)
	}
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("configBlackList=enableTopicList"), code.NoPermission)
	f.expect(t, code.UpdateNamesrvConfig, nil, nil, code.Success)
}

func TestUserBlackList(t *testing.T) {
	f := newFixture(t, func(c *nsconfig.Config) { c.ConfigBlackList = "configBlackList;listenPort" })
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("listenPort=1"), code.NoPermission)
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("kvConfigPath=/x"), code.NoPermission)
}

func TestWaitForService(t *testing.T) {
	f := newFixture(t, func(c *nsconfig.Config) { c.NeedWaitForService, c.WaitSecondsForService = true, 10 })
	f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), regBody(1, "T"), code.Success)
	resp := f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.SystemError)
	if resp.Remark != "name server not ready" {
		t.Fatalf("remark %q", resp.Remark)
	}
	f.clk.Advance(10 * time.Second)
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.Success)
}

func TestWritePermAndTopicAdmin(t *testing.T) {
	f := newFixture(t, nil)
	f.expect(t, code.RegisterBroker, brokerExt("C1", "a", "a:1", 0), regBody(1, "T", "U"), code.Success)
	f.expect(t, code.RegisterBroker, brokerExt("C2", "b", "b:1", 0), regBody(1, "T"), code.Success)

	resp := f.expect(t, code.WipeWritePermOfBroker, map[string]string{"brokerName": "a"}, nil, code.Success)
	if resp.Ext("wipeTopicCount") != "2" {
		t.Fatalf("wipe ext %v", resp.ExtFields)
	}
	rt := decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "U"}, nil, code.Success).Body)
	if rt.QueueDatas[0].Perm != protocol.PermRead {
		t.Fatalf("perm after wipe %+v", rt.QueueDatas)
	}
	resp = f.expect(t, code.AddWritePermOfBroker, map[string]string{"brokerName": "a"}, nil, code.Success)
	if resp.Ext("addTopicCount") != "2" {
		t.Fatalf("add ext %v", resp.ExtFields)
	}
	resp = f.expect(t, code.WipeWritePermOfBroker, map[string]string{"brokerName": "zzz"}, nil, code.Success)
	if resp.Ext("wipeTopicCount") != "0" {
		t.Fatalf("unknown broker wipe %v", resp.ExtFields)
	}

	// REGISTER_TOPIC_IN_NAMESRV adds queue data on a known broker.
	rd := protocol.TopicRouteData{QueueDatas: []protocol.QueueData{{BrokerName: "b", Perm: 6, ReadQueueNums: 3, WriteQueueNums: 3}}}
	f.expect(t, code.RegisterTopicInNamesrv, map[string]string{"topic": "New"}, protocol.MustMarshal(rd), code.Success)
	rt = decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "New"}, nil, code.Success).Body)
	if rt.QueueDatas[0].ReadQueueNums != 3 || rt.BrokerDatas[0].Cluster != "C2" {
		t.Fatalf("registered topic %+v", rt)
	}
	// An unknown broker is ignored (Apache answers success).
	rd.QueueDatas[0].BrokerName = "ghost"
	f.expect(t, code.RegisterTopicInNamesrv, map[string]string{"topic": "Ghost"}, protocol.MustMarshal(rd), code.Success)
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "Ghost"}, nil, code.TopicNotExist)

	// DELETE_TOPIC_IN_NAMESRV with a cluster removes only that cluster's part.
	f.expect(t, code.DeleteTopicInNamesrv, map[string]string{"topic": "T", "clusterName": "C1"}, nil, code.Success)
	rt = decode[protocol.TopicRouteData](t, f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.Success).Body)
	if len(rt.QueueDatas) != 1 || rt.QueueDatas[0].BrokerName != "b" {
		t.Fatalf("T after cluster delete %+v", rt)
	}
	f.expect(t, code.DeleteTopicInNamesrv, map[string]string{"topic": "T"}, nil, code.Success)
	f.expect(t, code.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil, code.TopicNotExist)
	f.expect(t, code.DeleteTopicInNamesrv, map[string]string{"topic": "never-existed"}, nil, code.Success)
}

func TestUnitTopicLists(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{` +
		`"N":{"topicName":"N","topicSysFlag":0},"U":{"topicName":"U","topicSysFlag":1},"S":{"topicName":"S","topicSysFlag":2},"B":{"topicName":"B","topicSysFlag":3}}}}`
	f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), []byte(body), code.Success)
	for c, want := range map[int32][]string{
		code.GetUnitTopicList:             {"B", "U"},
		code.GetHasUnitSubTopicList:       {"B", "S"},
		code.GetHasUnitSubUnUnitTopicList: {"S"},
	} {
		tl := decode[protocol.TopicList](t, f.expect(t, c, nil, nil, code.Success).Body)
		if !reflect.DeepEqual(tl.TopicList, want) {
			t.Errorf("code %d: %v, want %v", c, tl.TopicList, want)
		}
	}
	// Empty lists encode as [] (never null) for Java's TopicList.
	f2 := newFixture(t, nil)
	if body := f2.expect(t, code.GetUnitTopicList, nil, nil, code.Success).Body; string(body) != `{"topicList":[]}` {
		t.Fatalf("empty list %s", body)
	}
}

func TestUnknownCode(t *testing.T) {
	f := newFixture(t, nil)
	resp := f.expect(t, 12345, nil, nil, code.RequestCodeNotSupported)
	if resp.Remark != " request type 12345 not supported" {
		t.Fatalf("remark %q", resp.Remark)
	}
	if len(f.p.Codes()) != 23 {
		t.Fatalf("codes %v", f.p.Codes())
	}
}

func TestResponsesAreValidJSONForEveryListCode(t *testing.T) {
	f := newFixture(t, nil)
	f.expect(t, code.RegisterBroker, brokerExt("C", "a", "a:1", 0), regBody(1, "T"), code.Success)
	for _, c := range []int32{code.GetBrokerClusterInfo, code.GetAllTopicListFromNameserver, code.GetSystemTopicListFromNS, code.GetUnitTopicList} {
		body := f.expect(t, c, nil, nil, code.Success).Body
		if !json.Valid(body) {
			t.Errorf("code %d: invalid JSON %s", c, body)
		}
	}
}

// TestOurCompressedBodyDecodes: the body our broker sends with
// compressedRegister=true (protocol.EncodeRegisterBodyCompressed) reads back
// as it was written, mappings and attributes included.
func TestOurCompressedBodyDecodes(t *testing.T) {
	info := protocol.TopicQueueMappingInfo{Bname: "a", CurrIDMap: map[int]int{0: 0, 3: 1}, Epoch: 7, Scope: protocol.MappingScopeGlobal, Topic: "Static", TotalQueues: 4}
	in := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigAndMappingSerializeWrapper{
		DataVersion: protocol.DataVersion{Counter: 5, StateVersion: 2, Timestamp: 99},
		TopicConfigTable: map[string]protocol.TopicConfig{
			"Plain":  {TopicName: "Plain", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: protocol.SingleTag, Attributes: map[string]string{"+message.type": "NORMAL"}},
			"Multi":  {TopicName: "Multi", ReadQueueNums: 2, WriteQueueNums: 1, Perm: 4, TopicFilterType: protocol.MultiTag},
			"Static": {TopicName: "Static", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: protocol.SingleTag, Attributes: map[string]string{}},
		},
		TopicQueueMappingInfoMap: map[string]protocol.TopicQueueMappingInfo{"Static": info},
	}}
	body, err := protocol.EncodeRegisterBodyCompressed(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeRegisterBody(body, true, 479)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if out.dataVersion != in.TopicConfigSerializeWrapper.DataVersion {
		t.Errorf("data version %+v", out.dataVersion)
	}
	if len(out.topics) != 3 {
		t.Fatalf("topics %+v", out.topics)
	}
	for name, want := range in.TopicConfigSerializeWrapper.TopicConfigTable {
		got := out.topics[name]
		if got.ReadQueueNums != want.ReadQueueNums || got.WriteQueueNums != want.WriteQueueNums || got.Perm != want.Perm || got.TopicFilterType != want.TopicFilterType {
			t.Errorf("topic %s: got %+v, want %+v", name, got, want)
		}
	}
	if m := out.mappings["Static"]; m.Epoch != 7 || m.CurrIDMap[3] != 1 || m.TotalQueues != 4 {
		t.Errorf("mapping %+v", out.mappings)
	}
	if out.filterServers == nil || len(out.filterServers) != 0 {
		t.Errorf("filter servers %#v", out.filterServers)
	}
}

// TestConfigUpdateWarnsNoEffect: UPDATE_NAMESRV_CONFIG of a key that
// changes nothing is applied and logged as such.
func TestConfigUpdateWarnsNoEffect(t *testing.T) {
	f := newFixture(t, nil)
	var logs testutil.SyncBuffer
	f.p = New(Options{Config: f.cfg, Routes: f.routes, KV: f.kv, Clock: f.clk.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	f.expect(t, code.UpdateNamesrvConfig, nil, []byte("SERVERWORKERTHREADS=4\nenableTopicList=false"), code.Success)
	if f.cfg.Get().ServerWorkerThreads != 4 {
		t.Fatal("serverWorkerThreads not applied")
	}
	if !strings.Contains(logs.String(), `"accepted with no effect: serverWorkerThreads"`) {
		t.Fatalf("no warning naming serverWorkerThreads alone:\n%s", logs.String())
	}
}
