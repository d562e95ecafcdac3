package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// Orderly test parameters.
const (
	orderTopic = "OrderTopic"
	orderGroup = "order_cg"
	orderKeys  = 16
	// orderLockMaxLive is the broker's lock expiry for the test (Java's
	// rocketmq.broker.rebalance.lockMaxLiveTime, 60 s by default).
	// client-go never unlocks a queue it gives away in a rebalance, so the
	// new owner waits for the expiry; the consumers renew every 2 s.
	orderLockMaxLive   = 10 * time.Second
	orderLockRenewal   = 2 * time.Second
	orderSendPause     = 40 * time.Millisecond
	orderPhaseProgress = 60 // messages each phase must see consumed
)

// orderTracker checks what the orderly consumers receive: per key, the
// first delivery of each sequence number comes in order (a redelivery of
// an earlier one is allowed); per queue, two consumers never run a
// callback at the same time (checked while exclusive is set).
type orderTracker struct {
	mu        sync.Mutex
	next      map[string]int          // key → next new sequence number
	seen      map[string]map[int]bool // key → sequence numbers consumed
	busy      map[int]string          // queue → consumer in a callback
	byWho     map[string]int          // consumer → messages
	total     int
	dups      int
	errs      []string
	overlaps  []string
	exclusive atomic.Bool
}

func newOrderTracker() *orderTracker {
	tr := &orderTracker{next: map[string]int{}, seen: map[string]map[int]bool{}, busy: map[int]string{}, byWho: map[string]int{}}
	tr.exclusive.Store(true)
	return tr
}

func (tr *orderTracker) enter(who string, qid int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if other, ok := tr.busy[qid]; ok && other != who {
		msg := fmt.Sprintf("queue %d consumed by %s and %s at once", qid, other, who)
		if tr.exclusive.Load() {
			tr.errs = append(tr.errs, msg)
		} else {
			tr.overlaps = append(tr.overlaps, msg)
		}
	}
	tr.busy[qid] = who
}

func (tr *orderTracker) leave(who string, qid int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.busy[qid] == who {
		delete(tr.busy, qid)
	}
}

func (tr *orderTracker) consume(who string, m *primitive.MessageExt) {
	key, seqText, _ := strings.Cut(string(m.Body), "|")
	seq, err := strconv.Atoi(seqText)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err != nil || m.GetShardingKey() != key {
		tr.errs = append(tr.errs, fmt.Sprintf("unexpected message %q (sharding key %q)", m.Body, m.GetShardingKey()))
		return
	}
	tr.total++
	tr.byWho[who]++
	if tr.seen[key] == nil {
		tr.seen[key] = map[int]bool{}
	}
	switch {
	case tr.seen[key][seq]:
		tr.dups++
	case seq != tr.next[key]:
		if len(tr.errs) < 20 {
			tr.errs = append(tr.errs, fmt.Sprintf("%s: key %s got %d first, expected %d next (queue %d offset %d)",
				who, key, seq, tr.next[key], m.Queue.QueueId, m.QueueOffset))
		}
		tr.seen[key][seq] = true
	default:
		tr.seen[key][seq] = true
		tr.next[key]++
	}
}

func (tr *orderTracker) counts() (total int, byWho map[string]int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string]int{}
	for k, v := range tr.byWho {
		out[k] = v
	}
	return tr.total, out
}

// missing counts sent messages (sent[key] = how many) not consumed yet.
func (tr *orderTracker) missing(sent map[string]int) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for k, c := range sent {
		for s := range c {
			if !tr.seen[k][s] {
				n++
			}
		}
	}
	return n
}

// orderProducer sends "key|seq" with the key as sharding key through
// client-go's hash queue selector, each key's sequence in order; a failed
// send is retried until it succeeds, so there are no gaps.
type orderProducer struct {
	mu   sync.Mutex
	sent map[string]int
}

func (op *orderProducer) run(ctx context.Context, p rocketmq.Producer) {
	for seq := 0; ctx.Err() == nil; seq++ {
		for k := range orderKeys {
			key := fmt.Sprintf("K%02d", k)
			for ctx.Err() == nil {
				m := primitive.NewMessage(orderTopic, []byte(fmt.Sprintf("%s|%d", key, seq)))
				m.WithShardingKey(key)
				if res, err := p.SendSync(ctx, m); err == nil && res.Status == primitive.SendOK {
					op.mu.Lock()
					op.sent[key] = seq + 1
					op.mu.Unlock()
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		time.Sleep(orderSendPause)
	}
}

func (op *orderProducer) snapshot() map[string]int {
	op.mu.Lock()
	defer op.mu.Unlock()
	out := map[string]int{}
	for k, v := range op.sent {
		out[k] = v
	}
	return out
}

func startOrderlyConsumer(t *testing.T, ns, instance string, tr *orderTracker) rocketmq.PushConsumer {
	t.Helper()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(orderGroup), consumer.WithInstance(instance), consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithConsumerOrder(true),
		consumer.WithRebalanceLockInterval(orderLockRenewal))
	goSubscribed(t, pc, err, orderTopic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			if len(msgs) == 0 {
				return consumer.ConsumeSuccess, nil
			}
			qid := msgs[0].Queue.QueueId
			tr.enter(instance, qid)
			defer tr.leave(instance, qid)
			for _, m := range msgs {
				tr.consume(instance, m)
			}
			time.Sleep(2 * time.Millisecond) // widen the window a second owner would show in
			return consumer.ConsumeSuccess, nil
		})
	return pc
}

// TestOrderlyClientGo: a client-go producer with the hash queue selector
// sends per-key sequences while orderly client-go consumers come and go:
// a second consumer joins (rebalance), the first is restarted, the broker
// is killed with SIGKILL while the queues are locked. Each key's messages
// are first consumed in order throughout, no queue is consumed by two
// consumers at once while the broker runs, and every message sent arrives.
func TestOrderlyClientGo(t *testing.T) {
	skipShort(t, "rebalances and restarts with real clients")
	// Mostly waiting on client-go's 20 s rebalances: runs beside the other
	// slow tests.
	t.Parallel()
	rlog.SetLogLevel("error")
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 1, BrokerConf: map[string]string{"flushConsumerOffsetInterval": "1000"},
		LockMaxLiveTime: orderLockMaxLive})
	b := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", orderTopic, "-r", "4", "-w", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})
	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("order_pg"),
		producer.WithInstanceName("order_pg"), producer.WithQueueSelector(producer.NewHashQueueSelector()),
		producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	tr := newOrderTracker()
	op := &orderProducer{sent: map[string]int{}}
	prodCtx, stopProducing := context.WithCancel(ctx)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		op.run(prodCtx, p)
	}()
	defer func() { stopProducing(); <-produced }()

	// progress waits until consumer who (or anyone, "") consumed n more.
	progress := func(what, who string, n int, timeout time.Duration) {
		t.Helper()
		total, byWho := tr.counts()
		base := total
		if who != "" {
			base = byWho[who]
		}
		start := time.Now()
		testutil.Eventually(t, timeout, func() error {
			total, byWho := tr.counts()
			got := total
			if who != "" {
				got = byWho[who]
			}
			if got-base < n {
				return fmt.Errorf("%s: %d of %d messages consumed", what, got-base, n)
			}
			return nil
		})
		t.Logf("%s: %d messages in %v", what, n, time.Since(start).Round(100*time.Millisecond))
	}

	a := startOrderlyConsumer(t, c.NamesrvAddr(), "order-a", tr)
	progress("consumer A alone", "order-a", orderPhaseProgress, 60*time.Second)

	// A second consumer joins: it gets queues once A's locks on them
	// expire; both keep consuming.
	bc := startOrderlyConsumer(t, c.NamesrvAddr(), "order-b", tr)
	defer bc.Shutdown()
	progress("consumer B after joining", "order-b", orderPhaseProgress, 90*time.Second)
	progress("consumer A after B joined", "order-a", orderPhaseProgress, 60*time.Second)

	// A restarts (as a new instance): its shutdown unlocks its queues.
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	a2 := startOrderlyConsumer(t, c.NamesrvAddr(), "order-a2", tr)
	defer a2.Shutdown()
	progress("consumer A restarted", "order-a2", orderPhaseProgress, 90*time.Second)
	progress("consumer B after A's restart", "order-b", orderPhaseProgress, 60*time.Second)

	// SIGKILL with the queues locked. The broker forgets its locks (as
	// Java's does); right after the restart a consumer that heartbeats
	// first may lock queues the other still consumes for up to one renewal
	// interval, so exclusivity is only reported from here on.
	tr.exclusive.Store(false)
	sum := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	atKill := sum(op.snapshot())
	b.Kill(t)
	b.Start(t)
	restarted := time.Now()
	// Consumption resumes through the restarted broker: messages sent
	// after the restart arrive (the consumers' local backlog alone would
	// not satisfy this).
	testutil.Eventually(t, 60*time.Second, func() error {
		if n := sum(op.snapshot()) - atKill; n < 2*orderPhaseProgress {
			return fmt.Errorf("%d messages sent since the restart", n)
		}
		return nil
	})
	resumeTarget := op.snapshot()
	testutil.Eventually(t, 120*time.Second, func() error {
		if n := tr.missing(resumeTarget); n > 0 {
			return fmt.Errorf("%d messages sent after the kill -9 restart not consumed yet", n)
		}
		return nil
	})
	t.Logf("after the broker's kill -9 restart: consumption resumed within %v", time.Since(restarted).Round(100*time.Millisecond))

	stopProducing()
	<-produced
	sent := op.snapshot()
	testutil.Eventually(t, 90*time.Second, func() error {
		if n := tr.missing(sent); n > 0 {
			return fmt.Errorf("%d sent messages not consumed yet", n)
		}
		return nil
	})

	tr.mu.Lock()
	defer tr.mu.Unlock()
	var keys []string
	for k := range sent {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	nsent := 0
	for _, k := range keys {
		nsent += sent[k]
	}
	t.Logf("sent %d messages over %d keys; %d deliveries (%d redeliveries) by %v", nsent, len(keys), tr.total, tr.dups, tr.byWho)
	if len(tr.overlaps) > 0 {
		t.Logf("after the broker restart, queues consumed by two consumers at once (lock table lost): %d, e.g. %s", len(tr.overlaps), tr.overlaps[0])
	}
	if len(tr.errs) > 0 {
		t.Fatalf("order or exclusivity broken (%d): %s", len(tr.errs), strings.Join(tr.errs, "; "))
	}
}

// lockBody is a LOCK/UNLOCK_BATCH_MQ body (client-go's shape).
func lockBody(group, client string, mqs ...protocol.MessageQueue) []byte {
	return protocol.MustMarshal(map[string]any{"consumerGroup": group, "clientId": client, "mqSet": mqs})
}

// lockedSet decodes a LOCK_BATCH_MQ answer.
func lockedSet(t *testing.T, resp *remoting.Command) []protocol.MessageQueue {
	t.Helper()
	wantResp(t, "lock", resp, code.Success)
	var body struct {
		LockOKMQSet []protocol.MessageQueue `json:"lockOKMQSet"`
	}
	if err := protocol.Unmarshal(resp.Body, &body); err != nil {
		t.Fatalf("lock response %q: %v", resp.Body, err)
	}
	return body.LockOKMQSet
}

// TestBadInputLock: LOCK_BATCH_MQ grants only queues this broker has and
// that no other client holds; malformed bodies are INVALID_PARAMETER; the
// broker keeps serving.
func TestBadInputLock(t *testing.T) {
	c := startCluster(t, framework.Options{Brokers: 1})
	addr := c.Brokers()[0].Addr()
	const topic = "LockTopic"
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	mq := func(tp string, id int) protocol.MessageQueue {
		return protocol.MessageQueue{Topic: tp, BrokerName: "broker-a", QueueID: id}
	}
	got := lockedSet(t, roundTrip(t, addr, remoting.NewRequest(code.LockBatchMQ, nil,
		lockBody("lock_cg", "c1", mq(topic, 0), mq(topic, 1), mq(topic, 2), mq("NoSuchTopic", 0), mq(topic, -1)))))
	if !slices.Equal(got, []protocol.MessageQueue{mq(topic, 0), mq(topic, 1)}) {
		t.Fatalf("c1 granted %v, want queues 0 and 1 only", got)
	}
	if got := lockedSet(t, roundTrip(t, addr, remoting.NewRequest(code.LockBatchMQ, nil, lockBody("lock_cg", "c2", mq(topic, 0))))); len(got) != 0 {
		t.Fatalf("c2 granted %v while c1 holds it", got)
	}
	for name, body := range map[string]string{
		"no body":      "",
		"not JSON":     "{",
		"no group":     `{"clientId":"c1","mqSet":[]}`,
		"no client id": `{"consumerGroup":"lock_cg","mqSet":[]}`,
		"bad mqSet":    `{"consumerGroup":"lock_cg","clientId":"c1","mqSet":{}}`,
	} {
		for _, rc := range []int32{code.LockBatchMQ, code.UnlockBatchMQ} {
			wantResp(t, fmt.Sprintf("%s (code %d)", name, rc), roundTrip(t, addr, remoting.NewRequest(rc, nil, []byte(body))), code.InvalidParameter)
		}
	}
	// Unlock by another client changes nothing; by the holder frees it.
	wantResp(t, "unlock by c2", roundTrip(t, addr, remoting.NewRequest(code.UnlockBatchMQ, nil, lockBody("lock_cg", "c2", mq(topic, 0)))), code.Success)
	if got := lockedSet(t, roundTrip(t, addr, remoting.NewRequest(code.LockBatchMQ, nil, lockBody("lock_cg", "c2", mq(topic, 0))))); len(got) != 0 {
		t.Fatalf("c2 granted %v after its own unlock attempt", got)
	}
	wantResp(t, "unlock by c1", roundTrip(t, addr, remoting.NewRequest(code.UnlockBatchMQ, nil, lockBody("lock_cg", "c1", mq(topic, 0)))), code.Success)
	if got := lockedSet(t, roundTrip(t, addr, remoting.NewRequest(code.LockBatchMQ, nil, lockBody("lock_cg", "c2", mq(topic, 0))))); len(got) != 1 {
		t.Fatalf("c2 granted %v after c1 unlocked", got)
	}
}
