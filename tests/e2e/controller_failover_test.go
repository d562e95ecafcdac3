package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/internal/chaos"
)

// ctrlBroker is one controller-mode broker process of the failover test.
type ctrlBroker struct {
	addr, conf string
	proc       *harness.Proc
}

// TestControllerModeFailover (docs/replication.md, controller mode): three
// nameservers with embedded controllers, one broker set of three replicas
// with allAckInSyncStateSet=true. Under a producer/checker run the master
// is killed with SIGKILL; a new master is elected from the SyncStateSet;
// the old master restarts as a slave of the new epoch and truncates to it;
// every SEND_OK message is consumed.
func TestControllerModeFailover(t *testing.T) {
	if framework.Kind(*clusterFlag) == framework.InProcess {
		t.Skip("kills broker processes: runs with -cluster=process only")
	}
	// Mostly waiting for elections and client-go's route refresh: runs
	// beside the other slow tests.
	t.Parallel()
	rlog.SetLogLevel("error")
	bin := harness.BuildBinaries(t, harness.Namesrv, harness.Broker)

	// Nameservers, each with a controller on its own peer address.
	var peers, ctrlAddrs, nsAddrs []string
	for i := range 3 {
		ctrlAddrs = append(ctrlAddrs, harness.FreeAddr(t))
		peers = append(peers, fmt.Sprintf("n%d-%s", i, ctrlAddrs[i]))
	}
	for i := range 3 {
		dir := t.TempDir()
		conf := filepath.Join(dir, "namesrv.conf")
		props := strings.Join([]string{
			"bindAddress=127.0.0.1", "enableControllerInNamesrv=true", "controllerDLegerGroup=failover",
			"controllerDLegerPeers=" + strings.Join(peers, ";"), fmt.Sprintf("controllerDLegerSelfId=n%d", i),
			"controllerStorePath=" + filepath.Join(dir, "controller"),
			"scanNotActiveBrokerInterval=500", "scanInactiveMasterInterval=500", "notifyBrokerRoleChanged=true",
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		port := harness.FreePort(t)
		nsAddrs = append(nsAddrs, fmt.Sprintf("127.0.0.1:%d", port))
		p := harness.StartProcessWith(t, harness.ProcOptions{Name: fmt.Sprintf("namesrv-n%d", i)}, filepath.Join(bin, harness.Namesrv),
			"-c", conf, "--listen-port", strconv.Itoa(port), "--data-dir", dir)
		p.WaitTCP(t, ctrlAddrs[i], 15*time.Second)
	}

	// Brokers that find no controller leader retry only after 5 s.
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	testutil.WaitFor(t, 15*time.Second, "a controller leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := rc.Invoke(ctx, ctrlAddrs[0], remoting.NewRequest(code.ControllerGetMetadataInfo, nil, nil))
		return err == nil && resp.Ext(protocol.HdrControllerLeaderAddress) != ""
	})

	const name, topic = "broker-a", "ControllerFailoverTopic"
	brokers := make([]*ctrlBroker, 3)
	for i := range brokers {
		dir := t.TempDir()
		port := harness.FreePort(t)
		props := framework.BrokerProps("FailoverCluster", name, 0, port, strings.Join(nsAddrs, ";"), dir, map[string]string{
			"brokerId": "-1", "brokerRole": "SLAVE",
			"enableControllerMode": "true", "controllerAddr": strings.Join(ctrlAddrs, ";"),
			"allAckInSyncStateSet": "true", "haListenPort": strconv.Itoa(harness.FreePort(t)),
			"brokerHeartbeatInterval": "300", "controllerHeartBeatTimeoutMills": "3000", "masterLeaseMillis": "2000",
			"syncBrokerMetadataPeriod": "1000", "syncControllerMetadataPeriod": "2000", "checkSyncStateSetPeriod": "1000",
			"haMaxTimeSlaveNotCatchup": "3000", "haSendHeartbeatInterval": "300", "registerNameServerPeriod": "10000",
			// client-go refreshes routes every 30 s: until then the
			// checker pulls from the old master's address, which is a
			// slave after its restart; without slave reads it would answer
			// SYSTEM_BUSY for the rest of the test.
			"slaveReadEnable": "true",
		})
		b := &ctrlBroker{addr: fmt.Sprintf("127.0.0.1:%d", port), conf: filepath.Join(dir, "broker.conf")}
		if err := framework.WriteProps(b.conf, props); err != nil {
			t.Fatal(err)
		}
		b.start(t, bin, i)
		brokers[i] = b
	}

	ac, err := admin.New(admin.Config{NameServers: nsAddrs[:1]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	masterAddr := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ci, err := ac.GetBrokerClusterInfo(ctx)
		if err != nil {
			return ""
		}
		return ci.BrokerAddrTable[name].BrokerAddrs[0]
	}
	var master string
	testutil.WaitFor(t, 20*time.Second, "a master registered", func() bool { master = masterAddr(); return master != "" })
	testutil.WaitFor(t, 15*time.Second, "both slaves in the SyncStateSet", func() bool {
		return harness.HAStatus(t, rc, master).InSyncSlaveNums == 2
	})
	for _, b := range brokers {
		createTopic(t, rc, b.addr, topic)
	}

	run, err := chaos.Start(chaos.Options{Namesrv: nsAddrs, Topic: topic, Group: "controller_failover", Run: "cf",
		Interval: 10 * time.Millisecond, Senders: 2, SendTimeout: 3 * time.Second, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	testutil.WaitFor(t, 15*time.Second, "acked sends", func() bool { return run.Acked() >= 100 })

	var old *ctrlBroker
	for _, b := range brokers {
		if b.addr == master {
			old = b
		}
	}
	oldEpochs := epochCache(t, rc, old.addr)
	old.proc.Kill()
	killed := time.Now()
	var next string
	testutil.WaitFor(t, 15*time.Second, "a new master registered", func() bool {
		next = masterAddr()
		return next != "" && next != old.addr
	})
	t.Logf("new master %s registered %v after the kill", next, time.Since(killed))
	newEpochs := epochCache(t, rc, next)
	if last, prev := newEpochs.EpochList[len(newEpochs.EpochList)-1], oldEpochs.EpochList[len(oldEpochs.EpochList)-1]; last.Epoch <= prev.Epoch {
		t.Fatalf("new master's epoch %d is not newer than the old %d", last.Epoch, prev.Epoch)
	}

	// A producer that asks for routes now writes to the new master: with
	// allAckInSyncStateSet its SEND_OK needs every SyncStateSet member.
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(nsAddrs)),
		producer.WithGroupName("controller_failover_after"), producer.WithInstanceName("controller-failover-after"), producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	for i := range 20 {
		testutil.Eventually(t, 10*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			res, err := p.SendSync(ctx, primitive.NewMessage(topic, fmt.Appendf(nil, "after-%d", i)))
			if err != nil {
				return err
			}
			if res.Status != primitive.SendOK {
				return fmt.Errorf("status %v", res.Status)
			}
			return nil
		})
	}
	t.Logf("the new master acknowledged sends %v after the kill", time.Since(killed))

	// The old master comes back as a slave of the new epoch, truncates to
	// the common point and copies the new epoch.
	old.start(t, bin, -1)
	testutil.WaitFor(t, 20*time.Second, "old master follows the new epoch", func() bool {
		e, n := epochCache(t, rc, old.addr), epochCache(t, rc, next)
		return e.BrokerID != 0 && e.MaxOffset == n.MaxOffset && slices.Equal(trimEnds(e.EpochList), trimEnds(n.EpochList))
	})
	// The checker's consumer resumes once client-go refreshes its routes
	// (every 30 s from its start, not configurable): before that it keeps
	// pulling at the old master's address and makes no progress there.
	rep := run.Drain(35 * time.Second)
	t.Logf("report: %v", rep)
	for _, b := range brokers {
		n, err := harness.QueuedMessages(rc, b.addr, topic, 4)
		t.Logf("broker %s indexes %d messages (err %v), HA %+v", b.addr, n, err, harness.HAStatus(t, rc, b.addr))
	}
	if rep.Lost != 0 {
		// Where the checker stands on each replica, for the failure report.
		for _, b := range brokers {
			for q := range 4 {
				ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(q), "consumerGroup": "controller_failover"}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				mo, err1 := rc.Invoke(ctx, b.addr, remoting.NewRequest(code.GetMaxOffset, ext, nil))
				co, err2 := rc.Invoke(ctx, b.addr, remoting.NewRequest(code.QueryConsumerOffset, ext, nil))
				cancel()
				if err1 != nil || err2 != nil {
					t.Logf("%s queue %d: %v %v", b.addr, q, err1, err2)
					continue
				}
				t.Logf("%s queue %d: max %v, consumer offset %v", b.addr, q, mo.ExtFields, co.ExtFields)
			}
		}
	}
	if rep.Lost != 0 || rep.Acked == 0 {
		t.Fatalf("acked messages lost across the failover: %v", rep)
	}
	nm, om := epochCache(t, rc, next), epochCache(t, rc, old.addr)
	if !slices.Equal(trimEnds(nm.EpochList), trimEnds(om.EpochList)) {
		t.Fatalf("epoch lists differ: new master %v, old master %v", nm.EpochList, om.EpochList)
	}
}

func (b *ctrlBroker) start(t *testing.T, bin string, i int) {
	t.Helper()
	name := "broker-a-" + strconv.Itoa(i)
	if i < 0 {
		name = "broker-a-restarted"
	}
	b.proc = harness.StartProcessWith(t, harness.ProcOptions{Name: name}, filepath.Join(bin, harness.Broker), "-c", b.conf)
	b.proc.WaitTCP(t, b.addr, 30*time.Second)
}

func trimEnds(l []protocol.EpochEntry) []protocol.EpochEntry {
	out := make([]protocol.EpochEntry, len(l))
	for i, e := range l {
		out[i] = protocol.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return out
}

func epochCache(t *testing.T, rc *remoting.Client, addr string) protocol.EpochEntryCache {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(code.GetBrokerEpochCache, nil, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("GET_BROKER_EPOCH_CACHE %s: %v %v", addr, err, resp)
	}
	var c protocol.EpochEntryCache
	if err := protocol.Unmarshal(resp.Body, &c); err != nil {
		t.Fatalf("epoch cache of %s: %v", addr, err)
	}
	return c
}

func createTopic(t *testing.T, rc *remoting.Client, addr, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(code.UpdateAndCreateTopic, map[string]string{
		"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
	}, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("create topic on %s: %v %v", addr, err, resp)
	}
}
