package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// txBrokerConf shortens the transaction check so that tests take seconds:
// a round every second, half messages older than 2 s are checked.
var txBrokerConf = map[string]string{
	"transactionCheckInterval": "1000",
	"transactionTimeOut":       "2000",
}

// txListener answers by the body's prefix: "commit|…" and "rollback|…"
// locally; "unknown|…" answers UNKNOW locally and, to checks, UNKNOW until
// resolve is set, then commit. It counts checks per body.
type txListener struct {
	mu      sync.Mutex
	checks  map[string]int
	resolve atomic.Bool
}

func newTxListener() *txListener { return &txListener{checks: map[string]int{}} }

func (l *txListener) state(body string, check bool) primitive.LocalTransactionState {
	kind, _, _ := strings.Cut(body, "|")
	switch kind {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	if check && l.resolve.Load() {
		return primitive.CommitMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return l.state(string(m.Body), false)
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	return l.state(string(m.Body), true)
}

func (l *txListener) checked(body string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[body]
}

func startTxProducer(t *testing.T, ns, group string, l primitive.TransactionListener) rocketmq.TransactionProducer {
	t.Helper()
	p, err := rocketmq.NewTransactionProducer(l, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName(group), producer.WithInstanceName(group), producer.WithRetry(1), producer.WithSendMsgTimeout(5*time.Second))
	return started(t, p, err)
}

// topicReader reads whole topics with our SDK (no group membership).
type topicReader struct{ c *client.PullConsumer }

func newTopicReader(t *testing.T, ns, group string) *topicReader {
	t.Helper()
	c, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: []string{ns}}, Group: group})
	c = clienttest.Started(t, c, err)
	return &topicReader{c: c}
}

// bodies counts the messages of every queue of topic by body.
func (r *topicReader) bodies(ctx context.Context, topic string) (map[string]int, error) {
	qs, err := r.c.Queues(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, mq := range qs {
		for off := int64(0); ; {
			res, err := r.c.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32})
			if err != nil {
				return nil, err
			}
			for _, m := range res.Messages {
				out[string(m.Body)]++
			}
			if res.Status != client.PullFound || res.NextBeginOffset <= off {
				break
			}
			off = res.NextBeginOffset
		}
	}
	return out, nil
}

// sendTx sends n messages of a kind and returns their bodies.
func sendTx(ctx context.Context, t *testing.T, p rocketmq.TransactionProducer, topic, kind string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		body := fmt.Sprintf("%s|%d", kind, i)
		res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, err, res)
		}
		out = append(out, body)
	}
	return out
}

// waitDelivered waits until every body in want is in the topic exactly once
// and none of never is.
func waitDelivered(ctx context.Context, t *testing.T, r *topicReader, topic string, want, never []string, timeout time.Duration) map[string]int {
	t.Helper()
	var got map[string]int
	testutil.Eventually(t, timeout, func() error {
		var err error
		if got, err = r.bodies(ctx, topic); err != nil {
			return err
		}
		for _, b := range never {
			if got[b] > 0 {
				t.Fatalf("%s was rolled back but is in %s", b, topic)
			}
		}
		missing := 0
		for _, b := range want {
			switch got[b] {
			case 0:
				missing++
			case 1:
			default:
				t.Fatalf("%s delivered %d times", b, got[b])
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d messages not in %s yet", missing, len(want), topic)
		}
		return nil
	})
	return got
}

// TestTransactionClientGo: a client-go transactional producer commits,
// rolls back, and answers UNKNOW first and commit to the broker's check:
// committed and checked messages arrive once, rolled back ones never, and
// only the UNKNOW ones are checked.
func TestTransactionClientGo(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("fatal") // client-go logs every non-commit local state as an error
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: txBrokerConf})
	const topic = "TxTopic"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "4", "-w", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := newTxListener()
	l.resolve.Store(true)
	p := startTxProducer(t, c.NamesrvAddr(), "tx_pg", l)
	defer p.Shutdown()

	commits := sendTx(ctx, t, p, topic, "commit", 20)
	rollbacks := sendTx(ctx, t, p, topic, "rollback", 20)
	unknown := sendTx(ctx, t, p, topic, "unknown", 10)
	r := newTopicReader(t, c.NamesrvAddr(), "tx_reader")
	start := time.Now()
	waitDelivered(ctx, t, r, topic, append(commits, unknown...), rollbacks, 30*time.Second)
	t.Logf("UNKNOW transactions committed through checks %v after the last send", time.Since(start).Round(100*time.Millisecond))
	// Two more check rounds: still nothing rolled back, nothing twice.
	time.Sleep(2500 * time.Millisecond)
	waitDelivered(ctx, t, r, topic, append(commits, unknown...), rollbacks, 5*time.Second)
	for _, b := range unknown {
		if l.checked(b) == 0 {
			t.Errorf("%s committed without a check", b)
		}
	}
	for _, b := range append(commits, rollbacks...) {
		if n := l.checked(b); n > 0 {
			t.Errorf("%s was ended by the producer but checked %d times", b, n)
		}
	}
}

// TestTransactionKillRestart: half messages are pending (the producer
// answers UNKNOW to checks) when the broker is killed with SIGKILL. After
// the restart the broker checks them again and the producer commits:
// every committed transaction is there once, no rolled back one is.
func TestTransactionKillRestart(t *testing.T) {
	skipShort(t, "restarts a real broker")
	t.Parallel()              // mostly waiting on check-back intervals
	rlog.SetLogLevel("fatal") // client-go logs every non-commit local state as an error
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 1, BrokerConf: txBrokerConf})
	b := c.Brokers()[0]
	const topic = "TxRestartTopic"
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", topic, "-r", "4", "-w", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := newTxListener()
	p := startTxProducer(t, c.NamesrvAddr(), "tx_restart_pg", l)
	defer p.Shutdown()

	commits := sendTx(ctx, t, p, topic, "commit", 30)
	rollbacks := sendTx(ctx, t, p, topic, "rollback", 30)
	pending := sendTx(ctx, t, p, topic, "unknown", 30)
	r := newTopicReader(t, c.NamesrvAddr(), "tx_restart_reader")
	waitDelivered(ctx, t, r, topic, commits, append(rollbacks, pending...), 20*time.Second)
	// The pending ones are checked (and stay pending) before the kill.
	testutil.Eventually(t, 20*time.Second, func() error {
		for _, m := range pending {
			if l.checked(m) == 0 {
				return fmt.Errorf("%s not checked yet", m)
			}
		}
		return nil
	})
	b.Kill(t)
	l.resolve.Store(true)
	b.Start(t)
	restarted := time.Now()
	// The producer reconnects with its next heartbeat (≤ 30 s); checks
	// without a producer online do not use up transactionCheckMax.
	waitDelivered(ctx, t, r, topic, append(commits, pending...), rollbacks, 90*time.Second)
	t.Logf("pending transactions committed %v after the restart", time.Since(restarted).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second)
	waitDelivered(ctx, t, r, topic, append(commits, pending...), rollbacks, 5*time.Second)
}

// endTxRequest is END_TRANSACTION as client-go sends it.
func endTxRequest(group string, queueOffset, phy int64, typ int) *remoting.Command {
	return remoting.NewRequest(code.EndTransaction, map[string]string{
		"producerGroup": group, "tranStateTableOffset": strconv.FormatInt(queueOffset, 10),
		"commitLogOffset": strconv.FormatInt(phy, 10), "commitOrRollback": strconv.Itoa(typ),
		"fromTransactionCheck": "false", "msgId": "x", "transactionId": "x", "bname": "broker-a",
	}, nil)
}

// TestBadInputTransaction: END_TRANSACTION for an unknown offset, a record
// that is not a half message, the wrong producer group or a malformed
// header each gets a clear code; the broker keeps serving and the real half
// message still commits.
func TestBadInputTransaction(t *testing.T) {
	c := startCluster(t, framework.Options{Brokers: 1})
	addr := c.Brokers()[0].Addr()
	const topic = "TxBadTopic"
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", topic, "-r", "4", "-w", "4")
	// A half message (TRAN_MSG, PGROUP, sysFlag PREPARED) and a plain one.
	halfReq := sendV1Request(topic, 1, []byte("half"))
	halfReq.ExtFields["sysFlag"] = strconv.Itoa(int(message.TransactionPreparedType))
	halfReq.ExtFields["producerGroup"] = "tx_bad_pg"
	halfReq.ExtFields["properties"] = "TRAN_MSG\x01true\x02PGROUP\x01tx_bad_pg\x02"
	half := roundTrip(t, addr, halfReq)
	wantResp(t, "send half", half, code.Success)
	plain := roundTrip(t, addr, sendV1Request(topic, 1, []byte("plain")))
	wantResp(t, "send plain", plain, code.Success)
	offsetOf := func(resp *remoting.Command) (int64, int64) {
		_, phy, err := message.ParseOffsetMsgID(resp.ExtFields["msgId"])
		if err != nil {
			t.Fatal(err)
		}
		qo, _ := strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64)
		return qo, phy
	}
	hq, hphy := offsetOf(half)
	pq, pphy := offsetOf(plain)

	for _, tc := range []struct {
		name string
		req  *remoting.Command
		want int32
	}{
		{"unknown CommitLog offset", endTxRequest("tx_bad_pg", hq, 1<<40, 8), code.SystemError},
		{"offset inside a record", endTxRequest("tx_bad_pg", hq, hphy+5, 8), code.SystemError},
		{"not a half message", endTxRequest("tx_bad_pg", pq, pphy, 8), code.IllegalOperation},
		{"wrong producer group", endTxRequest("other_pg", hq, hphy, 8), code.SystemError},
		{"wrong queue offset", endTxRequest("tx_bad_pg", hq+100, hphy, 12), code.SystemError},
		{"bad commitOrRollback", endTxRequest("tx_bad_pg", hq, hphy, 3), code.InvalidParameter},
		{"no header", remoting.NewRequest(code.EndTransaction, nil, nil), code.InvalidParameter},
	} {
		wantResp(t, tc.name, roundTrip(t, addr, tc.req), tc.want)
	}
	// Sending to the half topic directly is forbidden.
	wantResp(t, "send to the half topic", roundTrip(t, addr, sendV1Request(protocol.TransHalfTopic, 0, []byte("x"))), code.NoPermission)

	wantResp(t, "commit", roundTrip(t, addr, endTxRequest("tx_bad_pg", hq, hphy, 8)), code.Success)
	r := newTopicReader(t, c.NamesrvAddr(), "tx_bad_reader")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitDelivered(ctx, t, r, topic, []string{"half", "plain"}, nil, 10*time.Second)
	// A repeated commit stores nothing again.
	wantResp(t, "commit again", roundTrip(t, addr, endTxRequest("tx_bad_pg", hq, hphy, 8)), code.Success)
	time.Sleep(500 * time.Millisecond)
	waitDelivered(ctx, t, r, topic, []string{"half", "plain"}, nil, 5*time.Second)
}

// TestTransactionThroughput compares client-go transactional sends (half
// message + END_TRANSACTION commit) with plain sync sends on one broker,
// same message size and concurrency, and logs both rates.
func TestTransactionThroughput(t *testing.T) {
	skipShort(t, "throughput run")
	// Beside the other tests: its figures are logged, not checked, and
	// run alone it kept the package's parallel tests waiting for 10 s.
	t.Parallel()
	rlog.SetLogLevel("fatal") // client-go logs every non-commit local state as an error
	c := startCluster(t, framework.Options{Brokers: 1})
	const topic = "TxBenchTopic"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "8", "-w", "8")
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})
	l := newTxListener()
	tp := startTxProducer(t, c.NamesrvAddr(), "tx_bench_pg", l)
	defer tp.Shutdown()
	pp, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("plain_bench_pg"),
		producer.WithInstanceName("plain_bench_pg"), producer.WithRetry(1))
	started(t, pp, err)
	defer pp.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	body := []byte("commit|" + strings.Repeat("x", 505)) // 512 bytes
	const (
		workers = 8
		runFor  = 5 * time.Second
	)
	run := func(name string, send func() error) float64 {
		// Warm up the route and connections.
		for range 20 {
			if err := send(); err != nil {
				t.Fatalf("%s warm-up: %v", name, err)
			}
		}
		var n atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(runFor)
		start := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					if err := send(); err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		rate := float64(n.Load()) / time.Since(start).Seconds()
		t.Logf("%-28s %8.0f msgs/s (%d messages, %d producer goroutines, 512-byte bodies)", name, rate, n.Load(), workers)
		return rate
	}
	plain := run("plain SendSync", func() error {
		res, err := pp.SendSync(ctx, primitive.NewMessage(topic, body))
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", res.Status)
		}
		return err
	})
	// client-go sends END_TRANSACTION one-way: the commits may still be
	// under way when the producer loop ends. Count the committed messages
	// as they land in the topic.
	r := newTopicReader(t, c.NamesrvAddr(), "tx_bench_reader")
	before := r.stored(ctx, t, topic)
	txStart := time.Now()
	var sent atomic.Int64
	tx := run("transaction (half + commit)", func() error {
		res, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(topic, body))
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", res.Status)
		}
		if err == nil {
			sent.Add(1)
		}
		return err
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := r.stored(ctx, t, topic) - before; got < sent.Load() {
			return fmt.Errorf("%d of %d transactions committed", got, sent.Load())
		}
		return nil
	})
	committed := float64(sent.Load()) / time.Since(txStart).Seconds()
	t.Logf("%-28s %8.0f msgs/s (until the last commit is stored)", "transaction, committed", committed)
	t.Logf("transactional throughput is %.0f%% of plain sends (%.0f%% counting until committed)", 100*tx/plain, 100*committed/plain)
}

// stored sums the max offsets of a topic's queues.
func (r *topicReader) stored(ctx context.Context, t *testing.T, topic string) int64 {
	t.Helper()
	qs, err := r.c.Queues(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, mq := range qs {
		off, err := r.c.GetMaxOffset(ctx, mq)
		if err != nil {
			t.Fatal(err)
		}
		n += off
	}
	return n
}

// lateListener answers UNKNOW locally and to every check but the
// transactionCheckMax-th: that one it holds until the broker has discarded
// every half message of the test (moved to TRANS_CHECK_MAX_TIME_TOPIC), and
// only then answers by the body's prefix, so that the producer's
// END_TRANSACTION reaches the broker after the discard.
type lateListener struct {
	max       int
	discarded func() bool
	mu        sync.Mutex
	checks    map[string]int
	last      map[string]*primitive.MessageExt // the copy answered late
	early     []string                         // answered before the discard (a test failure)
}

func (l *lateListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

func (l *lateListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	body := string(m.Body)
	l.mu.Lock()
	l.checks[body]++
	n := l.checks[body]
	l.mu.Unlock()
	if n < l.max {
		return primitive.UnkonwnState
	}
	for deadline := time.Now().Add(30 * time.Second); !l.discarded() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	l.mu.Lock()
	l.last[body] = m
	if !l.discarded() {
		l.early = append(l.early, body)
	}
	l.mu.Unlock()
	if strings.HasPrefix(body, "commit") {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

// TestTransactionLateEndAfterDiscard: the broker gives up on two
// transactions after transactionCheckMax checks and moves them to
// TRANS_CHECK_MAX_TIME_TOPIC; the client-go producer's answers to the last
// checks arrive after that. The late commit is stored once (as Apache's
// EndTransactionProcessor stores it), the late rollback stores nothing, and
// a repeated commit of the same half message stores nothing again
// (docs/protocol.md §6.5).
func TestTransactionLateEndAfterDiscard(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("fatal") // client-go logs every non-commit local state as an error
	conf := map[string]string{"transactionCheckMax": "2"}
	for k, v := range txBrokerConf {
		conf[k] = v
	}
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: conf})
	addr := c.Brokers()[0].Addr()
	const topic, group = "TxLateTopic", "tx_late_pg"
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	l := &lateListener{max: 2, checks: map[string]int{}, last: map[string]*primitive.MessageExt{}}
	l.discarded = func() bool {
		n, err := adm.GetMaxOffsetOf(ctx, addr, protocol.TransCheckMaxTopic, 0)
		return err == nil && n >= 2
	}
	p := startTxProducer(t, c.NamesrvAddr(), group, l)
	defer p.Shutdown()
	for _, body := range []string{"commit|late", "rollback|late"} {
		if res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body))); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, err, res)
		}
	}
	r := newTopicReader(t, c.NamesrvAddr(), "tx_late_reader")
	waitDelivered(ctx, t, r, topic, []string{"commit|late"}, []string{"rollback|late"}, 40*time.Second)
	l.mu.Lock()
	m, early := l.last["commit|late"], l.early
	l.mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("%v answered before the broker discarded both transactions: not a late end", early)
	}
	if m == nil {
		t.Fatal("the late commit's check is not recorded")
	}
	// The same commit again, as a producer retrying it would send it.
	wantResp(t, "commit again", roundTrip(t, addr, endTxRequest(group, m.QueueOffset, m.CommitLogOffset, 8)), code.Success)
	// Further check rounds: nothing is checked again or stored twice.
	time.Sleep(2500 * time.Millisecond)
	waitDelivered(ctx, t, r, topic, []string{"commit|late"}, []string{"rollback|late"}, 5*time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	for body, n := range l.checks {
		if n != 2 {
			t.Errorf("%s checked %d times, want transactionCheckMax = 2", body, n)
		}
	}
}
