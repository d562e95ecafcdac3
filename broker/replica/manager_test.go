package replica

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

var controllerAddrs = []string{"c0:9878", "c1:9868", "c2:9858"}

func testConfig(dir string, clock *testutil.FakeClock) Config {
	cfg := DefaultConfig()
	cfg.ClusterName, cfg.BrokerName = "DefaultCluster", "broker-a"
	cfg.Controllers = func() []string { return controllerAddrs }
	cfg.IdentityPath = filepath.Join(dir, "brokerIdentity")
	cfg.HeartbeatInterval = 10 * time.Millisecond
	cfg.SyncPeriod = 20 * time.Millisecond
	cfg.LeaderRefreshPeriod = 50 * time.Millisecond
	cfg.RetryInterval = 20 * time.Millisecond
	cfg.RequestTimeout = time.Second
	if clock != nil {
		cfg.Clock = clock.Now
	}
	return cfg
}

func startManager(t *testing.T, f *fakeController, n *fakeNode, cfg Config) *Manager {
	t.Helper()
	m, err := New(cfg, n, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// startMaster starts the manager of a new broker set's only replica on a
// fake controller and waits until it serves as master at epoch 1.
func startMaster(t *testing.T, cfg Config) (*fakeController, *fakeNode, *Manager) {
	t.Helper()
	f := newFakeController("c0:9878")
	n := &fakeNode{addr: "10.0.0.1:10911"}
	m := startManager(t, f, n, cfg)
	waitOps(t, n, "fenced=true", "master@1", "fenced=false")
	return f, n, m
}

// lapseLease cuts the master started by startMaster off every controller
// and moves clock past its lease: it fences itself.
func lapseLease(t *testing.T, f *fakeController, n *fakeNode, clock *testutil.FakeClock, cfg Config) {
	t.Helper()
	f.setDown(true)
	clock.Advance(cfg.LeaseDuration + time.Second)
	waitOps(t, n, "fenced=true", "master@1", "fenced=false", "fenced=true")
}

func waitOps(t *testing.T, n *fakeNode, want ...string) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, "node operations "+strings.Join(want, ","), func() bool {
		_, ops, _ := n.snapshot()
		return slices.Equal(ops, want)
	})
}

// TestFirstStart: two replicas of a new set get ids 1 and 2; the first to
// ask for an election is master, the other follows it; both unfence.
func TestFirstStart(t *testing.T) {
	f := newFakeController("c1:9868")
	a, b := &fakeNode{addr: "10.0.0.1:10911"}, &fakeNode{addr: "10.0.0.2:10911"}
	ma := startManager(t, f, a, testConfig(t.TempDir(), nil))
	waitOps(t, a, "fenced=true", "master@1", "fenced=false")
	mb := startManager(t, f, b, testConfig(t.TempDir(), nil))
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false")
	if ma.ControllerID() != 1 || mb.ControllerID() != 2 {
		t.Fatalf("controller ids %d, %d; want 1, 2", ma.ControllerID(), mb.ControllerID())
	}
	if r, _, _ := b.snapshot(); r.MasterAddr != a.addr || r.MasterID != 1 || r.IsMaster() {
		t.Fatalf("slave's role %+v", r)
	}
}

// TestStopWithoutStart: a broker whose start fails before the manager
// runs shuts it down; Stop must not wait for a loop that never ran (the
// broker hung in its shutdown and never printed why it failed).
func TestStopWithoutStart(t *testing.T) {
	m, err := New(testConfig(t.TempDir(), nil), &fakeNode{addr: "10.0.0.1:10911"}, newFakeController("c0:9878"), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { m.Stop(); m.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop of a manager never started hangs")
	}
}

// TestJoiningReplicaHeartbeatsBeforeItsRole: a replica joining a set that
// has a master heartbeats the controller before it follows the master.
// The master adds it to the SyncStateSet as soon as it has caught up, and
// the controller (ours, and Apache's: "replica 2 of broker-a is not
// alive") refuses a member it has not heard from yet.
func TestJoiningReplicaHeartbeatsBeforeItsRole(t *testing.T) {
	f, _, _ := startMaster(t, testConfig(t.TempDir(), nil))
	var before atomic.Int64
	b := &fakeNode{addr: "10.0.0.2:10911"}
	b.onBecome = func(string) {
		f.mu.Lock()
		before.Store(int64(f.heartbeats[2]))
		f.mu.Unlock()
	}
	startManager(t, f, b, testConfig(t.TempDir(), nil))
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false")
	if before.Load() == 0 {
		t.Fatal("replica 2 followed the master before any heartbeat of its own reached the controller")
	}
}

// TestIdentityReused: a restarted replica keeps its id; a temp file left
// by a crash between "got an id" and "applied" resumes with that id; an
// identity of another broker set refuses to register.
func TestIdentityReused(t *testing.T) {
	dir := t.TempDir()
	f, _, m := startMaster(t, testConfig(dir, nil))
	m.Stop()
	if data, err := os.ReadFile(filepath.Join(dir, "brokerIdentity")); err != nil || string(data) != "DefaultCluster#broker-a#1" {
		t.Fatalf("identity file %q, %v", data, err)
	}
	n2 := &fakeNode{addr: "10.0.0.9:10911"}
	m2 := startManager(t, f, n2, testConfig(dir, nil))
	testutil.WaitFor(t, 5*time.Second, "registered again", func() bool { return m2.Role().MasterEpoch == 1 })
	if m2.ControllerID() != 1 {
		t.Fatalf("restart took id %d", m2.ControllerID())
	}

	// Crash after the temp file: the same id and check code are applied.
	dir2 := t.TempDir()
	ids := IdentityFiles{Path: filepath.Join(dir2, "brokerIdentity")}
	if err := ids.SaveTemp(Identity{ClusterName: "DefaultCluster", BrokerName: "broker-a", ControllerID: 2, CheckCode: "10.0.0.2:10911;1"}); err != nil {
		t.Fatal(err)
	}
	n3 := &fakeNode{addr: "10.0.0.2:10911"}
	m3 := startManager(t, f, n3, testConfig(dir2, nil))
	waitOps(t, n3, "fenced=true", "slave@1", "fenced=false")
	if m3.ControllerID() != 2 {
		t.Fatalf("resumed application took id %d", m3.ControllerID())
	}
	if _, ok, _ := ids.LoadTemp(); ok {
		t.Fatal("temp identity file left behind")
	}

	// Another set's identity: never registers, stays fenced.
	dir3 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir3, "brokerIdentity"), []byte("DefaultCluster#broker-b#1"), 0o644); err != nil {
		t.Fatal(err)
	}
	n4 := &fakeNode{addr: "10.0.0.4:10911"}
	startManager(t, f, n4, testConfig(dir3, nil))
	time.Sleep(100 * time.Millisecond)
	if _, ops, fenced := n4.snapshot(); !fenced || len(ops) != 1 {
		t.Fatalf("a broker with a foreign identity: ops %v fenced %v", ops, fenced)
	}
}

// TestRoleChangesInEpochOrder: notifications move the role only forward.
func TestRoleChangesInEpochOrder(t *testing.T) {
	f, n, m := startMaster(t, testConfig(t.TempDir(), nil))

	notify := func(master int64, addr string, epoch int32) {
		req := remoting.NewRequest(code.NotifyBrokerRoleChanged, map[string]string{
			"masterBrokerId": itoa(int64(master)), "masterAddress": addr, "masterEpoch": itoa(int64(epoch)), "syncStateSetEpoch": "5",
		}, []byte(`{"syncStateSet":[2],"syncStateSetEpoch":5}`))
		m.HandleNotify(req)
	}
	// The controller elected replica 2 at epoch 3 (as the fake state says).
	f.mu.Lock()
	f.replicas[2], f.addrs[2] = "x", "10.0.0.2:10911"
	f.master, f.masterEpoch, f.sss, f.sssEpoch = 2, 3, []int64{2}, 5
	f.mu.Unlock()
	notify(2, "10.0.0.2:10911", 3)
	waitOps(t, n, "fenced=true", "master@1", "fenced=false", "slave@3")
	// A late notification of an older epoch changes nothing.
	notify(1, "10.0.0.1:10911", 2)
	time.Sleep(60 * time.Millisecond)
	waitOps(t, n, "fenced=true", "master@1", "fenced=false", "slave@3")
	if r := m.Role(); r.MasterID != 2 || r.MasterEpoch != 3 || r.IsMaster() {
		t.Fatalf("role %+v", r)
	}
}

// TestPollFindsNewMaster: without notifications, the GET_REPLICA_INFO poll
// learns an election; "no master" makes the replica ask for one.
func TestPollFindsNewMaster(t *testing.T) {
	f := newFakeController("c0:9878")
	a, b := &fakeNode{addr: "10.0.0.1:10911"}, &fakeNode{addr: "10.0.0.2:10911"}
	startManager(t, f, a, testConfig(t.TempDir(), nil))
	waitOps(t, a, "fenced=true", "master@1", "fenced=false")
	startManager(t, f, b, testConfig(t.TempDir(), nil))
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false")
	// The master died and the controller recorded "no master" (epoch 2).
	f.mu.Lock()
	f.elect(0)
	f.mu.Unlock()
	// Both ask for an election; the first wins epoch 3, the other follows.
	testutil.WaitFor(t, 5*time.Second, "a new master at epoch 3", func() bool {
		ra, _, _ := a.snapshot()
		rb, _, _ := b.snapshot()
		return ra.MasterEpoch == 3 && rb.MasterEpoch == 3 && ra.MasterID == rb.MasterID && ra.IsMaster() != rb.IsMaster()
	})
}

// TestControllersLostTheirState: the controllers restart on empty stores
// (or new ones replace them). The replicas apply for their persisted ids
// again; the slave, which still hears its master over HA, leaves the
// election to it; the master is elected again at an epoch above the one
// it holds, and the slave follows it there.
func TestControllersLostTheirState(t *testing.T) {
	f := newFakeController("c0:9878")
	a, b := &fakeNode{addr: "10.0.0.1:10911"}, &fakeNode{addr: "10.0.0.2:10911", heard: true}
	startManager(t, f, a, testConfig(t.TempDir(), nil))
	waitOps(t, a, "fenced=true", "master@1", "fenced=false")
	mb := startManager(t, f, b, testConfig(t.TempDir(), nil))
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false")
	f.mu.Lock()
	f.elect(0)
	f.elect(1) // the master elected again: epoch 3
	f.mu.Unlock()
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false", "slave@3")

	f.loseState()
	waitOps(t, a, "fenced=true", "master@1", "fenced=false", "master@3", "master@4")
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false", "slave@3", "slave@4")
	if master, epoch := f.state(); master != 1 || epoch != 4 {
		t.Fatalf("controller: master %d at epoch %d", master, epoch)
	}
	f.mu.Lock()
	ids := slices.Sorted(maps.Keys(f.replicas))
	f.mu.Unlock()
	if !slices.Equal(ids, []int64{1, 2}) || mb.ControllerID() != 2 {
		t.Fatalf("ids applied for again %v, slave's id %d", ids, mb.ControllerID())
	}
}

// TestControllersLostTheirStateAndTheMaster: as above, with the master
// gone as well: the slave, which no longer hears it, asks and is elected.
func TestControllersLostTheirStateAndTheMaster(t *testing.T) {
	f := newFakeController("c0:9878")
	a, b := &fakeNode{addr: "10.0.0.1:10911"}, &fakeNode{addr: "10.0.0.2:10911"}
	ma := startManager(t, f, a, testConfig(t.TempDir(), nil))
	waitOps(t, a, "fenced=true", "master@1", "fenced=false")
	startManager(t, f, b, testConfig(t.TempDir(), nil))
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false")
	ma.Stop()
	f.mu.Lock()
	delete(f.hbEpochs, 1)
	f.mu.Unlock()
	f.loseState()
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false", "master@2")
}

// TestLeaderChange: CONTROLLER_NOT_LEADER and a dead leader make the
// manager find the new leader at once.
func TestLeaderChange(t *testing.T) {
	f, _, m := startMaster(t, testConfig(t.TempDir(), nil))
	f.mu.Lock()
	f.down["c0:9878"], f.leader = true, "c2:9858"
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := m.AlterSyncStateSet(ctx, []int64{1})
	if err != nil {
		t.Fatalf("alter through the new leader: %v", err)
	}
	if r.SyncStateSetEpoch != 2 {
		t.Fatalf("after alter: %+v", r)
	}
	if l := m.ctl.cachedLeader(); l != "c2:9858" {
		t.Fatalf("cached leader %q", l)
	}
}

// TestAlterSyncStateSetFenced: a stale set epoch is refused with the
// controller's code and the acted set is unchanged.
func TestAlterSyncStateSetFenced(t *testing.T) {
	f, _, m := startMaster(t, testConfig(t.TempDir(), nil))
	f.mu.Lock()
	f.sssEpoch = 9 // changed behind the master's back
	f.mu.Unlock()
	_, err := m.AlterSyncStateSet(context.Background(), []int64{1, 2})
	if !IsCode(err, code.ControllerFencedSyncStateSetEpoch) {
		t.Fatalf("alter against a stale set epoch: %v", err)
	}
	if r := m.Role(); !slices.Equal(r.SyncStateSet, []int64{1}) {
		t.Fatalf("acted set changed: %+v", r)
	}
}

// TestMasterLease: a master whose heartbeats go unanswered fences itself
// after the lease and unfences on the next renewal at its epoch.
func TestMasterLease(t *testing.T) {
	clock := testutil.NewFakeClock(time.Unix(1_700_000_000, 0))
	cfg := testConfig(t.TempDir(), clock)
	f, n, _ := startMaster(t, cfg)
	lapseLease(t, f, n, clock, cfg)
	f.setDown(false)
	waitOps(t, n, "fenced=true", "master@1", "fenced=false", "fenced=true", "fenced=false")

	// A controller without the lease fields: renewed via GET_REPLICA_INFO.
	f.mu.Lock()
	f.noLeaseFields = true
	f.mu.Unlock()
	clock.Advance(cfg.LeaseDuration + time.Second)
	time.Sleep(100 * time.Millisecond)
	if _, _, fenced := n.snapshot(); fenced {
		t.Fatal("lease not renewed through GET_REPLICA_INFO")
	}
}

// TestMasterLeaseWhileRequestsHang: controllers that hold every request
// until its deadline (a partition) do not delay the lease: the master
// fences itself one lease after its last renewal, long before a request
// gives up.
func TestMasterLeaseWhileRequestsHang(t *testing.T) {
	cfg := testConfig(t.TempDir(), nil)
	cfg.LeaseDuration = 300 * time.Millisecond
	cfg.RequestTimeout = 10 * time.Second
	f, n, _ := startMaster(t, cfg)
	f.mu.Lock()
	for _, a := range controllerAddrs {
		f.hang[a] = true
	}
	f.mu.Unlock()
	cut := time.Now()
	testutil.WaitFor(t, 5*time.Second, "the master fenced", func() bool { _, _, fenced := n.snapshot(); return fenced })
	if d := time.Since(cut); d > 2*cfg.LeaseDuration {
		t.Fatalf("fenced %v after the controllers stopped answering, lease %v", d, cfg.LeaseDuration)
	}
}

// TestLeaseFencedBrokerServesNewRole: a master fenced by its lapsed lease
// and then named master again at a new epoch (the controllers had no one
// else to elect) serves again: the new role is a fresh lease.
func TestLeaseFencedBrokerServesNewRole(t *testing.T) {
	clock := testutil.NewFakeClock(time.Unix(1_700_000_000, 0))
	cfg := testConfig(t.TempDir(), clock)
	f, n, _ := startMaster(t, cfg)
	lapseLease(t, f, n, clock, cfg)
	f.mu.Lock()
	f.elect(1)
	for _, a := range controllerAddrs {
		f.down[a] = false
	}
	f.mu.Unlock()
	waitOps(t, n, "fenced=true", "master@1", "fenced=false", "fenced=true", "master@2", "fenced=false")
}

// TestRoleChangeFailureRetried: a broker that cannot switch stays fenced
// and the manager tries again.
func TestRoleChangeFailureRetried(t *testing.T) {
	f := newFakeController("c0:9878")
	n := &fakeNode{addr: "10.0.0.1:10911", fail: errors.New("disk busy")}
	startManager(t, f, n, testConfig(t.TempDir(), nil))
	time.Sleep(80 * time.Millisecond)
	if _, ops, fenced := n.snapshot(); !fenced || len(ops) != 1 {
		t.Fatalf("failed switch: ops %v fenced %v", ops, fenced)
	}
	n.mu.Lock()
	n.fail = nil
	n.mu.Unlock()
	waitOps(t, n, "fenced=true", "master@1", "fenced=false")
}

// TestStaleRoleRefused: after a restart, role information older than the
// local epoch file is not acted upon.
func TestStaleRoleRefused(t *testing.T) {
	f := newFakeController("c0:9878")
	f.replicas[1], f.addrs[1], f.next = "x", "10.0.0.1:10911", 2
	f.master, f.masterEpoch, f.sss, f.sssEpoch = 1, 4, []int64{1}, 4
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "brokerIdentity"), []byte("DefaultCluster#broker-a#1"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{addr: "10.0.0.1:10911", last: 7}
	startManager(t, f, n, testConfig(dir, nil))
	time.Sleep(80 * time.Millisecond)
	if _, ops, fenced := n.snapshot(); !fenced || len(ops) != 1 {
		t.Fatalf("acted on epoch 4 below the local epoch 7: ops %v fenced %v", ops, fenced)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestStartupWaitsBrieflyForALeader: controllers still electing their
// leader are asked again after a second, not after RetryInterval.
func TestStartupWaitsBrieflyForALeader(t *testing.T) {
	f := newFakeController("")
	a := &fakeNode{addr: "10.0.0.1:10911"}
	cfg := testConfig(t.TempDir(), nil)
	cfg.RetryInterval = time.Minute
	startManager(t, f, a, cfg)
	time.Sleep(200 * time.Millisecond)
	f.mu.Lock()
	f.leader = "c1:9868"
	f.mu.Unlock()
	start := time.Now()
	waitOps(t, a, "fenced=true", "master@1", "fenced=false")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("registered %v after a leader appeared", d)
	}
}
