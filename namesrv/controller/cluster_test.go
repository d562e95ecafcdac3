package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
)

const waitFor = 10 * time.Second

// cluster is n controllers in one process over raft's in-memory transport.
type cluster struct {
	t     *testing.T
	peers string
	nodes []*Controller
	trans []*raft.InmemTransport
	dirs  []string
}

func testConfig(t *testing.T, peers, self string) Config {
	cfg := DefaultConfig()
	cfg.ControllerDLegerGroup = "g"
	cfg.ControllerDLegerPeers = peers
	cfg.ControllerDLegerSelfID = self
	cfg.ControllerStorePath = t.TempDir()
	cfg.ConfigStorePath = t.TempDir() + "/controller.properties"
	cfg.ControllerLivenessWarmup = 0
	cfg.ScanNotActiveBrokerInterval = 50 * time.Millisecond
	cfg.ScanInactiveMasterInterval = 50 * time.Millisecond
	cfg.NotifyBrokerRoleChanged = false
	return cfg
}

func fastRaft(rc *raft.Config) {
	// Short, but not so short that a loaded machine (-race, shared CPUs)
	// flaps leadership in the middle of a test.
	rc.HeartbeatTimeout = 400 * time.Millisecond
	rc.ElectionTimeout = 400 * time.Millisecond
	rc.LeaderLeaseTimeout = 200 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	rc.TrailingLogs = 2
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	cl := &cluster{t: t}
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf("n%d-127.0.0.1:%d", i, 20000+i))
		_, tr := raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("n%d", i)))
		cl.trans = append(cl.trans, tr)
	}
	cl.peers = strings.Join(items, ";")
	cl.nodes = make([]*Controller, n)
	cl.dirs = make([]string, n)
	for i := range n {
		cl.start(i, false)
	}
	t.Cleanup(func() {
		for _, c := range cl.nodes {
			if c != nil {
				_ = c.Close()
			}
		}
	})
	return cl
}

// start (re)creates node i; wipe gives it empty log, stable and snapshot
// stores, as after losing its disk.
func (cl *cluster) start(i int, wipe bool) {
	cl.t.Helper()
	// raft's Shutdown disconnects a node's in-memory transport: connect
	// it (again) both ways.
	for j := range cl.trans {
		if j != i {
			cl.trans[i].Connect(cl.trans[j].LocalAddr(), cl.trans[j])
			cl.trans[j].Connect(cl.trans[i].LocalAddr(), cl.trans[i])
		}
	}
	cfg := testConfig(cl.t, cl.peers, fmt.Sprintf("n%d", i))
	if cl.dirs[i] != "" && !wipe {
		cfg.ControllerStorePath = cl.dirs[i]
	}
	cl.dirs[i] = cfg.ControllerStorePath
	// Real stores (pebble log, file snapshots) under the node's directory,
	// so a restart without wipe resumes from disk.
	c, err := New(cfg, Deps{
		Transport: cl.trans[i],
		Addr:      func(p nsconfig.Peer) raft.ServerAddress { return raft.ServerAddress(p.ID) },
		Raft:      fastRaft,
	}, nil)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.nodes[i] = c
}

// leader waits until exactly one live node serves as leader.
func (cl *cluster) leader() (int, *Controller) {
	cl.t.Helper()
	deadline := time.Now().Add(waitFor)
	for time.Now().Before(deadline) {
		found := -1
		count := 0
		for i, c := range cl.nodes {
			if c != nil && c.IsLeader() {
				found, count = i, count+1
			}
		}
		if count == 1 {
			return found, cl.nodes[found]
		}
		time.Sleep(10 * time.Millisecond)
	}
	cl.t.Fatal("no single serving leader")
	return -1, nil
}

func call(t *testing.T, c *Controller, reqCode int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	h, ok := c.handlers()[reqCode]
	if !ok {
		t.Fatalf("no handler for %d", reqCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp, err := h(ctx, nil, remoting.NewRequest(reqCode, ext, body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func wantCode(t *testing.T, resp *remoting.Command, want int32) {
	t.Helper()
	if resp.Code != want {
		t.Fatalf("code %d (%s), want %d", resp.Code, resp.Remark, want)
	}
}

func hb(t *testing.T, c *Controller, name string, id int64, timeoutMs int, epoch int32, maxOffset int64) *remoting.Command {
	return call(t, c, code.BrokerHeartbeat, map[string]string{
		"clusterName": "c", "brokerName": name, "brokerId": itoa(id), "brokerAddr": fmt.Sprintf("10.0.0.%d:10911", id),
		"heartbeatTimeoutMills": fmt.Sprint(timeoutMs), "epoch": fmt.Sprint(epoch), "maxOffset": fmt.Sprint(maxOffset),
	}, nil)
}

// registerReplica runs a broker's startup: next id, apply, register.
func registerReplica(t *testing.T, c *Controller, name string) int64 {
	t.Helper()
	resp := call(t, c, code.ControllerGetNextBrokerID, map[string]string{"clusterName": "c", "brokerName": name}, nil)
	wantCode(t, resp, code.Success)
	id := resp.Ext("nextBrokerId")
	addr := "10.0.0." + id + ":10911"
	wantCode(t, call(t, c, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": name,
		"appliedBrokerId": id, "registerCheckCode": addr + ";1"}, nil), code.Success)
	wantCode(t, call(t, c, code.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": name,
		"brokerId": id, "brokerAddress": addr}, nil), code.Success)
	var n int64
	fmt.Sscan(id, &n)
	return n
}

func replicaInfo(t *testing.T, c *Controller, name string) (*remoting.Command, protocol.SyncStateSet) {
	t.Helper()
	resp := call(t, c, code.ControllerGetReplicaInfo, map[string]string{"brokerName": name}, nil)
	wantCode(t, resp, code.Success)
	var body protocol.SyncStateSet
	if err := protocol.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// beat keeps replicas alive on every node until stop is closed.
func beat(t *testing.T, cl *cluster, stop <-chan struct{}, name string, ids ...int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, c := range cl.nodes {
				if c == nil {
					continue
				}
				for _, id := range ids {
					h := c.handlers()[code.BrokerHeartbeat]
					_, _ = h(context.Background(), nil, remoting.NewRequest(code.BrokerHeartbeat, map[string]string{
						"clusterName": "c", "brokerName": name, "brokerId": itoa(id), "brokerAddr": fmt.Sprintf("10.0.0.%d:10911", id),
						"heartbeatTimeoutMills": "400", "epoch": "0", "maxOffset": "0",
					}, nil))
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return &wg
}

func TestClusterElectionsAndLeaderChange(t *testing.T) {
	cl := newCluster(t, 3)
	li, leader := cl.leader()
	follower := cl.nodes[(li+1)%3]

	// Leader-only requests on a follower; metadata from every node.
	wantCode(t, call(t, follower, code.ControllerGetNextBrokerID, map[string]string{"brokerName": "a"}, nil), code.ControllerNotLeader)
	for _, c := range cl.nodes {
		// A follower learns the leader from its first heartbeat.
		testutil.Eventually(t, waitFor, func() error {
			md := call(t, c, code.ControllerGetMetadataInfo, nil, nil)
			want := fmt.Sprintf("n%d", li)
			if md.Code != code.Success || md.Ext("controllerLeaderId") != want || md.Ext("controllerLeaderAddress") != want ||
				md.Ext("isLeader") != fmt.Sprint(c == leader) || md.Ext("group") != "g" || md.Ext("peers") != "n0:n0;n1:n1;n2:n2;" {
				return fmt.Errorf("metadata from %s: %v", c.self.ID, md.ExtFields)
			}
			return nil
		})
	}

	// Two replicas register; the first to ask becomes master.
	if id := registerReplica(t, leader, "a"); id != 1 {
		t.Fatalf("first id %d", id)
	}
	if id := registerReplica(t, leader, "a"); id != 2 {
		t.Fatalf("second id %d", id)
	}
	stop := make(chan struct{})
	wg := beat(t, cl, stop, "a", 1, 2)
	// Alive now, not only after beat's first round; a new set's replicas
	// hold no epoch yet.
	hb(t, leader, "a", 1, 400, 0, 0)
	hb(t, leader, "a", 2, 400, 0, 0)
	el := call(t, leader, code.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "a", "brokerId": "1"}, nil)
	wantCode(t, el, code.Success)
	if el.Ext("masterBrokerId") != "1" || el.Ext("masterEpoch") != "1" || el.Ext("masterAddress") != "10.0.0.1:10911" {
		t.Fatalf("election header %v", el.ExtFields)
	}
	var eb protocol.ElectMasterResponseBody
	if err := protocol.Unmarshal(el.Body, &eb); err != nil || eb.BrokerMemberGroup == nil || len(eb.BrokerMemberGroup.BrokerAddrs) != 2 || !slices.Equal(eb.SyncStateSet, []int64{1}) {
		t.Fatalf("election body %s (%v)", el.Body, err)
	}
	// Asking again keeps the master: 2011 with the master fields.
	again := call(t, leader, code.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": "a", "brokerId": "2"}, nil)
	wantCode(t, again, code.ControllerMasterStillExist)
	if again.Ext("masterBrokerId") != "1" {
		t.Fatalf("2011 header %v", again.ExtFields)
	}
	// The master adds the slave; stale epochs are fenced.
	alter := func(master, masterEpoch string, set []int64, sssEpoch int32) *remoting.Command {
		return call(t, leader, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": "a", "masterBrokerId": master, "masterEpoch": masterEpoch},
			protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: set, SyncStateSetEpoch: sssEpoch}))
	}
	wantCode(t, alter("1", "0", []int64{1, 2}, 1), code.ControllerFencedMasterEpoch)
	wantCode(t, alter("2", "1", []int64{1, 2}, 1), code.ControllerInvalidMaster)
	wantCode(t, alter("1", "1", []int64{1, 2}, 0), code.ControllerFencedSyncStateSetEpoch)
	wantCode(t, alter("1", "1", []int64{1, 3}, 1), code.ControllerInvalidReplicas)
	ok := alter("1", "1", []int64{1, 2}, 1)
	wantCode(t, ok, code.Success)
	if ok.Ext("newSyncStateSetEpoch") != "2" {
		t.Fatalf("alter header %v", ok.ExtFields)
	}
	// The heartbeat answer carries the lease fields.
	h := hb(t, leader, "a", 1, 400, 1, 100)
	if h.Ext("masterBrokerId") != "1" || h.Ext("masterEpoch") != "1" || h.Ext("syncStateSetEpoch") != "2" {
		t.Fatalf("heartbeat reply %v", h.ExtFields)
	}
	if h := hb(t, follower, "a", 1, 400, 1, 100); h.Ext("masterEpoch") != "" {
		t.Fatalf("a follower answered lease fields %v", h.ExtFields)
	}

	// Leader change: the new leader serves after its Barrier with the
	// same state.
	before, _ := leader.State().Export()
	if err := leader.Raft().LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, waitFor, "old leader steps down", func() bool { return !leader.IsLeader() })
	_, leader = cl.leader()
	after, _ := leader.State().Export()
	if string(before) != string(after) {
		t.Fatalf("state changed across leader change:\n%s\n%s", before, after)
	}
	hdr, set := replicaInfo(t, leader, "a")
	if hdr.Ext("masterBrokerId") != "1" || !slices.Equal(set.SyncStateSet, []int64{1, 2}) || set.SyncStateSetEpoch != 2 {
		t.Fatalf("replica info after leader change: %v %+v", hdr.ExtFields, set)
	}

	// The master stops heartbeating: the new leader elects replica 2.
	close(stop)
	wg.Wait()
	stop2 := make(chan struct{})
	wg2 := beat(t, cl, stop2, "a", 2)
	defer func() { close(stop2); wg2.Wait() }()
	testutil.WaitFor(t, waitFor, "failover to replica 2", func() bool {
		hdr, set = replicaInfo(t, leader, "a")
		return hdr.Ext("masterBrokerId") == "2"
	})
	if hdr.Ext("masterEpoch") != "2" || !slices.Equal(set.SyncStateSet, []int64{2}) || set.SyncStateSetEpoch != 3 {
		t.Fatalf("after failover: %v %+v", hdr.ExtFields, set)
	}
	// The deposed master's alter is fenced.
	wantCode(t, call(t, leader, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": "a", "masterBrokerId": "1", "masterEpoch": "1"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1}, SyncStateSetEpoch: 2})), code.ControllerInvalidMaster)

	// Every node applied the same log.
	want, _ := leader.State().Export()
	for _, c := range cl.nodes {
		sameState(t, c, want)
	}
}

// sameState waits until c's state machine holds want.
func sameState(t *testing.T, c *Controller, want []byte) {
	t.Helper()
	testutil.Eventually(t, waitFor, func() error {
		if got, _ := c.State().Export(); string(got) != string(want) {
			return fmt.Errorf("%s state\n%s\nwant\n%s", c.self.ID, got, want)
		}
		return nil
	})
}

// TestClusterSnapshotRestore: a node that lost its disk catches up from
// the leader's snapshot (docs/replication.md §7 row 10).
func TestClusterSnapshotRestore(t *testing.T) {
	cl := newCluster(t, 3)
	li, leader := cl.leader()
	for _, name := range []string{"a", "b", "c"} {
		registerReplica(t, leader, name)
		registerReplica(t, leader, name)
		wantCode(t, call(t, leader, code.ControllerElectMaster, map[string]string{"clusterName": "c", "brokerName": name, "brokerId": "2"}, nil), code.Success)
	}
	victim := (li + 1) % 3
	if err := cl.nodes[victim].Close(); err != nil {
		t.Fatal(err)
	}
	cl.nodes[victim] = nil
	// More entries while it is down, then a snapshot that truncates the
	// leader's log (TrailingLogs=2) so the victim cannot replay it.
	registerReplica(t, leader, "d")
	if err := leader.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	cl.start(victim, true)
	want, _ := leader.State().Export()
	sameState(t, cl.nodes[victim], want)
	if !strings.Contains(string(want), `"brokerName":"d"`) {
		t.Fatalf("state lacks the entry written while the node was down: %s", want)
	}
	// Raft records the installed snapshot just after the FSM restore.
	testutil.WaitFor(t, waitFor, "snapshot installed", func() bool {
		return cl.nodes[victim].Raft().Stats()["last_snapshot_index"] != "0"
	})
}

// TestClusterFullRestart: every controller stops and starts again from its
// disk (docs/replication.md §7 row 9): the state is the one before the
// outage, and elections continue from the stored epochs.
func TestClusterFullRestart(t *testing.T) {
	cl := newCluster(t, 3)
	_, leader := cl.leader()
	registerReplica(t, leader, "a")
	registerReplica(t, leader, "a")
	wantCode(t, call(t, leader, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "1"}, nil), code.Success)
	want, _ := leader.State().Export()
	for i, c := range cl.nodes {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		cl.nodes[i] = nil
	}
	for i := range cl.nodes {
		cl.start(i, false)
	}
	_, leader = cl.leader()
	for _, c := range cl.nodes {
		sameState(t, c, want)
	}
	hb(t, leader, "a", 2, 60000, 1, 10)
	wantCode(t, call(t, leader, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "2", "designateElect": "true"}, nil),
		code.ControllerElectMasterFailed) // 2 is not in the SyncStateSet {1}
	hb(t, leader, "a", 1, 60000, 1, 10)
	wantCode(t, call(t, leader, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": "a", "masterBrokerId": "1", "masterEpoch": "1"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})), code.Success)
	el := call(t, leader, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "2", "designateElect": "true"}, nil)
	wantCode(t, el, code.Success)
	if el.Ext("masterEpoch") != "2" || el.Ext("syncStateSetEpoch") != "3" {
		t.Fatalf("election after restart: %v", el.ExtFields)
	}
}
