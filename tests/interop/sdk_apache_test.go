package interop

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// sdkRoundTrip runs our SDK's basic producer and push consumer against the
// Apache cluster a: the topic is created through our admin client, n
// messages go out by sync, async, batch and oneway sends, one consumer
// group with one consumer must get each exactly once (right body), and a
// second group of two consumers must share them, each message at least
// once.
func sdkRoundTrip(t *testing.T, a *Apache, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "InteropSDK"
	ac, err := admin.New(admin.Config{NameServers: []string{a.NamesrvAddr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	if err := ac.CreateTopic(ctx, a.BrokerAddr, tc, ""); err != nil {
		t.Fatalf("create %s on Apache's broker through pkg/admin: %v", topic, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r, err := ac.GetTopicRoute(ctx, topic)
		if err == nil && len(r.QueueDatas) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("route of %s on Apache's nameserver: %v", topic, err)
		}
	}
	common := func(instance string) client.CommonConfig {
		return client.CommonConfig{NameServers: []string{a.NamesrvAddr}, InstanceName: instance,
			HeartbeatInterval: time.Second, RouteRefreshInterval: 2 * time.Second}
	}
	type tally struct {
		mu    sync.Mutex
		got   map[int]int
		bad   []string
		byWho map[string]int
	}
	newTally := func() *tally { return &tally{got: map[int]int{}, byWho: map[string]int{}} }
	handler := func(tl *tally, who string) client.PushHandler {
		return func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			tl.mu.Lock()
			defer tl.mu.Unlock()
			for _, m := range req.Messages {
				i, err := strconv.Atoi(m.Property("i"))
				if err != nil || string(m.Body) != body(i) {
					tl.bad = append(tl.bad, fmt.Sprintf("i=%q body %q", m.Property("i"), m.Body))
					continue
				}
				tl.got[i]++
				tl.byWho[who]++
			}
			return client.ConsumeSuccess
		}
	}
	consumer := func(instance, group string, h client.PushHandler) {
		c, err := client.NewPushConsumer(client.PushConsumerConfig{
			CommonConfig: common(instance), Group: group, ConsumeFrom: client.ConsumeFromFirstOffset, Handler: h,
			RebalanceInterval: time.Second, OffsetCommitInterval: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Subscribe(topic, "*", ""); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatalf("start push consumer %s against Apache: %v", instance, err)
		}
		t.Cleanup(func() { c.Shutdown(context.Background()) })
	}
	one, two := newTally(), newTally()
	consumer("sdk-a", "interop_sdk_one", handler(one, "a"))
	consumer("sdk-b1", "interop_sdk_two", handler(two, "b1"))
	consumer("sdk-b2", "interop_sdk_two", handler(two, "b2"))

	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: common("sdk-p"), Group: "interop_sdk_pg"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("start producer against Apache: %v", err)
	}
	defer p.Shutdown(context.Background())
	msg := func(i int) *message.Message {
		m := &message.Message{Topic: topic, Body: []byte(body(i))}
		m.SetProperty("i", strconv.Itoa(i))
		return m
	}
	quarter := n / 4
	t0 := time.Now()
	for i := 0; i < quarter; i++ {
		if _, err := p.SendSync(ctx, msg(i)); err != nil {
			t.Fatalf("sync send %d: %v", i, err)
		}
	}
	var wg sync.WaitGroup
	var asyncErr error
	var asyncMu sync.Mutex
	for i := quarter; i < 2*quarter; i++ {
		wg.Add(1)
		if err := p.SendAsync(ctx, msg(i), func(_ *client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				asyncMu.Lock()
				asyncErr = err
				asyncMu.Unlock()
			}
		}); err != nil {
			t.Fatalf("async send %d: %v", i, err)
		}
	}
	wg.Wait()
	if asyncErr != nil {
		t.Fatalf("async send: %v", asyncErr)
	}
	for i := 2 * quarter; i < 3*quarter; i += 10 {
		var batch []*message.Message
		for j := i; j < min(i+10, 3*quarter); j++ {
			batch = append(batch, msg(j))
		}
		if _, err := p.SendBatch(ctx, batch); err != nil {
			t.Fatalf("batch send from %d: %v", i, err)
		}
	}
	for i := 3 * quarter; i < n; i++ {
		if err := p.SendOneway(ctx, msg(i)); err != nil {
			t.Fatalf("oneway send %d: %v", i, err)
		}
	}
	t.Logf("interop: our SDK sent %d messages to Apache (sync, async, batch, oneway) in %v", n, time.Since(t0).Round(time.Millisecond))
	check := func(tl *tally, exact bool) error {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		if len(tl.bad) > 0 {
			return fmt.Errorf("%d mismatched messages, first %s", len(tl.bad), tl.bad[0])
		}
		for i := 0; i < n; i++ {
			if tl.got[i] == 0 || (exact && tl.got[i] != 1) {
				return fmt.Errorf("message %d delivered %d times (%d distinct of %d)", i, tl.got[i], len(tl.got), n)
			}
		}
		return nil
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		e1, e2 := check(one, true), check(two, false)
		if e1 == nil && e2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consuming from Apache with our push consumer: group one: %v; group two: %v", e1, e2)
		}
	}
	two.mu.Lock()
	defer two.mu.Unlock()
	if two.byWho["b1"] == 0 || two.byWho["b2"] == 0 {
		t.Errorf("group two did not share the queues: %v", two.byWho)
	}
	t.Logf("interop: our push consumers got all %d from Apache (group two split %v)", n, two.byWho)
}

func body(i int) string { return "sdk-interop-" + strconv.Itoa(i) }
