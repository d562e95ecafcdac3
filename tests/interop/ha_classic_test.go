package interop

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/framework/inproc"
)

// haCommitLogSize is mappedFileSizeCommitLog on both sides: replication
// copies files byte for byte, so their sizes must agree.
const haCommitLogSize = 64 << 20

func requireApacheHA(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test starts a real Apache RocketMQ nameserver and broker (two JVMs, ~15 s)")
	}
	if os.Getenv(EnvApacheTests) == "0" {
		t.Skipf("%s=0: it replicates between our broker and a real Apache RocketMQ 5.5.0 broker (~15 s, ~1.5 GiB)", EnvApacheTests)
	}
	// Mostly waiting for the JVMs: runs beside the other interop test and
	// the end-to-end package.
	t.Parallel()
}

// sendN creates topic on broker (through nameserver ns) and sends n
// messages with our SDK; every send must be SEND_OK.
func sendN(t *testing.T, ns, broker, topic string, n int) {
	sendNWith(t, ns, broker, topic, n, nil)
}

// sendNWith is sendN with set applied to every message.
func sendNWith(t *testing.T, ns, broker, topic string, n int, set func(*message.Message)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ac, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
	if err := ac.CreateTopic(ctx, broker, tc, ""); err != nil {
		t.Fatalf("create %s on %s: %v", topic, broker, err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		r, err := ac.GetTopicRoute(ctx, topic)
		if err == nil && len(r.QueueDatas) == 0 {
			err = fmt.Errorf("no queues in the route of %s", topic)
		}
		return err
	})
	// A send to a SYNC_MASTER waits for its Apache slave's ack: a JVM
	// slowed by a loaded machine took over the default 3 s (a CI run of
	// TestHAApacheSlaveOfOurMaster). These tests check what is copied, not
	// how fast.
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{ns}, InstanceName: "ha-p"},
		Group: "interop_ha_pg", SendTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	for i := range n {
		m := &message.Message{Topic: topic, Body: fmt.Appendf(nil, "ha-%d-%s", i, bytes.Repeat([]byte{'x'}, i*37%2000))}
		if set != nil {
			set(m)
		}
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != client.SendOK {
			r, rerr := ac.GetTopicRoute(ctx, topic)
			t.Fatalf("send %d to %s: %v %v (route %+v %v)", i, broker, res, err, r, rerr)
		}
	}
}

// sameFirstFile compares the first CommitLog file of two stores below end.
func sameFirstFile(t *testing.T, masterLog, slaveLog string, end int64) {
	t.Helper()
	name := fmt.Sprintf("%020d", 0)
	mb, err := os.ReadFile(filepath.Join(masterLog, name))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := os.ReadFile(filepath.Join(slaveLog, name))
	if err != nil {
		t.Fatal(err)
	}
	if end == 0 || int64(len(mb)) < end || int64(len(sb)) < end {
		t.Fatalf("end %d, master file %d bytes, slave file %d bytes", end, len(mb), len(sb))
	}
	if !bytes.Equal(mb[:end], sb[:end]) {
		for i := range end {
			if mb[i] != sb[i] {
				t.Fatalf("CommitLogs differ first at byte %d of [0, %d)", i, end)
			}
		}
	}
}

// TestHAApacheSlaveOfOurMaster: a real Apache 5.5.0 SLAVE, registered with
// our nameserver, replicates from our SYNC_MASTER (inSyncReplicas=2): every
// SEND_OK needed its ack, and its CommitLog equals ours byte for byte. Its
// SlaveSynchronize copies our delay offsets (GET_ALL_DELAY_OFFSET) into its
// config/delayOffset.json: three delay-level messages delivered by us are
// three its ScheduleMessageService would not deliver again once promoted;
// and our timer checkpoint and metrics (asked for on our VIP port) into
// config/timercheck and config/timermetrics.
func TestHAApacheSlaveOfOurMaster(t *testing.T) {
	requireApacheHA(t)
	haPort := harness.LatePort(t)
	c := inproc.Start(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"brokerRole": "SYNC_MASTER", "inSyncReplicas": "2", "totalReplicas": "2", "slaveTimeout": "15000",
		"haListenPort": strconv.Itoa(haPort), "mappedFileSizeCommitLog": strconv.Itoa(haCommitLogSize),
		"vipChannelListenEnable": "true",
	}})
	master := c.Masters()[0]
	apache := StartApacheWith(t, ApacheOptions{
		// The slave registers with our nameserver and learns our master's
		// haServerAddr from its answers. (Apache 5.5.0 ignores
		// haMasterAddress: BrokerController.initialize passes it to the
		// store before DefaultMessageStore.start creates the HA client, and
		// the slave logs "HAClient connect to master null failed".)
		BrokerConfExtra: "brokerRole=SLAVE\nbrokerId=1\nhaSendHeartbeatInterval=1000\nnamesrvAddr=" + c.NamesrvAddr(),
		Env:             []string{"APACHE_COMMITLOG_SIZE=" + strconv.Itoa(haCommitLogSize)},
	})
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	testutil.WaitFor(t, 30*time.Second, "Apache slave connected", func() bool {
		return len(harness.HAStatus(t, rc, master.Addr()).HAConnectionInfo) == 1
	})
	// Delay-level messages first: the slave's first copy comes 10 s after
	// its start (then every 60 s); their delivery is over before the
	// CommitLogs are compared.
	sendNWith(t, c.NamesrvAddr(), master.Addr(), "InteropHAOurMasterDelay", 3, func(m *message.Message) { m.SetDelayTimeLevel(1) })
	sendNWith(t, c.NamesrvAddr(), master.Addr(), "InteropHAOurMasterTimer", 1, func(m *message.Message) { m.SetDelayTime(time.Hour) })
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testutil.Eventually(t, 30*time.Second, func() error {
		d, err := ac.GetAllDelayOffset(ctx, master.Addr())
		if err == nil && d.OffsetTable[1] != 3 {
			err = fmt.Errorf("our delay offsets %v, want level 1 at 3", d.OffsetTable)
		}
		if err != nil {
			return err
		}
		cp, err := ac.GetTimerCheckPoint(ctx, master.Addr())
		if err == nil && cp.MasterTimerQueueOffset != 1 {
			err = fmt.Errorf("our timer checkpoint %+v, want the timer indexed", cp)
		}
		return err
	})
	sendN(t, c.NamesrvAddr(), master.Addr(), "InteropHAOurMaster", 200)
	st := harness.HAStatus(t, rc, master.Addr())
	if st.HAConnectionInfo[0].SlaveAckOffset != st.MasterCommitLogMaxOffset {
		t.Fatalf("master HA status %+v", st)
	}
	sameFirstFile(t, filepath.Join(master.StoreDir(), "commitlog"), filepath.Join(apache.RunDir, "store", "commitlog"), st.MasterCommitLogMaxOffset)
	as := harness.HAStatus(t, rc, apache.BrokerAddr)
	if as.Master || as.HAClientRuntimeInfo == nil || as.HAClientRuntimeInfo.MaxOffset != st.MasterCommitLogMaxOffset {
		t.Fatalf("Apache slave HA status %+v", as)
	}
	// Its copy of our delay offsets (a copy made before the delivery
	// shows level 1 at 0; the next comes 60 s later).
	testutil.Eventually(t, 90*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(apache.RunDir, "store", "config", "delayOffset.json"))
		if err != nil {
			return err
		}
		d, err := protocol.DecodeDelayOffsets(b)
		if err == nil && d.OffsetTable[1] != 3 {
			err = fmt.Errorf("the Apache slave's delayOffset.json: %s", b)
		}
		return err
	})
	// Its copy of our timer checkpoint (asked for every 3 s on our VIP
	// port, flushed to config/timercheck every second) and metrics. The
	// VIP port is the listen port − 2: taken by another process, our
	// broker runs without it (logged) and the slave cannot copy them.
	_, portText, _ := net.SplitHostPort(master.Addr())
	port, _ := strconv.Atoi(portText)
	vip := net.JoinHostPort("127.0.0.1", strconv.Itoa(port-2))
	if _, err := ac.GetTimerCheckPoint(ctx, vip); err != nil {
		t.Logf("NOT CHECKED: the timer checkpoint and metrics copies (our VIP port %s: %v)", vip, err)
		return
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(apache.RunDir, "store", "config", "timercheck"))
		if err != nil {
			return err
		}
		cp, err := protocol.DecodeTimerCheckpoint(b[:min(len(b), protocol.TimerCheckpointSize)])
		if err == nil && (cp.MasterTimerQueueOffset != 1 || cp.LastReadTimeMs == 0) {
			err = fmt.Errorf("the Apache slave's timercheck: %+v", cp)
		}
		return err
	})
	testutil.Eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(apache.RunDir, "store", "config", "timermetrics"))
		if err != nil {
			return err
		}
		m, err := protocol.DecodeTimerMetrics(b)
		if err == nil && m.TimingCount["InteropHAOurMasterTimer"].Count < 1 {
			err = fmt.Errorf("the Apache slave's timermetrics: %s", b)
		}
		return err
	})
}

// TestHAOurSlaveOfApacheMaster: our SLAVE replicates from a real Apache
// 5.5.0 master; afterwards the CommitLogs are byte-identical and our slave
// has indexed the messages. Registered with Apache's nameserver, it learns
// the master's address there and copies its metadata as the migration in
// docs/operations.md relies on: topics, a subscription group, consumer
// offsets, a message request mode, the delay offsets (after Apache has
// delivered delay-level messages) and the timer metrics, each as Apache's
// own answers encode them.
func TestHAOurSlaveOfApacheMaster(t *testing.T) {
	requireApacheHA(t)
	apache := StartApacheWith(t, ApacheOptions{Env: []string{"APACHE_COMMITLOG_SIZE=" + strconv.Itoa(haCommitLogSize)}})
	_, portText, err := net.SplitHostPort(apache.BrokerAddr)
	if err != nil {
		t.Fatal(err)
	}
	brokerPort, _ := strconv.Atoi(portText)
	const topic, n = "InteropHAApacheMaster", 200
	sendN(t, apache.NamesrvAddr, apache.BrokerAddr, topic, n)
	want := apacheMetadata(t, apache, topic, n)
	tx := apacheTransactions(t, apache, topic, n)

	c := inproc.Start(t, framework.Options{})
	slave := c.AddBroker(t, "broker-a", 1, map[string]string{
		"brokerClusterName":       "DefaultCluster", // Apache's (scripts/apache/start.sh)
		"namesrvAddr":             apache.NamesrvAddr,
		"haMasterAddress":         fmt.Sprintf("127.0.0.1:%d", brokerPort+1),
		"mappedFileSizeCommitLog": strconv.Itoa(haCommitLogSize),
		"haSendHeartbeatInterval": "1000",
	})
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	var st protocol.HARuntimeInfo
	testutil.WaitFor(t, 30*time.Second, "our slave caught up with Apache's master", func() bool {
		st = harness.HAStatus(t, rc, apache.BrokerAddr)
		return len(st.HAConnectionInfo) == 1 && st.HAConnectionInfo[0].SlaveAckOffset == st.MasterCommitLogMaxOffset
	})
	sameFirstFile(t, filepath.Join(apache.RunDir, "store", "commitlog"), filepath.Join(slave.StoreDir(), "commitlog"), st.MasterCommitLogMaxOffset)
	testutil.Eventually(t, 10*time.Second, func() error {
		// The delay-level and timer messages count once: delivered to
		// the topic (their first copies are in SCHEDULE_TOPIC_XXXX and
		// rmq_sys_wheel_timer).
		// +1: the transaction Apache committed.
		total, err := harness.QueuedMessages(rc, slave.Addr(), topic, 2)
		if err == nil && total != n+apacheDelayed+apacheTimers+1 {
			err = fmt.Errorf("our slave's consume queues hold %d messages, want %d", total, n+apacheDelayed+apacheTimers+1)
		}
		return err
	})
	want.check(t, slave.Addr(), true)

	// The swap of docs/operations.md "Migrating an Apache cluster" (step
	// 5): the Apache master stops, ours restarts as the set's master on
	// the copied log and metadata, registers with the nameserver in its
	// place and serves the consumers from their committed offsets.
	stopApacheBroker(t, apache)
	if err := slave.Stop(); err != nil {
		t.Fatal(err)
	}
	tx.swapped.Store(true)
	slave.Reconfigure(t, map[string]string{"brokerId": "0", "brokerRole": "SYNC_MASTER", "haMasterAddress": "",
		"transactionCheckInterval": "1000", "transactionTimeOut": "2000"})
	slave.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ac := adminOf(t, apache.NamesrvAddr)
	testutil.Eventually(t, 30*time.Second, func() error {
		r, err := ac.GetTopicRoute(ctx, topic)
		if err == nil && (len(r.BrokerDatas) != 1 || r.BrokerDatas[0].BrokerAddrs[0] != slave.Addr()) {
			err = fmt.Errorf("route of %s: %+v, want our broker %s as master", topic, r.BrokerDatas, slave.Addr())
		}
		return err
	})
	want.check(t, slave.Addr(), false)
	// Overdue timers are delivered within a scan interval of the start:
	// none may be, they were all Apache's. The pending ones come when due.
	// (The unknown transaction may be committed meanwhile: +1.)
	time.Sleep(3 * time.Second)
	base := int64(n + apacheDelayed + apacheTimers + 1)
	total, err := harness.QueuedMessages(rc, slave.Addr(), topic, 2)
	if err != nil || total < base || total > base+1 {
		t.Fatalf("our promoted broker's %s holds %d messages (%v), want %d or %d: Apache's deliveries delivered again", topic, total, err, base, base+1)
	}
	// The transaction Apache left unknown is checked back by our broker
	// and committed: one more message.
	all := int64(n + apacheDelayed + apacheTimers + apachePending + 2)
	testutil.Eventually(t, 60*time.Second, func() error {
		total, err := harness.QueuedMessages(rc, slave.Addr(), topic, 2)
		if err == nil && total != all {
			err = fmt.Errorf("our promoted broker's %s holds %d messages, want %d with the pending timer and delay-level messages delivered", topic, total, all)
		}
		return err
	})
	time.Sleep(2 * time.Second)
	if total, err := harness.QueuedMessages(rc, slave.Addr(), topic, 2); err != nil || total != all {
		t.Fatalf("our promoted broker's %s holds %d messages (%v), want %d: delivered twice", topic, total, err, all)
	}
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{apache.NamesrvAddr}, InstanceName: "ha-swap"}, Group: want.group})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown(context.Background())
	read := 0
	txBodies := map[string]int{}
	for q := range 2 {
		off := int64(10 + q) // the group's committed offsets, copied from Apache
		for {
			res, err := pc.Pull(ctx, client.PullRequest{Queue: protocol.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: q}, Offset: off})
			if err != nil {
				t.Fatalf("pull %s/%d at %d from our promoted broker: %v", topic, q, off, err)
			}
			if res.Status != client.PullFound {
				break
			}
			for _, m := range res.Messages {
				if !bytes.HasPrefix(m.Body, []byte("ha-")) && !bytes.HasPrefix(m.Body, []byte("tx-")) {
					t.Fatalf("message at %d/%d: body %.20q", q, m.QueueOffset, m.Body)
				}
				txBodies[string(m.Body)]++
			}
			read += len(res.Messages)
			off = res.NextBeginOffset
		}
	}
	// Apache's delay-level and timer deliveries are not delivered again.
	if expect := n + apacheDelayed + apacheTimers + apachePending + 2 - 10 - 11; read != expect {
		t.Fatalf("read %d messages from the committed offsets on, want %d", read, expect)
	}
	// Read from the committed offsets on, so the transactions are there
	// only if sent after offsets 10 and 11: they were (sendN's 200 came
	// first).
	if txBodies["tx-commit"] != 1 || txBodies["tx-unknown"] != 1 || txBodies["tx-rollback"] != 0 {
		t.Fatalf("transactional messages read: %v; want tx-commit and tx-unknown once, tx-rollback never", txBodies)
	}
	if c := tx.checks.Load(); c == 0 {
		t.Fatal("our broker never checked back the transaction Apache left unknown")
	}
	sendN(t, apache.NamesrvAddr, slave.Addr(), topic, 10)
}

// apacheTx is the transaction producer apacheTransactions left running.
type apacheTx struct {
	swapped atomic.Bool  // our broker now serves: checks commit
	checks  atomic.Int32 // checks answered with commit
}

// apacheTransactions sends three transactional messages to Apache's
// master: one committed, one rolled back, one left unknown. Its producer
// keeps running: the unknown one is committed when a broker checks it
// back after the swap (before it, checks answer unknown).
func apacheTransactions(t *testing.T, apache *Apache, topic string, n int) *apacheTx {
	t.Helper()
	tx := &apacheTx{}
	tp, err := client.NewTransactionProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{
		NameServers: []string{apache.NamesrvAddr}, InstanceName: "ha-tx",
		RouteRefreshInterval: time.Second, HeartbeatInterval: time.Second},
		Group: "interop_ha_tx_pg"}, func(_ context.Context, m *message.Message) (client.TransactionState, error) {
		if string(m.Body) != "tx-unknown" || !tx.swapped.Load() {
			return client.TransactionUnknown, nil
		}
		tx.checks.Add(1)
		return client.TransactionCommit, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for body, st := range map[string]client.TransactionState{"tx-commit": client.TransactionCommit, "tx-rollback": client.TransactionRollback, "tx-unknown": client.TransactionUnknown} {
		res, err := tp.SendInTransaction(ctx, &message.Message{Topic: topic, Body: []byte(body)}, func(context.Context, *message.Message) (client.TransactionState, error) {
			return st, nil
		})
		if err != nil || res.Status != client.SendOK {
			t.Fatalf("transactional send %s to Apache: %+v %v", body, res, err)
		}
	}
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	testutil.Eventually(t, 30*time.Second, func() error {
		total, err := harness.QueuedMessages(rc, apache.BrokerAddr, topic, 2)
		if want := int64(n + apacheDelayed + apacheTimers + 1); err == nil && total != want {
			err = fmt.Errorf("Apache's %s holds %d messages, want %d with the committed transaction", topic, total, want)
		}
		return err
	})
	return tx
}

// stopApacheBroker stops the broker of a StartApacheWith cluster (its
// nameserver keeps running).
func stopApacheBroker(t *testing.T, a *Apache) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.RunDir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "broker" {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			testutil.WaitFor(t, 30*time.Second, "Apache's broker gone", func() bool { return syscall.Kill(pid, 0) != nil })
			return
		}
	}
	t.Fatalf("no broker pid in %s/pids: %s", a.RunDir, b)
}

// apacheDelayed and apacheTimers are how many delay-level and timer
// messages apacheMetadata sends (Apache delivers both before our slave
// starts).
const apacheDelayed, apacheTimers = 3, 2

// apachePending is how many timer and delay-level messages (half each)
// apacheMetadata sends for delivery after the swap.
const apachePending = 4

// apacheMeta is what apacheMetadata set up on Apache's master, as Apache
// answers it.
type apacheMeta struct {
	topic, group string
	delay        protocol.DelayOffsets
	timer        protocol.TimerMetrics
}

// adminOf is an admin client of the nameserver at ns, closed at cleanup.
func adminOf(t *testing.T, ns string) *admin.Client {
	t.Helper()
	ac, err := admin.New(admin.Config{NameServers: []string{ns}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ac.Close() })
	return ac
}

// apacheMetadata gives Apache's master (topic holding n messages) a
// subscription group, committed offsets, a message request mode,
// delay-level and timer messages it delivers and others it will deliver
// only after the swap, and returns its delay offsets and timer metrics
// once all of these show in them.
func apacheMetadata(t *testing.T, apache *Apache, topic string, n int) apacheMeta {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ac := adminOf(t, apache.NamesrvAddr)
	var err error
	m := apacheMeta{topic: topic, group: "interop_ha_slave_cg"}
	g := admin.NewSubscriptionGroupConfig(m.group)
	g.RetryMaxTimes, g.WhichBrokerWhenConsumeSlowly = 3, 1
	if err := ac.CreateSubscriptionGroup(ctx, apache.BrokerAddr, g); err != nil {
		t.Fatalf("create group on Apache: %v", err)
	}
	for q := range 2 {
		if err := ac.UpdateConsumerOffset(ctx, apache.BrokerAddr, m.group, topic, q, int64(10+q)); err != nil {
			t.Fatalf("commit offset on Apache: %v", err)
		}
	}
	if err := ac.SetMessageRequestMode(ctx, apache.BrokerAddr, topic, m.group, "POP", 1); err != nil {
		t.Fatalf("set message request mode on Apache: %v", err)
	}
	sendNWith(t, apache.NamesrvAddr, apache.BrokerAddr, topic, apacheDelayed, func(msg *message.Message) { msg.SetDelayTimeLevel(1) })
	// Level 1 (1 s): Apache's ScheduleMessageService moves its offset past
	// the three messages once it has delivered them.
	testutil.WaitFor(t, 30*time.Second, "Apache delivered the delay-level messages", func() bool {
		m.delay, err = ac.GetAllDelayOffset(ctx, apache.BrokerAddr)
		return err == nil && m.delay.OffsetTable[1] >= apacheDelayed
	})
	// Timer messages (rmq_sys_wheel_timer, 1 s) that Apache delivers too.
	sendNWith(t, apache.NamesrvAddr, apache.BrokerAddr, topic, apacheTimers, func(msg *message.Message) { msg.SetDelayTime(time.Second) })
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	testutil.Eventually(t, 60*time.Second, func() error {
		total, err := harness.QueuedMessages(rc, apache.BrokerAddr, topic, 2)
		if err == nil && total < int64(n)+apacheDelayed+apacheTimers {
			err = fmt.Errorf("Apache's %s holds %d messages, want %d once its timers are delivered", topic, total, n+apacheDelayed+apacheTimers)
		}
		return err
	})
	// And some Apache will not deliver before the swap: our broker does.
	sendNWith(t, apache.NamesrvAddr, apache.BrokerAddr, topic, apachePending/2, func(msg *message.Message) { msg.SetDelayTime(25 * time.Second) })
	sendNWith(t, apache.NamesrvAddr, apache.BrokerAddr, topic, apachePending/2, func(msg *message.Message) { msg.SetDelayTimeLevel(4) }) // 30 s
	testutil.WaitFor(t, 30*time.Second, "Apache's delay offsets list level 4", func() bool {
		m.delay, err = ac.GetAllDelayOffset(ctx, apache.BrokerAddr)
		_, ok := m.delay.OffsetTable[4]
		return err == nil && ok
	})
	// Its timer metrics once they count the pending timers (they are
	// updated as the wheel takes them in, after the sends' answers).
	testutil.WaitFor(t, 30*time.Second, "Apache's timer metrics count the pending timers", func() bool {
		m.timer, err = ac.GetTimerMetrics(ctx, apache.BrokerAddr)
		return err == nil && m.timer.TimingCount[topic].Count == apachePending/2
	})
	return m
}

// check waits until the broker at addr answers with Apache's metadata. A
// slave answers Apache's delay offsets and timer metrics as copied (data
// versions included); a promoted master computes its own from the
// replicated log: the same delay offsets under its own data version.
func (m apacheMeta) check(t *testing.T, addr string, slave bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ac, err := admin.New(admin.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	testutil.Eventually(t, 20*time.Second, func() error {
		tc, err := ac.GetTopicConfig(ctx, addr, m.topic)
		if err != nil || tc.ReadQueueNums != 2 || tc.WriteQueueNums != 2 {
			return fmt.Errorf("topic on our broker: %+v %v", tc, err)
		}
		sg, err := ac.GetSubscriptionGroup(ctx, addr, m.group)
		if err != nil || sg.RetryMaxTimes != 3 || sg.WhichBrokerWhenConsumeSlowly != 1 {
			return fmt.Errorf("group on our broker: %+v %v", sg, err)
		}
		for q := range 2 {
			resp, err := ac.Invoke(ctx, addr, code.QueryConsumerOffset, map[string]string{
				"consumerGroup": m.group, "topic": m.topic, "queueId": strconv.Itoa(q)}, nil)
			if err != nil {
				return err
			}
			if resp.Code != code.Success || resp.ExtFields["offset"] != strconv.Itoa(10+q) {
				return fmt.Errorf("offset of queue %d on our broker: code %d %q offset %q", q, resp.Code, resp.Remark, resp.ExtFields["offset"])
			}
		}
		resp, err := ac.Invoke(ctx, addr, code.GetAllMessageRequestMode, nil, nil)
		if err != nil {
			return err
		}
		if body := string(resp.Body); resp.Code != code.Success || !strings.Contains(body, m.group) || !strings.Contains(body, `"POP"`) {
			return fmt.Errorf("request modes on our broker: code %d %q %s", resp.Code, resp.Remark, body)
		}
		d, err := ac.GetAllDelayOffset(ctx, addr)
		if err != nil || slave && d.DataVersion != m.delay.DataVersion || !maps.Equal(d.OffsetTable, m.delay.OffsetTable) {
			return fmt.Errorf("delay offsets on our broker: %+v %v, want Apache's %+v", d, err, m.delay)
		}
		if !slave {
			return nil
		}
		tm, err := ac.GetTimerMetrics(ctx, addr)
		if err != nil || tm.DataVersion != m.timer.DataVersion {
			return fmt.Errorf("timer metrics on our slave: %+v %v, want Apache's %+v", tm, err, m.timer)
		}
		return nil
	})
}
