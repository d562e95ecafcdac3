package slavesync

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/statictopic"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/remoting/remotingtest"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

// fakeMaster answers the copy codes with bodies a test sets, as an Apache
// master writes them (fastjson: bare integer keys).
type fakeMaster struct {
	srv *remoting.Server
	ex  *remoting.Executor

	mu     sync.Mutex
	bodies map[int32]string
	calls  map[int32]int
}

func startMaster(t *testing.T) *fakeMaster {
	t.Helper()
	m := &fakeMaster{ex: remoting.NewExecutor("fake-master", 2, 64), bodies: map[int32]string{}, calls: map[int32]int{}}
	t.Cleanup(m.ex.Close) // after the server's shutdown
	m.srv = remotingtest.Serve(t, func(s *remoting.Server) {
		for _, c := range []int32{code.GetAllTopicConfig, code.GetAllConsumerOffset, code.GetAllSubscriptionGroupConfig, code.GetAllMessageRequestMode,
			code.GetAllDelayOffset, code.GetTimerCheckPoint, code.GetTimerMetrics} {
			s.Register(c, m.answer, m.ex)
		}
	})
	return m
}

func (m *fakeMaster) answer(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[req.Code]++
	b, ok := m.bodies[req.Code]
	if !ok {
		return remoting.NewResponse(req, code.SystemError, "no body"), nil
	}
	resp := remoting.NewResponse(req, code.Success, "")
	resp.Body = []byte(b)
	return resp, nil
}

func (m *fakeMaster) set(c int32, body string) {
	m.mu.Lock()
	m.bodies[c] = body
	m.mu.Unlock()
}

func (m *fakeMaster) count(c int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[c]
}

const (
	topicsV1 = `{"dataVersion":{"counter":5,"stateVersion":0,"timestamp":1700000000000},` +
		`"mappingDataVersion":{"counter":2,"stateVersion":0,"timestamp":1700000000001},` +
		`"topicConfigTable":{"OrderT":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"OrderT","topicSysFlag":0,"writeQueueNums":4},` +
		`"StaticT":{"attributes":{},"order":false,"perm":6,"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"StaticT","topicSysFlag":0,"writeQueueNums":2}},` +
		`"topicQueueMappingDetailMap":{"StaticT":{"bname":"broker-a","currIdMap":{},"dirty":false,"epoch":7,"hostedQueues":{0:[{"bname":"broker-a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},"scope":"__global__","topic":"StaticT","totalQueues":2}},` +
		`"topicQueueMappingInfoMap":{}}`
	topicsV2 = `{"dataVersion":{"counter":6,"stateVersion":0,"timestamp":1700000000100},` +
		`"mappingDataVersion":{"counter":2,"stateVersion":0,"timestamp":1700000000001},` +
		`"topicConfigTable":{"NewT":{"perm":6,"readQueueNums":1,"topicName":"NewT","writeQueueNums":1}},` +
		`"topicQueueMappingDetailMap":{"StaticT":{"bname":"broker-a","currIdMap":{},"dirty":false,"epoch":7,"hostedQueues":{},"scope":"__global__","topic":"StaticT","totalQueues":2}},` +
		`"topicQueueMappingInfoMap":{}}`
	// An Apache master with LmqConsumerOffsetManager keeps LMQ groups'
	// offsets in lmqOffsetTable; lite topics' (an LMQ topic, a plain
	// group) are in offsetTable under queue 0.
	offsetsV1 = `{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},` +
		`"offsetTable":{"OrderT@g1":{0:10,1:11,2:12,3:13},"%LMQ%$Parent$lite1@g1":{0:42}},` +
		`"lmqOffsetTable":{"%LMQ%mqtt1@%LMQ%g2":7}}`
	groupsV1 = `{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"forbiddenTable":{"g1":{"OrderT":4}},` +
		`"subscriptionGroupTable":{"g1":{"brokerId":1,"consumeEnable":true,"groupName":"g1","retryMaxTimes":5,"whichBrokerWhenConsumeSlowly":1}}}`
	modesV1 = `{"messageRequestModeMap":{"OrderT":{"g1":{"consumerGroup":"g1","mode":"POP","popShareQueueNum":2,"topic":"OrderT"}}}}`
)

// slave is a slave's tables, persisted under one directory.
type slave struct {
	topics *topic.Manager
	maps   *statictopic.Manager
	groups *subscription.Manager
	db     *kv.DB
	offs   *offset.Store
	modes  *modeSink
}

type modeSink struct {
	mu sync.Mutex
	m  map[string]map[string]pop.RequestMode
}

func (s *modeSink) ReplaceRequestModes(m map[string]map[string]pop.RequestMode) error {
	s.mu.Lock()
	s.m = m
	s.mu.Unlock()
	return nil
}

func (s *modeSink) get(topic, group string) (pop.RequestMode, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.m[topic][group]
	return m, ok
}

func openSlave(t *testing.T, dir string) *slave {
	t.Helper()
	cfg := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: dir})
	cfg.BrokerName = "broker-a"
	get := func() *config.Config { return cfg }
	tm, err := topic.New(topic.Options{Config: get, Path: filepath.Join(dir, "topics.json")})
	if err != nil {
		t.Fatal(err)
	}
	mm, err := statictopic.OpenManager(statictopic.ManagerOptions{Path: filepath.Join(dir, "topicQueueMapping.json"), BrokerName: "broker-a"})
	if err != nil {
		t.Fatal(err)
	}
	gm, err := subscription.New(subscription.Options{Config: get, Path: filepath.Join(dir, "subscriptionGroup.json")})
	if err != nil {
		t.Fatal(err)
	}
	db, err := kv.Open(kv.DefaultConfig(filepath.Join(dir, "kv")), nil)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := offset.Open(db, nil)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	s := &slave{topics: tm, maps: mm, groups: gm, db: db, offs: offs, modes: &modeSink{}}
	t.Cleanup(func() { s.close() })
	return s
}

func (s *slave) close() {
	if s.db != nil {
		s.db.Close()
		s.db = nil
	}
}

func (s *slave) syncer(t *testing.T, master string, o Options) *Syncer {
	t.Helper()
	client := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = client.Close() })
	o.Invoker = client
	o.MasterAddr = func() string { return master }
	o.Topics, o.Mappings, o.Groups, o.Offsets, o.Modes = s.topics, s.maps, s.groups, s.offs, s.modes
	sy, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return sy
}

func wantOffset(t *testing.T, offs *offset.Store, group, topic string, qid int32, want int64) {
	t.Helper()
	got, ok := offs.Get(offset.Key{Group: group, Topic: topic, QueueID: qid})
	if !ok || got != want {
		t.Errorf("offset %s %s %d = %d, %v; want %d", group, topic, qid, got, ok, want)
	}
}

func setAll(m *fakeMaster) {
	m.set(code.GetAllTopicConfig, topicsV1)
	m.set(code.GetAllConsumerOffset, offsetsV1)
	m.set(code.GetAllSubscriptionGroupConfig, groupsV1)
	m.set(code.GetAllMessageRequestMode, modesV1)
}

// checkV1 checks the copy of the v1 bodies. After a restart the boot-time
// system topics and groups are back (the fake master lacks them, a real
// one has them too), so the topic version and absent groups are not
// checked then.
func checkV1(t *testing.T, s *slave, restarted bool) {
	t.Helper()
	if tc, ok := s.topics.Get("OrderT"); !ok || tc.ReadQueueNums != 4 {
		t.Errorf("topic OrderT = %+v, %v", tc, ok)
	}
	if dv := s.topics.DataVersion(); !restarted && (dv.Counter != 5 || dv.Timestamp != 1700000000000) {
		t.Errorf("topic data version %+v, want the master's", dv)
	}
	if d, ok := s.maps.Get("StaticT"); !ok || d.Epoch != 7 || len(d.HostedQueues[0]) != 1 {
		t.Errorf("mapping StaticT = %+v, %v", d, ok)
	}
	if dv := s.maps.DataVersion(); dv.Counter != 2 {
		t.Errorf("mapping data version %+v", dv)
	}
	wantOffset(t, s.offs, "g1", "OrderT", 3, 13)
	wantOffset(t, s.offs, "g1", "%LMQ%$Parent$lite1", 0, 42) // lite topic
	wantOffset(t, s.offs, "%LMQ%g2", "%LMQ%mqtt1", 0, 7)     // LMQ group (lmqOffsetTable)
	g, ok := s.groups.Find("g1")
	if !ok || g.BrokerID != 1 || g.RetryMaxTimes != 5 || !g.ConsumeBroadcastEnable {
		t.Errorf("group g1 = %+v, %v (absent fields keep Java's defaults)", g, ok)
	}
	if s.groups.Forbidden("g1", "OrderT") != 4 {
		t.Errorf("forbidden table not copied")
	}
	if !restarted && s.groups.Contains("TOOLS_CONSUMER") {
		t.Errorf("a group the master lacks was kept")
	}
}

func TestSyncAllCopiesEveryTable(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	s := openSlave(t, t.TempDir())
	// An offset only the slave has (a commit while the master was away)
	// stays; one the master has is overwritten, even by a smaller value
	// (upstream #1094).
	s.offs.Commit(offset.Key{Group: "g9", Topic: "OrderT", QueueID: 0}, 99)
	s.offs.Commit(offset.Key{Group: "g1", Topic: "OrderT", QueueID: 0}, 50)
	sy := s.syncer(t, m.srv.Addr(), Options{})
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	checkV1(t, s, false)
	wantOffset(t, s.offs, "g9", "OrderT", 0, 99)
	wantOffset(t, s.offs, "g1", "OrderT", 0, 10)
	if md, ok := s.modes.get("OrderT", "g1"); !ok || md.Mode != pop.ModePop || md.PopShareQueueNum != 2 {
		t.Errorf("request mode = %+v, %v", md, ok)
	}
	if sy.LastSync().IsZero() {
		t.Error("LastSync not set")
	}

	// A new master version replaces the table: OrderT goes, NewT comes;
	// the mapping version is unchanged, so mappings stay as they are.
	m.set(code.GetAllTopicConfig, topicsV2)
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	if s.topics.Contains("OrderT") || !s.topics.Contains("NewT") {
		t.Errorf("topics after v2: %v", s.topics.Names())
	}
	if tc, _ := s.topics.Get("NewT"); tc.TopicFilterType != protocol.SingleTag || tc.Attributes == nil {
		t.Errorf("NewT not decoded over the defaults: %+v", tc)
	}
	if d, _ := s.maps.Get("StaticT"); len(d.HostedQueues[0]) != 1 {
		t.Errorf("mapping replaced although its version did not change: %+v", d)
	}
}

func TestSyncSurvivesSlaveRestart(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	dir := t.TempDir()
	s := openSlave(t, dir)
	sy := s.syncer(t, m.srv.Addr(), Options{})
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	s.close()
	checkV1(t, openSlave(t, dir), true)
}

func TestOneFailingTableLeavesTheOthers(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	m.set(code.GetAllTopicConfig, `{"topicConfigTable":`) // broken
	s := openSlave(t, t.TempDir())
	sy := s.syncer(t, m.srv.Addr(), Options{})
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err == nil {
		t.Fatal("a broken topic body did not fail the copy")
	}
	wantOffset(t, s.offs, "g1", "OrderT", 3, 13)
	if !sy.LastSync().IsZero() {
		t.Error("a failed copy counted as a full copy")
	}
}

func TestTaskCopiesOnNewMasterAndPeriodically(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	s := openSlave(t, t.TempDir())
	var mu sync.Mutex
	addr := ""
	client := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = client.Close() })
	sy, err := New(Options{
		Invoker: client,
		MasterAddr: func() string {
			mu.Lock()
			defer mu.Unlock()
			return addr
		},
		Topics: s.topics, Mappings: s.maps, Groups: s.groups, Offsets: s.offs, Modes: s.modes,
		CheckInterval: time.Hour, FullInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	sy.Start()
	defer sy.Close()
	time.Sleep(50 * time.Millisecond)
	if n := m.count(code.GetAllTopicConfig); n != 0 {
		t.Fatalf("copied %d times without a master address", n)
	}
	// The master address arrives (a registration answer): copied at once,
	// not an hour later.
	mu.Lock()
	addr = m.srv.Addr()
	mu.Unlock()
	sy.Trigger()
	testutil.Eventually(t, 5*time.Second, func() error {
		if s.topics.Contains("OrderT") {
			return nil
		}
		return errors.New("not yet")
	})
	// Within the full period a check copies nothing.
	sy.Trigger()
	time.Sleep(50 * time.Millisecond)
	if n := m.count(code.GetAllTopicConfig); n != 1 {
		t.Fatalf("copied %d times within the full period", n)
	}
	sy.Close()

	// A short full period copies again by itself.
	sy2 := s.syncer(t, m.srv.Addr(), Options{CheckInterval: 20 * time.Millisecond, FullInterval: 20 * time.Millisecond})
	m.set(code.GetAllTopicConfig, topicsV2)
	sy2.Start()
	defer sy2.Close()
	testutil.Eventually(t, 5*time.Second, func() error {
		if s.topics.Contains("NewT") && m.count(code.GetAllTopicConfig) >= 3 {
			return nil
		}
		return errors.New("not yet")
	})
}

func TestSelfAddrIsNotCopiedFrom(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	s := openSlave(t, t.TempDir())
	sy := s.syncer(t, m.srv.Addr(), Options{SelfAddr: m.srv.Addr, CheckInterval: 10 * time.Millisecond})
	sy.Start()
	time.Sleep(60 * time.Millisecond)
	sy.Close()
	if n := m.count(code.GetAllTopicConfig); n != 0 {
		t.Fatalf("copied from itself %d times", n)
	}
}

// A failed copy waits for the next full period (Apache's pace): an
// unreachable master or an oversized table costs one attempt a period.
func TestFailedCopyWaitsForTheNextPeriod(t *testing.T) {
	m := startMaster(t) // no bodies: every code answers SYSTEM_ERROR
	s := openSlave(t, t.TempDir())
	sy := s.syncer(t, m.srv.Addr(), Options{CheckInterval: 10 * time.Millisecond, FullInterval: time.Hour})
	sy.Start()
	testutil.Eventually(t, 5*time.Second, func() error {
		if m.count(code.GetAllTopicConfig) == 0 {
			return errors.New("no attempt yet")
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond)
	sy.Close()
	if n := m.count(code.GetAllTopicConfig); n != 1 {
		t.Fatalf("%d attempts within one full period", n)
	}
	if !sy.LastSync().IsZero() {
		t.Fatal("a failed copy counted as done")
	}
}

type authSink struct {
	mu    sync.Mutex
	users []protocol.UserInfo
	acls  []protocol.AclInfo
	calls int
}

func (a *authSink) ReplaceAll(users []protocol.UserInfo, acls []protocol.AclInfo) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.users, a.acls, a.calls = users, acls, a.calls+1
	return true, nil
}

// TestSyncCopiesUsersAndACLs: the slave replaces its users and ACLs with
// the master's AUTH_LIST_USER and AUTH_LIST_ACL answers (an empty answer
// is none); a master that does not serve the codes leaves them.
func TestSyncCopiesUsersAndACLs(t *testing.T) {
	m := startMaster(t)
	m.srv.Register(code.AuthListUser, m.answer, m.ex)
	m.srv.Register(code.AuthListACL, m.answer, m.ex)
	m.set(code.AuthListUser, `[{"password":"pw","userStatus":"enable","userType":"Normal","username":"alice"}]`)
	m.set(code.AuthListACL, ``)
	client := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { _ = client.Close() })
	sink := &authSink{}
	sy, err := New(Options{Invoker: client, MasterAddr: func() string { return m.srv.Addr() }, Auth: sink})
	if err != nil {
		t.Fatal(err)
	}
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	if len(sink.users) != 1 || sink.users[0] != (protocol.UserInfo{Username: "alice", Password: "pw", UserType: "Normal", UserStatus: "enable"}) || len(sink.acls) != 0 {
		t.Fatalf("copied %+v %+v", sink.users, sink.acls)
	}
	m.set(code.AuthListACL, `[{"policies":[{"entries":[{"actions":["Pub"],"decision":"Allow","resource":"Topic:T"}],"policyType":"Custom"}],"subject":"User:alice"}]`)
	if err := sy.SyncAll(context.Background(), m.srv.Addr()); err != nil {
		t.Fatal(err)
	}
	if len(sink.acls) != 1 || sink.acls[0].Subject != "User:alice" || sink.acls[0].Policies[0].Entries[0].Resource != "Topic:T" {
		t.Fatalf("copied ACLs %+v", sink.acls)
	}

	old := startMaster(t) // serves no auth code
	if err := sy.SyncAll(context.Background(), old.srv.Addr()); err != nil {
		t.Fatalf("a master without the auth codes failed the copy: %v", err)
	}
	if sink.calls != 2 {
		t.Fatalf("replaced %d times, want 2", sink.calls)
	}

	// Apache 5.5.0 with authentication off answers AUTH_LIST_USER with
	// SYSTEM_ERROR: a copy that succeeds, the slave's users left as
	// they are.
	noAuth := startMaster(t)
	noAuth.srv.Register(code.AuthListUser, noAuth.answer, noAuth.ex) // no body: SYSTEM_ERROR
	noAuth.srv.Register(code.AuthListACL, noAuth.answer, noAuth.ex)
	sy.o.MasterAddr = func() string { return noAuth.srv.Addr() }
	for range 2 {
		if err := sy.SyncAll(context.Background(), noAuth.srv.Addr()); err != nil {
			t.Fatalf("a master without authentication metadata failed the copy: %v", err)
		}
	}
	if sink.calls != 2 || len(sink.users) != 1 || sy.LastSync().IsZero() {
		t.Fatalf("replaced %d times (users %+v), last sync %v", sink.calls, sink.users, sy.LastSync())
	}
	noAuth.mu.Lock()
	acl := noAuth.calls[code.AuthListACL]
	noAuth.mu.Unlock()
	if acl != 0 {
		t.Fatalf("AUTH_LIST_ACL asked %d times after AUTH_LIST_USER failed", acl)
	}
	// An ACL table the master fails to give is still a failed copy.
	noAuth.set(code.AuthListUser, ``)
	if err := sy.SyncAll(context.Background(), noAuth.srv.Addr()); err == nil || !strings.Contains(err.Error(), "AUTH_LIST_ACL") {
		t.Fatalf("copy with AUTH_LIST_ACL failing: %v", err)
	}
	if sink.calls != 2 {
		t.Fatalf("replaced %d times after a failed ACL copy, want 2", sink.calls)
	}
}

// TestAnswerAfterMasterChangeDropped: a copy whose answer arrives after
// this broker stopped following that master (in controller mode: it was
// elected meanwhile) applies nothing, so the old master's topic version
// (with the old epoch as stateVersion) cannot replace the new master's
// (issue 15).
func TestAnswerAfterMasterChangeDropped(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	s := openSlave(t, t.TempDir())
	sy := s.syncer(t, m.srv.Addr(), Options{})
	var current atomic.Value
	current.Store(m.srv.Addr())
	sy.o.MasterAddr = func() string { return current.Load().(string) }
	current.Store("") // elected while the copy was on its way
	before := s.topics.DataVersion()
	err := sy.SyncAll(context.Background(), m.srv.Addr())
	if !errors.Is(err, errMasterChanged) {
		t.Fatalf("copy after the master change: %v", err)
	}
	if got := s.topics.DataVersion(); !got.Equal(before) || s.topics.Contains("OrderT") {
		t.Fatalf("the old master's topics were applied: version %+v (was %+v), OrderT %v", got, before, s.topics.Contains("OrderT"))
	}
	if _, ok := s.offs.Get(offset.Key{Group: "g1", Topic: "OrderT", QueueID: 0}); ok {
		t.Fatal("the old master's offsets were applied")
	}
}

// TestWantTopicsCopiesTheTopicTableNow: messages of a topic unknown here
// arrived (WantTopics): the topic table is copied at once, not at the next
// full period, and only the topic table; asks in a burst copy at most once
// a TopicsInterval.
func TestWantTopicsCopiesTheTopicTableNow(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	s := openSlave(t, t.TempDir())
	sy := s.syncer(t, m.srv.Addr(), Options{CheckInterval: time.Hour, FullInterval: time.Hour})
	sy.Start()
	defer sy.Close()
	testutil.Eventually(t, 5*time.Second, func() error {
		if !s.topics.Contains("OrderT") {
			return errors.New("first copy not done")
		}
		return nil
	})
	m.set(code.GetAllTopicConfig, topicsV2)
	time.Sleep(TopicsInterval) // past the first copy's limit
	groups := m.count(code.GetAllSubscriptionGroupConfig)
	for range 5 {
		sy.WantTopics()
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if !s.topics.Contains("NewT") {
			return errors.New("topic NewT not copied yet")
		}
		return nil
	})
	for range 5 {
		sy.WantTopics()
	}
	time.Sleep(TopicsInterval / 2)
	if n := m.count(code.GetAllTopicConfig); n != 2 {
		t.Fatalf("%d topic copies, want 2 (the full one, then one for the burst)", n)
	}
	if n := m.count(code.GetAllSubscriptionGroupConfig); n != groups {
		t.Fatalf("WantTopics copied the subscription groups too (%d, then %d)", groups, n)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := m.count(code.GetAllTopicConfig); n != 3 {
			return fmt.Errorf("%d topic copies, want 3 (the second burst after the interval)", n)
		}
		return nil
	})
}

// TestSmallTablesCopiedAtEveryCheck: between full copies the topic
// configs, subscription groups and consumer offsets are copied at every
// check while the master's answers for them are small (the request modes,
// say, are not), so that a slave elected master has them as of a check
// ago; a table grown past SmallTableBytes waits for the full copy.
func TestSmallTablesCopiedAtEveryCheck(t *testing.T) {
	m := startMaster(t)
	setAll(m)
	s := openSlave(t, t.TempDir())
	sy := s.syncer(t, m.srv.Addr(), Options{CheckInterval: 20 * time.Millisecond, FullInterval: time.Hour})
	sy.Start()
	defer sy.Close()
	testutil.Eventually(t, 5*time.Second, func() error {
		if _, ok := s.offs.Get(offset.Key{Group: "g1", Topic: "OrderT", QueueID: 3}); !ok {
			return errors.New("first copy not done")
		}
		return nil
	})
	m.set(code.GetAllTopicConfig, topicsV2)
	m.set(code.GetAllSubscriptionGroupConfig, `{"dataVersion":{"counter":4,"stateVersion":0,"timestamp":1700000000200},`+
		`"subscriptionGroupTable":{"g2":{"groupName":"g2","retryMaxTimes":3}}}`)
	m.set(code.GetAllConsumerOffset, `{"offsetTable":{"OrderT@g1":{0:20,1:21,2:22,3:23}}}`)
	testutil.Eventually(t, 5*time.Second, func() error {
		if got, _ := s.offs.Get(offset.Key{Group: "g1", Topic: "OrderT", QueueID: 3}); got != 23 {
			return fmt.Errorf("offset %d, want the master's new 23", got)
		}
		if !s.topics.Contains("NewT") {
			return errors.New("topic NewT not copied yet")
		}
		if g, ok := s.groups.Find("g2"); !ok || g.RetryMaxTimes != 3 {
			return fmt.Errorf("group g2 = %+v, %v", g, ok)
		}
		return nil
	})
	if n := m.count(code.GetAllMessageRequestMode); n != 1 {
		t.Fatalf("request modes copied %d times within the full period, want 1", n)
	}

	// A large offset table: copied once more (its size is learnt from
	// that answer), then left to the full copy; the others go on.
	var b strings.Builder
	b.WriteString(`{"offsetTable":{`)
	for i := 0; b.Len() <= SmallTableBytes; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"LargeTopic%06d@g1":{0:%d}`, i, 30+i)
	}
	b.WriteString(`}}`)
	m.set(code.GetAllConsumerOffset, b.String())
	testutil.Eventually(t, 5*time.Second, func() error {
		if got, _ := s.offs.Get(offset.Key{Group: "g1", Topic: "LargeTopic000000", QueueID: 0}); got != 30 {
			return fmt.Errorf("offset %d, want 30 from the large table", got)
		}
		return nil
	})
	// Its answer was counted before its offsets were seen; two more topic
	// copies mean two checks after it.
	before, topics := m.count(code.GetAllConsumerOffset), m.count(code.GetAllTopicConfig)
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := m.count(code.GetAllTopicConfig); n < topics+2 {
			return fmt.Errorf("%d topic copies since the large offset table, want 2: the small topic table stopped being copied", n-topics)
		}
		return nil
	})
	if n := m.count(code.GetAllConsumerOffset); n != before {
		t.Fatalf("a table over %d bytes was copied %d more times between full copies", SmallTableBytes, n-before)
	}
}
