package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/framework"
)

// Restart parameters.
const (
	restartMessages = 3000
	// restartSendPause paces the producer (about 60 messages/s), so that it
	// is still sending when the second restart comes: client-go's consumer
	// needs up to 30 s to resume after each restart (see below).
	restartSendPause = 15 * time.Millisecond
	restartTopic     = "RestartTopic"
	restartGroup     = "restart_cg"
	// restartOffsetFlush is the broker's flushConsumerOffsetInterval: how
	// stale its persisted consumer offsets may be at a kill -9.
	restartOffsetFlush = time.Second
	// clientGoCommitInterval is how often client-go commits offsets.
	clientGoCommitInterval = 5 * time.Second
)

// restartTracker records what the push consumer received. Messages are
// identified by "seq.attempt": every send attempt has its own identity, so a
// duplicate is a redelivery, never a second copy the producer sent.
type restartTracker struct {
	mu       sync.Mutex
	phase    int // 0 before the graceful restart, 1 after it, 2 after the kill -9
	count    map[string]int
	first    map[string]time.Time
	dups     [3]int
	bad      []string
	received int
	last     time.Time // of the latest delivery
}

func (tr *restartTracker) handle(msgs ...*primitive.MessageExt) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := time.Now()
	tr.last = now
	for _, m := range msgs {
		tr.received++
		id, ok := strings.CutPrefix(string(m.Body), "restart|")
		if !ok || m.GetKeys() != id || m.GetTags() != "T" {
			if len(tr.bad) < 5 {
				tr.bad = append(tr.bad, fmt.Sprintf("queue %d offset %d: body %.40q keys %q tags %q", m.Queue.QueueId, m.QueueOffset, m.Body, m.GetKeys(), m.GetTags()))
			}
			continue
		}
		tr.count[id]++
		if tr.count[id] == 1 {
			tr.first[id] = now
		} else {
			tr.dups[tr.phase]++
		}
	}
}

func (tr *restartTracker) setPhase(p int) {
	tr.mu.Lock()
	tr.phase = p
	tr.mu.Unlock()
}

// missing counts the identities in ids not consumed yet.
func (tr *restartTracker) missing(ids map[string]bool) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for id := range ids {
		if tr.count[id] == 0 {
			n++
		}
	}
	return n
}

// consumedIn counts distinct messages first consumed in [from, to].
func (tr *restartTracker) consumedIn(from, to time.Time) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, t := range tr.first {
		if !t.Before(from) && !t.After(to) {
			n++
		}
	}
	return n
}

// restartProducer sends restartMessages messages, one at a time, retrying
// each (as a new attempt with its own identity) until the broker acks it.
type restartProducer struct {
	mu       sync.Mutex
	acked    map[string]bool // SEND_OK only: under SYNC_FLUSH that is durable
	seqs     int             // sequence numbers acknowledged
	failures int
	errs     map[string]int // failure kinds seen, for the report
}

// ackedIDs returns a copy of the acknowledged identities.
func (rp *restartProducer) ackedIDs() map[string]bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	out := make(map[string]bool, len(rp.acked))
	for id := range rp.acked {
		out[id] = true
	}
	return out
}

func (rp *restartProducer) ackedSeqs() int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.seqs
}

func (rp *restartProducer) run(ctx context.Context, p rocketmq.Producer) {
	for seq := 0; seq < restartMessages; seq++ {
		for attempt := 0; ; attempt++ {
			if ctx.Err() != nil {
				return
			}
			id := fmt.Sprintf("%05d.%d", seq, attempt)
			m := primitive.NewMessage(restartTopic, []byte("restart|"+id))
			m.WithTag("T")
			m.WithKeys([]string{id})
			res, err := p.SendSync(ctx, m)
			if err == nil && res.Status == primitive.SendOK {
				rp.mu.Lock()
				rp.acked[id] = true
				rp.seqs++
				rp.mu.Unlock()
				time.Sleep(restartSendPause)
				break
			}
			kind := "status"
			if err != nil {
				kind = err.Error()
				if i := strings.IndexAny(kind, ":["); i > 0 {
					kind = kind[:i]
				}
			}
			rp.mu.Lock()
			rp.failures++
			rp.errs[kind]++
			rp.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestBrokerRestartMidStream: a client-go producer sends while a client-go
// clustering push consumer consumes; midway the broker is stopped
// gracefully and restarted, later killed with SIGKILL and restarted
// (SYNC_FLUSH, so an acknowledged send is durable). Every acknowledged
// message is consumed at least once; redeliveries stay within what was
// consumed since the last offset commit before each restart; the
// committed offsets survive both restarts (exactly, for offsets the broker
// had persisted), reach the queues' max offsets while the consumer runs,
// never move back nor beyond the max on the way, and stay there through
// the consumer's shutdown.
func TestBrokerRestartMidStream(t *testing.T) {
	skipShort(t, "restarts a real broker under load")
	// Mostly waiting on client-go's 30 s timeouts: runs beside the other
	// slow tests.
	t.Parallel()
	rlog.SetLogLevel("error") // client-go logs through a process-wide logger
	start := time.Now()
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 1, BrokerConf: map[string]string{
		"flushDiskType":               "SYNC_FLUSH",
		"flushConsumerOffsetInterval": fmt.Sprint(restartOffsetFlush.Milliseconds()),
	}})
	b := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", restartTopic, "-r", "4", "-w", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})

	// Our SDK reads the committed offsets (it does not join the group: no
	// subscription, no heartbeat) and keeps a probe group whose offsets
	// only this test writes.
	probe := newOffsetProbe(t, c.NamesrvAddr())
	queues := probe.queues(ctx, t)

	tr := &restartTracker{count: map[string]int{}, first: map[string]time.Time{}}
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(restartGroup),
		consumer.WithInstance("restart-consumer"), consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	goSubscribed(t, pc, err, restartTopic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			tr.handle(msgs...)
			return consumer.ConsumeSuccess, nil
		})
	defer pc.Shutdown()

	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("restart_pg"),
		producer.WithInstanceName("restart-producer"), producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	rp := &restartProducer{acked: map[string]bool{}, errs: map[string]int{}}
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		rp.run(ctx, p)
	}()
	defer func() { cancel(); <-produced }() // before the producer shuts down
	waitAcked := func(n int) {
		t.Helper()
		testutil.Eventually(t, 90*time.Second, func() error {
			if got := rp.ackedSeqs(); got < n {
				return fmt.Errorf("%d of %d messages acknowledged", got, n)
			}
			return nil
		})
	}

	// Phase 1: graceful stop and restart after a sixth of the messages.
	waitAcked(restartMessages / 6)
	probe.commit(ctx, t, queues, 1000)
	before := probe.offsets(ctx, t, queues)
	stopAt := time.Now()
	ackedAtStop := rp.ackedIDs()
	if err := b.Stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	t.Logf("graceful stop took %v, %d messages acknowledged", time.Since(stopAt).Round(time.Millisecond), len(ackedAtStop))
	tr.setPhase(1)
	b.Start(t)
	restartedAt := time.Now()
	after := probe.offsets(ctx, t, queues)
	probe.check(ctx, t, "after the graceful restart", queues, 1000)
	checkNotBehind(t, "after the graceful restart", before, after)
	gracefulBound := tr.consumedIn(stopAt.Add(-clientGoCommitInterval-time.Second), stopAt)

	// Consumption resumes: everything acknowledged before the stop arrives,
	// and messages sent since. client-go needs up to 30 s: the long polls
	// it had parked on the broker's old connection time out only after
	// their fixed 30 s (client-go does not fail requests of a closed
	// connection), and the restarted broker knows the consumer's
	// subscription only from its next heartbeat (every 30 s; it answers
	// SUBSCRIPTION_NOT_EXIST until then, as Apache's broker does).
	testutil.Eventually(t, 75*time.Second, func() error {
		if n := tr.missing(ackedAtStop); n > 0 {
			return fmt.Errorf("%d messages acknowledged before the graceful stop not consumed yet", n)
		}
		if tr.consumedIn(restartedAt, time.Now()) == 0 {
			return errors.New("nothing consumed since the graceful restart")
		}
		return nil
	})
	t.Logf("consumption resumed %v after the graceful restart", time.Since(restartedAt).Round(100*time.Millisecond))

	// Phase 2: SIGKILL, at two thirds or later. Offsets the broker persisted
	// (flushConsumerOffsetInterval ago) must survive; later ones may not.
	waitAcked(2 * restartMessages / 3)
	probe.commit(ctx, t, queues, 2000)
	before = probe.offsets(ctx, t, queues)
	time.Sleep(restartOffsetFlush + 500*time.Millisecond)
	probe.commit(ctx, t, queues, 3000) // not persisted yet at the kill: 2000 or 3000 afterwards
	killAt := time.Now()
	ackedAtKill := rp.ackedIDs()
	b.Kill(t)
	tr.setPhase(2)
	t.Logf("killed with %d messages acknowledged", len(ackedAtKill))
	if len(ackedAtKill) == restartMessages {
		t.Log("the producer had finished before the kill (slow consumer resumption)")
	}
	b.Start(t)
	after = probe.offsets(ctx, t, queues)
	probe.checkEither(ctx, t, "after the kill -9 restart", queues, 2000, 3000)
	checkNotBehind(t, "after the kill -9 restart", before, after)
	killBound := tr.consumedIn(killAt.Add(-clientGoCommitInterval-restartOffsetFlush-time.Second), killAt)

	select {
	case <-produced:
	case <-ctx.Done():
		t.Fatalf("producer did not finish: %d of %d acknowledged", rp.ackedSeqs(), restartMessages)
	}
	if got := rp.ackedSeqs(); got != restartMessages {
		t.Fatalf("%d of %d messages acknowledged", got, restartMessages)
	}

	// Every acknowledged message is consumed.
	testutil.Eventually(t, 75*time.Second, func() error {
		if n := tr.missing(rp.ackedIDs()); n > 0 {
			return fmt.Errorf("%d acknowledged messages not consumed yet", n)
		}
		return nil
	})
	// The committed offsets reach the queues' max offsets while client-go
	// runs. Not at once: client-go commits (every 5 s, and on each pull)
	// only the queues it holds, and after the kill it may hold none for up
	// to 30 s. Its rebalance (every 20 s) asks the restarted broker for the
	// group's consumers, which the broker learns only from the client's next
	// heartbeat (every 30 s); until then the answer is SYSTEM_ERROR "no
	// consumer for this group", as from Apache's broker. client-go ignores
	// the code and reads no consumer at all, so it drops every queue
	// (consumer/consumer.go: findConsumerList, doBalance,
	// updateProcessQueueTable), and dropping them commits only the first
	// one's offset: remoteBrokerOffsetStore.persist forgets the offsets of
	// the queues not passed to it (consumer/offset_store.go). It takes the
	// queues back at the rebalance that the broker's answer to its heartbeat
	// (NOTIFY_CONSUMER_IDS_CHANGED) triggers, from the committed offsets,
	// redelivering what they miss (within killBound). A Shutdown in between
	// commits nothing (defaultConsumer.shutdown persists the queues it
	// holds): with every message consumed before the kill, the other
	// queues' offsets would stay behind. See docs/interop.md.
	maxes := probe.maxOffsets(ctx, t, queues)
	committed := probe.offsets(ctx, t, queues)
	testutil.Eventually(t, 90*time.Second, func() error {
		cur := probe.offsets(ctx, t, queues)
		checkCommitted(t, "while the consumer runs", committed, cur, maxes)
		committed = cur
		if !slices.Equal(cur, maxes) {
			return fmt.Errorf("committed offsets %v, max offsets %v", cur, maxes)
		}
		return nil
	})
	// Deliveries stop (late redeliveries are counted below), then the
	// consumer's shutdown commits its offsets once more: they must stay at
	// the max.
	testutil.Eventually(t, 30*time.Second, func() error {
		tr.mu.Lock()
		idle := time.Since(tr.last)
		tr.mu.Unlock()
		if idle < 2*time.Second {
			return fmt.Errorf("a message was delivered %v ago", idle.Round(time.Millisecond))
		}
		return nil
	})
	pc.Shutdown()
	// Its commits are one-way: watch the offsets for a while.
	for range 10 {
		time.Sleep(200 * time.Millisecond)
		cur := probe.offsets(ctx, t, queues)
		checkCommitted(t, "after the consumer's shutdown", committed, cur, maxes)
		committed = cur
	}

	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.bad) > 0 {
		t.Errorf("consumed messages that were never sent or were altered: %v", tr.bad)
	}
	unacked := 0
	for id := range tr.count {
		if !rp.acked[id] {
			unacked++
		}
	}
	var sum int64
	for _, m := range maxes {
		sum += m
	}
	if want := int64(restartMessages + unacked); sum < want {
		t.Errorf("queues hold %d messages, fewer than the %d consumed", sum, want)
	}
	errKinds := make([]string, 0, len(rp.errs))
	for k, n := range rp.errs {
		errKinds = append(errKinds, fmt.Sprintf("%dx %s", n, k))
	}
	sort.Strings(errKinds)
	t.Logf("acknowledged %d, failed attempts %d %v; consumed %d distinct (%d unacknowledged attempts that were stored), %d deliveries",
		len(rp.acked), rp.failures, errKinds, len(tr.count), unacked, tr.received)
	t.Logf("redelivered: %d before any restart, %d after the graceful restart (bound %d), %d after the kill -9 (bound %d); total %v",
		tr.dups[0], tr.dups[1], gracefulBound, tr.dups[2], killBound, time.Since(start).Round(time.Millisecond))
	if tr.dups[0] > 0 {
		t.Errorf("%d redeliveries before any restart", tr.dups[0])
	}
	if tr.dups[1] > gracefulBound {
		t.Errorf("%d redeliveries after the graceful restart, more than the %d consumed in the commit interval before it", tr.dups[1], gracefulBound)
	}
	if tr.dups[2] > killBound {
		t.Errorf("%d redeliveries after the kill -9, more than the %d consumed in the commit interval before it", tr.dups[2], killBound)
	}
}

// checkCommitted stops the test if a committed offset went back from prev
// or beyond the queue's max offset.
func checkCommitted(t *testing.T, when string, prev, cur, maxes []int64) {
	t.Helper()
	for i := range cur {
		if cur[i] < prev[i] || cur[i] > maxes[i] {
			t.Fatalf("%s: queue %d committed offset %d after %d (max offset %d)", when, i, cur[i], prev[i], maxes[i])
		}
	}
}

// checkNotBehind fails if a committed offset went backwards.
func checkNotBehind(t *testing.T, when string, before, after []int64) {
	t.Helper()
	for i := range before {
		if after[i] < before[i] {
			t.Errorf("%s: queue %d committed offset went back from %d to %d", when, i, before[i], after[i])
		}
	}
	t.Logf("%s: consumer offsets %v (before: %v)", when, after, before)
}

// offsetProbe reads and writes offsets with our SDK: reader is in the
// consumer's group (it neither subscribes nor heartbeats, so it never joins
// the group's rebalancing), probe in a group only this test commits to.
type offsetProbe struct {
	reader, probe *client.PullConsumer
}

func newOffsetProbe(t *testing.T, namesrv string) *offsetProbe {
	t.Helper()
	mk := func(group string) *client.PullConsumer {
		c, err := client.NewPullConsumer(client.PullConsumerConfig{
			CommonConfig: client.CommonConfig{NameServers: []string{namesrv}},
			Group:        group,
		})
		return clienttest.Started(t, c, err)
	}
	return &offsetProbe{reader: mk(restartGroup), probe: mk("restart_probe")}
}

func (p *offsetProbe) queues(ctx context.Context, t *testing.T) []protocol.MessageQueue {
	t.Helper()
	var qs []protocol.MessageQueue
	testutil.Eventually(t, 10*time.Second, func() error {
		var err error
		qs, err = p.reader.Queues(ctx, restartTopic)
		return err
	})
	if len(qs) != 4 {
		t.Fatalf("queues %v", qs)
	}
	return qs
}

// retry runs f until it succeeds: right after a restart the first request
// may meet the old connection.
func retry(t *testing.T, what string, f func() error) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, func() error {
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// offsets returns the committed offsets of c's group (-1: none).
func offsetsOf(ctx context.Context, t *testing.T, c *client.PullConsumer, qs []protocol.MessageQueue) []int64 {
	t.Helper()
	out := make([]int64, len(qs))
	for i, mq := range qs {
		retry(t, "query offset", func() error {
			off, err := c.QueryOffset(ctx, mq)
			if errors.Is(err, client.ErrOffsetNotFound) {
				off, err = -1, nil
			}
			out[i] = off
			return err
		})
	}
	return out
}

// offsets returns the consumer group's committed offsets.
func (p *offsetProbe) offsets(ctx context.Context, t *testing.T, qs []protocol.MessageQueue) []int64 {
	t.Helper()
	return offsetsOf(ctx, t, p.reader, qs)
}

func (p *offsetProbe) maxOffsets(ctx context.Context, t *testing.T, qs []protocol.MessageQueue) []int64 {
	t.Helper()
	out := make([]int64, len(qs))
	for i, mq := range qs {
		retry(t, "max offset", func() error {
			var err error
			out[i], err = p.reader.GetMaxOffset(ctx, mq)
			return err
		})
	}
	return out
}

// commit stores base+queueID as the probe group's offset of every queue.
func (p *offsetProbe) commit(ctx context.Context, t *testing.T, qs []protocol.MessageQueue, base int64) {
	t.Helper()
	for _, mq := range qs {
		retry(t, "update offset", func() error { return p.probe.UpdateOffset(ctx, mq, base+int64(mq.QueueID)) })
	}
}

func (p *offsetProbe) check(ctx context.Context, t *testing.T, when string, qs []protocol.MessageQueue, base int64) {
	t.Helper()
	p.checkEither(ctx, t, when, qs, base, base)
}

// checkEither checks that the probe group's offsets are base+queueID for
// one of the two bases.
func (p *offsetProbe) checkEither(ctx context.Context, t *testing.T, when string, qs []protocol.MessageQueue, a, b int64) {
	t.Helper()
	got := offsetsOf(ctx, t, p.probe, qs)
	for i, mq := range qs {
		q := int64(mq.QueueID)
		if got[i] != a+q && got[i] != b+q {
			t.Errorf("%s: probe offset of queue %d is %d, want %d or %d", when, mq.QueueID, got[i], a+q, b+q)
		}
	}
}
