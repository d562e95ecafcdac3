package controller

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func TestRequestCodes(t *testing.T) {
	cl := newCluster(t, 1)
	_, c := cl.leader()
	// Heartbeat without brokerId.
	wantCode(t, call(t, c, code.BrokerHeartbeat, map[string]string{"brokerName": "a"}, nil), code.ControllerInvalidRequest)
	// Unknown set / id.
	wantCode(t, call(t, c, code.ControllerRegisterBroker, map[string]string{"brokerName": "zz", "brokerId": "1", "brokerAddress": "x"}, nil), code.ControllerBrokerNeedToBeRegistered)
	wantCode(t, call(t, c, code.ControllerGetReplicaInfo, map[string]string{"brokerName": "zz"}, nil), code.ControllerBrokerMetadataNotExist)
	wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "zz", "brokerId": "1"}, nil), code.ControllerBrokerNeedToBeRegistered)
	wantCode(t, call(t, c, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "zz", "appliedBrokerId": "0", "registerCheckCode": "x;1"}, nil), code.ControllerBrokerIDInvalid)
	// A heartbeat from a replica the leader does not know asks it to apply
	// for its id again.
	wantCode(t, call(t, c, code.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "zz", "brokerId": "2", "brokerAddr": "x"}, nil), code.ControllerBrokerNeedToBeRegistered)
	wantCode(t, call(t, c, code.ControllerGetSyncStateData, nil, []byte("[]")), code.SystemError)
	registerReplica(t, c, "a")
	registerReplica(t, c, "a")
	wantCode(t, call(t, c, code.ControllerRegisterBroker, map[string]string{"brokerName": "a", "brokerId": "3", "brokerAddress": "x"}, nil), code.ControllerBrokerNeedToBeRegistered)
	// Id 2 taken by another registration.
	wantCode(t, call(t, c, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "a", "appliedBrokerId": "2", "registerCheckCode": "y;1"}, nil), code.ControllerBrokerIDInvalid)
	// Registering from a new address moves the replica.
	wantCode(t, call(t, c, code.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "a", "brokerId": "2", "brokerAddress": "10.9.9.9:10911"}, nil), code.Success)
	if b, _ := c.State().Get("a"); b.Address(2) != "10.9.9.9:10911" {
		t.Fatalf("address not updated: %+v", b.Replicas)
	}
	// No master yet: register names none; a broker-triggered election of
	// an unregistered id fails.
	reg := call(t, c, code.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "a", "brokerId": "1", "brokerAddress": "10.0.0.1:10911"}, nil)
	if reg.Ext("masterBrokerId") != "" {
		t.Fatalf("register named a master: %v", reg.ExtFields)
	}
	wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "7"}, nil), code.ControllerBrokerNeedToBeRegistered)
	hb(t, c, "a", 1, 60000, 0, 0)
	hb(t, c, "a", 2, 60000, 0, 0)
	wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "1"}, nil), code.Success)
	reg = call(t, c, code.ControllerRegisterBroker, map[string]string{"clusterName": "c", "brokerName": "a", "brokerId": "2", "brokerAddress": "10.9.9.9:10911"}, nil)
	if reg.Ext("masterBrokerId") != "1" || reg.Ext("masterEpoch") != "1" {
		t.Fatalf("register after election: %v", reg.ExtFields)
	}
	// A member that never heartbeated cannot join; the live one can.
	registerReplica(t, c, "a")
	wantCode(t, call(t, c, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": "a", "masterBrokerId": "1", "masterEpoch": "1"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1, 3}, SyncStateSetEpoch: 1})), code.ControllerBrokerNotAlive)
	wantCode(t, call(t, c, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": "a", "masterBrokerId": "1", "masterEpoch": "1"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1})), code.Success)
	// Designated election outside the set is refused; inside it moves.
	wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "2", "designateElect": "true"}, nil), code.Success)
	// Sync state data lists both replicas.
	resp := call(t, c, code.ControllerGetSyncStateData, nil, []byte(`["a","nope"]`))
	wantCode(t, resp, code.Success)
	var info protocol.BrokerReplicasInfo
	if err := protocol.Unmarshal(resp.Body, &info); err != nil {
		t.Fatal(err)
	}
	a, ok := info.ReplicasInfoTable["a"]
	if !ok || len(info.ReplicasInfoTable) != 1 || a.MasterBrokerID != 2 || a.MasterEpoch != 2 || len(a.InSyncReplicas) != 1 || len(a.NotInSyncReplicas) != 2 || a.NotInSyncReplicas[1].Alive ||
		!a.InSyncReplicas[0].Alive || a.NotInSyncReplicas[0].BrokerID != 1 {
		t.Fatalf("sync state data %s", resp.Body)
	}
	// Clean: a set with a master is refused, alive ids too; -l cleans.
	wantCode(t, call(t, c, code.CleanBrokerData, map[string]string{"brokerName": "a"}, nil), code.ControllerInvalidCleanBrokerMetadata)
	wantCode(t, call(t, c, code.CleanBrokerData, map[string]string{"brokerName": "a", "brokerControllerIdsToClean": "1"}, nil), code.ControllerInvalidCleanBrokerMetadata)
	wantCode(t, call(t, c, code.CleanBrokerData, map[string]string{"brokerName": "a", "brokerControllerIdsToClean": "x"}, nil), code.ControllerInvalidCleanBrokerMetadata)
	wantCode(t, call(t, c, code.CleanBrokerData, map[string]string{"brokerName": "zz", "isCleanLivingBroker": "true"}, nil), code.ControllerInvalidCleanBrokerMetadata)
	wantCode(t, call(t, c, code.CleanBrokerData, map[string]string{"brokerName": "a", "brokerControllerIdsToClean": "1", "isCleanLivingBroker": "true"}, nil), code.Success)
	if b, _ := c.State().Get("a"); !slices.Equal(b.ReplicaIDs(), []int64{2, 3}) {
		t.Fatalf("after clean: %+v", b)
	}

	// A broker registering an id this controller does not know (its
	// controllers lost their state; Apache's brokers register the id of
	// their identity file and never apply again) gets it as if applied
	// for, under APPLY_BROKER_ID's rules: not a cleaned id, not a second id
	// for a known address, and only with its cluster named.
	reg9 := func(set, id, addr string, withCluster bool) *remoting.Command {
		ext := map[string]string{"brokerName": set, "brokerId": id, "brokerAddress": addr}
		if withCluster {
			ext["clusterName"] = "c"
		}
		return call(t, c, code.ControllerRegisterBroker, ext, nil)
	}
	wantCode(t, reg9("a", "1", "10.0.0.1:10911", true), code.ControllerBrokerNeedToBeRegistered)  // cleaned
	wantCode(t, reg9("a", "9", "10.9.9.9:10911", true), code.ControllerBrokerNeedToBeRegistered)  // id 2's address
	wantCode(t, reg9("a", "9", "10.0.0.9:10911", false), code.ControllerBrokerNeedToBeRegistered) // no cluster
	wantCode(t, reg9("a", "9", "x", true), code.ControllerBrokerNeedToBeRegistered)               // no host:port
	wantCode(t, reg9("a", "9", "10.0.0.9:10911", true), code.Success)
	wantCode(t, reg9("lost", "4", "10.0.4.4:10911", true), code.Success)
	if b, _ := c.State().Get("a"); !slices.Equal(b.ReplicaIDs(), []int64{2, 3, 9}) || b.Address(9) != "10.0.0.9:10911" {
		t.Fatalf("after re-registration: %+v", b)
	}
	if b, ok := c.State().Get("lost"); !ok || !slices.Equal(b.ReplicaIDs(), []int64{4}) || b.ClusterName != "c" {
		t.Fatalf("a set re-registered by one replica: %+v %v", b, ok)
	}
	// The other replicas of such a set find it known and do not register:
	// their one-way heartbeats (Apache's) bring their ids back; a request
	// heartbeat (ours) is answered 2010, and a cleaned id stays out.
	oneway := func(id, addr string) {
		t.Helper()
		req := remoting.NewRequest(code.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "lost", "brokerId": id, "brokerAddr": addr, "heartbeatTimeoutMills": "60000"}, nil)
		req.MarkOneway()
		if _, err := c.handlers()[code.BrokerHeartbeat](context.Background(), nil, req); err != nil {
			t.Fatal(err)
		}
	}
	oneway("5", "10.0.4.5:10911")
	wantCode(t, call(t, c, code.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "lost", "brokerId": "6", "brokerAddr": "10.0.4.6:10911"}, nil), code.ControllerBrokerNeedToBeRegistered)
	if b, _ := c.State().Get("lost"); !slices.Equal(b.ReplicaIDs(), []int64{4, 5}) {
		t.Fatalf("after heartbeats: %+v", b)
	}
	// A broker whose id was taken that way may apply for it with its own
	// check code, from the same address only.
	wantCode(t, call(t, c, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "lost", "appliedBrokerId": "5", "registerCheckCode": "10.9.9.9:10911;7"}, nil), code.ControllerBrokerIDInvalid)
	wantCode(t, call(t, c, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "lost", "appliedBrokerId": "5", "registerCheckCode": "10.0.4.5:10911;7"}, nil), code.Success)
	wantCode(t, call(t, c, code.ControllerApplyBrokerID, map[string]string{"clusterName": "c", "brokerName": "lost", "appliedBrokerId": "5", "registerCheckCode": "10.0.4.5:10911;8"}, nil), code.ControllerBrokerIDInvalid)
}

// TestUncleanElection: all SyncStateSet members dead, a non-member alive
// (docs/replication.md §7 row 11): no master until enableElectUncleanMaster
// is switched on with UPDATE_CONTROLLER_CONFIG.
func TestUncleanElection(t *testing.T) {
	c := oneNodeWithMaster(t, 300)
	// Only replica 2 keeps heartbeating; master 1 times out.
	testutil.WaitFor(t, waitFor, "master expiry", func() bool {
		hb(t, c, "a", 2, 60000, 1, 50)
		b, _ := c.State().Get("a")
		return !b.HasMaster()
	})
	if b, _ := c.State().Get("a"); b.MasterEpoch != 2 || !slices.Equal(b.SyncStateSet, []int64{1}) {
		t.Fatalf("no-master state: %+v", b)
	}
	// Scans keep finding nobody without moving the epoch again.
	time.Sleep(200 * time.Millisecond)
	if b, _ := c.State().Get("a"); b.MasterEpoch != 2 {
		t.Fatalf("epoch churned: %+v", b)
	}
	wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "2", "designateElect": "true"}, nil), code.ControllerElectMasterFailed)
	// Black-listed keys are refused; the flag is accepted and persisted.
	wantCode(t, call(t, c, code.UpdateControllerConfig, nil, []byte("configStorePath=/tmp/x\n")), code.NoPermission)
	wantCode(t, call(t, c, code.UpdateControllerConfig, nil, []byte("rocketmqHome=/tmp/x\n")), code.NoPermission)
	wantCode(t, call(t, c, code.UpdateControllerConfig, nil, []byte("noSuchKey=1\n")), code.SystemError)
	wantCode(t, call(t, c, code.UpdateControllerConfig, nil, []byte("enableElectUncleanMaster=true\n")), code.Success)
	data, err := os.ReadFile(c.Config().ConfigStorePath)
	if err != nil || !strings.Contains(string(data), "enableElectUncleanMaster=true") {
		t.Fatalf("persisted config: %v %s", err, data)
	}
	got := call(t, c, code.GetControllerConfig, nil, nil)
	if !strings.Contains(string(got.Body), "enableElectUncleanMaster=true") || !strings.Contains(string(got.Body), "controllerDLegerGroup=g") {
		t.Fatalf("config body %s", got.Body)
	}
	testutil.WaitFor(t, waitFor, "unclean election", func() bool {
		hb(t, c, "a", 2, 60000, 1, 50)
		b, _ := c.State().Get("a")
		return b.MasterBrokerID == 2
	})
	if b, _ := c.State().Get("a"); b.MasterEpoch != 3 || !slices.Equal(b.SyncStateSet, []int64{2}) {
		t.Fatalf("unclean master state: %+v", b)
	}
}

// TestInactiveMasterScan checks the scan both ways (upstream once had it
// inverted): a dead slave never triggers an election, a dead master with a
// live replica does.
func TestInactiveMasterScan(t *testing.T) {
	c := oneNodeWithMaster(t, 60000)
	if got := c.setsNeedingElection(); len(got) != 0 {
		t.Fatalf("master alive, slave never seen: %v", got)
	}
	c.live.removeConn(0) // no-op: entries without a connection stay
	if !c.live.alive("a", 1) {
		t.Fatal("removeConn(0) dropped an entry")
	}
	// Master gone, slave alive.
	c.live.mu.Lock()
	delete(c.live.brokers, liveKey{"c", "a", 1})
	c.live.mu.Unlock()
	if got := c.setsNeedingElection(); len(got) != 0 {
		t.Fatalf("no replica alive, still listed: %v", got)
	}
	hb(t, c, "a", 2, 60000, 0, 0)
	if got := c.setsNeedingElection(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("master dead, slave alive: %v", got)
	}
}

func TestLiveness(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	l := newLiveness(clock, 10*time.Second)
	l.update(heartbeat{key: liveKey{"c", "a", 1}, addr: "x", timeout: time.Second, epoch: 3, maxOffset: 1 << 40, connID: 7})
	l.update(heartbeat{key: liveKey{"c", "a", 2}, addr: "y", connID: 8}) // default timeout
	now = now.Add(5 * time.Second)
	if l.alive("a", 1) || !l.alive("a", 2) {
		t.Fatal("timeouts not applied")
	}
	l.update(heartbeat{key: liveKey{"c", "a", 2}, addr: "y", connID: 8})
	if got := l.expire(); got != nil {
		t.Fatalf("expired during warm-up: %v", got)
	}
	now = now.Add(6 * time.Second)
	if got := l.expire(); len(got) != 1 || got[0].id != 1 {
		t.Fatalf("expired %v", got)
	}
	// A later report overwrites a higher offset (the replica truncated).
	l.update(heartbeat{key: liveKey{"c", "a", 2}, addr: "y", epoch: 3, maxOffset: 10, connID: 8})
	l.update(heartbeat{key: liveKey{"c", "a", 2}, addr: "y", epoch: 3, maxOffset: 5, connID: 8})
	if cand, ok := l.candidate("a", 2); !ok || cand.MaxOffset != 5 || cand.Priority != 0 || cand.Stale {
		t.Fatalf("candidate %+v %v", cand, ok)
	}
	// Heard more than half its timeout (default 10 s) ago: still alive,
	// but stale (a replica that died silently with its master).
	now = now.Add(6 * time.Second)
	if cand, ok := l.candidate("a", 2); !ok || !cand.Stale {
		t.Fatalf("candidate 6 s after its last heartbeat: %+v %v", cand, ok)
	}
	l.update(heartbeat{key: liveKey{"c", "a", 2}, addr: "y", epoch: 3, maxOffset: 5, connID: 8})
	if got := l.removeConn(8); len(got) != 1 || l.alive("a", 2) {
		t.Fatalf("connection close: %v", got)
	}
	if p := parsePriority("", nil); p != 1<<31-1 {
		t.Fatalf("default priority %d", p)
	}
}

// TestRoleChangeNotification: after an election the alive replicas get
// NOTIFY_BROKER_ROLE_CHANGED with the new master and epochs.
func TestRoleChangeNotification(t *testing.T) {
	got := make(chan *remoting.Command, 4)
	srv, err := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Register(code.NotifyBrokerRoleChanged, func(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		got <- req
		return nil, nil
	}, nil)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	cl := newCluster(t, 1)
	_, c := cl.leader()
	wantCode(t, call(t, c, code.UpdateControllerConfig, nil, []byte("notifyBrokerRoleChanged=true\n")), code.Success)
	registerReplica(t, c, "a")
	call(t, c, code.BrokerHeartbeat, map[string]string{"clusterName": "c", "brokerName": "a", "brokerId": "1", "brokerAddr": srv.Addr()}, nil)
	wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "1"}, nil), code.Success)
	select {
	case req := <-got:
		var body protocol.SyncStateSet
		if err := protocol.Unmarshal(req.Body, &body); err != nil || !slices.Equal(body.SyncStateSet, []int64{1}) ||
			req.Ext("masterBrokerId") != "1" || req.Ext("masterEpoch") != "1" || req.Ext("syncStateSetEpoch") != "1" ||
			req.Ext("masterAddress") != "10.0.0.1:10911" || !req.IsOneway() {
			t.Fatalf("notification %v %s", req.ExtFields, req.Body)
		}
	case <-time.After(waitFor):
		t.Fatal("no notification")
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.Validate() == nil {
		t.Fatal("config without peers accepted")
	}
	cfg.ControllerDLegerGroup = "g"
	cfg.ControllerDLegerPeers = "n0-127.0.0.1:9878;n1-127.0.0.1:9868"
	cfg.ControllerDLegerSelfID = "n2"
	cfg.Resolve("/home/x")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "controllerDLegerSelfId") {
		t.Fatalf("unknown self id: %v", err)
	}
	cfg.ControllerDLegerSelfID = "n1"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.ControllerStorePath != "/home/x/DLedgerController" || cfg.ConfigStorePath != "/home/x/controller/controller.properties" {
		t.Fatalf("paths %s %s", cfg.ControllerStorePath, cfg.ConfigStorePath)
	}
	// jRaft flavour: upstream's defaults pair 9880..9882 with 9770..9772.
	cfg.ControllerType = "jRaft"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	self, peers, _ := cfg.SelfPeer()
	if self.ID != "localhost:9880" || self.RPCAddr != "localhost:9770" || len(peers) != 3 || peers[2].RPCAddr != "localhost:9772" {
		t.Fatalf("jRaft peers %+v %+v", self, peers)
	}
	cfg.JRaftControllerRPCAddr = "localhost:9770"
	if cfg.Validate() == nil {
		t.Fatal("unpaired jRaft addresses accepted")
	}
	cfg.ControllerType = "zk"
	if cfg.Validate() == nil {
		t.Fatal("unknown controllerType accepted")
	}
}

// TestJRaftFlavour: raft and requests on separate ports; metadata names
// the leader's request address.
func TestJRaftFlavour(t *testing.T) {
	raftAddr, rpcAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	cfg := testConfig(t, "", "")
	cfg.ControllerType = "jRaft"
	cfg.JRaftGroupID = "jg"
	cfg.JRaftServerID = raftAddr
	cfg.JRaftInitConf = raftAddr
	cfg.JRaftControllerRPCAddr = rpcAddr
	c, err := New(cfg, Deps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Addr() != rpcAddr {
		t.Fatalf("request address %s, want %s", c.Addr(), rpcAddr)
	}
	cli := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer cli.Close()
	testutil.Eventually(t, waitFor, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, rpcAddr, remoting.NewRequest(code.ControllerGetMetadataInfo, nil, nil))
		if err != nil {
			return err
		}
		if resp.Ext("isLeader") != "true" || resp.Ext("controllerLeaderAddress") != rpcAddr || resp.Ext("controllerLeaderId") != raftAddr ||
			resp.Ext("peers") != raftAddr+":"+rpcAddr+";" || resp.Ext("group") != "jg" {
			return fmt.Errorf("metadata %v", resp.ExtFields)
		}
		return nil
	})
}

// TestBindHost: with BindHost the peer port is bound on that interface,
// not on the peer address, which is still what the node advertises (as
// Apache's DLedger server, bound on every interface): here a peer address
// on another loopback address, reached through nothing but its port on
// 127.0.0.1.
func TestBindHost(t *testing.T) {
	port := strings.TrimPrefix(testutil.FreeAddr(t), "127.0.0.1:")
	peer := "127.0.0.3:" + port
	cfg := testConfig(t, "n0-"+peer, "n0")
	cfg.BindHost = "127.0.0.1"
	c, err := New(cfg, Deps{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer cli.Close()
	testutil.Eventually(t, waitFor, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, "127.0.0.1:"+port, remoting.NewRequest(code.ControllerGetMetadataInfo, nil, nil))
		if err != nil {
			return err
		}
		if resp.Ext("isLeader") != "true" || resp.Ext("controllerLeaderAddress") != peer {
			return fmt.Errorf("metadata %v", resp.ExtFields)
		}
		return nil
	})
	if ln, err := net.Listen("tcp", peer); err != nil {
		t.Fatalf("the peer address itself is bound: %v", err)
	} else {
		ln.Close()
	}
}

// TestNewFailsOnBusyPort: a peer address in use fails New cleanly (the
// package's leak check covers what it started).
func TestNewFailsOnBusyPort(t *testing.T) {
	ln := testutil.Listen(t)
	defer ln.Close()
	cfg := testConfig(t, "n0-"+ln.Addr().String(), "n0")
	if _, err := New(cfg, Deps{}, nil); err == nil || !strings.Contains(err.Error(), "listen on peer address") {
		t.Fatalf("New on a busy port: %v", err)
	}
}

// oneNodeWithMaster is a one-node controller with set "a" of replicas 1
// and 2, master 1, whose heartbeat times out after masterTimeoutMs.
func oneNodeWithMaster(t *testing.T, masterTimeoutMs int) *Controller {
	t.Helper()
	cl := newCluster(t, 1)
	_, c := cl.leader()
	registerReplica(t, c, "a")
	registerReplica(t, c, "a")
	hb(t, c, "a", 1, masterTimeoutMs, 0, 0)
	wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "1"}, nil), code.Success)
	return c
}

// TestMasterGoneWithASlave: the master's connection closes and, a few
// milliseconds later, a slave's (one kill of both processes). The
// controller must not elect the slave that is about to be found dead: it
// waits masterGoneGrace, sees both gone and elects the live replica. (It
// used to elect at once, and half the time picked the dead slave, which
// then sat alone in its SyncStateSet while the live replica could not be
// elected.)
func TestMasterGoneWithASlave(t *testing.T) {
	for _, dead := range []int64{2, 3} {
		t.Run(fmt.Sprintf("slave %d dies", dead), func(t *testing.T) {
			cl := newCluster(t, 1)
			_, c := cl.leader()
			// A grace far beyond the few statements below, so that a
			// loaded machine cannot stretch them past it.
			const grace = time.Second
			c.graceOverride.Store(int64(grace))
			for range 3 {
				registerReplica(t, c, "a")
			}
			beatConn := func(id int64) {
				c.live.update(heartbeat{key: liveKey{"c", "a", id}, addr: fmt.Sprintf("10.0.0.%d:10911", id), timeout: time.Minute,
					epoch: 1, maxOffset: 100, connID: uint64(id)})
			}
			for id := int64(1); id <= 3; id++ {
				beatConn(id)
			}
			wantCode(t, call(t, c, code.ControllerElectMaster, map[string]string{"brokerName": "a", "brokerId": "1"}, nil), code.Success)
			b, _ := c.State().Get("a")
			if b.MasterBrokerID != 1 {
				t.Fatalf("first master %+v", b)
			}
			wantCode(t, call(t, c, code.ControllerAlterSyncStateSet, map[string]string{"brokerName": "a", "masterBrokerId": "1", "masterEpoch": fmt.Sprint(b.MasterEpoch)},
				protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: []int64{1, 2, 3}, SyncStateSetEpoch: b.SyncStateSetEpoch})), code.Success)
			before := b.MasterEpoch

			gone := time.Now()
			c.brokersGone(c.live.removeConn(1))
			if c.setsNeedingElection() != nil {
				t.Fatal("the inactive-master scan elects during the grace")
			}
			c.brokersGone(c.live.removeConn(uint64(dead)))
			if time.Since(gone) >= grace {
				t.Fatalf("the slave's close came %v after the master's, past the %v grace: the test proves nothing", time.Since(gone), grace)
			}
			alive := 5 - dead
			testutil.WaitFor(t, waitFor, "a new master", func() bool {
				b, _ := c.State().Get("a")
				return b.MasterBrokerID != 1 && b.HasMaster()
			})
			if b, _ := c.State().Get("a"); b.MasterBrokerID != alive || b.MasterEpoch != before+1 {
				t.Fatalf("elected %d at epoch %d, want the live replica %d at %d: %+v", b.MasterBrokerID, b.MasterEpoch, alive, before+1, b)
			}
		})
	}
}
