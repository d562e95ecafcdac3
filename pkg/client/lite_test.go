package client_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	liteParent = "LP"
	liteGroup  = "LG"
)

// liteCluster starts brokers holding the LITE parent LP (2 queues each)
// and the lite group LG bound to it (quota: lite.sub.client.quota).
func liteCluster(t *testing.T, quota int, brokers ...string) *clienttest.Cluster {
	t.Helper()
	c := startCluster(t, brokers...)
	for _, b := range c.Brokers {
		b.CreateLiteTopic(liteParent, 2)
		b.CreateLiteGroup(liteGroup, liteParent, quota)
	}
	return c
}

func startLite(t *testing.T, c *clienttest.Cluster, h client.LiteHandler, mod func(*client.LitePushConsumerConfig)) *client.LitePushConsumer {
	t.Helper()
	cfg := client.LitePushConsumerConfig{
		CommonConfig:       common(c),
		Group:              liteGroup,
		BindTopic:          liteParent,
		Handler:            h,
		LongPollingTimeout: time.Second,
		PopErrorPause:      20 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	lc, err := client.NewLitePushConsumer(cfg)
	return clienttest.Started(t, lc, err)
}

func liteMsg(lite, body string) *message.Message {
	m := msg(liteParent, body)
	m.SetLiteTopic(lite)
	return m
}

// liteLog records deliveries per lite topic and fails the test when two
// messages of one lite topic are handled at once.
type liteLog struct {
	t        *testing.T
	mu       sync.Mutex
	busy     map[string]bool
	got      map[string][]string // lite → bodies in handling order
	reconsum map[string][]int32  // body → reconsume times per delivery
	msgs     []*message.Message
}

func newLiteLog(t *testing.T) *liteLog {
	return &liteLog{t: t, busy: map[string]bool{}, got: map[string][]string{}, reconsum: map[string][]int32{}}
}

// handler records m and returns what decide says (success when nil).
func (l *liteLog) handler(decide func(ctx context.Context, m *message.Message) client.ConsumeResult) client.LiteHandler {
	return func(ctx context.Context, m *message.Message) client.ConsumeResult {
		lite := m.LiteTopic()
		l.mu.Lock()
		if l.busy[lite] {
			l.t.Errorf("two messages of lite topic %s handled at once", lite)
		}
		l.busy[lite] = true
		l.got[lite] = append(l.got[lite], string(m.Body))
		l.reconsum[string(m.Body)] = append(l.reconsum[string(m.Body)], m.ReconsumeTimes)
		l.msgs = append(l.msgs, m)
		l.mu.Unlock()
		res := client.ConsumeSuccess
		if decide != nil {
			res = decide(ctx, m)
		}
		l.mu.Lock()
		l.busy[lite] = false
		l.mu.Unlock()
		return res
	}
}

// waitBodies waits until the handler got as many messages of lite topic
// lite as want has, then checks that their bodies are want, in order.
func (l *liteLog) waitBodies(t *testing.T, lite string, want ...string) {
	t.Helper()
	testutil.Eventually(t, clusterWait, func() error {
		if got := l.bodies(lite); len(got) != len(want) {
			return fmt.Errorf("%s handled %v", lite, got)
		}
		return nil
	})
	if got := l.bodies(lite); !slices.Equal(got, want) {
		t.Fatalf("%s handled %v", lite, got)
	}
}

func (l *liteLog) bodies(lite string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got[lite])
}

func (l *liteLog) deliveries(body string) []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reconsum[body])
}

func TestLiteSendChecks(t *testing.T) {
	c := liteCluster(t, 0, "broker-a", "broker-b")
	p := startProducer(t, c, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		mod  func(m *message.Message)
	}{
		{"bad name", func(m *message.Message) { m.SetLiteTopic("a$b") }},
		{"blank name", func(m *message.Message) { m.SetProperty(message.PropertyLiteTopic, " ") }},
		{"long name", func(m *message.Message) { m.SetLiteTopic(strings.Repeat("x", 65)) }},
		{"message group", func(m *message.Message) { m.SetProperty(message.PropertyShardingKey, "k") }},
		{"client-go group", func(m *message.Message) { m.SetProperty(message.PropertyShardingKeyGo, "k") }},
		{"delay level", func(m *message.Message) { m.SetDelayTimeLevel(3) }},
		{"deliver time", func(m *message.Message) { m.SetDeliverTime(time.Now().Add(time.Minute)) }},
		{"delay", func(m *message.Message) { m.SetDelayTime(time.Minute) }},
		{"priority", func(m *message.Message) { m.SetProperty(message.PropertyPriority, "1") }},
	} {
		m := liteMsg("ok", "x")
		tc.mod(m)
		if _, err := p.SendSync(ctx, m); !errors.Is(err, client.ErrInvalidMessage) {
			t.Errorf("%s: %v, want ErrInvalidMessage", tc.name, err)
		}
	}
	if _, err := p.SendOrderly(ctx, liteMsg("ok", "x"), "key"); !errors.Is(err, client.ErrInvalidMessage) {
		t.Errorf("SendOrderly of a lite message: %v", err)
	}
	// A batch may hold several lite topics only when all of them have
	// their home on one broker (four write queues: two per broker).
	homeBroker := func(lite string) int { return protocol.LiteHomeBucket(lite, 4) / 2 }
	var apart, together []string
	for i := 0; i < 100 && (apart == nil || together == nil); i++ {
		a, b := "p"+strconv.Itoa(i), "q"+strconv.Itoa(i)
		if homeBroker(a) != homeBroker(b) && apart == nil {
			apart = []string{a, b}
		} else if homeBroker(a) == homeBroker(b) && together == nil {
			together = []string{a, b}
		}
	}
	if _, err := p.SendBatch(ctx, []*message.Message{liteMsg(apart[0], "1"), liteMsg(apart[1], "2")}); !errors.Is(err, client.ErrInvalidMessage) {
		t.Errorf("batch of lite topics homed on two brokers: %v", err)
	}
	if _, err := p.SendBatch(ctx, []*message.Message{liteMsg("a", "1"), msg(liteParent, "plain")}); !errors.Is(err, client.ErrInvalidMessage) {
		t.Errorf("batch mixing lite and plain messages: %v", err)
	}
	if len(c.Brokers[0].Sends())+len(c.Brokers[1].Sends()) != 0 {
		t.Fatal("a rejected message reached a broker")
	}
	// Copies re-sent to a retry topic keep __LITE_TOPIC and may be delayed.
	c.CreateTopic("%RETRY%G", 1)
	retry := msg("%RETRY%G", "r")
	retry.SetLiteTopic("ok")
	retry.SetDelayTimeLevel(3)
	if _, err := p.SendSync(ctx, retry); err != nil {
		t.Fatalf("retry copy: %v", err)
	}

	// Every message of a lite topic goes to its home queue (of the four
	// write queues in route order), so one LMQ holds them in send order.
	queues := []protocol.MessageQueue{
		{Topic: liteParent, BrokerName: "broker-a", QueueID: 0}, {Topic: liteParent, BrokerName: "broker-a", QueueID: 1},
		{Topic: liteParent, BrokerName: "broker-b", QueueID: 0}, {Topic: liteParent, BrokerName: "broker-b", QueueID: 1},
	}
	for _, lite := range []string{"user_10086", "session-42", "a", "zz"} {
		want := queues[protocol.LiteHomeBucket(lite, len(queues))]
		for i := range 3 {
			res, err := p.SendSync(ctx, liteMsg(lite, strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			if res.Queue != want {
				t.Fatalf("%s #%d went to %s, want %s", lite, i, res.Queue, want)
			}
		}
		b := c.Brokers[0]
		if want.BrokerName == "broker-b" {
			b = c.Brokers[1]
		}
		stored, err := b.Messages(clienttest.LiteLMQ(liteParent, lite), 0)
		if err != nil || len(stored) != 3 {
			t.Fatalf("LMQ of %s: %d messages, %v", lite, len(stored), err)
		}
		for i, m := range stored {
			if string(m.Body) != strconv.Itoa(i) || m.LiteTopic() != lite || m.Property(message.PropertyInnerMultiQueueOffset) != strconv.Itoa(i) {
				t.Fatalf("LMQ of %s #%d: %q %v", lite, i, m.Body, m.Properties)
			}
		}
	}
	if res, err := p.SendBatch(ctx, []*message.Message{liteMsg("zz", "b1"), liteMsg("zz", "b2")}); err != nil || res.Queue != queues[protocol.LiteHomeBucket("zz", 4)] {
		t.Fatalf("batch of one lite topic: %+v %v", res, err)
	}
	if res, err := p.SendBatch(ctx, []*message.Message{liteMsg(together[0], "t1"), liteMsg(together[1], "t2")}); err != nil ||
		res.Queue != queues[protocol.LiteHomeBucket(together[0], 4)] {
		t.Fatalf("batch of two lite topics homed on one broker: %+v %v", res, err)
	}

	// LMQ_QUOTA_EXCEEDED is the typed error, and not retried elsewhere.
	for _, b := range c.Brokers {
		b.FailSends(code.LMQQuotaExceeded)
	}
	before := len(c.Brokers[0].Sends()) + len(c.Brokers[1].Sends())
	_, err := p.SendSync(ctx, liteMsg("fresh", "x"))
	if !errors.Is(err, client.ErrLiteTopicQuotaExceeded) || !client.IsCode(err, code.LMQQuotaExceeded) || errors.Is(err, client.ErrLiteSubscriptionQuotaExceeded) {
		t.Fatalf("quota: %v", err)
	}
	if n := len(c.Brokers[0].Sends()) + len(c.Brokers[1].Sends()) - before; n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	if !strings.Contains(err.Error(), "LMQ_QUOTA_EXCEEDED") {
		t.Fatalf("error text: %v", err)
	}
}

func TestLitePushConsumerConfigErrors(t *testing.T) {
	c := liteCluster(t, 0, "broker-a")
	h := func(context.Context, *message.Message) client.ConsumeResult { return client.ConsumeSuccess }
	ok := client.LitePushConsumerConfig{CommonConfig: common(c), Group: liteGroup, BindTopic: liteParent, Handler: h}
	for _, tc := range []struct {
		name string
		mod  func(*client.LitePushConsumerConfig)
	}{
		{"no group", func(cfg *client.LitePushConsumerConfig) { cfg.Group = "" }},
		{"bad group", func(cfg *client.LitePushConsumerConfig) { cfg.Group = "a b" }},
		{"no bind topic", func(cfg *client.LitePushConsumerConfig) { cfg.BindTopic = "" }},
		{"no handler", func(cfg *client.LitePushConsumerConfig) { cfg.Handler = nil }},
		{"pop over 32", func(cfg *client.LitePushConsumerConfig) { cfg.MaxMessagesPerPop = 33 }},
		{"negative", func(cfg *client.LitePushConsumerConfig) { cfg.ConsumeGoroutines = -1 }},
		{"negative interval", func(cfg *client.LitePushConsumerConfig) { cfg.SyncInterval = -time.Second }},
		{"short invisible", func(cfg *client.LitePushConsumerConfig) { cfg.InvisibleTime = time.Millisecond }},
		{"no nameserver", func(cfg *client.LitePushConsumerConfig) { cfg.NameServers = nil }},
	} {
		cfg := ok
		tc.mod(&cfg)
		if _, err := client.NewLitePushConsumer(cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	lc, err := client.NewLitePushConsumer(ok)
	if err != nil {
		t.Fatal(err)
	}
	if err := lc.SubscribeLite(context.Background(), "x"); !errors.Is(err, client.ErrNotStarted) {
		t.Fatalf("subscribe before start: %v", err)
	}
}

// Messages of many lite topics on two brokers: every message handled
// once, each lite topic in send order and never two at once, acked with
// liteTopic; the subscription reached both brokers.
func TestLitePushConsumerFIFO(t *testing.T) {
	c := liteCluster(t, 0, "broker-a", "broker-b")
	log := newLiteLog(t)
	lc := startLite(t, c, log.handler(func(context.Context, *message.Message) client.ConsumeResult {
		time.Sleep(time.Millisecond) // let lite topics overlap
		return client.ConsumeSuccess
	}), func(cfg *client.LitePushConsumerConfig) { cfg.ConsumeGoroutines = 4; cfg.MaxMessagesPerPop = 7 })
	ctx := context.Background()
	var lites []string
	for i := range 8 {
		lite := "lite-" + strconv.Itoa(i)
		lites = append(lites, lite)
		if err := lc.SubscribeLite(ctx, lite); err != nil {
			t.Fatal(err)
		}
	}
	if got := lc.LiteTopics(); !slices.Equal(got, lites) {
		t.Fatalf("LiteTopics = %v", got)
	}
	for _, b := range c.Brokers {
		if got := b.LiteSubscription(liteGroup, lc.ClientID()); !slices.Equal(got, lites) {
			t.Fatalf("%s holds %v", b.Name, got)
		}
	}
	p := startProducer(t, c, nil)
	const perLite = 25
	for i := range perLite {
		for _, lite := range lites {
			if _, err := p.SendSync(ctx, liteMsg(lite, lite+"/"+strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	testutil.Eventually(t, clusterWait, func() error {
		for _, lite := range lites {
			if n := len(log.bodies(lite)); n != perLite {
				return fmt.Errorf("%s: %d of %d handled", lite, n, perLite)
			}
		}
		return nil
	})
	for _, lite := range lites {
		for i, body := range log.bodies(lite) {
			if want := lite + "/" + strconv.Itoa(i); body != want {
				t.Fatalf("%s: #%d is %s, want %s", lite, i, body, want)
			}
		}
	}
	log.mu.Lock()
	for _, m := range log.msgs {
		ck := client.ReceiptHandle(m)
		if m.Topic != liteParent || m.QueueID != 0 || m.ReconsumeTimes != 0 || !strings.HasPrefix(ck, "0 ") ||
			!strings.Contains(ck, " 999 0 broker-") || !strings.HasSuffix(ck, " 0 "+strconv.FormatInt(m.QueueOffset, 10)) {
			t.Fatalf("message %s: topic %s queue %d offset %d reconsume %d handle %q", m.Body, m.Topic, m.QueueID, m.QueueOffset, m.ReconsumeTimes, ck)
		}
	}
	log.mu.Unlock()
	testutil.Eventually(t, clusterWait, func() error {
		acks := len(c.Brokers[0].LiteAcks()) + len(c.Brokers[1].LiteAcks())
		if acks != len(lites)*perLite {
			return fmt.Errorf("%d acks", acks)
		}
		return nil
	})
	for _, b := range c.Brokers {
		for _, a := range b.LiteAcks() {
			if a["liteTopic"] == "" || a["topic"] != liteParent || a["consumerGroup"] != liteGroup || a["queueId"] != "0" {
				t.Fatalf("ack %v", a)
			}
		}
	}
	for _, lite := range lites {
		var committed int64
		for _, b := range c.Brokers {
			committed += max(b.LiteCommitted(liteGroup, liteParent, lite), 0)
		}
		if committed != perLite {
			t.Fatalf("%s: committed %d", lite, committed)
		}
	}
}

// A failed message blocks its lite topic: the messages after it wait for
// its redelivery (after RetryBackoff, through CHANGE_MESSAGE_INVISIBLETIME
// of it and of the rest of its pop), which has reconsume times 1. Other
// lite topics go on meanwhile.
func TestLitePushConsumerRetryBlocksLiteTopic(t *testing.T) {
	c := liteCluster(t, 0, "broker-a")
	log := newLiteLog(t)
	var once sync.Once
	lc := startLite(t, c, log.handler(func(_ context.Context, m *message.Message) client.ConsumeResult {
		fail := false
		if string(m.Body) == "x0" {
			once.Do(func() { fail = true })
		}
		if fail {
			return client.ConsumeRetryLater
		}
		return client.ConsumeSuccess
	}), func(cfg *client.LitePushConsumerConfig) {
		cfg.RetryBackoff = func(n int) time.Duration { return 300 * time.Millisecond * time.Duration(n+1) }
	})
	storeThenSubscribe(t, c, lc, 3, "x", "y")
	log.waitBodies(t, "x", "x0", "x0", "x1", "x2")
	if got := log.bodies("y"); !slices.Equal(got, []string{"y0", "y1", "y2"}) {
		t.Fatalf("y handled %v", got)
	}
	if got := log.deliveries("x0"); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("x0 reconsume times %v", got)
	}
	// x0 and the x messages popped with it were postponed by 300 ms.
	changes := c.Brokers[0].LiteInvisibleChanges()
	var postponed []string
	for _, ch := range changes {
		if ch["liteTopic"] == "x" && ch["invisibleTime"] == "300" {
			postponed = append(postponed, ch["offset"])
		}
	}
	if !slices.Equal(postponed, []string{"0", "1", "2"}) {
		t.Fatalf("postponed offsets %v (changes %v)", postponed, changes)
	}
}

// storedLite is a message of lite topic l stored directly in LP queue 0.
// storeThenSubscribe stores n messages <lite>0 … <lite>n-1 for each lite
// topic on the first broker, then subscribes lc to them: stored before the
// subscription, they come in one answer.
func storeThenSubscribe(t *testing.T, c *clienttest.Cluster, lc *client.LitePushConsumer, n int, lites ...string) {
	t.Helper()
	for i := range n {
		for _, l := range lites {
			if err := c.Brokers[0].Store(storedLite(l, l+strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, l := range lites {
		if err := lc.SubscribeLite(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
}

func storedLite(l, body string) *message.Message {
	m := liteMsg(l, body)
	m.Properties[message.PropertyUniqClientMessageIDKeyIdx] = "ID-" + body
	return m
}

// A message whose handler gives up when ctx ends (t0) is not acked: it
// comes back once its invisible time is over (RetryBackoff ≤ 0 keeps it),
// with reconsume times 1, and the next message of its lite topic waits
// for it. One whose handler overruns even the invisible time (u0) is
// delivered again too, never at the same time as the late call.
func TestLitePushConsumerTimeoutRedelivers(t *testing.T) {
	c := liteCluster(t, 0, "broker-a")
	log := newLiteLog(t)
	var mu sync.Mutex
	at := map[string][]time.Time{}
	lc := startLite(t, c, log.handler(func(ctx context.Context, m *message.Message) client.ConsumeResult {
		body := string(m.Body)
		mu.Lock()
		at[body] = append(at[body], time.Now())
		n := len(at[body])
		mu.Unlock()
		switch {
		case body == "t0" && n == 1:
			<-ctx.Done() // the deadline ends the call
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Errorf("handler ctx: %v", ctx.Err())
			}
			return client.ConsumeRetryLater
		case body == "u0" && n == 1:
			time.Sleep(1300 * time.Millisecond) // past the invisible time
		}
		return client.ConsumeSuccess
	}), func(cfg *client.LitePushConsumerConfig) {
		cfg.InvisibleTime = time.Second
		cfg.RetryBackoff = func(int) time.Duration { return 0 }
	})
	storeThenSubscribe(t, c, lc, 2, "t", "u")
	testutil.Eventually(t, clusterWait, func() error {
		if got, gotU := log.bodies("t"), log.bodies("u"); len(got) != 3 || len(gotU) != 3 {
			return fmt.Errorf("handled %v %v", got, gotU)
		}
		return nil
	})
	for _, l := range []string{"t", "u"} {
		if got := log.bodies(l); !slices.Equal(got, []string{l + "0", l + "0", l + "1"}) {
			t.Fatalf("%s handled %v", l, got)
		}
		if got := log.deliveries(l + "0"); !slices.Equal(got, []int32{0, 1}) {
			t.Fatalf("%s0 reconsume times %v", l, got)
		}
	}
	mu.Lock()
	gap := at["t0"][1].Sub(at["t0"][0])
	mu.Unlock()
	if gap < 900*time.Millisecond {
		t.Fatalf("t0 redelivered %v after the first delivery, before the invisible time", gap)
	}
	if n := len(c.Brokers[0].LiteInvisibleChanges()); n != 0 {
		t.Fatalf("%d invisible time changes, want none", n)
	}
}

// After MaxReconsumeTimes redeliveries a failing message goes to the DLQ
// (CONSUMER_SEND_MSG_BACK, delay level -1) and is acked; its lite topic
// goes on. An ack that fails once is retried.
func TestLitePushConsumerDLQ(t *testing.T) {
	c := liteCluster(t, 0, "broker-a")
	log := newLiteLog(t)
	lc := startLite(t, c, log.handler(func(_ context.Context, m *message.Message) client.ConsumeResult {
		if string(m.Body) == "d0" {
			return client.ConsumeRetryLater
		}
		return client.ConsumeSuccess
	}), func(cfg *client.LitePushConsumerConfig) {
		cfg.MaxReconsumeTimes = 2
		cfg.RetryBackoff = func(int) time.Duration { return 20 * time.Millisecond }
	})
	b := c.Brokers[0]
	for i := range 2 {
		if err := b.Store(storedLite("d", "d"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := lc.SubscribeLite(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	log.waitBodies(t, "d", "d0", "d0", "d0", "d1")
	if got := log.deliveries("d0"); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("d0 reconsume times %v", got)
	}
	backs := b.SendBacks()
	lmqMsgs, _ := b.Messages(clienttest.LiteLMQ(liteParent, "d"), 0)
	if len(backs) != 1 || backs[0]["delayLevel"] != "-1" || backs[0]["group"] != liteGroup || backs[0]["originTopic"] != liteParent ||
		backs[0]["offset"] != strconv.FormatInt(lmqMsgs[0].CommitLogOffset, 10) {
		t.Fatalf("send-backs %v", backs)
	}
	dlq, err := b.Messages(protocol.DLQTopic(liteGroup), 0)
	if err != nil || len(dlq) != 1 || string(dlq[0].Body) != "d0" || dlq[0].LiteTopic() != "d" {
		t.Fatalf("DLQ %v %v", dlq, err)
	}
	testutil.Eventually(t, clusterWait, func() error {
		if off := b.LiteCommitted(liteGroup, liteParent, "d"); off != 2 {
			return fmt.Errorf("committed %d", off)
		}
		return nil
	})

	// A failed ack is retried: the lite topic goes on without redelivery.
	b.FailAcks(code.SystemError)
	if err := b.Store(storedLite("d", "d2")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, clusterWait, func() error {
		if off := b.LiteCommitted(liteGroup, liteParent, "d"); off != 3 {
			return fmt.Errorf("committed %d", off)
		}
		return nil
	})
	if got := log.deliveries("d2"); !slices.Equal(got, []int32{0}) {
		t.Fatalf("d2 deliveries %v", got)
	}
}

// UnsubscribeLite removes a lite topic everywhere (PARTIAL_REMOVE); a
// broker's NOTIFY_UNSUBSCRIBE_LITE drops one from the set; neither is
// delivered any more.
func TestLitePushConsumerUnsubscribe(t *testing.T) {
	c := liteCluster(t, 0, "broker-a", "broker-b")
	log := newLiteLog(t)
	lc := startLite(t, c, log.handler(nil), nil)
	ctx := context.Background()
	for _, l := range []string{"a", "b", "c"} {
		if err := lc.SubscribeLite(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	p := startProducer(t, c, nil)
	send := func(l, body string) {
		t.Helper()
		if _, err := p.SendSync(ctx, liteMsg(l, body)); err != nil {
			t.Fatal(err)
		}
	}
	send("a", "a1")
	testutil.Eventually(t, clusterWait, func() error {
		if len(log.bodies("a")) != 1 {
			return errors.New("a1 not handled")
		}
		return nil
	})
	if err := lc.UnsubscribeLite(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, b := range c.Brokers {
		if got := b.LiteSubscription(liteGroup, lc.ClientID()); !slices.Equal(got, []string{"b", "c"}) {
			t.Fatalf("%s holds %v", b.Name, got)
		}
	}
	// b goes away by the broker's notice.
	for _, b := range c.Brokers {
		if err := b.NotifyUnsubscribeLite(liteGroup, lc.ClientID(), "b"); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, clusterWait, func() error {
		if got := lc.LiteTopics(); !slices.Equal(got, []string{"c"}) {
			return fmt.Errorf("LiteTopics %v", got)
		}
		return nil
	})
	send("a", "a2")
	send("b", "b1")
	send("c", "c1")
	testutil.Eventually(t, clusterWait, func() error {
		if len(log.bodies("c")) != 1 {
			return errors.New("c1 not handled")
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond)
	if got, gotB := log.bodies("a"), log.bodies("b"); len(got) != 1 || len(gotB) != 0 {
		t.Fatalf("after unsubscribing: a %v, b %v", got, gotB)
	}
	if err := lc.SubscribeLite(ctx, "bad,name"); err == nil {
		t.Fatal("illegal lite name accepted")
	}
}

// Over quota a broker answers 2018: ErrLiteSubscriptionQuotaExceeded, and
// the brokers that had accepted take the subscription back.
func TestLitePushConsumerQuota(t *testing.T) {
	c := liteCluster(t, 2, "broker-a", "broker-b")
	lc := startLite(t, c, func(context.Context, *message.Message) client.ConsumeResult { return client.ConsumeSuccess }, nil)
	// The consumer's loop sends each broker the whole (empty) subscription
	// once it has the route; the assertions below read the last request a
	// broker got, so that first COMPLETE_ADD must be in before the test acts.
	for _, b := range c.Brokers {
		testutil.WaitFor(t, clusterWait, b.Name+"'s first full sync", func() bool {
			return slices.ContainsFunc(b.LiteCtls(), func(ctl clienttest.LiteCtl) bool { return ctl.Action == "COMPLETE_ADD" })
		})
	}
	ctx := context.Background()
	for _, l := range []string{"q1", "q2"} {
		if err := lc.SubscribeLite(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	err := lc.SubscribeLite(ctx, "q3")
	if !errors.Is(err, client.ErrLiteSubscriptionQuotaExceeded) || !client.IsCode(err, code.LiteSubscriptionQuotaExceeded) {
		t.Fatalf("over quota: %v", err)
	}
	if got := lc.LiteTopics(); !slices.Equal(got, []string{"q1", "q2"}) {
		t.Fatalf("LiteTopics %v", got)
	}
	// broker-b refuses: broker-a (asked first) takes it back.
	if err := lc.UnsubscribeLite(ctx, "q2"); err != nil {
		t.Fatal(err)
	}
	c.Brokers[1].FailLiteSubscriptions(code.LiteSubscriptionQuotaExceeded)
	if err := lc.SubscribeLite(ctx, "q4"); !errors.Is(err, client.ErrLiteSubscriptionQuotaExceeded) {
		t.Fatalf("refused by broker-b: %v", err)
	}
	ctls := c.Brokers[0].LiteCtls()
	last := ctls[len(ctls)-1]
	if last.Action != "PARTIAL_REMOVE" || !slices.Equal(last.LiteTopicSet, []string{"q4"}) {
		t.Fatalf("broker-a's last request %+v", last)
	}
	for _, b := range c.Brokers {
		if got := b.LiteSubscription(liteGroup, lc.ClientID()); !slices.Equal(got, []string{"q1"}) {
			t.Fatalf("%s holds %v", b.Name, got)
		}
	}
}

// The wire form of subscriptions: offset options on PARTIAL_ADD, the full
// set every SyncInterval (COMPLETE_ADD), COMPLETE_REMOVE and
// UNREGISTER_CLIENT at shutdown, pops carrying the client id.
func TestLitePushConsumerSubscriptionRequests(t *testing.T) {
	c := liteCluster(t, 0, "broker-a")
	b := c.Brokers[0]
	lc := startLite(t, c, func(context.Context, *message.Message) client.ConsumeResult { return client.ConsumeSuccess },
		func(cfg *client.LitePushConsumerConfig) { cfg.SyncInterval = 50 * time.Millisecond })
	ctx := context.Background()
	for _, bad := range [][]client.OffsetOption{{client.OffsetAt(-1)}, {client.OffsetTailN(-2)}, {{}}, {client.OffsetPolicyMin(), client.OffsetPolicyMax()}} {
		if err := lc.SubscribeLite(ctx, "o", bad...); err == nil {
			t.Errorf("offset options %v accepted", bad)
		}
	}
	for _, tc := range []struct {
		lite string
		opt  []client.OffsetOption
		typ  string
		v    int64
	}{
		{"o0", nil, "", 0},
		{"o1", []client.OffsetOption{client.OffsetPolicyLast()}, "POLICY", 0},
		{"o2", []client.OffsetOption{client.OffsetPolicyMin()}, "POLICY", 1},
		{"o3", []client.OffsetOption{client.OffsetPolicyMax()}, "POLICY", 2},
		{"o4", []client.OffsetOption{client.OffsetAt(7)}, "OFFSET", 7},
		{"o5", []client.OffsetOption{client.OffsetTailN(3)}, "TAIL_N", 3},
	} {
		if err := lc.SubscribeLite(ctx, tc.lite, tc.opt...); err != nil {
			t.Fatal(err)
		}
		var got *clienttest.LiteCtl
		for _, ctl := range b.LiteCtls() {
			if ctl.Action == "PARTIAL_ADD" && slices.Equal(ctl.LiteTopicSet, []string{tc.lite}) {
				got = &ctl
			}
		}
		switch {
		case got == nil:
			t.Fatalf("%s: no PARTIAL_ADD", tc.lite)
		case got.ClientID != lc.ClientID() || got.Group != liteGroup || got.Topic != liteParent || got.Version == 0:
			t.Fatalf("%s: %+v", tc.lite, got)
		case tc.typ == "" && got.OffsetOption != nil,
			tc.typ != "" && (got.OffsetOption == nil || got.OffsetOption.Type != tc.typ || got.OffsetOption.Value != tc.v):
			t.Fatalf("%s: offset option %+v", tc.lite, got.OffsetOption)
		}
	}
	if b.LiteCommitted(liteGroup, liteParent, "o4") != 7 {
		t.Fatal("OffsetAt(7) not applied")
	}
	testutil.Eventually(t, clusterWait, func() error {
		ctls := b.LiteCtls()
		last := ctls[len(ctls)-1]
		if last.Action != "COMPLETE_ADD" || !slices.Equal(last.LiteTopicSet, []string{"o0", "o1", "o2", "o3", "o4", "o5"}) {
			return fmt.Errorf("last request %+v", last)
		}
		return nil
	})
	if b.LitePops() == 0 {
		t.Fatal("no pop")
	}
	if err := lc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ctls := b.LiteCtls()
	if last := ctls[len(ctls)-1]; last.Action != "COMPLETE_REMOVE" || last.ClientID != lc.ClientID() {
		t.Fatalf("last request %+v", last)
	}
	if got := b.LiteSubscription(liteGroup, lc.ClientID()); len(got) != 0 {
		t.Fatalf("after shutdown the broker holds %v", got)
	}
	un := b.Unregisters()
	if len(un) == 0 || un[len(un)-1]["consumerGroup"] != liteGroup {
		t.Fatalf("unregister %v", un)
	}
	if err := lc.SubscribeLite(ctx, "late"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("subscribe after shutdown: %v", err)
	}
	if err := lc.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

// Shutdown waits for the handler (ctx ends it), lets the messages popped
// but not handled go at once (invisible time 0) and leaves no goroutine.
func TestLitePushConsumerShutdownLeavesNoGoroutines(t *testing.T) {
	c := liteCluster(t, 0, "broker-a")
	b := c.Brokers[0]
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	for round := range 2 {
		entered := make(chan struct{})
		var once sync.Once
		lc, err := client.NewLitePushConsumer(client.LitePushConsumerConfig{
			CommonConfig: common(c), Group: liteGroup, BindTopic: liteParent, LongPollingTimeout: 5 * time.Second,
			Handler: func(ctx context.Context, m *message.Message) client.ConsumeResult {
				once.Do(func() { close(entered) })
				<-ctx.Done() // a handler that honours ctx
				return client.ConsumeRetryLater
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := lc.Start(); err != nil {
			t.Fatal(err)
		}
		lite := "s" + strconv.Itoa(round)
		for i := range 3 {
			if err := b.Store(storedLite(lite, fmt.Sprintf("%s-%d", lite, i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := lc.SubscribeLite(context.Background(), lite); err != nil {
			t.Fatal(err)
		}
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatal("the handler was never called")
		}
		changes := len(b.LiteInvisibleChanges())
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		if err := lc.Shutdown(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("shutdown with a busy handler: %v", err)
		}
		cancel()
		// The release may still be on its way when a Shutdown cut short by
		// its ctx returns.
		testutil.Eventually(t, clusterWait, func() error {
			var released int
			for _, ch := range b.LiteInvisibleChanges()[changes:] {
				if ch["invisibleTime"] == "0" {
					released++
				}
			}
			if released != 2 {
				return fmt.Errorf("%d messages released at shutdown, want the 2 not handled", released)
			}
			return nil
		})
	}
	waitGoroutines(t, before)
}

// TestLitePushConsumerUnsubscribeFreesCache: messages waiting behind a
// busy handler when their lite topic is unsubscribed give their room in
// the cache back (MaxCachedMessages 3: a1 in the handler, a2 and a3
// waiting); otherwise the consumer would stop popping for good and b1
// would never come.
func TestLitePushConsumerUnsubscribeFreesCache(t *testing.T) {
	c := liteCluster(t, 0, "broker-a")
	log := newLiteLog(t)
	started, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	lc := startLite(t, c, log.handler(func(ctx context.Context, m *message.Message) client.ConsumeResult {
		if string(m.Body) == "a1" {
			once.Do(func() { close(started) })
			select {
			case <-unblock:
			case <-ctx.Done():
			}
		}
		return client.ConsumeSuccess
	}), func(cfg *client.LitePushConsumerConfig) {
		cfg.MaxCachedMessages, cfg.MaxMessagesPerPop = 3, 3
		cfg.ConsumeGoroutines = 2
	})
	defer close(unblock)
	// Stored before the subscription so that they come in one answer.
	for _, b := range []string{"a1", "a2", "a3"} {
		if err := c.Brokers[0].Store(storedLite("a", b)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := lc.SubscribeLite(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("a1 not delivered")
	}
	if err := lc.UnsubscribeLite(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := lc.SubscribeLite(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := c.Brokers[0].Store(storedLite("b", "b1")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, clusterWait, func() error {
		if got := log.bodies("b"); len(got) != 1 {
			return fmt.Errorf("b handled %v: the cache did not get the unsubscribed messages' room back", got)
		}
		return nil
	})
	if got := log.bodies("a"); len(got) != 1 {
		t.Fatalf("a handled %v after its unsubscription", got)
	}
}
