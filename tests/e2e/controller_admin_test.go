package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestControllerMQAdmin runs our mqadmin and the Java mqadmin 5.5.0 (skipped
// with a message without java/mvn) against a nameserver process with an
// embedded one-node controller (docs/operations.md "Replication and the
// controller"): both print the same lines for getControllerMetaData,
// getSyncStateSet and getControllerConfig; updateControllerConfig succeeds,
// and both refuse a black-listed key. Our electMaster and
// cleanBrokerMetadata, then the Java tool's, change the state the way the
// controller decides.
func TestControllerMQAdmin(t *testing.T) {
	processOnly(t, "runs a nameserver process with an embedded controller")
	// Mostly waiting for the Java tool's JVMs and elections: runs beside
	// the other slow tests.
	t.Parallel()
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.MQAdmin)
	ctl := startControllerNamesrv(t, bin)
	mq := filepath.Join(bin, harness.MQAdmin)

	// broker-a: replicas 1 (master) and 2, both alive, both in the
	// SyncStateSet — sent as brokers send it (docs/replication.md §3.4).
	brokerAddr := func(id int64) string { return fmt.Sprintf("127.0.0.1:%d", 31910+id) }
	setUpReplicas(t, ctl, "c1", "broker-a", brokerAddr(1), brokerAddr(2))

	ours := func(args ...string) string {
		t.Helper()
		out, err := harness.RunMQAdmin(t, mq, args...)
		if err != nil {
			t.Fatalf("mqadmin %v: %v", args, err)
		}
		return out
	}
	// updateControllerConfig: a normal key, then a black-listed one.
	upd := []string{"updateControllerConfig", "-a", ctl, "-k", "enableElectUncleanMaster", "-v", "true"}
	wantUpd := "update controller config success![" + ctl + "]\nenableElectUncleanMaster : true\n"
	if out := ours(upd...); out != wantUpd {
		t.Errorf("our update:\n%s", out)
	}
	black := []string{"updateControllerConfig", "-a", ctl, "-k", "configStorePath", "-v", t.TempDir()}
	if _, stderr, exit := harness.ExecMQAdmin(t, mq, black...); exit != 1 || !strings.Contains(stderr, "NO_PERMISSION (code 16)") {
		t.Errorf("our black-listed update: exit %d, stderr %s", exit, stderr)
	}

	same := [][]string{
		{"getControllerMetaData", "-a", ctl},
		{"getSyncStateSet", "-a", ctl, "-b", "broker-a"},
		{"getControllerConfig", "-a", ctl},
		upd, // the same value again: the state stays as it is
	}
	want := map[int]string{3: wantUpd}
	for i, args := range same[:3] {
		want[i] = ours(args...)
	}
	if !strings.Contains(want[0], "\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t"+ctl+"\n#Peer:\tn0:"+ctl+"\n") {
		t.Fatalf("getControllerMetaData:\n%s", want[0])
	}
	if !strings.Contains(want[1], "#MasterBrokerId\t1\n#MasterAddr\t"+brokerAddr(1)+"\n#MasterEpoch\t1\n#SyncStateSetEpoch\t2\n#SyncStateSetNums\t2\n") ||
		!strings.Contains(want[1], "InSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=2, brokerAddress='"+brokerAddr(2)+"', alive=true}") {
		t.Fatalf("getSyncStateSet:\n%s", want[1])
	}
	if !strings.HasPrefix(want[2], "============"+ctl+"============\n") ||
		!strings.Contains(want[2], "\nenableElectUncleanMaster                          =  true\n") {
		t.Fatalf("getControllerConfig:\n%s", want[2])
	}

	got := javaOutputs(t, append(append([][]string{}, same...), black))
	for i, args := range same {
		if got[i] != want[i] {
			t.Errorf("%v: Java prints\n%s\nwe print\n%s", args, got[i], want[i])
		}
	}
	if out := got[len(same)]; strings.Contains(out, "success") {
		t.Errorf("Java black-listed update:\n%s", out)
	}

	// electMaster moves the master to replica 2; cleaning a living
	// replica without -l is refused.
	if out := ours("electMaster", "-a", ctl, "-c", "c1", "-bn", "broker-a", "-b", "2"); out != "\n#ClusterName\tc1\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t"+brokerAddr(2)+"\n#MasterEpoch\t2\n#SyncStateSetEpoch\t3\n" {
		t.Errorf("electMaster:\n%s", out)
	}
	if out := ours("getSyncStateSet", "-a", ctl, "-b", "broker-a"); !strings.Contains(out, "#MasterBrokerId\t2\n") ||
		!strings.Contains(out, "NotInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, brokerAddress='"+brokerAddr(1)+"', alive=true}") {
		t.Errorf("getSyncStateSet after the election:\n%s", out)
	}
	if _, stderr, exit := harness.ExecMQAdmin(t, mq, "electMaster", "-a", ctl, "-c", "c1", "-bn", "broker-a", "-b", "2"); exit != 1 ||
		!strings.Contains(stderr, "CONTROLLER_MASTER_STILL_EXIST (code 2011)") {
		t.Errorf("electing the master again: exit %d, stderr %s", exit, stderr)
	}
	if _, stderr, exit := harness.ExecMQAdmin(t, mq, "cleanBrokerMetadata", "-a", ctl, "-c", "c1", "-bn", "broker-a", "-b", "1"); exit != 1 ||
		!strings.Contains(stderr, "CONTROLLER_INVALID_CLEAN_BROKER_METADATA (code 2009)") {
		t.Errorf("cleaning a living replica: exit %d, stderr %s", exit, stderr)
	}

	// The Java tool's electMaster and cleanBrokerMetadata against our
	// controller: replica 1 is out of the SyncStateSet, so electing it is
	// unclean (allowed: enableElectUncleanMaster was set above); then the
	// living replica 2 is cleaned with -l.
	elect := []string{"electMaster", "-a", ctl, "-c", "c1", "-bn", "broker-a", "-b", "1"}
	if out := javaOutputs(t, [][]string{elect})[0]; out != "\n#ClusterName\tc1\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t"+brokerAddr(1)+"\n#MasterEpoch\t3\n#SyncStateSetEpoch\t4\n" {
		t.Errorf("Java electMaster:\n%s", out)
	}
	clean := []string{"cleanBrokerMetadata", "-a", ctl, "-c", "c1", "-bn", "broker-a", "-b", "2", "-l"}
	if out := javaOutputs(t, [][]string{clean})[0]; out != "clear broker broker-a metadata from controller success! \n" {
		t.Errorf("Java cleanBrokerMetadata -l:\n%s", out)
	}
	if out := ours("getSyncStateSet", "-a", ctl, "-b", "broker-a"); !strings.Contains(out, "#MasterBrokerId\t1\n") ||
		strings.Contains(out, "brokerId=2") {
		t.Errorf("getSyncStateSet after Java's election and clean:\n%s", out)
	}
}

// startControllerNamesrv starts a nameserver process with an embedded
// one-node controller (group e2e, peer n0) and returns the controller's
// address once it leads.
func startControllerNamesrv(t *testing.T, bin string) string {
	t.Helper()
	ctl, _ := startControllerNamesrvAt(t, bin)
	return ctl
}

// startControllerNamesrvAt is startControllerNamesrv, also returning the
// nameserver's address.
func startControllerNamesrvAt(t *testing.T, bin string) (ctl, ns string) {
	t.Helper()
	dir := t.TempDir()
	ctl = harness.LateAddr(t)
	props := map[string]string{
		"bindAddress":               "127.0.0.1",
		"enableControllerInNamesrv": "true",
		"controllerDLegerGroup":     "e2e",
		"controllerDLegerPeers":     "n0-" + ctl,
		"controllerDLegerSelfId":    "n0",
		"controllerStorePath":       filepath.Join(dir, "controller"),
		"notifyBrokerRoleChanged":   "false",
	}
	conf := filepath.Join(dir, "namesrv.conf")
	if err := framework.WriteProps(conf, props); err != nil {
		t.Fatal(err)
	}
	nsPort := harness.LatePort(t)
	ns = fmt.Sprintf("127.0.0.1:%d", nsPort)
	p := harness.StartProcessWith(t, harness.ProcOptions{Name: "namesrv-controller"}, filepath.Join(bin, harness.Namesrv),
		"-c", conf, "--listen-port", strconv.Itoa(nsPort), "--data-dir", dir)
	p.WaitTCP(t, ctl, 15*time.Second)
	ac, err := admin.New(admin.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	testutil.Eventually(t, 10*time.Second, func() error {
		md, err := ac.GetControllerMetaData(context.Background(), ctl)
		if err != nil {
			return err
		}
		if !md.IsLeader {
			return fmt.Errorf("not leading yet: %+v", md)
		}
		return nil
	})
	return ctl, ns
}

// setUpReplicas makes the controller know one broker set as brokers would:
// an id for each address (1, 2, …), registration, heartbeats (60 s
// timeout), the first replica elected, then every replica in the
// SyncStateSet. The connection stays open until t ends: the controller
// takes a broker whose connection closes for dead.
func setUpReplicas(t *testing.T, ctl, cluster, name string, addrs ...string) {
	t.Helper()
	cli := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { cli.Close() })
	send := func(c int32, ext map[string]string, body []byte) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, ctl, remoting.NewRequest(c, ext, body))
		if err != nil || resp.Code != code.Success {
			t.Fatalf("%s: %v %+v", code.RequestName(c), err, resp)
		}
		return resp
	}
	base := func(kv ...string) map[string]string {
		m := map[string]string{"clusterName": cluster, "brokerName": name}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	var ids []int64
	for i, addr := range addrs {
		id := strconv.Itoa(i + 1)
		send(code.ControllerApplyBrokerID, base("appliedBrokerId", id, "registerCheckCode", addr+";1700000000000"), nil)
		send(code.ControllerRegisterBroker, base("brokerId", id, "brokerAddress", addr), nil)
		send(code.BrokerHeartbeat, base("brokerId", id, "brokerAddr", addr, "heartbeatTimeoutMills", "60000", "epoch", "0", "maxOffset", "0"), nil)
		ids = append(ids, int64(i+1))
	}
	send(code.ControllerElectMaster, base("brokerId", "1"), nil)
	send(code.ControllerAlterSyncStateSet, map[string]string{"brokerName": name, "masterBrokerId": "1", "masterEpoch": "1"},
		protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: ids, SyncStateSetEpoch: 1}))
}

// javaOutputs runs the Java mqadmin once per argument list and returns the
// outputs in order; a failing run fails t. The first runs alone (it skips
// the test without java, and resolves the tool's classpath on a fresh
// machine), the others at once to keep the JVM start-ups short.
func javaOutputs(t *testing.T, runs [][]string) []string {
	t.Helper()
	out := make([]string, len(runs))
	java := func(i int) {
		var err error
		if out[i], err = harness.RunJavaMQAdmin(t, runs[i]...); err != nil {
			t.Errorf("java mqadmin %v: %v", runs[i], err)
		}
	}
	java(0)
	var wg sync.WaitGroup
	for i := 1; i < len(runs); i++ {
		wg.Go(func() { java(i) })
	}
	wg.Wait()
	return out
}

// ctrlAdminMatchesJava: against an idle controller-mode broker set, our
// mqadmin and the Java mqadmin 5.5.0 print the same getBrokerEpoch (by
// broker name and by cluster) and the same haStatus of the master
// (auto-switch HA: the slaves' HA connections, acks and diffs).
func ctrlAdminMatchesJava(t *testing.T, c *ctrlCluster) {
	t.Helper()
	mq := filepath.Join(harness.BuildBinaries(t, harness.MQAdmin), harness.MQAdmin)
	ns := strings.Join(c.nsAddrs, ";")
	cases := [][]string{
		{"getBrokerEpoch", "-b", c.name, "-n", ns},
		{"getBrokerEpoch", "-c", c.cluster, "-n", ns},
		{"haStatus", "-b", c.master, "-n", ns},
	}
	// Idle: both slaves acked the master's end, and a transfer speed
	// sampled a second ago has gone to zero.
	testutil.WaitFor(t, 10*time.Second, "the slaves caught up", func() bool {
		hs := harness.HAStatus(t, c.rc, c.master)
		if len(hs.HAConnectionInfo) != 2 {
			return false
		}
		for _, ci := range hs.HAConnectionInfo {
			if ci.Diff != 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second)
	want := make([]string, len(cases))
	for i, args := range cases {
		out, err := harness.RunMQAdmin(t, mq, args...)
		if err != nil {
			t.Fatalf("mqadmin %v: %v", args, err)
		}
		want[i] = out
	}
	if !strings.Contains(want[0], "\n#brokerName\t"+c.name+"\n") || !strings.Contains(want[0], "#Epoch: EpochEntry{epoch=1, startOffset=0") ||
		!strings.Contains(want[2], "\n#MasterAddr\t"+c.master+"\n") || !strings.Contains(want[2], "#SlaveNum\t2\n#InSyncSlaveNum\t2\n") {
		t.Fatalf("our getBrokerEpoch / haStatus:\n%s\n%s\n%s", want[0], want[1], want[2])
	}
	got := javaOutputs(t, cases)
	for i, args := range cases {
		if got[i] != want[i] {
			t.Errorf("%v: Java prints\n%s\nwe print\n%s", args, got[i], want[i])
		}
	}
}
