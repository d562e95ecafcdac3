package client_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

func startCluster(t *testing.T, brokers ...string) *clienttest.Cluster {
	t.Helper()
	c, err := clienttest.StartCluster(brokers...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startTopic starts a cluster of one broker, broker-a, that holds topic T
// with the given number of queues.
func startTopic(t *testing.T, queues int) *clienttest.Cluster {
	t.Helper()
	c := startCluster(t, "broker-a")
	c.CreateTopic("T", queues)
	return c
}

// testSendTimeout is the tests' SendTimeout: see common.
const testSendTimeout = 10 * time.Second

func common(c *clienttest.Cluster) client.CommonConfig {
	return client.CommonConfig{
		NameServers:       []string{c.Namesrv.Addr()},
		HeartbeatInterval: 50 * time.Millisecond,
		// Well above the 3 s default: under -race with another package's
		// tests on the same two cores a request can wait seconds for CPU.
		RequestTimeout: 10 * time.Second,
	}
}

func startProducer(t *testing.T, c *clienttest.Cluster, mod func(*client.ProducerConfig)) *client.Producer {
	t.Helper()
	cfg := client.ProducerConfig{CommonConfig: common(c), Group: "PG", SendTimeout: testSendTimeout}
	if mod != nil {
		mod(&cfg)
	}
	p, err := client.NewProducer(cfg)
	return clienttest.Started(t, p, err)
}

func msg(topic, body string) *message.Message {
	return &message.Message{Topic: topic, Body: []byte(body)}
}

func TestSendSyncRoundRobin(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 2)
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			p := startProducer(t, c, func(cfg *client.ProducerConfig) { cfg.SerializeType = st })
			seen := map[protocol.MessageQueue]int{}
			for i := range 8 {
				m := msg("T", "hello")
				m.SetTags("tagA")
				m.SetKeys("k1", "k2")
				res, err := p.SendSync(context.Background(), m)
				if err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
				if res.Status != client.SendOK || res.MsgID == "" || res.MsgID != m.UniqKey() || len(res.OffsetMsgID) != 32 ||
					res.QueueOffset < 0 || res.Attempts != 1 || res.RegionID != "DefaultRegion" || !res.TraceOn {
					t.Fatalf("result = %+v", res)
				}
				seen[res.Queue]++
			}
			if len(seen) != 4 {
				t.Fatalf("round robin hit %d queues, want all 4: %v", len(seen), seen)
			}
			for q, n := range seen {
				if n != 2 {
					t.Fatalf("queue %v got %d sends, want 2", q, n)
				}
			}
		})
	}
	// The stored message carries the properties the producer set.
	stored, err := c.Brokers[0].Messages("T", 0)
	if err != nil || len(stored) == 0 {
		t.Fatalf("stored: %v %v", stored, err)
	}
	if m := stored[0]; m.Tags() != "tagA" || strings.Join(m.Keys(), ",") != "k1,k2" || m.UniqKey() == "" || string(m.Body) != "hello" {
		t.Fatalf("stored message = %+v", m)
	}
	send := c.Brokers[0].Sends()[0]
	if send.Code != code.SendMessageV2 || send.Ext["a"] != "PG" || send.Ext["b"] != "T" || send.Ext["n"] != "broker-a" {
		t.Fatalf("send request = %+v", send)
	}
}

func TestSendRetriesOnAnotherBroker(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 1)
	p := startProducer(t, c, nil)
	a, b := c.Brokers[0], c.Brokers[1]

	// Both brokers fail once with a retriable code: whichever is tried first,
	// the retry must go to the other one, which then fails too, and the
	// third attempt succeeds.
	for _, tc := range []struct {
		name     string
		codes    []int32
		attempts int
	}{
		{"service not available", []int32{code.ServiceNotAvailable}, 2},
		{"system busy", []int32{code.SystemBusy}, 2},
		{"no permission", []int32{code.NoPermission}, 2},
		{"topic not exist", []int32{code.TopicNotExist}, 2},
		{"system error", []int32{code.SystemError}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.FailSends(tc.codes...)
			b.FailSends(tc.codes...)
			first := len(a.Sends()) + len(b.Sends())
			res, err := p.SendSync(context.Background(), msg("T", "x"))
			if err != nil {
				t.Fatal(err)
			}
			// One of them failed first; the retry went to the other broker
			// which then failed, and the third attempt went back.
			if got := len(a.Sends()) + len(b.Sends()) - first; got != 3 || res.Attempts != 3 {
				t.Fatalf("attempts = %d (result says %d), want 3", got, res.Attempts)
			}
		})
	}

	t.Run("skips the failed broker", func(t *testing.T) {
		a.FailSends(code.ServiceNotAvailable, code.ServiceNotAvailable, code.ServiceNotAvailable, code.ServiceNotAvailable)
		for range 4 {
			res, err := p.SendSync(context.Background(), msg("T", "x"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Queue.BrokerName != "broker-b" {
				t.Fatalf("sent to %s while broker-a fails", res.Queue.BrokerName)
			}
		}
		a.ClearFailures()
	})

	t.Run("not retried", func(t *testing.T) {
		a.FailSends(code.MessageIllegal)
		b.FailSends(code.MessageIllegal)
		before := len(a.Sends()) + len(b.Sends())
		_, err := p.SendSync(context.Background(), msg("T", "x"))
		var re *client.ResponseError
		if !errors.As(err, &re) || re.Code != code.MessageIllegal {
			t.Fatalf("err = %v, want MESSAGE_ILLEGAL", err)
		}
		if got := len(a.Sends()) + len(b.Sends()) - before; got != 1 {
			t.Fatalf("%d attempts for a non-retriable code", got)
		}
		// Consume the injection left on the broker that was not tried.
		for range 2 {
			_, _ = p.SendSync(context.Background(), msg("T", "x"))
		}
	})

	t.Run("delivered with a non-OK status", func(t *testing.T) {
		for _, tc := range []struct {
			code   int32
			status client.SendStatus
		}{
			{code.FlushDiskTimeout, client.SendFlushDiskTimeout},
			{code.FlushSlaveTimeout, client.SendFlushSlaveTimeout},
			{code.SlaveNotAvailable, client.SendSlaveNotAvailable},
		} {
			a.FailSends(tc.code)
			b.FailSends(tc.code)
			// Round robin over a0, b0: two sends meet both injections, and
			// neither is retried.
			for range 2 {
				before := len(a.Sends()) + len(b.Sends())
				res, err := p.SendSync(context.Background(), msg("T", "x"))
				if err != nil || res.Status != tc.status {
					t.Fatalf("code %d: %+v, %v", tc.code, res, err)
				}
				if got := len(a.Sends()) + len(b.Sends()) - before; got != 1 {
					t.Fatalf("code %d: %d attempts", tc.code, got)
				}
			}
		}
	})
}

func TestSendGivesUpAfterRetries(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 1)
	p := startProducer(t, c, func(cfg *client.ProducerConfig) { cfg.RetryTimesWhenSendFailed = -1 })
	c.Brokers[0].FailSends(code.SystemBusy)
	c.Brokers[1].FailSends(code.SystemBusy)
	_, err := p.SendSync(context.Background(), msg("T", "x"))
	if !client.IsCode(err, code.SystemBusy) {
		t.Fatalf("err = %v, want SYSTEM_BUSY with retries disabled", err)
	}

	p2 := startProducer(t, c, nil)
	c.Brokers[0].FailSends(code.SystemBusy, code.SystemBusy)
	c.Brokers[1].FailSends(code.SystemBusy, code.SystemBusy)
	_, err = p2.SendSync(context.Background(), msg("T", "x"))
	if !client.IsCode(err, code.SystemBusy) || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("err = %v, want SYSTEM_BUSY after 3 attempts", err)
	}
}

func TestSendTimeoutRetriesElsewhere(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 1)
	c.Brokers[0].Silence(true)
	p := startProducer(t, c, func(cfg *client.ProducerConfig) { cfg.SendTimeout = 500 * time.Millisecond })
	// A silent broker eats the whole send timeout: Java's send timeout also
	// spans the retries. The send fails with a timeout, not a hang.
	start := time.Now()
	for range 2 {
		res, err := p.SendSync(context.Background(), msg("T", "x"))
		if err == nil {
			if res.Queue.BrokerName != "broker-b" {
				t.Fatalf("silent broker answered: %+v", res)
			}
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a timeout", err)
		}
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("sends took %v", time.Since(start))
	}
}

func TestSendAutoCreateFromTBW102(t *testing.T) {
	c := startCluster(t, "broker-a")
	p := startProducer(t, c, nil)
	res, err := p.SendSync(context.Background(), msg("NewTopic", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Queue.Topic != "NewTopic" || res.Queue.QueueID >= 4 {
		t.Fatalf("result = %+v", res)
	}
	send := c.Brokers[0].Sends()[0]
	if send.Ext["c"] != "TBW102" || send.Ext["d"] != "4" {
		t.Fatalf("send header = %v", send.Ext)
	}
	// Without TBW102 the topic has no route.
	c.Namesrv.DeleteTopic("TBW102")
	_, err = p.SendSync(context.Background(), msg("Other", "x"))
	if !errors.Is(err, client.ErrNoRoute) || !client.IsCode(err, code.TopicNotExist) {
		t.Fatalf("err = %v, want ErrNoRoute with TOPIC_NOT_EXIST", err)
	}
}

func TestSendAsyncOnewayBatchSelector(t *testing.T) {
	c := startTopic(t, 4)
	p := startProducer(t, c, nil)
	ctx := context.Background()

	var wg sync.WaitGroup
	var mu sync.Mutex
	var results []*client.SendResult
	for range 20 {
		wg.Add(1)
		err := p.SendAsync(ctx, msg("T", "async"), func(res *client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			results = append(results, res)
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(results) != 20 {
		t.Fatalf("%d async results", len(results))
	}
	if err := p.SendAsync(ctx, &message.Message{Topic: "T"}, func(*client.SendResult, error) { t.Error("callback of a rejected send") }); !errors.Is(err, client.ErrInvalidMessage) {
		t.Fatalf("async empty body: %v", err)
	}

	// Async to a topic whose route is not cached yet takes the slow path.
	wg.Add(1)
	if err := p.SendAsync(ctx, msg("Fresh", "x"), func(res *client.SendResult, err error) {
		defer wg.Done()
		if err != nil || res.Queue.Topic != "Fresh" {
			t.Errorf("fresh topic: %+v %v", res, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	before := c.Brokers[0].Calls(code.SendMessageV2)
	if err := p.SendOneway(ctx, msg("T", "oneway")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 3*time.Second, "the send to reach the broker", func() bool { return c.Brokers[0].Calls(code.SendMessageV2) == before+1 })

	batch := []*message.Message{msg("T", "b1"), msg("T", "b2"), msg("T", "b3")}
	res, err := p.SendBatch(ctx, batch, client.WithQueue(protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}))
	if err != nil {
		t.Fatal(err)
	}
	ids := strings.Split(res.MsgID, ",")
	if len(ids) != 3 || ids[0] != batch[0].UniqKey() || res.Queue.QueueID != 3 || len(strings.Split(res.OffsetMsgID, ",")) != 3 {
		t.Fatalf("batch result = %+v", res)
	}
	stored, _ := c.Brokers[0].Messages("T", 3)
	var bodies []string
	for _, m := range stored {
		if m.UniqKey() == "" {
			t.Fatal("inner batch message without UNIQ_KEY")
		}
		bodies = append(bodies, string(m.Body))
	}
	if strings.Join(bodies[len(bodies)-3:], ",") != "b1,b2,b3" {
		t.Fatalf("queue 3 holds %v", bodies)
	}

	// Ordered sends: one key, one queue.
	var q int = -1
	for i := range 5 {
		res, err := p.SendSync(ctx, msg("T", "o"), client.WithSelector(client.SelectByHash("order-42")))
		if err != nil {
			t.Fatal(err)
		}
		if q >= 0 && res.Queue.QueueID != q {
			t.Fatalf("ordered send %d went to queue %d, earlier %d", i, res.Queue.QueueID, q)
		}
		q = res.Queue.QueueID
	}
	if _, err := p.SendSync(ctx, msg("T", "x"), client.WithQueue(protocol.MessageQueue{Topic: "U", BrokerName: "broker-a"})); !errors.Is(err, client.ErrInvalidMessage) {
		t.Fatalf("queue of another topic: %v", err)
	}
}

func TestProducerHeartbeatAndLifecycle(t *testing.T) {
	c := startTopic(t, 1)
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: common(c), Group: "PG", SendTimeout: testSendTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendSync(context.Background(), msg("T", "x")); !errors.Is(err, client.ErrNotStarted) {
		t.Fatalf("send before start: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err == nil {
		t.Fatal("second Start accepted")
	}
	if _, err := p.SendSync(context.Background(), msg("T", "x")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 3*time.Second, "a heartbeat", func() bool { return len(c.Brokers[0].Heartbeats()) > 0 })
	hb := c.Brokers[0].Heartbeats()[0]
	for _, want := range []string{`"clientID":"` + p.ClientID() + `"`, `"producerDataSet":[{"groupName":"PG"},{"groupName":"CLIENT_INNER_PRODUCER"}]`, `"consumerDataSet":[]`} {
		if !strings.Contains(hb, want) {
			t.Fatalf("heartbeat %s lacks %s", hb, want)
		}
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	un := c.Brokers[0].Unregisters()
	if len(un) != 1 || un[0]["clientID"] != p.ClientID() || un[0]["producerGroup"] != "PG" {
		t.Fatalf("unregister = %v", un)
	}
	if _, err := p.SendSync(context.Background(), msg("T", "x")); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("send after shutdown: %v", err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 2)
	settle := func() int {
		time.Sleep(20 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	base := settle()
	for range 2 {
		p, err := client.NewProducer(client.ProducerConfig{CommonConfig: common(c), Group: "PG", SendTimeout: testSendTimeout})
		p = clienttest.Started(t, p, err)
		var wg sync.WaitGroup
		for range 50 {
			wg.Add(1)
			if err := p.SendAsync(context.Background(), msg("T", "x"), func(*client.SendResult, error) { wg.Done() }); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.SendSync(context.Background(), msg("T", "x")); err != nil {
			t.Fatal(err)
		}
		wg.Wait()

		cons, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: common(c), Group: "CG"})
		cons = clienttest.Started(t, cons, err)
		loopDone := make(chan error, 1)
		got := make(chan struct{}, 100)
		go func() {
			loopDone <- cons.ConsumeLoop(context.Background(), client.ConsumeLoopConfig{Topic: "T", From: client.FromFirstOffset()},
				func(context.Context, protocol.MessageQueue, []*message.Message) error {
					got <- struct{}{}
					return nil
				})
		}()
		<-got
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := cons.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-loopDone; err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := settle()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after shutdown, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
	}
}

func TestRouteRefresh(t *testing.T) {
	c := startTopic(t, 1)
	p := startProducer(t, c, func(cfg *client.ProducerConfig) { cfg.RouteRefreshInterval = 20 * time.Millisecond })
	if _, err := p.SendSync(context.Background(), msg("T", "x")); err != nil {
		t.Fatal(err)
	}
	c.CreateTopic("T", 3) // the topic grows: refreshed routes show queue 2
	testutil.WaitFor(t, 3*time.Second, "a send to the refreshed queue 2", func() bool {
		res, err := p.SendSync(context.Background(), msg("T", "x"))
		return err == nil && res.Queue.QueueID == 2
	})
	if c.Namesrv.Calls(code.GetRouteInfoByTopic) < 2 {
		t.Fatal("route was not refreshed")
	}
}
