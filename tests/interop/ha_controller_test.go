package interop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestControllerModeMixedSet: one controller-mode broker set of an Apache
// 5.5.0 broker and one of ours, once under Apache's controller (embedded
// in its nameserver) and once under ours. In each:
//   - the replica started first is elected master; the other joins the
//     SyncStateSet with one change (no expand/shrink cycles: our slave
//     used to drop an empty Apache master's keep-alive, and joined before
//     its first heartbeat reached the controller);
//   - sends are replicated byte for byte;
//   - kill -9 of the master: the controller elects the other replica,
//     which takes sends; ours, elected, does not deliver again the
//     delay-level messages Apache delivered;
//   - the old master restarts on its store and follows the new one, and
//     the CommitLogs are byte-identical again;
//   - electMaster makes it the master again, and it takes sends.
//
// This is the controller-mode half of docs/operations.md "Migrating an
// Apache cluster".
func TestControllerModeMixedSet(t *testing.T) {
	requireApacheHA(t)
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.Broker)
	t.Run("apache_controller_our_master", func(t *testing.T) { mixedSet(t, bin, true) })
	t.Run("our_controller_apache_master", func(t *testing.T) { mixedSet(t, bin, false) })
}

// mixedSetLog is both sides' mappedFileSizeCommitLog (files are compared
// whole up to the end, so their sizes must agree).
const mixedSetLog = 64 << 20

// replicaNode is one replica of the mixed set, ours or Apache's.
type replicaNode struct {
	addr   string
	logDir string // its CommitLog directory
	start  func(t *testing.T)
	kill   func(t *testing.T)
}

func mixedSet(t *testing.T, bin string, apacheController bool) {
	e := newCtlEnv(t)
	run, nsPort, ns, ctl, peers := e.run, e.nsPort, e.ns, e.ctl, e.peers
	if apacheController {
		startApacheHA(t, run, "namesrv-0", "apache_ha_namesrv", "0", strconv.Itoa(nsPort), peers, "n0")
	} else {
		startOurControllerNamesrv(t, bin, nsPort, peers)
	}
	harness.WaitTCP(t, ctl, 2*time.Minute)

	ours := ourReplica(t, bin, ns, ctl)
	apache := apacheReplica(t, run, ns, ctl)
	first, second := ours, apache
	if !apacheController {
		first, second = apache, ours // each controller first elects the other side's broker
	}
	v := newCtlSetView(t, ns, ctl)
	ac, rc, joined := v.ac, v.rc, v.joined

	first.start(t)
	v.waitMaster(first)
	second.start(t)
	ri := joined(first, second)
	// The set stays as it is: Apache's master checks it every 5 s
	// (checkSyncStateSetPeriod) and ours every second.
	time.Sleep(6 * time.Second)
	if again := joined(first, second); again.SyncStateSetEpoch != ri.SyncStateSetEpoch || ri.SyncStateSetEpoch != 2 {
		t.Fatalf("SyncStateSet epoch %d, then %d 6 s later; want 2 (elected, then joined) both times", ri.SyncStateSetEpoch, again.SyncStateSetEpoch)
	}

	const topic = "InteropMixedSet"
	// routedTo waits until the nameserver routes topic to master: an
	// elected broker registers as broker id 0 after its election, and
	// producers need that route.
	routedTo := func(master *replicaNode) {
		t.Helper()
		testutil.Eventually(t, 60*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := ac.GetTopicRoute(ctx, topic)
			if err == nil && (len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerAddrs[0] != master.addr) {
				err = fmt.Errorf("route of %s: %+v, want master %s", topic, r.BrokerDatas, master.addr)
			}
			return err
		})
	}
	sendN(t, ns, first.addr, topic, 300)
	// Delay-level messages (level 1, 1 s) the first master delivers: the
	// second must not deliver them again once elected.
	sendNWith(t, ns, first.addr, topic, 2, func(m *message.Message) { m.SetDelayTimeLevel(1) })
	queued := func(addr string, want int64) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			total, err := harness.QueuedMessages(rc, addr, topic, 2)
			if err == nil && total != want {
				err = fmt.Errorf("%s holds %d messages of %s, want %d", addr, total, topic, want)
			}
			return err
		})
	}
	queued(first.addr, 302)
	joined(first, second)
	sameLogs(t, rc, first, second)

	// Failover: the second replica is elected and takes sends.
	first.kill(t)
	v.waitMaster(second)
	routedTo(second)
	time.Sleep(3 * time.Second) // past a delivery scan of the new master
	if second == ours {
		queued(second.addr, 302)
	} else {
		// Apache's slave refreshes its copy of the master's delay
		// offsets every 60 s (SlaveSynchronize), so elected it may
		// deliver ours again: at least once, as between Apache brokers.
		total, err := harness.QueuedMessages(rc, second.addr, topic, 2)
		if err != nil || total < 302 || total > 304 {
			t.Fatalf("%s holds %d messages of %s (%v), want 302 to 304", second.addr, total, topic, err)
		}
		t.Logf("Apache's elected broker holds %d messages (302: no delay-level message delivered again)", total)
	}
	sendN(t, ns, second.addr, topic, 200)

	// The old master follows the new one from its own store.
	first.start(t)
	ri = joined(second, first)
	sameLogs(t, rc, second, first)

	// electMaster hands the set back to it (docs/operations.md: how a
	// set moves to our brokers replica by replica).
	var firstID int64
	for _, r := range ri.InSyncReplicas {
		if r.BrokerAddress == first.addr {
			firstID = r.BrokerID
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ac.ElectMaster(ctx, ctl, "DefaultCluster", "broker-a", firstID); err != nil {
		t.Fatalf("electMaster %d (%s): %v", firstID, first.addr, err)
	}
	routedTo(first)
	sendN(t, ns, first.addr, topic, 100)
	joined(first, second)
	sameLogs(t, rc, first, second)
}

// startOurControllerNamesrv starts our nameserver on port with a
// controller embedded at peers' address (one node, n0, a new store).
// ctlEnv is a test's run directory and the addresses of its nameserver
// and of the controller beside it (one peer, n0).
type ctlEnv struct {
	run            string
	nsPort         int
	ns, ctl, peers string
}

func newCtlEnv(t *testing.T) ctlEnv {
	nsPort, ctlPort := harness.LatePort(t), harness.LatePort(t)
	ctl := fmt.Sprintf("127.0.0.1:%d", ctlPort)
	return ctlEnv{run: filepath.Join(t.TempDir(), "run"), nsPort: nsPort,
		ns: fmt.Sprintf("127.0.0.1:%d", nsPort), ctl: ctl, peers: "n0-" + ctl}
}

func startOurControllerNamesrv(t *testing.T, bin string, port int, peers string) *harness.Proc {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "namesrv.conf")
	props := fmt.Sprintf("listenPort=%d\nkvConfigPath=%s\nenableControllerInNamesrv=true\ncontrollerDLegerGroup=rmq-ha\ncontrollerDLegerPeers=%s\ncontrollerDLegerSelfId=n0\ncontrollerStorePath=%s\n",
		port, filepath.Join(dir, "kvConfig.json"), peers, filepath.Join(dir, "controller"))
	if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	p := harness.StartProcessWith(t, harness.ProcOptions{Name: "namesrv"}, filepath.Join(bin, harness.Namesrv), "-c", conf)
	p.WaitTCP(t, fmt.Sprintf("127.0.0.1:%d", port), 60*time.Second)
	return p
}

// ctlSetView watches set broker-a through a controller and a nameserver.
type ctlSetView struct {
	t   *testing.T
	ac  *admin.Client
	rc  *remoting.Client
	ctl string
}

func newCtlSetView(t *testing.T, ns, ctl string) *ctlSetView {
	ac, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ac.Close() })
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { rc.Close() })
	return &ctlSetView{t: t, ac: ac, rc: rc, ctl: ctl}
}

// state is the controller's view of the set.
func (v *ctlSetView) state() (protocol.ReplicasInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := v.ac.GetSyncStateData(ctx, v.ctl, []string{"broker-a"})
	if err != nil {
		return protocol.ReplicasInfo{}, err
	}
	ri, ok := info.ReplicasInfoTable["broker-a"]
	if !ok {
		return ri, errors.New("the controller knows no broker-a")
	}
	return ri, nil
}

// waitMaster waits until the controller names master.
func (v *ctlSetView) waitMaster(master *replicaNode) {
	v.t.Helper()
	testutil.Eventually(v.t, 60*time.Second, func() error {
		ri, err := v.state()
		if err == nil && ri.MasterAddress != master.addr {
			err = fmt.Errorf("SyncStateSet %+v, want master %s", ri, master.addr)
		}
		return err
	})
}

// joined waits until master leads a SyncStateSet of both replicas and
// holds the other's ack at its own end.
func (v *ctlSetView) joined(master, slave *replicaNode) protocol.ReplicasInfo {
	v.t.Helper()
	var ri protocol.ReplicasInfo
	testutil.Eventually(v.t, 90*time.Second, func() error {
		var err error
		if ri, err = v.state(); err != nil {
			return err
		}
		if ri.MasterAddress != master.addr || len(ri.InSyncReplicas) != 2 {
			return fmt.Errorf("SyncStateSet %+v, want master %s and both replicas", ri, master.addr)
		}
		st, err := haStatus(v.rc, master.addr)
		if err != nil {
			return err
		}
		if len(st.HAConnectionInfo) != 1 || st.HAConnectionInfo[0].SlaveAckOffset != st.MasterCommitLogMaxOffset {
			return fmt.Errorf("HA status of %s: %+v", master.addr, st)
		}
		return nil
	})
	return ri
}

// startWithMessages starts master, then slave, and sends 200 messages to
// topic once both are in the SyncStateSet; it returns the set as the
// controller then sees it, with byte-identical CommitLogs.
func (v *ctlSetView) startWithMessages(master, slave *replicaNode, ns, topic string) protocol.ReplicasInfo {
	t := v.t
	t.Helper()
	master.start(t)
	v.waitMaster(master)
	slave.start(t)
	v.joined(master, slave)
	sendN(t, ns, master.addr, topic, 200)
	ri := v.joined(master, slave)
	sameLogs(t, v.rc, master, slave)
	return ri
}

// TestControllerTakeoverFromApache: the last step of moving a
// controller-mode cluster to ours (docs/operations.md, "Migrating an
// Apache cluster"). A set of two of our brokers runs under Apache 5.5.0's
// controller, embedded in its nameserver. That nameserver is killed and
// ours, with an embedded controller and an empty store, takes its place
// at the same addresses. Our brokers apply for the ids Apache's controller
// gave them; the master, which its slave still hears, is elected again at
// an epoch above Apache's (a new controller would start at 1, which the
// replicas refuse); the slave rejoins the SyncStateSet; the set takes
// sends and the CommitLogs stay byte-identical.
func TestControllerTakeoverFromApache(t *testing.T) {
	requireApacheHA(t)
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.Broker)
	e := newCtlEnv(t)
	run, nsPort, ns, ctl, peers := e.run, e.nsPort, e.ns, e.ctl, e.peers
	apacheNs := startApacheHA(t, run, "namesrv-0", "apache_ha_namesrv", "0", strconv.Itoa(nsPort), peers, "n0")
	harness.WaitTCP(t, ctl, 2*time.Minute)

	a, b := ourReplica(t, bin, ns, ctl), ourReplica(t, bin, ns, ctl)
	v := newCtlSetView(t, ns, ctl)
	const topic = "InteropControllerTakeover"
	before := v.startWithMessages(a, b, ns, topic)

	if err := syscall.Kill(apacheNs, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The port is free once the JVM is gone.
	testutil.Eventually(t, 30*time.Second, func() error {
		ln, err := net.Listen("tcp", ctl)
		if err != nil {
			return err
		}
		return ln.Close()
	})
	startOurControllerNamesrv(t, bin, nsPort, peers)
	after := v.joined(a, b)
	if after.MasterEpoch <= before.MasterEpoch {
		t.Fatalf("master epoch %d under our controller, %d under Apache's: epochs went back", after.MasterEpoch, before.MasterEpoch)
	}
	idOf := func(ri protocol.ReplicasInfo, addr string) int64 {
		for _, r := range ri.InSyncReplicas {
			if r.BrokerAddress == addr {
				return r.BrokerID
			}
		}
		return 0
	}
	for _, n := range []*replicaNode{a, b} {
		if x, y := idOf(before, n.addr), idOf(after, n.addr); x == 0 || x != y {
			t.Fatalf("%s: id %d under Apache's controller, %d under ours", n.addr, x, y)
		}
	}
	t.Logf("master %s at epoch %d under Apache's controller, at %d under ours", a.addr, before.MasterEpoch, after.MasterEpoch)
	sendN(t, ns, a.addr, topic, 100)
	v.joined(a, b)
	sameLogs(t, v.rc, a, b)
}

// TestApacheBrokersRejoinControllersThatLostTheirState: a set of two
// Apache 5.5.0 brokers under our controller (embedded in our nameserver),
// which is killed and started again at the same addresses on an empty
// store. Apache's brokers never apply for their ids again: the first to
// ask for its replica info finds its set unknown and registers the id of
// its identity file, the other finds the set known and only heartbeats.
// Our controller takes both ids (Apache's own answers
// CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, and the brokers stay out) and,
// since Apache's brokers do not ask for an election of a set whose epoch
// is below theirs, elects the master itself after its warm-up, at an epoch
// above the old one. The set takes sends, replicated to the slave, with
// byte-identical CommitLogs.
//
// What stays wrong is Apache's: its master, named again with the new
// term's SyncStateSet (epoch 1), keeps the old term's (a higher epoch:
// ReplicasManager.changeSyncStateSet ignores a lower one) and never asks
// to add its slave, so the controller lists only the master in sync (an
// election after losing it needs enableElectUncleanMaster). Ours takes the
// new term's set (docs/replication.md §2.7).
func TestApacheBrokersRejoinControllersThatLostTheirState(t *testing.T) {
	if os.Getenv(EnvApacheLong) != "1" {
		t.Skipf("%s=1 (make test-apache-long) runs it: two Apache 5.5.0 broker JVMs through a controller's loss, ~40 s of CPU-heavy JVMs that make test's 12-minute budget on 2 cores has no room for", EnvApacheLong)
	}
	requireApacheHA(t)
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.Broker)
	e := newCtlEnv(t)
	run, nsPort, ns, ctl, peers := e.run, e.nsPort, e.ns, e.ctl, e.peers
	proc := startOurControllerNamesrv(t, bin, nsPort, peers)

	a, b := apacheReplicaN(t, run, 1, ns, ctl), apacheReplicaN(t, run, 2, ns, ctl)
	v := newCtlSetView(t, ns, ctl)
	const topic = "InteropApacheRejoin"
	before := v.startWithMessages(a, b, ns, topic)

	proc.Kill()
	startOurControllerNamesrv(t, bin, nsPort, peers)
	var after protocol.ReplicasInfo
	testutil.Eventually(t, 2*time.Minute, func() error {
		ri, err := v.state()
		if err != nil {
			return err
		}
		if ri.MasterAddress == "" || len(ri.InSyncReplicas)+len(ri.NotInSyncReplicas) != 2 {
			return fmt.Errorf("SyncStateSet %+v, want a master and both replicas registered", ri)
		}
		after = ri
		return nil
	})
	if after.MasterEpoch <= before.MasterEpoch {
		t.Fatalf("master epoch %d after the loss, %d before: epochs went back", after.MasterEpoch, before.MasterEpoch)
	}
	master, slave := a, b
	if after.MasterAddress == b.addr {
		master, slave = b, a
	}
	t.Logf("master %s at epoch %d before the loss, %s at %d after; in sync %v", before.MasterAddress, before.MasterEpoch,
		after.MasterAddress, after.MasterEpoch, after.InSyncReplicas)
	// The nameserver restarted with the controller: Apache's brokers
	// register again at their next round (registerNameServerPeriod), the
	// master maybe after its slave.
	testutil.Eventually(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := v.ac.GetTopicRoute(ctx, topic)
		if err == nil && (len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerAddrs[0] != master.addr) {
			err = fmt.Errorf("route of %s: %+v, want master %s", topic, r.BrokerDatas, master.addr)
		}
		return err
	})
	sendN(t, ns, master.addr, topic, 100)
	testutil.Eventually(t, 30*time.Second, func() error {
		st, err := haStatus(v.rc, master.addr)
		if err == nil && (len(st.HAConnectionInfo) != 1 || st.HAConnectionInfo[0].SlaveAckOffset != st.MasterCommitLogMaxOffset) {
			err = fmt.Errorf("HA status of %s: %+v", master.addr, st)
		}
		return err
	})
	sameLogs(t, v.rc, master, slave)
}

// apacheReplicaN is apacheReplica as replica i (its own run directory).
func apacheReplicaN(t *testing.T, run string, i int, ns, ctl string) *replicaNode {
	_, ha, port := apachePorts(t)
	extra := fmt.Sprintf("haListenPort=%d\nmappedFileSizeCommitLog=%d", ha, mixedSetLog)
	name := "b" + strconv.Itoa(i)
	n := &replicaNode{addr: fmt.Sprintf("127.0.0.1:%d", port), logDir: filepath.Join(run, name, "commitlog")}
	var pid int
	n.start = func(t *testing.T) {
		pid = startApacheHA(t, run, name, "apache_ha_broker", strconv.Itoa(i), strconv.Itoa(port), ns, ctl, extra)
		harness.WaitTCP(t, n.addr, 2*time.Minute)
	}
	n.kill = func(*testing.T) { _ = syscall.Kill(pid, syscall.SIGKILL) }
	return n
}

// sameLogs compares the first CommitLog file of master and slave up to
// the master's end.
func sameLogs(t *testing.T, rc *remoting.Client, master, slave *replicaNode) {
	t.Helper()
	st, err := haStatus(rc, master.addr)
	if err != nil {
		t.Fatal(err)
	}
	sameFirstFile(t, master.logDir, slave.logDir, st.MasterCommitLogMaxOffset)
}

// haStatus asks a broker for GET_BROKER_HA_STATUS without failing the
// test (the broker may be starting or gone).
func haStatus(rc *remoting.Client, addr string) (protocol.HARuntimeInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var st protocol.HARuntimeInfo
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(code.GetBrokerHAStatus, nil, nil))
	if err != nil {
		return st, err
	}
	if resp.Code != code.Success {
		return st, fmt.Errorf("HA status of %s: code %d %s", addr, resp.Code, resp.Remark)
	}
	return st, protocol.Unmarshal(resp.Body, &st)
}

// ourReplica is a controller-mode broker of ours in set broker-a.
func ourReplica(t *testing.T, bin, ns, ctl string) *replicaNode {
	dir := t.TempDir()
	port := harness.LatePort(t)
	conf := filepath.Join(dir, "broker.conf")
	props := framework.BrokerProps("DefaultCluster", "broker-a", 0, port, ns, dir, map[string]string{
		"brokerId": "-1", "brokerRole": "SLAVE", "enableControllerMode": "true", "controllerAddr": ctl,
		"allAckInSyncStateSet": "true", "haListenPort": strconv.Itoa(harness.LatePort(t)),
		"mappedFileSizeCommitLog": strconv.Itoa(mixedSetLog), "autoCreateTopicEnable": "true",
	})
	if err := framework.WriteProps(conf, props); err != nil {
		t.Fatal(err)
	}
	n := &replicaNode{addr: fmt.Sprintf("127.0.0.1:%d", port), logDir: filepath.Join(dir, "commitlog")}
	var proc *harness.Proc
	restarts := 0
	n.start = func(t *testing.T) {
		proc = harness.StartProcessWith(t, harness.ProcOptions{Name: "broker-ours-" + strconv.Itoa(restarts)}, filepath.Join(bin, harness.Broker), "-c", conf)
		restarts++
		proc.WaitTCP(t, n.addr, 60*time.Second)
	}
	n.kill = func(*testing.T) { proc.Kill() }
	return n
}

// apacheReplica is a controller-mode Apache 5.5.0 broker in set broker-a
// (scripts/apache/ha-lib.sh).
func apacheReplica(t *testing.T, run, ns, ctl string) *replicaNode {
	_, ha, port := apachePorts(t) // it listens on port−2 too (its fast remoting server)
	extra := fmt.Sprintf("haListenPort=%d\nmappedFileSizeCommitLog=%d", ha, mixedSetLog)
	n := &replicaNode{addr: fmt.Sprintf("127.0.0.1:%d", port), logDir: filepath.Join(run, "b1", "commitlog")}
	var pid int
	n.start = func(t *testing.T) {
		pid = startApacheHA(t, run, "b1", "apache_ha_broker", "1", strconv.Itoa(port), ns, ctl, extra)
		harness.WaitTCP(t, n.addr, 2*time.Minute)
	}
	n.kill = func(*testing.T) { _ = syscall.Kill(pid, syscall.SIGKILL) }
	return n
}

// apachePorts returns three consecutive LatePorts p−2, p−1, p: an Apache
// broker listening on p also listens on p−2, which must not be a port
// handed to another server meanwhile (our broker's port may be free until
// it starts), and on haListenPort, here p−1.
func apachePorts(t *testing.T) (vip, ha, port int) {
	t.Helper()
	for range 100 {
		a, b, c := harness.LatePort(t), harness.LatePort(t), harness.LatePort(t)
		if b == a+1 && c == a+2 {
			return a, b, c
		}
	}
	t.Fatal("interop: no three consecutive free ports")
	return 0, 0, 0
}

// startApacheHA runs one of scripts/apache/ha-lib.sh's start functions
// (apache_ha_namesrv, apache_ha_broker) with args in run and returns the
// JVM's pid. The JVM is killed at cleanup, and by a watchdog if this test
// process dies first. Without java or mvn the test is skipped (or fails
// with RMQ_REQUIRE_JAVA=1).
func startApacheHA(t *testing.T, run, name, fn string, args ...string) int {
	t.Helper()
	script := `. "$1/scripts/apache/ha-lib.sh" || exit 3
run=$2 watch=$3
shift 3
apache_ha_init "$run"
"$@"
setsid bash -c 'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done; kill -9 "$2" 2>/dev/null' wd "$watch" "$apache_pid" </dev/null >/dev/null 2>&1 &
echo "$apache_pid"`
	cmd := exec.Command("bash", append([]string{"-c", script, "ha-lib", harness.RepoRoot(t), run, strconv.Itoa(os.Getpid()), fn}, args...)...)
	cmd.Env = append(os.Environ(), "APACHE_JVM_LIGHT=1") // as StartApacheWith
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == exitRuntimeMissing {
		missing(t, EnvRequireJava, stderr.String(), "scripts/apache/ha-lib.sh exited 3")
	}
	pid, perr := strconv.Atoi(lastLine(string(out)))
	if err != nil || perr != nil || pid <= 0 {
		t.Fatalf("interop: %s %s: %v (pid %q)\nstderr:\n%s", fn, strings.Join(args, " "), err, out, stderr.String())
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("interop: ----- Apache %s.log (tail) -----\n%s", name, tail(filepath.Join(run, "logs", name+".log"), 16<<10))
			// Its stdout: a start-up failure's stack trace, printed
			// before BrokerStartup's System.exit, is only there.
			t.Logf("interop: ----- Apache %s.out (tail) -----\n%s", name, tail(filepath.Join(run, "logs", name+".out"), 8<<10))
		}
	})
	return pid
}
