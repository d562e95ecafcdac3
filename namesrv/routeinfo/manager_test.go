package routeinfo

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
)

type fakeConn struct {
	id     uint64
	closed atomic.Bool
}

func (c *fakeConn) ID() uint64   { return c.id }
func (c *fakeConn) Close() error { c.closed.Store(true); return nil }

func newTestManager(t *testing.T) (*Manager, *testutil.FakeClock) {
	t.Helper()
	clk := testutil.NewFakeClock(time.UnixMilli(1_700_000_000_000))
	return New(Options{Clock: clk.Now}), clk
}

func boolp(b bool) *bool { return &b }

func topics(names ...string) map[string]protocol.TopicConfig {
	m := map[string]protocol.TopicConfig{}
	for _, n := range names {
		tc := protocol.NewTopicConfig(n)
		tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
		m[n] = tc
	}
	return m
}

func reg(cluster, name, addr string, id int64, counter int64, tcs map[string]protocol.TopicConfig) Registration {
	return Registration{
		Cluster: cluster, BrokerName: name, BrokerAddr: addr, BrokerID: id, HAServerAddr: addr + "-ha",
		EnableActingMaster: boolp(false),
		DataVersion:        protocol.DataVersion{Counter: counter, Timestamp: 1},
		TopicConfigs:       tcs,
	}
}

func mustRegister(t *testing.T, m *Manager, r Registration) RegisterResult {
	t.Helper()
	return m.RegisterBroker(r)
}

func routeOf(t *testing.T, m *Manager, topic string) protocol.TopicRouteData {
	t.Helper()
	r, ok := m.Route(topic)
	if !ok {
		t.Fatalf("no route for %s", topic)
	}
	return r
}

func TestRegisterRouteUnregister(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C", "broker-a", "10.0.0.1:10911", 0, 1, topics("T1", "T2")))
	mustRegister(t, m, reg("C", "broker-b", "10.0.0.2:10911", 0, 1, topics("T1")))
	res := mustRegister(t, m, reg("C", "broker-a", "10.0.0.3:10911", 1, 1, topics("T1", "T2")))
	if res.MasterAddr != "10.0.0.1:10911" || res.HAServerAddr != "10.0.0.1:10911-ha" {
		t.Fatalf("slave result %+v", res)
	}

	r, ok := m.RouteJSON("T1")
	if !ok {
		t.Fatal("T1 missing")
	}
	want := `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.3:10911"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false},` +
		`{"brokerAddrs":{"0":"10.0.0.2:10911"},"brokerName":"broker-b","cluster":"C","enableActingMaster":false}],"filterServerTable":{},` +
		`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},` +
		`{"brokerName":"broker-b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	if string(r.Bytes()) != want {
		t.Fatalf("route\n got %s\nwant %s", r.Bytes(), want)
	}
	if got := string(protocol.MustMarshal(routeOf(t, m, "T1"))); got != want {
		t.Fatalf("re-marshal differs:\n%s", got)
	}
	if got := m.AllTopics(); !reflect.DeepEqual(got, []string{"T1", "T2"}) {
		t.Fatalf("topics %v", got)
	}
	ci := m.ClusterInfo()
	if !reflect.DeepEqual(ci.ClusterAddrTable["C"], []string{"broker-a", "broker-b"}) || len(ci.BrokerAddrTable["broker-a"].BrokerAddrs) != 2 {
		t.Fatalf("cluster info %+v", ci)
	}

	// Removing broker-b: T1 keeps broker-a only.
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "10.0.0.2:10911", BrokerName: "broker-b"})
	if r := routeOf(t, m, "T1"); len(r.BrokerDatas) != 1 || len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "broker-a" {
		t.Fatalf("after unregister b: %+v", r)
	}
	// Removing broker-a's master leaves the slave: topics stay.
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "10.0.0.1:10911", BrokerName: "broker-a"})
	if r := routeOf(t, m, "T2"); !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, map[int64]string{1: "10.0.0.3:10911"}) {
		t.Fatalf("after master gone: %+v", r)
	}
	// And the last address: everything goes.
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "10.0.0.3:10911", BrokerName: "broker-a", BrokerID: 1})
	for _, topic := range []string{"T1", "T2"} {
		if _, ok := m.RouteJSON(topic); ok {
			t.Fatalf("%s still routed", topic)
		}
	}
	if n := m.TopicCount(); n != 0 {
		t.Fatalf("%d topics left", n)
	}
	if ci := m.ClusterInfo(); len(ci.BrokerAddrTable) != 0 || len(ci.ClusterAddrTable) != 0 {
		t.Fatalf("cluster info left %+v", ci)
	}
}

func TestExpiryUsesPerBrokerTimeout(t *testing.T) {
	m, clk := newTestManager(t)
	ca, cb := &fakeConn{id: 1}, &fakeConn{id: 2}
	ra := reg("C", "broker-a", "a:1", 0, 1, topics("TA"))
	ra.Conn = ca
	mustRegister(t, m, ra)
	rb := reg("C", "broker-b", "b:1", 0, 1, topics("TB"))
	rb.Conn, rb.Timeout = cb, 10*time.Second
	mustRegister(t, m, rb)

	clk.Advance(11 * time.Second)
	if n := m.ScanNotActive(); n != 1 {
		t.Fatalf("expired %d, want 1", n)
	}
	if !cb.closed.Load() || ca.closed.Load() {
		t.Fatal("wrong connection closed")
	}
	if _, ok := m.RouteJSON("TB"); ok {
		t.Fatal("TB survived its broker")
	}
	// Heartbeats keep broker-a alive past the default 120 s.
	for range 3 {
		clk.Advance(60 * time.Second)
		if !m.Touch("C", "a:1") {
			t.Fatal("touch failed")
		}
		m.ScanNotActive()
	}
	if _, ok := m.RouteJSON("TA"); !ok {
		t.Fatal("TA expired despite heartbeats")
	}
	// A data-version query also counts as a sign of life.
	clk.Advance(100 * time.Second)
	if changed, ours := m.QueryDataVersion("C", "a:1", ra.DataVersion); changed || ours == nil {
		t.Fatalf("query data version: changed=%v ours=%v", changed, ours)
	}
	clk.Advance(100 * time.Second)
	m.ScanNotActive()
	if _, ok := m.RouteJSON("TA"); !ok {
		t.Fatal("TA expired although queried 100 s ago")
	}
	clk.Advance(21 * time.Second)
	m.ScanNotActive()
	if _, ok := m.RouteJSON("TA"); ok || !ca.closed.Load() {
		t.Fatal("TA should be gone after 121 s of silence")
	}
	if changed, ours := m.QueryDataVersion("C", "a:1", ra.DataVersion); !changed || ours != nil {
		t.Fatal("expired broker still known")
	}
}

func TestConnClosedRemovesItsBrokers(t *testing.T) {
	m, _ := newTestManager(t)
	c1, c2 := &fakeConn{id: 7}, &fakeConn{id: 8}
	r := reg("C", "broker-a", "a:1", 0, 1, topics("T", "OnlyA"))
	r.Conn = c1
	mustRegister(t, m, r)
	r = reg("C", "broker-a", "a:2", 1, 1, topics("T", "OnlyA"))
	r.Conn = c1 // one connection may carry several registrations
	mustRegister(t, m, r)
	r = reg("C", "broker-b", "b:1", 0, 1, topics("T"))
	r.Conn = c2
	mustRegister(t, m, r)

	if n := m.ConnClosed(7); n != 2 {
		t.Fatalf("unregistered %d, want 2", n)
	}
	if _, ok := m.RouteJSON("OnlyA"); ok {
		t.Fatal("OnlyA survived")
	}
	if rt := routeOf(t, m, "T"); len(rt.BrokerDatas) != 1 || rt.BrokerDatas[0].BrokerName != "broker-b" {
		t.Fatalf("T route %+v", rt)
	}
	if n := m.ConnClosed(99); n != 0 {
		t.Fatal("unknown connection removed something")
	}
}

func TestReregisterOnNewConnectionSurvivesOldClose(t *testing.T) {
	m, _ := newTestManager(t)
	r := reg("C", "broker-a", "a:1", 0, 1, topics("T"))
	r.Conn = &fakeConn{id: 1}
	mustRegister(t, m, r)
	r.Conn = &fakeConn{id: 2} // broker reconnected and re-registered
	mustRegister(t, m, r)
	m.ConnClosed(1)
	if _, ok := m.RouteJSON("T"); !ok {
		t.Fatal("closing the stale connection removed the live registration")
	}
}

func TestDataVersionGatesTopicRebuild(t *testing.T) {
	m, _ := newTestManager(t)
	tcs := topics("T")
	mustRegister(t, m, reg("C", "a", "a:1", 0, 1, tcs))
	if n := m.WipeWritePerm("a"); n != 1 {
		t.Fatalf("wiped %d", n)
	}
	// Same data version: the wiped perm stays (Apache: no rebuild).
	mustRegister(t, m, reg("C", "a", "a:1", 0, 1, tcs))
	if p := routeOf(t, m, "T").QueueDatas[0].Perm; p != protocol.PermRead {
		t.Fatalf("perm %d after same-version registration", p)
	}
	// New topics are still added without a version change.
	mustRegister(t, m, reg("C", "a", "a:1", 0, 1, topics("T", "U")))
	routeOf(t, m, "U")
	// A new data version rebuilds.
	mustRegister(t, m, reg("C", "a", "a:1", 0, 2, tcs))
	if p := routeOf(t, m, "T").QueueDatas[0].Perm; p != 6 {
		t.Fatalf("perm %d after new version", p)
	}
	if n := m.AddWritePerm("a"); n != 2 {
		t.Fatalf("add perm touched %d", n)
	}
	if n := m.WipeWritePerm("nope"); n != 0 {
		t.Fatal("unknown broker wiped")
	}
}

func TestSlaveDoesNotWriteTopics(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics("T")))
	// An old-version slave (no enableActingMaster header) never writes
	// topics; neither does a slave when the master is present.
	r := reg("C", "a", "a:1", 1, 5, topics("T", "SlaveOnly"))
	r.EnableActingMaster = nil
	mustRegister(t, m, r)
	if _, ok := m.RouteJSON("SlaveOnly"); ok {
		t.Fatal("slave registration created a topic")
	}
	// Without a master the new-version slave with the smallest id is the
	// prime slave and writes topics; acting-master mode drops write perm.
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "a:0", BrokerName: "a"})
	r = reg("C", "a", "a:2", 2, 1, topics("Prime"))
	r.EnableActingMaster = boolp(true)
	mustRegister(t, m, r)
	mustRegister(t, m, func() Registration {
		r := reg("C", "a", "a:1", 1, 6, topics("Prime"))
		r.EnableActingMaster = boolp(true)
		return r
	}())
	if p := routeOf(t, m, "Prime").QueueDatas[0].Perm; p != protocol.PermRead {
		t.Fatalf("prime slave perm %d", p)
	}
}

func TestActingMasterRoute(t *testing.T) {
	clk := testutil.NewFakeClock(time.UnixMilli(1))
	m := New(Options{Clock: clk.Now, Policy: Policy{SupportActingMaster: true}})
	r := reg("C", "a", "a:0", 0, 1, topics("T"))
	r.EnableActingMaster = boolp(true)
	mustRegister(t, m, r)
	r = reg("C", "a", "a:1", 1, 1, topics("T"))
	r.EnableActingMaster = boolp(true)
	mustRegister(t, m, r)
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "a:0", BrokerName: "a"})
	rt := routeOf(t, m, "T")
	if rt.QueueDatas[0].Perm&protocol.PermWrite != 0 {
		t.Fatalf("write perm kept without master: %+v", rt.QueueDatas)
	}
	if !reflect.DeepEqual(rt.BrokerDatas[0].BrokerAddrs, map[int64]string{0: "a:1"}) {
		t.Fatalf("acting master not promoted in route: %+v", rt.BrokerDatas)
	}
	// The stored broker data is unchanged.
	if bd, _ := m.Broker("a"); !reflect.DeepEqual(bd.BrokerAddrs, map[int64]string{1: "a:1"}) {
		t.Fatalf("stored addrs %+v", bd.BrokerAddrs)
	}
}

func TestSingleTopicFirstRegistrationAccepted(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics("T")))
	routeOf(t, m, "T")
}

func TestAddressConflictByStateVersion(t *testing.T) {
	m, _ := newTestManager(t)
	r := reg("C", "a", "a:0", 0, 1, topics("T", "U"))
	r.DataVersion.StateVersion = 5
	mustRegister(t, m, r)
	r2 := reg("C", "a", "a:9", 0, 1, topics("T", "U"))
	r2.DataVersion.StateVersion = 3
	mustRegister(t, m, r2)
	if bd, _ := m.Broker("a"); bd.BrokerAddrs[0] != "a:0" {
		t.Fatalf("older state version replaced the master: %+v", bd)
	}
	r2.DataVersion.StateVersion = 6
	mustRegister(t, m, r2)
	if bd, _ := m.Broker("a"); bd.BrokerAddrs[0] != "a:9" {
		t.Fatalf("newer state version did not replace the master: %+v", bd)
	}
}

func TestSlavePromotedKeepsOneIDPerAddress(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics("T", "U")))
	mustRegister(t, m, reg("C", "a", "a:1", 1, 1, topics("T", "U")))
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "a:0", BrokerName: "a"})
	mustRegister(t, m, reg("C", "a", "a:1", 0, 2, topics("T", "U")))
	if bd, _ := m.Broker("a"); !reflect.DeepEqual(bd.BrokerAddrs, map[int64]string{0: "a:1"}) {
		t.Fatalf("addrs %+v", bd.BrokerAddrs)
	}
}

func TestDeleteTopic(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C1", "a", "a:0", 0, 1, topics("T", "U")))
	mustRegister(t, m, reg("C2", "b", "b:0", 0, 1, topics("T", "U")))
	if !m.DeleteTopic("T", "C1") {
		t.Fatal("nothing deleted")
	}
	if rt := routeOf(t, m, "T"); len(rt.QueueDatas) != 1 || rt.QueueDatas[0].BrokerName != "b" {
		t.Fatalf("T after cluster delete: %+v", rt)
	}
	if m.DeleteTopic("T", "nope") {
		t.Fatal("unknown cluster deleted something")
	}
	m.DeleteTopic("T", "C2")
	if _, ok := m.RouteJSON("T"); ok {
		t.Fatal("T survived")
	}
	m.DeleteTopic("U", "")
	if _, ok := m.RouteJSON("U"); ok {
		t.Fatal("U survived")
	}
	if got := m.TopicsByCluster("C1"); len(got) != 0 {
		t.Fatalf("C1 topics %v", got)
	}
}

func TestRegisterTopic(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics("X", "Y")))
	if err := m.RegisterTopic("T", []protocol.QueueData{{BrokerName: "zzz", Perm: 6}}); err == nil {
		t.Fatal("unknown broker accepted")
	}
	if err := m.RegisterTopic("T", []protocol.QueueData{{BrokerName: "a", Perm: 6, ReadQueueNums: 2, WriteQueueNums: 2}}); err != nil {
		t.Fatal(err)
	}
	if rt := routeOf(t, m, "T"); rt.QueueDatas[0].ReadQueueNums != 2 {
		t.Fatalf("%+v", rt)
	}
}

func TestDeleteTopicWithBrokerRegistration(t *testing.T) {
	clk := testutil.NewFakeClock(time.UnixMilli(1))
	m := New(Options{Clock: clk.Now, Policy: Policy{DeleteTopicWithBrokerRegistration: true}})
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics("T", "U")))
	mustRegister(t, m, reg("C", "b", "b:0", 0, 1, topics("U")))
	mustRegister(t, m, reg("C", "a", "a:0", 0, 2, topics("T", "V")))
	if rt := routeOf(t, m, "U"); len(rt.QueueDatas) != 1 || rt.QueueDatas[0].BrokerName != "b" {
		t.Fatalf("U %+v", rt)
	}
	routeOf(t, m, "V")
}

func mapping(topic, bname string, epoch int64, curr map[int]int) protocol.TopicQueueMappingInfo {
	return protocol.TopicQueueMappingInfo{Bname: bname, CurrIDMap: curr, Epoch: epoch, Scope: protocol.MappingScopeGlobal, Topic: topic, TotalQueues: 2}
}

func TestStaticTopicMappingEpochs(t *testing.T) {
	m, _ := newTestManager(t)
	ra := reg("C", "a", "a:0", 0, 1, topics("S", "N"))
	ra.MappingInfos = map[string]protocol.TopicQueueMappingInfo{"S": mapping("S", "a", 100, map[int]int{0: 0})}
	mustRegister(t, m, ra)
	rb := reg("C", "b", "b:0", 0, 1, topics("S", "N"))
	rb.MappingInfos = map[string]protocol.TopicQueueMappingInfo{"S": mapping("S", "b", 100, map[int]int{1: 0})}
	mustRegister(t, m, rb)

	rt := routeOf(t, m, "S")
	if len(rt.TopicQueueMappingByBroker) != 2 || rt.TopicQueueMappingByBroker["b"].CurrIDMap[1] != 0 {
		t.Fatalf("mappings %+v", rt.TopicQueueMappingByBroker)
	}
	if strings.Contains(string(must(m.RouteJSON("N")).Bytes()), "topicQueueMappingByBroker") {
		t.Fatal("normal topic has mappings")
	}

	// A remapping moves logic queue 0 to b with epoch 200.
	rb.DataVersion.Counter = 2
	rb.MappingInfos = map[string]protocol.TopicQueueMappingInfo{"S": mapping("S", "b", 200, map[int]int{0: 1, 1: 0})}
	mustRegister(t, m, rb)
	// A late registration carrying the old epoch must not undo it.
	rb.DataVersion.Counter = 3
	rb.MappingInfos = map[string]protocol.TopicQueueMappingInfo{"S": mapping("S", "b", 100, map[int]int{1: 0})}
	mustRegister(t, m, rb)
	if info, _ := m.Mapping("S", "b"); info.Epoch != 200 || len(info.CurrIDMap) != 2 {
		t.Fatalf("stale epoch overwrote: %+v", info)
	}
	// An equal or newer epoch replaces.
	rb.MappingInfos = map[string]protocol.TopicQueueMappingInfo{"S": mapping("S", "b", 300, map[int]int{0: 1})}
	mustRegister(t, m, rb)
	if info, _ := m.Mapping("S", "b"); info.Epoch != 300 {
		t.Fatalf("newer epoch ignored: %+v", info)
	}
	if got := routeOf(t, m, "S").TopicQueueMappingByBroker["b"].Epoch; got != 300 {
		t.Fatalf("route shows epoch %d (stale cache?)", got)
	}

	// Broker a re-registers S without a mapping: S is normal on a now.
	ra.DataVersion.Counter = 2
	ra.MappingInfos = nil
	mustRegister(t, m, ra)
	if _, ok := m.Mapping("S", "a"); ok {
		t.Fatal("mapping of a kept after a registration without it")
	}
	// Unregistering b drops its mapping; deleting the topic drops the rest.
	ra.DataVersion.Counter = 3
	ra.MappingInfos = map[string]protocol.TopicQueueMappingInfo{"S": mapping("S", "a", 400, map[int]int{})}
	mustRegister(t, m, ra)
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "b:0", BrokerName: "b"})
	if _, ok := m.Mapping("S", "b"); ok {
		t.Fatal("mapping of unregistered broker kept")
	}
	m.DeleteTopic("S", "")
	if _, ok := m.Mapping("S", "a"); ok {
		t.Fatal("mapping kept after topic deletion")
	}
	// Re-created as a normal topic, S must not look static.
	ra.DataVersion.Counter = 4
	ra.MappingInfos = nil
	mustRegister(t, m, ra)
	if rt := routeOf(t, m, "S"); rt.TopicQueueMappingByBroker != nil {
		t.Fatalf("re-created topic has mappings %+v", rt.TopicQueueMappingByBroker)
	}
}

func must(r EncodedRoute, ok bool) EncodedRoute {
	if !ok {
		panic("no route")
	}
	return r
}

func TestRouteEncodingMatchesMarshal(t *testing.T) {
	m, _ := newTestManager(t)
	r := reg("Clu\"ster", "broker-ü", "10.0.0.1:10911", 0, 1, topics("T"))
	r.ZoneName = "zone<1>"
	r.FilterServers = []string{"10.0.0.1:3000"}
	r.MappingInfos = map[string]protocol.TopicQueueMappingInfo{"T": mapping("T", "broker-ü", 5, map[int]int{0: 0, 10: 3, 2: 1})}
	mustRegister(t, m, r)
	for id := int64(1); id <= 11; id++ {
		s := reg("Clu\"ster", "broker-ü", fmt.Sprintf("10.0.0.%d:10911", id+1), id, 1, topics("T"))
		s.ZoneName = "zone<1>"
		mustRegister(t, m, s)
	}
	enc := must(m.RouteJSON("T"))
	var rt protocol.TopicRouteData
	if err := protocol.Unmarshal(enc.Bytes(), &rt); err != nil {
		t.Fatal(err)
	}
	if got := string(protocol.MustMarshal(rt)); got != string(enc.Bytes()) {
		t.Fatalf("hand encoding differs from Marshal:\nhand %s\nmars %s", enc.Bytes(), got)
	}
	if rt.FilterServerTable["10.0.0.1:10911"][0] != "10.0.0.1:3000" {
		t.Fatalf("filter servers %+v", rt.FilterServerTable)
	}
	rt.OrderTopicConf = "broker-ü:4"
	if got := string(enc.WithOrderTopicConf("broker-ü:4")); got != string(protocol.MustMarshal(rt)) {
		t.Fatalf("order conf splice:\n%s\n%s", got, protocol.MustMarshal(rt))
	}
}

func TestRouteCacheInvalidation(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics("T", "U")))
	first := must(m.RouteJSON("T")).Bytes()
	if again := must(m.RouteJSON("T")).Bytes(); &again[0] != &first[0] {
		t.Fatal("second lookup not served from cache")
	}
	if m.CacheBytes() != int64(len(first)) {
		t.Fatalf("cache bytes %d, want %d", m.CacheBytes(), len(first))
	}
	// Broker-level change (new slave address) must show.
	mustRegister(t, m, reg("C", "a", "a:1", 1, 1, topics("T", "U")))
	if !strings.Contains(string(must(m.RouteJSON("T")).Bytes()), `"1":"a:1"`) {
		t.Fatal("stale route after slave registration")
	}
	// Topic-level change must show.
	m.WipeWritePerm("a")
	if !strings.Contains(string(must(m.RouteJSON("T")).Bytes()), `"perm":4`) {
		t.Fatal("stale route after wipe")
	}
	m.DeleteTopic("T", "")
	if _, ok := m.RouteJSON("T"); ok {
		t.Fatal("deleted topic served from cache")
	}
	if m.CacheBytes() < 0 {
		t.Fatal("negative cache accounting")
	}
}

func TestRouteCacheBudget(t *testing.T) {
	m := New(Options{RouteCacheBytes: 300})
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("T%d", i))
	}
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics(names...)))
	for _, n := range names {
		must(m.RouteJSON(n))
	}
	if m.CacheBytes() > 300 {
		t.Fatalf("cache %d over budget", m.CacheBytes())
	}
	off := New(Options{RouteCacheBytes: -1})
	mustRegister(t, off, reg("C", "a", "a:0", 0, 1, topics(names...)))
	must(off.RouteJSON("T1"))
	if off.CacheBytes() != 0 {
		t.Fatal("disabled cache holds bytes")
	}
}

func TestQueriesAndLists(t *testing.T) {
	m, _ := newTestManager(t)
	tcs := topics("T", "Unit", "UnitSub", "Both")
	tc := tcs["Unit"]
	tc.TopicSysFlag = FlagUnit
	tcs["Unit"] = tc
	tc = tcs["UnitSub"]
	tc.TopicSysFlag = FlagUnitSub
	tcs["UnitSub"] = tc
	tc = tcs["Both"]
	tc.TopicSysFlag = FlagUnit | FlagUnitSub
	tcs["Both"] = tc
	mustRegister(t, m, reg("C1", "a", "a:0", 0, 1, tcs))
	mustRegister(t, m, reg("C2", "b", "b:0", 0, 1, topics("Other", "T")))

	if got := m.TopicsByCluster("C2"); !reflect.DeepEqual(got, []string{"Other", "T"}) {
		t.Fatalf("by cluster %v", got)
	}
	if got := m.TopicsByCluster("none"); len(got) != 0 {
		t.Fatalf("unknown cluster %v", got)
	}
	st := m.SystemTopics()
	if !reflect.DeepEqual(st.TopicList, []string{"C1", "C2", "a", "b"}) || st.BrokerAddr != "a:0" {
		t.Fatalf("system topics %+v", st)
	}
	unit := m.TopicsWithSysFlag(func(f int) bool { return f&FlagUnit != 0 })
	if !reflect.DeepEqual(unit, []string{"Both", "Unit"}) {
		t.Fatalf("unit %v", unit)
	}
	g := m.BrokerMemberGroup("C1", "a")
	if g.BrokerAddrs[0] != "a:0" || g.Cluster != "C1" {
		t.Fatalf("member group %+v", g)
	}
	if g := m.BrokerMemberGroup("C1", "zz"); g.BrokerAddrs == nil || len(g.BrokerAddrs) != 0 {
		t.Fatalf("unknown member group %+v", g)
	}
	if lb := m.LiveBrokers(); len(lb) != 2 || lb[0].Timeout != DefaultBrokerTimeout.Milliseconds() {
		t.Fatalf("live %+v", lb)
	}
}

func TestConcurrentReadersAndWriters(t *testing.T) {
	m, clk := newTestManager(t)
	var names []string
	for i := range 50 {
		names = append(names, fmt.Sprintf("T%d", i))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m.RouteJSON(names[(i+w)%len(names)])
				m.Touch("C", "a:0")
			}
		}()
	}
	for i := range 200 {
		name := fmt.Sprintf("b%d", i%5)
		mustRegister(t, m, reg("C", name, name+":0", 0, int64(i), topics(names...)))
		if i%7 == 0 {
			m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: name + ":0", BrokerName: name})
		}
		if i%11 == 0 {
			m.WipeWritePerm(name)
			clk.Advance(time.Second)
			m.ScanNotActive()
		}
	}
	close(stop)
	wg.Wait()
}

func TestBrokerSlotReuse(t *testing.T) {
	m, _ := newTestManager(t)
	mustRegister(t, m, reg("C", "m", "m:0", 0, 1, topics("T", "OnlyM")))
	mustRegister(t, m, reg("C", "z", "z:0", 0, 1, topics("T")))
	m.UnregisterBroker(Unregistration{Cluster: "C", BrokerAddr: "m:0", BrokerName: "m"})
	mustRegister(t, m, reg("C", "a", "a:0", 0, 1, topics("T")))
	rt := routeOf(t, m, "T")
	if len(rt.QueueDatas) != 2 || rt.QueueDatas[0].BrokerName != "a" || rt.QueueDatas[1].BrokerName != "z" ||
		rt.BrokerDatas[0].BrokerName != "a" || rt.BrokerDatas[1].BrokerName != "z" {
		t.Fatalf("route after slot reuse %+v", rt)
	}
	if _, ok := m.RouteJSON("OnlyM"); ok {
		t.Fatal("OnlyM survived")
	}
	if len(m.slots) != 2 {
		t.Fatalf("slots %d, want reuse", len(m.slots))
	}
}

// A topic deleted between RegisterBroker's read-locked check and its write
// lock must still be re-added by that registration.
func TestRegisterPrecheckInvalidatedByConcurrentChange(t *testing.T) {
	m, _ := newTestManager(t)
	r := reg("C", "a", "a:0", 0, 1, topics("T", "U"))
	mustRegister(t, m, r)

	m.mu.RLock()
	skip := m.topicsUnchangedLocked(&r)
	seen := m.mutations
	m.mu.RUnlock()
	if !skip {
		t.Fatal("periodic registration not recognised as unchanged")
	}
	m.DeleteTopic("T", "") // lands between the check and the write lock

	m.mu.Lock()
	if m.mutations != seen {
		skip = false
	}
	m.registerLocked(&r, skip)
	m.mu.Unlock()
	if _, ok := m.RouteJSON("T"); !ok {
		t.Fatal("T not re-added")
	}
}
