package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// clientsCtrlSet is the controller-mode topology of tests/e2e/ctrlcluster_test.go
// for the client tests: they create their own topics.
type clientsCtrlSet struct{ *ctrlCluster }

// startClientsCtrlSet starts the topology; extra adds broker properties.
func startClientsCtrlSet(t *testing.T, cluster string, extra map[string]string) *clientsCtrlSet {
	t.Helper()
	processOnly(t, "kills broker processes")
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: cluster, Topic: cluster + "Topic", Broker: extra})
	return &clientsCtrlSet{c}
}

// master is the address the nameserver routes as the set's master, or "".
func (s *clientsCtrlSet) master() string { return s.masterAddr() }

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
// second. The producer runs until the new master has taken messages from it
// (it is released by a file, so a slow JVM cannot end before the kill).
// Every SEND_OK message is consumed (duplicates allowed).
func TestJavaClientAcrossControllerFailover(t *testing.T) {
	skipShort(t, "a controller-mode broker set and a Java client")
	t.Parallel()
	s := startClientsCtrlSet(t, "JavaFailover", nil)
	const topic = "JavaFailoverTopic"
	s.createTopic(t, topic)
	master := s.master()

	release := filepath.Join(t.TempDir(), "stop-sending")
	// The drain allows for the Java client's 30 s pull timeout: a pull
	// parked on the killed master is failed at once only when the client
	// itself closes that channel (NettyConnectManageHandler.close →
	// failFast). A request of the consumer's own that finds the dead
	// channel first (a heartbeat, the next pull of another queue) drops
	// it from the channel table, and the close of the event loop then
	// finds nothing to close, so the other queues' parked pulls wait for
	// the response table's scan: 30 s (consumerTimeoutMillisWhenSuspend)
	// plus the 3 s back-off, "3-33 s" in upstream ROCKETMQ-184. A CI run
	// with 20 s failed that way (one queue resumed at once, three never).
	bg := interop.StartJavaCheck(t, "failover", "-n", strings.Join(s.nsAddrs, ";"), "-t", topic, "-g", "java_failover_cg",
		"-run", "jf", "-send-secs", "90", "-until-file", release, "-interval", "20", "-drain-secs", "45")
	ended := func() bool {
		select {
		case <-bg.Done():
			return true
		default:
			return false
		}
	}
	// Kill once the producer is under way (the JVM's start is not ours to
	// time).
	testutil.WaitFor(t, 60*time.Second, "the Java producer's first messages on the master", func() bool {
		n, err := harness.QueuedMessages(s.rc, master, topic, 4)
		return ended() || (err == nil && n >= 50)
	})
	if ended() {
		res := bg.Wait(t)
		t.Fatalf("the Java check ended before the kill: %s%s", res.Line, res.Stderr)
	}
	next := s.killMaster(t)
	// Wait for 30 messages more than the new master held when it first
	// answered: sends that reached it after the election (a replicated tail
	// it was still dispatching would count too, but that tail is at most
	// the unconfirmed sends of the moment of the kill).
	var atElection int64
	testutil.WaitFor(t, 20*time.Second, "the new master's queues", func() bool {
		n, err := harness.QueuedMessages(s.rc, next, topic, 4)
		atElection = n
		return ended() || err == nil
	})
	testutil.WaitFor(t, 60*time.Second, "the Java producer's messages on the new master", func() bool {
		n, err := harness.QueuedMessages(s.rc, next, topic, 4)
		return ended() || (err == nil && n >= atElection+30)
	})
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
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
	s := startClientsCtrlSet(t, "OrderFailover", nil)
	s.createTopic(t, orderTopic)
	op := &orderProducer{sent: map[string]int{}}
	newProducer := func(instance string) rocketmq.Producer {
		p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(s.nsAddrs)), producer.WithGroupName("order_failover_pg"),
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
	pc := startOrderlyConsumer(t, s.nsAddrs[0], "order-failover-c", tr)
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

// TestPopAndLiteOnPromotedSlave: our SDK's simple consumer (pop) and lite
// push consumer keep working when the controller-mode master is killed
// with SIGKILL and a slave is promoted: messages sent before and after the
// kill are all received and acked (redeliveries counted, allowed), messages
// popped and left unacked on the old master are revived by the new one, and each
// lite topic's messages first arrive in send order. So does a static topic
// (mqadmin updateStaticTopic on the set): after the promotion sends
// through its logic queues succeed and a pull consumer reads every
// acknowledged message, before and after the kill, at the logic queue and
// offset its send reported. updateStaticTopic writes to the master only
// (as Apache's does); the slaves copy the topic and its mapping with the
// rest of the master's metadata every slaveSyncFullInterval (Apache's
// fixed 60 s, 1 s here), and the kill waits until both hold it.
func TestPopAndLiteOnPromotedSlave(t *testing.T) {
	skipShort(t, "a controller-mode broker set and the SDK's pop and lite consumers")
	t.Parallel()
	const popTopic, parent, liteGroup, lites = "PopFailoverTopic", "LiteFailoverParent", "lite_failover_cg", 4
	s := startClientsCtrlSet(t, "PopLiteFailover", map[string]string{
		"enableLmq": "true", "enableMultiDispatch": "true",
		"liteEventCheckInterval": "500", "liteEventFullDispatchDelayTime": "500",
		"slaveSyncCheckInterval": "500", "slaveSyncFullInterval": "1000",
	})
	s.createTopic(t, popTopic)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const staticTopic = "PopLiteStaticTopic"
	adminBin := filepath.Join(harness.BuildBinaries(t, harness.MQAdmin), harness.MQAdmin)
	out, stderr, _, err := harness.RunGroup(ctx, harness.MQAdminTimeout, []string{"TMPDIR=" + t.TempDir()}, adminBin,
		"updateStaticTopic", "-t", staticTopic, "-qn", "4", "-b", s.name, "-n", s.nsAddrs[0])
	if err != nil {
		t.Fatalf("updateStaticTopic: %v\n%s%s", err, out, stderr)
	}
	waitLeaders(t, s.ac, staticTopic, 4, func(_ int, b string) bool { return b == s.name })
	for _, b := range s.brokers {
		tc := protocol.NewTopicConfig(parent)
		tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
		if err := s.ac.CreateTopic(ctx, b.addr, tc, "+message.type=LITE"); err != nil {
			t.Fatalf("lite parent on %s: %v", b.addr, err)
		}
		g := admin.NewSubscriptionGroupConfig(liteGroup)
		g.Attributes["+lite.bind.topic"] = parent
		if err := s.ac.CreateSubscriptionGroup(ctx, b.addr, g); err != nil {
			t.Fatalf("lite group on %s: %v", b.addr, err)
		}
	}
	common := func(instance string) client.CommonConfig {
		return client.CommonConfig{NameServers: s.nsAddrs, InstanceName: instance, HeartbeatInterval: time.Second,
			RouteRefreshInterval: time.Second, Logger: slog.New(slog.DiscardHandler)}
	}
	p := startProducer(t, client.ProducerConfig{CommonConfig: common("poplite-failover-p"), Group: "poplite_failover_pg"})
	// send retries until SEND_OK (the set has no master for a moment).
	send := func(m *message.Message) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, func() error {
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			_, err := p.SendSync(sctx, m)
			return err
		})
	}

	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{CommonConfig: common("poplite-failover-pop"),
		Group: "pop_failover_cg", AwaitDuration: time.Second, ConsumeFrom: client.ConsumeFromFirstOffset})
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, sc, 5*time.Second, t.Logf)
	if err := sc.Subscribe(popTopic, "*", "TAG"); err != nil {
		t.Fatal(err)
	}
	popped := map[string]int{}
	// popUntil receives and acks until n distinct bodies were acked.
	popUntil := func(n int) {
		t.Helper()
		testutil.Eventually(t, 25*time.Second, func() error {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			msgs, err := sc.Receive(rctx, 16, 10*time.Second)
			cancel()
			for _, m := range msgs {
				actx, cancel := context.WithTimeout(ctx, 3*time.Second)
				aerr := sc.Ack(actx, m)
				cancel()
				if aerr != nil {
					return fmt.Errorf("ack %s: %w", m.Body, aerr)
				}
				popped[string(m.Body)]++
			}
			if len(popped) < n {
				return fmt.Errorf("%d of %d messages popped and acked (last receive: %v)", len(popped), n, err)
			}
			return nil
		})
	}

	var mu sync.Mutex
	next, liteDups, liteErrs := map[string]int{}, 0, []string{}
	seen := map[string]bool{}
	lc, err := client.NewLitePushConsumer(client.LitePushConsumerConfig{CommonConfig: common("poplite-failover-lite"),
		Group: liteGroup, BindTopic: parent, LongPollingTimeout: 2 * time.Second, ConsumeGoroutines: 4,
		Handler: func(_ context.Context, m *message.Message) client.ConsumeResult {
			lite, seqText, _ := strings.Cut(string(m.Body), "/")
			seq, _ := strconv.Atoi(seqText)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case seen[string(m.Body)]:
				liteDups++
			case seq != next[lite]:
				liteErrs = append(liteErrs, fmt.Sprintf("%s: got %d first, expected %d", lite, seq, next[lite]))
				seen[string(m.Body)] = true
			default:
				seen[string(m.Body)] = true
				next[lite]++
			}
			return client.ConsumeSuccess
		}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, lc, 5*time.Second, t.Logf)
	for i := range lites {
		if err := lc.SubscribeLite(ctx, fmt.Sprintf("lf-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	liteUntil := func(n int) {
		t.Helper()
		testutil.Eventually(t, 25*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < n {
				return fmt.Errorf("%d of %d lite messages handled", len(seen), n)
			}
			return nil
		})
	}
	staticSent := map[string]sentMsg{}
	sendStatic := func(body string) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, func() error {
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			res, err := p.SendSync(sctx, &message.Message{Topic: staticTopic, Body: []byte(body)})
			if err == nil {
				staticSent[body] = sentMsg{queue: res.Queue.QueueID, offset: res.QueueOffset}
			}
			return err
		})
	}
	const perPhase = 20
	sendPhase := func(from int) {
		for i := from; i < from+perPhase; i++ {
			sendStatic(fmt.Sprintf("static-%d", i))
			send(&message.Message{Topic: popTopic, Body: fmt.Appendf(nil, "pop-%d", i)})
			m := &message.Message{Topic: parent, Body: fmt.Appendf(nil, "lf-%d/%d", i%lites, i/lites)}
			m.SetLiteTopic(fmt.Sprintf("lf-%d", i%lites))
			send(m)
		}
	}
	sendPhase(0)
	popUntil(perPhase)
	liteUntil(perPhase)

	// Messages popped and not acked before the kill: their checkpoints
	// reach the slaves in the CommitLog (the pop journal), and their pop
	// offsets with the slaves' copy of the consumer offsets. The promoted
	// slave must revive them when their invisible time ends; a promoted
	// slave that never applied the replicated journal knows the offsets
	// but not the checkpoints, and they are never delivered again.
	const held, heldInvisible = 4, 8 * time.Second
	for i := range held {
		send(&message.Message{Topic: popTopic, Body: fmt.Appendf(nil, "held-%d", i)})
	}
	heldSeen := map[string]bool{}
	testutil.Eventually(t, 20*time.Second, func() error {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msgs, _ := sc.Receive(rctx, 16, heldInvisible)
		cancel()
		for _, m := range msgs {
			heldSeen[string(m.Body)] = true // not acked
		}
		if len(heldSeen) < held {
			return fmt.Errorf("%d of %d held messages popped", len(heldSeen), held)
		}
		return nil
	})
	heldAt := time.Now()
	for _, b := range s.brokers {
		if b.addr == s.master() {
			continue
		}
		testutil.WaitFor(t, 10*time.Second, b.addr+" holding the pop group's offsets past the held messages", func() bool {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			st, err := s.ac.GetConsumeStats(sctx, b.addr, "pop_failover_cg", popTopic)
			if err != nil {
				return false
			}
			var end int64
			for _, w := range st.OffsetTable {
				end += w.BrokerOffset
			}
			return end == perPhase+held && st.TotalDiff() == 0
		})
	}

	for _, b := range s.brokers {
		testutil.WaitFor(t, 10*time.Second, b.addr+" holding the static topic's mapping", func() bool {
			return holdsMapping(s.ctrlCluster, b.addr, staticTopic)
		})
	}
	if d := time.Since(heldAt); d > heldInvisible/2 {
		t.Fatalf("the held messages were popped %v before the kill: the old master may revive them first", d)
	}
	s.killMaster(t)
	killed := time.Now()
	sendPhase(perPhase)
	popUntil(2*perPhase + held)
	liteUntil(2 * perPhase)
	redelivered := 0
	for _, n := range popped {
		redelivered += n - 1
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("after the kill: everything received %v later; pop redeliveries %d, lite redeliveries %d",
		time.Since(killed).Round(10*time.Millisecond), redelivered, liteDups)
	if len(liteErrs) > 0 {
		t.Fatalf("lite order broken across the failover:\n%s", strings.Join(liteErrs, "\n"))
	}
	checkStaticRead(t, ctx, common("poplite-failover-static"), staticTopic, staticSent)
}

// holdsMapping reports whether the replica at addr has topic and its
// static-topic mapping (GET_ALL_TOPIC_CONFIG, what a slave copies).
func holdsMapping(c *ctrlCluster, addr, topic string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(code.GetAllTopicConfig, nil, nil))
	if err != nil || resp.Code != code.Success {
		return false
	}
	var w protocol.TopicConfigAndMappingSerializeWrapper
	if protocol.Unmarshal(resp.Body, &w) != nil {
		return false
	}
	_, topicOK := w.TopicConfigTable[topic]
	d, mapOK := w.TopicQueueMappingDetailMap[topic]
	return topicOK && mapOK && d.TotalQueues == 4
}

// checkStaticRead reads every logic queue of a static topic from its
// start through the SDK's pull consumer and wants each sent message once,
// at the logic queue and offset its send reported.
func checkStaticRead(t *testing.T, ctx context.Context, cc client.CommonConfig, topic string, sent map[string]sentMsg) {
	t.Helper()
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: cc, Group: topic + "_reader"})
	pc = started(t, pc, err)
	defer pc.Shutdown(context.Background())
	got, _ := readLogicQueues(t, ctx, pc, topic, 4)
	for body, s := range sent {
		if g, ok := got[body]; !ok || g.queue != s.queue || g.offset != s.offset {
			t.Errorf("%s sent to logic queue %d offset %d, read: %+v (found %v)", body, s.queue, s.offset, g, ok)
		}
	}
	if len(got) != len(sent) {
		t.Errorf("read %d messages of %s, sent %d", len(got), topic, len(sent))
	}
	t.Logf("static topic: %d messages read back at their logic offsets", len(got))
}

// TestFencedBrokerAnswersServiceNotAvailable: a controller-mode broker
// that cannot reach any controller stays fenced (it has no role and runs
// as SLAVE meanwhile); producers must be told SERVICE_NOT_AVAILABLE (14),
// which they retry on another broker, not a slave's SYSTEM_BUSY.
func TestFencedBrokerAnswersServiceNotAvailable(t *testing.T) {
	processOnly(t, "starts a broker process")
	t.Parallel()
	bin := harness.BuildBinaries(t, harness.Broker)
	dir := t.TempDir()
	port, haPort := harness.LatePort(t), harness.LatePort(t)
	props := framework.BrokerProps("FencedCluster", "broker-f", 0, port, harness.LateAddr(t), dir, map[string]string{
		"brokerId": "-1", "brokerRole": "SLAVE", "enableControllerMode": "true",
		"controllerAddr": harness.LateAddr(t), "haListenPort": strconv.Itoa(haPort),
	})
	b := &ctrlBroker{addr: fmt.Sprintf("127.0.0.1:%d", port), direct: fmt.Sprintf("127.0.0.1:%d", port), conf: filepath.Join(dir, "broker.conf")}
	if err := framework.WriteProps(b.conf, props); err != nil {
		t.Fatal(err)
	}
	b.start(t, bin, 0)

	// Its HA port is bound from the start, before any role, as Apache's
	// broker binds it: nothing can take it before a promotion. (Polled:
	// under load the start may still be under way when the client port
	// answers.)
	testutil.Eventually(t, 20*time.Second, func() error {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", haPort))
		if err != nil {
			return nil
		}
		ln.Close()
		return fmt.Errorf("a fenced controller-mode broker left its HA port %d free", haPort)
	})
	// And a broker whose HA port is taken does not start (a promotion
	// would fail later).
	dir2 := t.TempDir()
	props2 := framework.BrokerProps("FencedCluster", "broker-g", 0, harness.LatePort(t), harness.LateAddr(t), dir2, map[string]string{
		"brokerId": "-1", "brokerRole": "SLAVE", "enableControllerMode": "true",
		"controllerAddr": harness.LateAddr(t), "haListenPort": strconv.Itoa(haPort),
	})
	conf2 := filepath.Join(dir2, "broker.conf")
	if err := framework.WriteProps(conf2, props2); err != nil {
		t.Fatal(err)
	}
	p2 := harness.StartProcessWith(t, harness.ProcOptions{Name: "broker-g"}, filepath.Join(bin, harness.Broker), "-c", conf2)
	if err := p2.WaitTimeout(30 * time.Second); err == nil || !strings.Contains(p2.Logs(), "HA listener") {
		t.Fatalf("a controller-mode broker whose HA port is taken: exit %v (want a failure naming the HA listener)\n%s", err, p2.Logs())
	}
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	for _, req := range []*remoting.Command{sendV2Request("FencedTopic", "TBW102", 0, []byte("x")), sendV1Request("FencedTopic", 0, []byte("x"))} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := rc.Invoke(ctx, b.addr, req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != code.ServiceNotAvailable {
			t.Fatalf("send %d to a fenced broker: code %d (%s), want SERVICE_NOT_AVAILABLE (14)", req.Code, resp.Code, resp.Remark)
		}
	}
}
