package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/rmqgo/rmq/tests/interop"
)

// clientsCtrlSet is the controller-mode topology of the client failover
// tests: three nameservers with embedded controllers and one broker set
// "broker-a" of three replicas (allAckInSyncStateSet=true, short
// heartbeat, lease and sync periods). It is a trimmed copy of the setup in
// TestControllerModeFailover, kept apart so the two can be merged into one
// shared helper later.
type clientsCtrlSet struct {
	bin     string
	ns      []string
	brokers []*ctrlBroker
	rc      *remoting.Client
	ac      *admin.Client
}

const clientsCtrlName = "broker-a"

func startClientsCtrlSet(t *testing.T, cluster string) *clientsCtrlSet {
	t.Helper()
	if framework.Kind(*clusterFlag) == framework.InProcess {
		t.Skip("kills broker processes: runs with -cluster=process only")
	}
	s := &clientsCtrlSet{bin: harness.BuildBinaries(t, harness.Namesrv, harness.Broker)}
	var peers, ctrl []string
	for i := range 3 {
		ctrl = append(ctrl, harness.FreeAddr(t))
		peers = append(peers, fmt.Sprintf("n%d-%s", i, ctrl[i]))
	}
	for i := range 3 {
		dir := t.TempDir()
		conf := filepath.Join(dir, "namesrv.conf")
		props := strings.Join([]string{
			"bindAddress=127.0.0.1", "enableControllerInNamesrv=true", "controllerDLegerGroup=" + cluster,
			"controllerDLegerPeers=" + strings.Join(peers, ";"), fmt.Sprintf("controllerDLegerSelfId=n%d", i),
			"controllerStorePath=" + filepath.Join(dir, "controller"),
			"scanNotActiveBrokerInterval=500", "scanInactiveMasterInterval=500", "notifyBrokerRoleChanged=true",
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		port := harness.FreePort(t)
		s.ns = append(s.ns, fmt.Sprintf("127.0.0.1:%d", port))
		p := harness.StartProcessWith(t, harness.ProcOptions{Name: fmt.Sprintf("%s-namesrv-n%d", cluster, i)}, filepath.Join(s.bin, harness.Namesrv),
			"-c", conf, "--listen-port", strconv.Itoa(port), "--data-dir", dir)
		p.WaitTCP(t, ctrl[i], 15*time.Second)
	}
	s.rc = remoting.NewClient(remoting.DefaultClientConfig(), nil)
	t.Cleanup(func() { s.rc.Close() })
	// Brokers that find no controller leader retry only after a while.
	testutil.WaitFor(t, 15*time.Second, "a controller leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := s.rc.Invoke(ctx, ctrl[0], remoting.NewRequest(code.ControllerGetMetadataInfo, nil, nil))
		return err == nil && resp.Ext(protocol.HdrControllerLeaderAddress) != ""
	})
	for i := range 3 {
		dir := t.TempDir()
		port := harness.FreePort(t)
		props := framework.BrokerProps(cluster, clientsCtrlName, 0, port, strings.Join(s.ns, ";"), dir, map[string]string{
			"brokerId": "-1", "brokerRole": "SLAVE",
			"enableControllerMode": "true", "controllerAddr": strings.Join(ctrl, ";"),
			"allAckInSyncStateSet": "true", "haListenPort": strconv.Itoa(harness.FreePort(t)),
			"brokerHeartbeatInterval": "300", "controllerHeartBeatTimeoutMills": "3000", "masterLeaseMillis": "2000",
			"syncBrokerMetadataPeriod": "1000", "syncControllerMetadataPeriod": "2000", "checkSyncStateSetPeriod": "1000",
			"haMaxTimeSlaveNotCatchup": "3000", "haSendHeartbeatInterval": "300", "registerNameServerPeriod": "10000",
		})
		b := &ctrlBroker{addr: fmt.Sprintf("127.0.0.1:%d", port), conf: filepath.Join(dir, "broker.conf")}
		if err := framework.WriteProps(b.conf, props); err != nil {
			t.Fatal(err)
		}
		b.start(t, s.bin, i)
		s.brokers = append(s.brokers, b)
	}
	var err error
	if s.ac, err = admin.New(admin.Config{NameServers: s.ns[:1]}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ac.Close() })
	var master string
	testutil.WaitFor(t, 20*time.Second, "a master registered", func() bool { master = s.master(); return master != "" })
	testutil.WaitFor(t, 15*time.Second, "both slaves in the SyncStateSet", func() bool {
		return harness.HAStatus(t, s.rc, master).InSyncSlaveNums == 2
	})
	return s
}

// master is the address the nameserver routes as the set's master, or "".
func (s *clientsCtrlSet) master() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ci, err := s.ac.GetBrokerClusterInfo(ctx)
	if err != nil {
		return ""
	}
	return ci.BrokerAddrTable[clientsCtrlName].BrokerAddrs[0]
}

// createTopic creates topic with 4 queues on every replica.
func (s *clientsCtrlSet) createTopic(t *testing.T, topic string) {
	t.Helper()
	for _, b := range s.brokers {
		createTopic(t, s.rc, b.addr, topic)
	}
}

// killMaster kills the master with SIGKILL and waits until another
// replica is routed as master; it returns the new master's address.
func (s *clientsCtrlSet) killMaster(t *testing.T) string {
	t.Helper()
	old := s.master()
	for _, b := range s.brokers {
		if b.addr == old {
			b.proc.Kill()
		}
	}
	killed := time.Now()
	var next string
	testutil.WaitFor(t, 15*time.Second, "a new master registered", func() bool {
		next = s.master()
		return next != "" && next != old
	})
	t.Logf("master %s killed; %s registered as master %v later", old, next, time.Since(killed).Round(10*time.Millisecond))
	return next
}

// TestJavaClientAcrossControllerFailover: the Java client 5.5.0 produces
// (sync, SEND_OK counted) and consumes (push consumer) while the
// controller-mode master is killed with SIGKILL; both refresh routes every
// second. Every SEND_OK message is consumed (duplicates allowed).
func TestJavaClientAcrossControllerFailover(t *testing.T) {
	skipShort(t, "a controller-mode broker set and a Java client")
	t.Parallel()
	s := startClientsCtrlSet(t, "JavaFailover")
	const topic = "JavaFailoverTopic"
	s.createTopic(t, topic)
	master := s.master()

	bg := interop.StartJavaCheck(t, "failover", "-n", strings.Join(s.ns, ";"), "-t", topic, "-g", "java_failover_cg",
		"-run", "jf", "-send-secs", "8", "-interval", "20", "-drain-secs", "20")
	// Kill once the producer is under way (the JVM's start is not ours to
	// time).
	testutil.WaitFor(t, 60*time.Second, "the Java producer's first messages on the master", func() bool {
		select {
		case <-bg.Done():
			return true
		default:
		}
		n, err := harness.QueuedMessages(s.rc, master, topic, 4)
		return err == nil && n >= 50
	})
	select {
	case <-bg.Done():
		res := bg.Wait(t)
		t.Fatalf("the Java check ended before the kill: %s%s", res.Line, res.Stderr)
	default:
	}
	s.killMaster(t)
	res := bg.Wait(t)
	var f struct {
		Acked, Failed, Consumed, Duplicates, Lost int
		DrainMS                                   int64 `json:"drain_ms"`
	}
	if err := json.Unmarshal([]byte(res.Line), &f); err != nil {
		t.Fatalf("result line %q: %v", res.Line, err)
	}
	t.Logf("java: acked %d, failed %d, consumed %d, duplicates %d, lost %d, drained %d ms after the last send",
		f.Acked, f.Failed, f.Consumed, f.Duplicates, f.Lost, f.DrainMS)
	res.RequireOK(t)
	if f.Acked == 0 || f.Lost != 0 {
		t.Fatalf("acked %d, lost %d", f.Acked, f.Lost)
	}
}

// TestClientGoOrderlyAcrossControllerFailover: a client-go producer sends
// per-key sequences through the hash queue selector to the controller-mode
// master; the master is killed with SIGKILL mid-run and a producer started
// after the election continues each sequence on the new master. An orderly
// client-go consumer started after the new master took over consumes both
// epochs: each key's messages first arrive in order (redeliveries aside)
// and every SEND_OK message arrives. client-go refreshes routes only every
// 30 s (fixed), so clients that outlive the kill would spend most of the
// test on the dead master's address; the producer is replaced instead and
// the consumer starts on the new routes.
func TestClientGoOrderlyAcrossControllerFailover(t *testing.T) {
	skipShort(t, "a controller-mode broker set and client-go")
	t.Parallel()
	rlog.SetLogLevel("error")
	s := startClientsCtrlSet(t, "OrderFailover")
	s.createTopic(t, orderTopic)
	op := &orderProducer{sent: map[string]int{}}
	newProducer := func(instance string) rocketmq.Producer {
		p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(s.ns)), producer.WithGroupName("order_failover_pg"),
			producer.WithInstanceName(instance), producer.WithQueueSelector(producer.NewHashQueueSelector()),
			producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
		return started(t, p, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before := newProducer("order-failover-before")
	defer before.Shutdown()
	sendCtx, stopSending := context.WithCancel(ctx)
	sending := make(chan struct{})
	go func() { defer close(sending); continueSequences(sendCtx, before, op, -1) }()
	testutil.WaitFor(t, 20*time.Second, "keyed sends on the first master", func() bool { return sumSent(op) >= 200 })
	s.killMaster(t)
	stopSending()
	<-sending
	atKill := sumSent(op)

	after := newProducer("order-failover-after")
	defer after.Shutdown()
	continueSequences(ctx, after, op, 10)
	t.Logf("%d messages acknowledged before the new master, %d after", atKill, sumSent(op)-atKill)

	tr := newOrderTracker()
	pc := startOrderlyConsumer(t, s.ns[0], "order-failover-c", tr)
	defer pc.Shutdown()
	testutil.Eventually(t, 30*time.Second, func() error {
		if n := tr.missing(op.snapshot()); n > 0 {
			return fmt.Errorf("%d acknowledged messages not consumed yet", n)
		}
		return nil
	})
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t.Logf("consumed %d messages, %d redelivered", tr.total, tr.dups)
	if len(tr.errs) > 0 {
		t.Fatalf("order broken across the failover:\n%s", strings.Join(tr.errs, "\n"))
	}
}

// continueSequences sends every key's next sequence numbers in rounds
// (each send retried until SEND_OK, so a key's sequence has no gap): for
// rounds rounds, or until ctx ends when rounds < 0.
func continueSequences(ctx context.Context, p rocketmq.Producer, op *orderProducer, rounds int) {
	for r := 0; ctx.Err() == nil && (rounds < 0 || r < rounds); r++ {
		for k := range orderKeys {
			key := fmt.Sprintf("K%02d", k)
			for ctx.Err() == nil {
				op.mu.Lock()
				seq := op.sent[key]
				op.mu.Unlock()
				m := primitive.NewMessage(orderTopic, fmt.Appendf(nil, "%s|%d", key, seq))
				m.WithShardingKey(key)
				sctx, cancel := context.WithTimeout(ctx, 4*time.Second)
				res, err := p.SendSync(sctx, m)
				cancel()
				if err == nil && res.Status == primitive.SendOK {
					op.mu.Lock()
					op.sent[key] = seq + 1
					op.mu.Unlock()
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}
}

func sumSent(op *orderProducer) (n int) {
	for _, v := range op.snapshot() {
		n += v
	}
	return n
}
