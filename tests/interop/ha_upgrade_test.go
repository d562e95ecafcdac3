package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestClassicSetWithApacheUpgradedToControllerMode: a classic set of an
// Apache 5.5.0 SYNC_MASTER and our SLAVE is upgraded in place to controller
// mode under our controller (Apache's controller deploy guide, "Upgrade
// Considerations": stop the set with aligned CommitLogs, restart it in
// controller mode, the master first). Apache's broker, restarted on its
// store, is elected; ours, restarted on its store, whose log has no epoch
// list, checks its last record against Apache's (VIEW_MESSAGE_BY_ID) and
// follows from its end; new sends are replicated and the CommitLogs are
// byte-identical.
func TestClassicSetWithApacheUpgradedToControllerMode(t *testing.T) {
	if os.Getenv(EnvApacheLong) != "1" {
		t.Skipf("%s=1 (make test-apache-long) runs it: Apache 5.5.0 broker JVMs started three times; beside the other Apache tests of make test it slowed their JVMs past their waits on 2 cores (e2e/TestClassicSetUpgradedToControllerMode, in make test, upgrades a set of ours)", EnvApacheLong)
	}
	requireApacheHA(t)
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.Broker)
	e := newCtlEnv(t)
	run, ns, ctl := e.run, e.ns, e.ctl
	startOurControllerNamesrv(t, bin, e.nsPort, e.peers)
	harness.WaitTCP(t, ctl, time.Minute)

	// Apache's classic master (scripts/apache/ha-lib.sh writes a
	// controller-mode broker.conf; the extra lines, read last, make it a
	// classic one on the same store).
	_, haPort, port := apachePorts(t)
	apache := &replicaNode{addr: fmt.Sprintf("127.0.0.1:%d", port), logDir: filepath.Join(run, "b1", "commitlog")}
	base := fmt.Sprintf("haListenPort=%d\nmappedFileSizeCommitLog=%d", haPort, mixedSetLog)
	pid := startApacheHA(t, run, "b1", "apache_ha_broker", "1", strconv.Itoa(port), ns, ctl,
		base+"\nenableControllerMode=false\nbrokerId=0\nbrokerRole=SYNC_MASTER")
	harness.WaitTCP(t, apache.addr, 2*time.Minute)

	// Our classic slave.
	dir := t.TempDir()
	ourPort := harness.LatePort(t)
	conf := filepath.Join(dir, "broker.conf")
	props := framework.BrokerProps("DefaultCluster", "broker-a", 1, ourPort, ns, dir, map[string]string{
		"brokerRole": "SLAVE", "haMasterAddress": fmt.Sprintf("127.0.0.1:%d", haPort),
		"haListenPort": strconv.Itoa(harness.LatePort(t)), "mappedFileSizeCommitLog": strconv.Itoa(mixedSetLog),
		"haSendHeartbeatInterval": "1000",
	})
	if err := framework.WriteProps(conf, props); err != nil {
		t.Fatal(err)
	}
	ours := &replicaNode{addr: fmt.Sprintf("127.0.0.1:%d", ourPort), logDir: filepath.Join(dir, "commitlog")}
	var proc *harness.Proc
	startOurs := func(name string) {
		proc = harness.StartProcessWith(t, harness.ProcOptions{Name: name}, filepath.Join(bin, harness.Broker), "-c", conf)
		proc.WaitTCP(t, ours.addr, time.Minute)
	}
	startOurs("broker-ours-classic")

	v := newCtlSetView(t, ns, ctl)
	// Apache's JVM answers admin requests some time after its port opens
	// (a topic creation right away timed out in a loaded CI run): wait
	// until it reports our slave connected.
	testutil.WaitFor(t, 2*time.Minute, "our slave connected to Apache's master", func() bool {
		st, err := haStatus(v.rc, apache.addr)
		return err == nil && len(st.HAConnectionInfo) == 1
	})
	const topic = "InteropUpgradedSet"
	sendN(t, ns, apache.addr, topic, 200)
	testutil.WaitFor(t, 60*time.Second, "our slave holds Apache's log", func() bool {
		st, err := haStatus(v.rc, apache.addr)
		return err == nil && len(st.HAConnectionInfo) == 1 && st.HAConnectionInfo[0].SlaveAckOffset == st.MasterCommitLogMaxOffset
	})
	sameLogs(t, v.rc, apache, ours)

	// The upgrade: the slave stops, then the master (gracefully: Apache's
	// shutdown hook flushes its store).
	if err := proc.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, time.Minute, "Apache's broker stopped", func() bool { return syscall.Kill(pid, 0) != nil })
	startApacheHA(t, run, "b1", "apache_ha_broker", "1", strconv.Itoa(port), ns, ctl, base)
	harness.WaitTCP(t, apache.addr, 2*time.Minute)
	v.waitMaster(apache)
	framework.MergeProps(props, map[string]string{"enableControllerMode": "true", "controllerAddr": ctl, "brokerId": "-1",
		"allAckInSyncStateSet": "true", "haMasterAddress": ""})
	if err := framework.WriteProps(conf, props); err != nil {
		t.Fatal(err)
	}
	startOurs("broker-ours-controller")
	v.joined(apache, ours)
	if !strings.Contains(proc.Logs(), "matches the master's") {
		t.Fatalf("our broker did not check its log against Apache's:\n%s", proc.Logs())
	}
	sameLogs(t, v.rc, apache, ours)
	sendN(t, ns, apache.addr, topic, 100)
	v.joined(apache, ours)
	sameLogs(t, v.rc, apache, ours)
}
