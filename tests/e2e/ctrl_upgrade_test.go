package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestClassicSetUpgradedToControllerMode: the in-place upgrade of Apache's
// controller deploy guide. A classic SYNC_MASTER and its two SLAVEs take
// messages; all are stopped (the slaves first) with aligned CommitLogs,
// reconfigured with enableControllerMode=true and a controller, and
// started again, the old master first. One slave keeps its store: its log
// holds bytes but no epoch list, so it checks its last record against the
// master's (VIEW_MESSAGE_BY_ID) and follows from its end. The other's
// disk was replaced (an empty store): it copies the whole log, the classic
// part included, which the old master put under its first epoch. All three
// are in the SyncStateSet, new sends are replicated and the CommitLogs are
// byte-identical. A kill of the master then elects a slave, which serves
// every message, the classic ones included.
func TestClassicSetUpgradedToControllerMode(t *testing.T) {
	processOnly(t, "restarts brokers in another mode")
	t.Parallel()
	rlog.SetLogLevel("error")
	haPort := harness.LatePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, Replicas: 3, PerBroker: func(_ string, id int) map[string]string {
		if id > 0 {
			return map[string]string{"haSendHeartbeatInterval": "500"}
		}
		return map[string]string{"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2", "totalReplicas": "2", "haListenPort": strconv.Itoa(haPort)}
	}})
	set := c.Set(framework.BrokerName(0))
	master, slave, fresh := set[0], set[1], set[2]
	const topic = "UpgradeToControllerTopic"
	if _, err := c.MQAdmin(t, "updateTopic", "-b", master.Addr(), "-t", topic, "-r", "2", "-w", "2"); err != nil {
		t.Fatal(err)
	}
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	testutil.WaitFor(t, 10*time.Second, "slaves connected to the master's HA port", func() bool {
		return len(harness.HAStatus(t, rc, master.Addr()).HAConnectionInfo) == 2
	})
	send := func(prefix string, n int) {
		t.Helper()
		p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
			producer.WithGroupName("upgrade_"+prefix), producer.WithInstanceName("upgrade-"+prefix), producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
		started(t, p, err)
		defer p.Shutdown()
		for i := range n {
			testutil.Eventually(t, 20*time.Second, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
				defer cancel()
				res, err := p.SendSync(ctx, primitive.NewMessage(topic, fmt.Appendf(nil, "%s-%d", prefix, i)))
				if err == nil && res.Status != primitive.SendOK {
					err = fmt.Errorf("status %v", res.Status)
				}
				return err
			})
		}
	}
	const classic, upgraded = 30, 20
	send("classic", classic)
	testutil.WaitFor(t, 10*time.Second, "both slaves hold the master's log", func() bool {
		st := harness.HAStatus(t, rc, master.Addr())
		for _, s := range st.HAConnectionInfo {
			if s.SlaveAckOffset != st.MasterCommitLogMaxOffset {
				return false
			}
		}
		return len(st.HAConnectionInfo) == 2
	})

	// Apache's guide: stop the secondaries, then the primary, logs aligned.
	for _, b := range []framework.Broker{fresh, slave, master} {
		if err := b.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	// A replaced disk: the third replica starts on an empty store.
	entries, err := os.ReadDir(fresh.StoreDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(fresh.StoreDir(), e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	ctrl := startOneController(t, c)
	for _, b := range set {
		b.Reconfigure(t, map[string]string{"enableControllerMode": "true", "controllerAddr": ctrl,
			"allAckInSyncStateSet": "true", "brokerHeartbeatInterval": "300", "syncBrokerMetadataPeriod": "1000",
			"checkSyncStateSetPeriod": "1000"})
	}
	master.Start(t)
	testutil.WaitFor(t, 20*time.Second, "the old master elected", func() bool {
		return epochCache(t, rc, master.Addr()).BrokerID == protocol.MasterID
	})
	slave.Start(t)
	fresh.Start(t)
	testutil.WaitFor(t, 30*time.Second, "both slaves in the SyncStateSet", func() bool {
		return harness.HAStatus(t, rc, master.Addr()).InSyncSlaveNums == 2
	})
	if logs := slave.Logs(); !bytes.Contains([]byte(logs), []byte("matches the master's")) {
		t.Fatalf("the old slave did not check its log against the master's:\n%s", logs)
	}
	send("upgraded", upgraded) // allAckInSyncStateSet: on both

	st := harness.HAStatus(t, rc, master.Addr())
	end := st.MasterCommitLogMaxOffset
	first := filepath.Join("commitlog", fmt.Sprintf("%020d", 0))
	mb, err := os.ReadFile(filepath.Join(master.StoreDir(), first))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []framework.Broker{slave, fresh} {
		sb, err := os.ReadFile(filepath.Join(b.StoreDir(), first))
		if err != nil {
			t.Fatal(err)
		}
		if end == 0 || int64(len(mb)) < end || int64(len(sb)) < end || !bytes.Equal(mb[:end], sb[:end]) {
			t.Fatalf("%s: CommitLog differs from the master's below %d", b.Addr(), end)
		}
	}

	master.Kill(t)
	var next framework.Broker
	testutil.WaitFor(t, 20*time.Second, "a slave elected", func() bool {
		for _, b := range []framework.Broker{slave, fresh} {
			if epochCache(t, rc, b.Addr()).BrokerID == protocol.MasterID {
				next = b
				return true
			}
		}
		return false
	})
	if n, err := harness.QueuedMessages(rc, next.Addr(), topic, 2); err != nil || n != classic+upgraded {
		t.Fatalf("the new master %s serves %d messages (%v), want %d", next.Addr(), n, err, classic+upgraded)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, next.Addr(), remoting.NewRequest(code.GetMinOffset, map[string]string{"topic": topic, "queueId": "0"}, nil))
	if err != nil || resp.Code != code.Success || resp.Ext("offset") != "0" {
		t.Fatalf("min offset of queue 0 on the new master: %v %v", err, resp)
	}
}

// startOneController starts a nameserver with an embedded controller, a
// raft group of one, and returns the controller's address.
func startOneController(t *testing.T, c framework.Cluster) string {
	t.Helper()
	bin := harness.BuildBinaries(t, harness.Namesrv)
	dir := t.TempDir()
	addr := harness.LateAddr(t)
	props := "bindAddress=127.0.0.1\nenableControllerInNamesrv=true\ncontrollerDLegerGroup=upgrade\n" +
		"controllerDLegerPeers=n0-" + addr + "\ncontrollerDLegerSelfId=n0\ncontrollerStorePath=" + filepath.Join(dir, "controller") + "\n" +
		"scanNotActiveBrokerInterval=500\nnotifyBrokerRoleChanged=true\n"
	conf := filepath.Join(dir, "namesrv.conf")
	if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	p := harness.StartProcessWith(t, harness.ProcOptions{Name: "controller"}, filepath.Join(bin, harness.Namesrv),
		"-c", conf, "--listen-port", strconv.Itoa(harness.LatePort(t)), "--data-dir", dir)
	p.WaitTCP(t, addr, 15*time.Second)
	return addr
}
