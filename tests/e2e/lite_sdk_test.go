package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/framework"
)

// The SDK's lite producer and LitePushConsumer (pkg/client) against real
// processes: two brokers, one LITE parent, lite groups bound to it.

const (
	liteSDKParent = "LiteSdkParent"
	// maxLmqs per broker (maxLmqConsumeQueueNum) leaves room for the
	// subtests' lite topics; the quota subtest then fills it up.
	liteSDKMaxLmqs = 40
)

type liteSDKEnv struct {
	c   framework.Cluster
	log *slog.Logger
}

func (e *liteSDKEnv) common(instance string) client.CommonConfig {
	return sdkCommon(e.c, e.log, instance)
}

func (e *liteSDKEnv) producer(t *testing.T) *client.Producer {
	t.Helper()
	return startProducer(t, client.ProducerConfig{CommonConfig: e.common("lite-p-" + t.Name()), Group: "lite_sdk_pg"})
}

func (e *liteSDKEnv) consumer(t *testing.T, instance, group string, h client.LiteHandler, mod func(*client.LitePushConsumerConfig)) *client.LitePushConsumer {
	t.Helper()
	cfg := client.LitePushConsumerConfig{
		CommonConfig:       e.common(instance),
		Group:              group,
		BindTopic:          liteSDKParent,
		Handler:            h,
		LongPollingTimeout: 3 * time.Second,
		ConsumeGoroutines:  8,
	}
	if mod != nil {
		mod(&cfg)
	}
	lc, err := client.NewLitePushConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testutil.StartWithShutdown(t, lc, 5*time.Second, t.Errorf)
	return lc
}

func sendLite(ctx context.Context, t *testing.T, p *client.Producer, lite, body string) {
	t.Helper()
	m := &message.Message{Topic: liteSDKParent, Body: []byte(body)}
	m.SetLiteTopic(lite)
	if _, err := p.SendSync(ctx, m); err != nil {
		t.Fatalf("send %s to %s: %v", body, lite, err)
	}
}

func TestLiteSDK(t *testing.T) {
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 2, BrokerConf: map[string]string{
		"enableLmq": "true", "enableMultiDispatch": "true",
		"enableLmqQuota": "true", "maxLmqConsumeQueueNum": strconv.Itoa(liteSDKMaxLmqs),
		"liteEventCheckInterval": "500", "liteEventFullDispatchDelayTime": "500",
	}})
	mq := func(args ...string) { mqadmin(t, c, args...) }
	mq("updateTopic", "-c", "DefaultCluster", "-t", liteSDKParent, "-r", "2", "-w", "2", "-a", "+message.type=LITE")
	for _, g := range []string{"lite_sdk_fifo", "lite_sdk_block", "lite_sdk_unsub", "lite_sdk_dlq"} {
		mq("updateSubGroup", "-c", "DefaultCluster", "-g", g, "--attributes", "+lite.bind.topic="+liteSDKParent)
	}
	mq("updateSubGroup", "-c", "DefaultCluster", "-g", "lite_sdk_quota", "--attributes", "+lite.bind.topic="+liteSDKParent+",+lite.sub.client.quota=2")
	// Both brokers must be in the parent's route before clients fan out.
	testutil.Eventually(t, 15*time.Second, func() error {
		out, err := c.MQAdmin(t, "topicRoute", "-t", liteSDKParent)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "broker-a") || !strings.Contains(out, "broker-b") {
			return fmt.Errorf("route: %s", out)
		}
		return nil
	})
	lvl := slog.LevelWarn
	if testing.Verbose() {
		lvl = slog.LevelInfo
	}
	env := &liteSDKEnv{c: c, log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))}
	// In sequence: the quota subtest fills the brokers' LMQ quota last.
	t.Run("FIFO", func(t *testing.T) { liteSDKFIFO(t, env) })
	t.Run("BlockedUntilInvisible", func(t *testing.T) { liteSDKBlocked(t, env) })
	t.Run("Unsubscribe", func(t *testing.T) { liteSDKUnsubscribe(t, env) })
	t.Run("DLQ", func(t *testing.T) { liteSDKDLQ(t, env) })
	t.Run("Quota", func(t *testing.T) { liteSDKQuota(t, env) })
}

// liteFIFOCheck follows every lite topic: messages must be handled one at
// a time, in send order, each once.
type liteFIFOCheck struct {
	t     *testing.T
	mu    sync.Mutex
	busy  map[string]bool
	next  map[string]int // lite → next expected sequence number
	byWho map[string]int
	total int
}

func (f *liteFIFOCheck) handler(who string) client.LiteHandler {
	return func(_ context.Context, m *message.Message) client.ConsumeResult {
		lite := m.LiteTopic()
		_, seqText, _ := strings.Cut(string(m.Body), "/")
		seq, _ := strconv.Atoi(seqText)
		f.mu.Lock()
		if f.busy[lite] {
			f.t.Errorf("%s: two messages of %s in flight at once", who, lite)
		}
		if want := f.next[lite]; seq != want || m.ReconsumeTimes != 0 {
			f.t.Errorf("%s: %s got #%d (reconsume %d), want #%d", who, lite, seq, m.ReconsumeTimes, want)
		}
		f.busy[lite] = true
		f.next[lite] = seq + 1
		f.byWho[who]++
		f.total++
		f.mu.Unlock()
		time.Sleep(time.Millisecond) // a little work, so lite topics overlap
		f.mu.Lock()
		f.busy[lite] = false
		f.mu.Unlock()
		return client.ConsumeSuccess
	}
}

// liteSDKFIFO (a): three consumers of one group subscribe to the same 20
// lite topics; 50 messages each, sent interleaved, are all handled, each
// lite topic in send order and one message at a time across the three
// consumers (the next one only after the previous was acked), none twice.
func liteSDKFIFO(t *testing.T, env *liteSDKEnv) {
	const group, lites, perLite = "lite_sdk_fifo", 20, 50
	ctx := context.Background()
	f := &liteFIFOCheck{t: t, busy: map[string]bool{}, next: map[string]int{}, byWho: map[string]int{}}
	var names []string
	for i := range lites {
		names = append(names, "fifo-"+strconv.Itoa(i))
	}
	var cons []*client.LitePushConsumer
	for i := range 3 {
		who := "c" + strconv.Itoa(i)
		lc := env.consumer(t, "lite-fifo-"+who, group, f.handler(who), nil)
		for _, n := range names {
			if err := lc.SubscribeLite(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		cons = append(cons, lc)
	}
	for _, lc := range cons {
		if got := lc.LiteTopics(); len(got) != lites {
			t.Fatalf("%s holds %d lite topics", lc.ClientID(), len(got))
		}
	}
	p := env.producer(t)
	start := time.Now()
	// Four senders, each owning five lite topics, interleave them.
	var wg sync.WaitGroup
	for s := range 4 {
		wg.Go(func() {
			for i := range perLite {
				for j := s; j < lites; j += 4 {
					sendLite(ctx, t, p, names[j], names[j]+"/"+strconv.Itoa(i))
				}
			}
		})
	}
	wg.Wait()
	testutil.Eventually(t, 20*time.Second, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.total < lites*perLite {
			return fmt.Errorf("handled %d of %d", f.total, lites*perLite)
		}
		return nil
	})
	t.Logf("%d messages of %d lite topics in %v, by consumer %v", lites*perLite, lites, time.Since(start).Round(time.Millisecond), f.byWho)
	time.Sleep(300 * time.Millisecond) // nothing more (no duplicate) arrives
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.total != lites*perLite {
		t.Fatalf("handled %d, want %d", f.total, lites*perLite)
	}
	for _, n := range names {
		if f.next[n] != perLite {
			t.Fatalf("%s stopped at #%d", n, f.next[n])
		}
	}
	if len(f.byWho) != 3 {
		t.Fatalf("not every consumer took part: %v", f.byWho)
	}
}

// liteSDKBlocked (b): a message that is not acked blocks its lite topic
// until its invisible time (2 s) passes; it comes back with reconsume
// times 1 and the later ones follow.
func liteSDKBlocked(t *testing.T, env *liteSDKEnv) {
	const group, lite = "lite_sdk_block", "blocked"
	ctx := context.Background()
	var mu sync.Mutex
	type delivery struct {
		body      string
		reconsume int32
		at        time.Time
	}
	var got []delivery
	lc := env.consumer(t, "lite-block", group, func(_ context.Context, m *message.Message) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, delivery{string(m.Body), m.ReconsumeTimes, time.Now()})
		if len(got) == 1 {
			return client.ConsumeRetryLater // not acked; no backoff: the invisible time decides
		}
		return client.ConsumeSuccess
	}, func(cfg *client.LitePushConsumerConfig) {
		cfg.InvisibleTime = 2 * time.Second
		cfg.RetryBackoff = func(int) time.Duration { return 0 }
	})
	if err := lc.SubscribeLite(ctx, lite); err != nil {
		t.Fatal(err)
	}
	p := env.producer(t)
	for i := range 3 {
		sendLite(ctx, t, p, lite, "b"+strconv.Itoa(i))
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) < 4 {
			return fmt.Errorf("deliveries %v", got)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	var order []string
	for _, d := range got {
		order = append(order, d.body)
	}
	if !slices.Equal(order, []string{"b0", "b0", "b1", "b2"}) {
		t.Fatalf("deliveries %v", got)
	}
	if got[0].reconsume != 0 || got[1].reconsume != 1 {
		t.Fatalf("reconsume times %d, %d", got[0].reconsume, got[1].reconsume)
	}
	if gap := got[1].at.Sub(got[0].at); gap < 1800*time.Millisecond || gap > 8*time.Second {
		t.Fatalf("b0 came back after %v, want about the 2 s invisible time", gap)
	}
}

// liteSDKUnsubscribe (c): after UnsubscribeLite a lite topic's new
// messages are not delivered; the other subscription goes on.
func liteSDKUnsubscribe(t *testing.T, env *liteSDKEnv) {
	const group = "lite_sdk_unsub"
	ctx := context.Background()
	var mu sync.Mutex
	var got []string
	lc := env.consumer(t, "lite-unsub", group, func(_ context.Context, m *message.Message) client.ConsumeResult {
		mu.Lock()
		got = append(got, m.LiteTopic()+":"+string(m.Body))
		mu.Unlock()
		return client.ConsumeSuccess
	}, nil)
	for _, l := range []string{"gone", "stay"} {
		if err := lc.SubscribeLite(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	p := env.producer(t)
	has := func(want string) error {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(got, want) {
			return fmt.Errorf("%s not delivered (got %v)", want, got)
		}
		return nil
	}
	sendLite(ctx, t, p, "gone", "before")
	testutil.Eventually(t, 10*time.Second, func() error { return has("gone:before") })
	if err := lc.UnsubscribeLite(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if got := lc.LiteTopics(); !slices.Equal(got, []string{"stay"}) {
		t.Fatalf("LiteTopics %v", got)
	}
	sendLite(ctx, t, p, "gone", "after")
	sendLite(ctx, t, p, "stay", "after")
	testutil.Eventually(t, 10*time.Second, func() error { return has("stay:after") })
	time.Sleep(time.Second) // a full dispatch (500 ms) would have announced it by now
	if err := has("gone:after"); err == nil {
		t.Fatal("a message of an unsubscribed lite topic was delivered")
	}
}

// liteSDKDLQ: a message that keeps failing goes, after MaxReconsumeTimes
// redeliveries, to %DLQ%<group> (the broker's send-back with delay level
// -1 keeps __LITE_TOPIC and drops the LMQ dispatch), is acked, and its
// lite topic goes on.
func liteSDKDLQ(t *testing.T, env *liteSDKEnv) {
	const group, lite = "lite_sdk_dlq", "poison"
	ctx := context.Background()
	var mu sync.Mutex
	var got []string
	lc := env.consumer(t, "lite-dlq", group, func(_ context.Context, m *message.Message) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(m.Body)+"@"+strconv.Itoa(int(m.ReconsumeTimes)))
		if string(m.Body) == "bad" {
			return client.ConsumeRetryLater
		}
		return client.ConsumeSuccess
	}, func(cfg *client.LitePushConsumerConfig) {
		cfg.MaxReconsumeTimes = 1
		cfg.RetryBackoff = func(int) time.Duration { return 100 * time.Millisecond }
	})
	if err := lc.SubscribeLite(ctx, lite); err != nil {
		t.Fatal(err)
	}
	p := env.producer(t)
	sendLite(ctx, t, p, lite, "bad")
	sendLite(ctx, t, p, lite, "good")
	testutil.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(got, "good@0") && !slices.Contains(got, "good@1") {
			return fmt.Errorf("deliveries %v", got)
		}
		return nil
	})
	mu.Lock()
	if len(got) != 3 || got[0] != "bad@0" || got[1] != "bad@1" || !strings.HasPrefix(got[2], "good@") {
		t.Fatalf("deliveries %v", got)
	}
	mu.Unlock()

	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: env.common("lite-dlq-reader"), Group: "lite_sdk_dlq_reader"})
	started(t, pc, err)
	defer pc.Shutdown(ctx)
	dlq := "%DLQ%" + group
	var stored []*message.Message
	testutil.Eventually(t, 15*time.Second, func() error {
		qs, err := pc.Queues(ctx, dlq)
		if err != nil {
			return err
		}
		stored = nil
		for _, q := range qs {
			res, err := pc.Pull(ctx, client.PullRequest{Queue: q, Offset: 0})
			if err != nil {
				return err
			}
			stored = append(stored, res.Messages...)
		}
		if len(stored) == 0 {
			return fmt.Errorf("%s is empty", dlq)
		}
		return nil
	})
	m := stored[0]
	if len(stored) != 1 || string(m.Body) != "bad" || m.LiteTopic() != lite || m.Property(message.PropertyInnerMultiDispatch) != "" {
		t.Fatalf("DLQ holds %d messages; first %q %v", len(stored), m.Body, m.Properties)
	}
}

// liteSDKQuota (d): over lite.sub.client.quota a subscription fails with
// ErrLiteSubscriptionQuotaExceeded; once a broker holds maxLmqConsumeQueueNum
// lite topics, a send that would create another fails with
// ErrLiteTopicQuotaExceeded.
func liteSDKQuota(t *testing.T, env *liteSDKEnv) {
	ctx := context.Background()
	lc := env.consumer(t, "lite-quota", "lite_sdk_quota", func(context.Context, *message.Message) client.ConsumeResult {
		return client.ConsumeSuccess
	}, nil)
	// A broker counts the lite topics homed on it (it cannot see the
	// others): three names with one home broker (two brokers, two write
	// queues each, in broker-name order) exceed the client quota of 2.
	var names []string
	for i := 0; len(names) < 3; i++ {
		if l := "q" + strconv.Itoa(i); protocol.LiteHomeBucket(l, 4)/2 == 0 {
			names = append(names, l)
		}
	}
	for _, l := range names[:2] {
		if err := lc.SubscribeLite(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	err := lc.SubscribeLite(ctx, names[2])
	if !errors.Is(err, client.ErrLiteSubscriptionQuotaExceeded) {
		t.Fatalf("third subscription: %v", err)
	}
	if got := lc.LiteTopics(); !slices.Equal(got, names[:2]) {
		t.Fatalf("LiteTopics %v", got)
	}

	p := env.producer(t)
	for i := range 2 * liteSDKMaxLmqs {
		m := &message.Message{Topic: liteSDKParent, Body: []byte("x")}
		m.SetLiteTopic("fill-" + strconv.Itoa(i))
		_, err := p.SendSync(ctx, m)
		if err == nil {
			continue
		}
		if !errors.Is(err, client.ErrLiteTopicQuotaExceeded) {
			t.Fatalf("send #%d: %v", i, err)
		}
		t.Logf("LMQ quota reached after %d new lite topics: %v", i, err)
		// An existing lite topic still takes messages.
		sendLite(ctx, t, p, "fill-0", "again")
		return
	}
	t.Fatalf("%d new lite topics accepted, the quota is %d per broker", 2*liteSDKMaxLmqs, liteSDKMaxLmqs)
}
