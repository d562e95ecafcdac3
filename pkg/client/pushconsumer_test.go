package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// startPush starts a push consumer of topic on the fake cluster with short
// intervals; mod adjusts the config.
func startPush(t *testing.T, c *clienttest.Cluster, instance, group, topic string, h client.PushHandler, mod func(*client.PushConsumerConfig)) *client.PushConsumer {
	t.Helper()
	cfg := client.PushConsumerConfig{
		CommonConfig:         client.CommonConfig{NameServers: []string{c.Namesrv.Addr()}, InstanceName: instance, HeartbeatInterval: 50 * time.Millisecond},
		Group:                group,
		ConsumeFrom:          client.ConsumeFromFirstOffset,
		Handler:              h,
		RebalanceInterval:    100 * time.Millisecond,
		LockRenewInterval:    100 * time.Millisecond,
		OffsetCommitInterval: 100 * time.Millisecond,
		LongPollingSuspend:   time.Second,
		PullErrorBackoff:     50 * time.Millisecond,
		SuspendTime:          20 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	pc, err := client.NewPushConsumer(cfg)
	return clienttest.Subscribed(t, pc, err, topic, "*")
}

// clusterWait bounds the waits on in-process clusters. Generous: make test
// runs two packages at a time under -race on two cores, and these clusters
// share them.
const clusterWait = 15 * time.Second

// waitGoroutines waits (clusterWait) until the process runs no more
// goroutines than before, and fails t with their stacks otherwise.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	testutil.Eventually(t, clusterWait, func() error {
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			return fmt.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}

// record collects what a handler saw.
type record struct {
	mu     sync.Mutex
	bodies map[string][]int32 // body → reconsume times of each delivery
	topics map[string]string  // body → topic seen
	queues map[string]protocol.MessageQueue
}

func newRecord() *record {
	return &record{bodies: map[string][]int32{}, topics: map[string]string{}, queues: map[string]protocol.MessageQueue{}}
}

func (r *record) add(req *client.ConsumeRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range req.Messages {
		b := string(m.Body)
		r.bodies[b] = append(r.bodies[b], m.ReconsumeTimes)
		r.topics[b] = m.Topic
		r.queues[b] = req.Queue
	}
}

// success is a handler that records every message and consumes it.
func (r *record) success() client.PushHandler {
	return func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
		r.add(req)
		return client.ConsumeSuccess
	}
}

func (r *record) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func (r *record) deliveries(body string) []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies[body])
}

func sendBodies(t *testing.T, p *client.Producer, topic string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		if _, err := p.SendSync(context.Background(), msg(topic, b)); err != nil {
			t.Fatalf("send %s: %v", b, err)
		}
	}
}

func TestPushConsumerConfigErrors(t *testing.T) {
	ok := func(context.Context, *client.ConsumeRequest) client.ConsumeResult { return client.ConsumeSuccess }
	ns := client.CommonConfig{NameServers: []string{"127.0.0.1:9876"}}
	for _, tc := range []struct {
		name string
		cfg  client.PushConsumerConfig
	}{
		{"no handler", client.PushConsumerConfig{CommonConfig: ns}},
		{"no nameserver", client.PushConsumerConfig{Handler: ok}},
		{"bad group", client.PushConsumerConfig{CommonConfig: ns, Handler: ok, Group: "a b"}},
		{"bad model", client.PushConsumerConfig{CommonConfig: ns, Handler: ok, Model: 7}},
		{"bad consume from", client.PushConsumerConfig{CommonConfig: ns, Handler: ok, ConsumeFrom: -1}},
		{"negative size", client.PushConsumerConfig{CommonConfig: ns, Handler: ok, PullBatchSize: -1}},
		{"negative interval", client.PushConsumerConfig{CommonConfig: ns, Handler: ok, RebalanceInterval: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := client.NewPushConsumer(tc.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	c, err := client.NewPushConsumer(client.PushConsumerConfig{CommonConfig: ns, Handler: ok})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe("bad topic", "*", ""); err == nil {
		t.Fatal("bad topic accepted")
	}
	if err := c.Subscribe("T", "x", "XPATH"); err == nil {
		t.Fatal("unknown expression type accepted")
	}
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown before Start: %v", err)
	}
	if err := c.Start(); err == nil {
		t.Fatal("Start after Shutdown succeeded")
	}
}

// Two consumers share the queues of two brokers averagely and consume every
// message once; when one leaves, the other takes its queues and continues
// from the committed offsets.
func TestPushConsumerClustering(t *testing.T) {
	c := startCluster(t, "broker-a", "broker-b")
	c.CreateTopic("T", 3)
	recA, recB := newRecord(), newRecord()
	handler := func(r *record) client.PushHandler {
		return func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			r.add(req)
			return client.ConsumeSuccess
		}
	}
	a := startPush(t, c, "a", "G", "T", handler(recA), nil)
	b := startPush(t, c, "b", "G", "T", handler(recB), nil)
	testutil.Eventually(t, clusterWait, func() error {
		qa, qb := topicQueues(a.Assigned(), "T"), topicQueues(b.Assigned(), "T")
		if len(qa) != 3 || len(qb) != 3 || slices.ContainsFunc(qa, func(mq protocol.MessageQueue) bool { return slices.Contains(qb, mq) }) {
			return fmt.Errorf("assignment a=%v b=%v", qa, qb)
		}
		return nil
	})
	// Java's averaging: the smaller client id gets the first half of the
	// sorted queues.
	first := a
	if b.ClientID() < a.ClientID() {
		first = b
	}
	if got := topicQueues(first.Assigned(), "T"); got[0].BrokerName != "broker-a" || got[2].BrokerName != "broker-a" {
		t.Fatalf("first consumer got %v, want broker-a's queues", got)
	}

	p := startProducer(t, c, nil)
	var bodies []string
	for i := range 60 {
		bodies = append(bodies, "m"+strconv.Itoa(i))
	}
	sendBodies(t, p, "T", bodies...)
	testutil.Eventually(t, clusterWait, func() error {
		if n := recA.count() + recB.count(); n != 60 {
			return fmt.Errorf("consumed %d of 60", n)
		}
		return nil
	})
	if recA.count() == 0 || recB.count() == 0 {
		t.Fatalf("a consumed %d, b %d", recA.count(), recB.count())
	}

	bQueues := topicQueues(b.Assigned(), "T")
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// b committed what it consumed at Shutdown; a commits periodically.
	var bCommitted int64
	for _, mq := range bQueues {
		bCommitted += max(c.Brokers[brokerIndex(mq)].Committed("G", "T", mq.QueueID), 0)
	}
	if want := int64(recB.count()); bCommitted != want {
		t.Fatalf("b's queues have committed offsets summing to %d, want %d (b consumed that many)", bCommitted, want)
	}
	testutil.Eventually(t, clusterWait, func() error {
		if q := topicQueues(a.Assigned(), "T"); len(q) != 6 {
			return fmt.Errorf("a holds %v", q)
		}
		return nil
	})
	sendBodies(t, p, "T", "late1", "late2", "late3", "late4")
	testutil.Eventually(t, clusterWait, func() error {
		if n := recA.count() + recB.count(); n != 64 {
			return fmt.Errorf("consumed %d of 64", n)
		}
		return nil
	})
	for _, r := range []*record{recA, recB} {
		for body, ds := range r.bodies {
			if len(ds) != 1 {
				t.Fatalf("%s delivered %d times", body, len(ds))
			}
		}
	}
}

func brokerIndex(mq protocol.MessageQueue) int { return int(mq.BrokerName[len(mq.BrokerName)-1] - 'a') }

func topicQueues(mqs []protocol.MessageQueue, topic string) []protocol.MessageQueue {
	var out []protocol.MessageQueue
	for _, mq := range mqs {
		if mq.Topic == topic {
			out = append(out, mq)
		}
	}
	return out
}

// A failed message goes back with CONSUMER_SEND_MSG_BACK (the handler's
// delay level, the max reconsume times) and returns through the retry topic
// with its original topic and one more reconsume time. When the broker
// refuses the send-back, the client sends it to %RETRY% itself.
func TestPushConsumerRetry(t *testing.T) {
	c := startTopic(t, 1)
	br := c.Brokers[0]
	rec := newRecord()
	handler := func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
		rec.add(req)
		m := req.Messages[0]
		if string(m.Body) == "fail-once" && m.ReconsumeTimes == 0 {
			req.DelayLevel = 2
			return client.ConsumeRetryLater
		}
		if string(m.Body) == "panic" && m.ReconsumeTimes == 0 {
			panic("handler bug")
		}
		return client.ConsumeSuccess
	}
	startPush(t, c, "r", "G", "T", handler, func(cfg *client.PushConsumerConfig) { cfg.MaxReconsumeTimes = 5 })
	p := startProducer(t, c, nil)
	sendBodies(t, p, "T", "fail-once")
	testutil.Eventually(t, clusterWait, func() error {
		if d := rec.deliveries("fail-once"); !slices.Equal(d, []int32{0, 1}) {
			return fmt.Errorf("deliveries %v", d)
		}
		return nil
	})
	backs := br.SendBacks()
	if len(backs) != 1 {
		t.Fatalf("send backs %v", backs)
	}
	h := backs[0]
	stored, _ := br.Messages("T", 0)
	if h["group"] != "G" || h["delayLevel"] != "2" || h["maxReconsumeTimes"] != "5" || h["originTopic"] != "T" ||
		h["bname"] != "broker-a" || h["originMsgId"] != stored[0].UniqKey() || h["offset"] != strconv.FormatInt(stored[0].CommitLogOffset, 10) {
		t.Fatalf("send back header %v", h)
	}
	rec.mu.Lock()
	if rec.topics["fail-once"] != "T" || rec.queues["fail-once"].Topic != protocol.RetryTopic("G") {
		t.Fatalf("redelivery: topic %q from queue %v", rec.topics["fail-once"], rec.queues["fail-once"])
	}
	rec.mu.Unlock()

	// A panicking handler counts as a failure, not a crash.
	sendBodies(t, p, "T", "panic")
	testutil.Eventually(t, clusterWait, func() error {
		if d := rec.deliveries("panic"); !slices.Equal(d, []int32{0, 1}) {
			return fmt.Errorf("deliveries of panic %v", d)
		}
		return nil
	})

	// Send-back refused: the message goes to %RETRY%G as a new message
	// from the internal producer, delay 3 + reconsume times.
	br.FailSendBacks(code.SystemError)
	sendsBefore := len(br.Sends())
	sendBodies(t, p, "T", "fail-once")
	testutil.Eventually(t, clusterWait, func() error {
		if d := rec.deliveries("fail-once"); len(d) != 4 {
			return fmt.Errorf("deliveries %v", d)
		}
		return nil
	})
	var fallback *clienttest.Send
	for _, s := range br.Sends()[sendsBefore:] {
		if s.Ext["b"] == protocol.RetryTopic("G") {
			fallback = &s
		}
	}
	if fallback == nil {
		t.Fatal("no send to the retry topic after the refused send-back")
	}
	props := message.DecodeProperties([]byte(fallback.Ext["i"]))
	if fallback.Ext["a"] != "CLIENT_INNER_PRODUCER" || fallback.Ext["j"] != "1" || fallback.Ext["l"] != "5" ||
		props[message.PropertyDelayTimeLevel] != "3" || props[message.PropertyRetryTopic] != "T" || props[message.PropertyOriginMessageID] == "" {
		t.Fatalf("fallback send header %v, properties %v", fallback.Ext, props)
	}
}

// Orderly consumption locks the queue on the broker, delivers a failed
// batch again (after the suspension) before anything later, with growing
// reconsume times, and sends it to the DLQ after MaxReconsumeTimes.
func TestPushConsumerOrderly(t *testing.T) {
	c := startTopic(t, 1)
	br := c.Brokers[0]
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}
	br.SetLock("G", mq, "someone-else")
	var mu sync.Mutex
	var order []string
	handler := func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		m := req.Messages[0]
		order = append(order, string(m.Body)+"/"+strconv.Itoa(int(m.ReconsumeTimes)))
		if strings.HasPrefix(string(m.Body), "bad") {
			return client.ConsumeRetryLater
		}
		return client.ConsumeSuccess
	}
	cons := startPush(t, c, "o", "G", "T", handler, func(cfg *client.PushConsumerConfig) {
		cfg.Orderly = true
		cfg.MaxReconsumeTimes = 2
	})
	p := startProducer(t, c, nil)
	sendBodies(t, p, "T", "m1", "bad", "m2")
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	if len(order) != 0 {
		t.Fatalf("consumed %v while another client holds the lock", order)
	}
	mu.Unlock()

	br.SetLock("G", mq, "")
	testutil.Eventually(t, clusterWait, func() error {
		mu.Lock()
		defer mu.Unlock()
		want := []string{"m1/0", "bad/0", "bad/1", "bad/2", "m2/0"}
		if !slices.Equal(order, want) {
			return fmt.Errorf("order %v, want %v", order, want)
		}
		return nil
	})
	if h := br.LockHolder("G", mq); h != cons.ClientID() {
		t.Fatalf("lock holder %q, want %s", h, cons.ClientID())
	}
	// bad went to %RETRY%G with reconsume times at the maximum: the broker
	// moves it to the DLQ.
	var dlq *clienttest.Send
	for _, s := range br.Sends() {
		if s.Ext["b"] == protocol.RetryTopic("G") {
			dlq = &s
		}
	}
	if dlq == nil || dlq.Ext["j"] != "2" || dlq.Ext["l"] != "2" || string(dlq.Body) != "bad" {
		t.Fatalf("dead letter send %+v", dlq)
	}
	testutil.Eventually(t, clusterWait, func() error {
		if off := br.Committed("G", "T", 0); off != 3 {
			return fmt.Errorf("committed %d, want 3", off)
		}
		return nil
	})
	if err := cons.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := br.LockHolder("G", mq); h != "" {
		t.Fatalf("lock still held by %q after Shutdown", h)
	}
}

// TestPushConsumerShutdownWaitsForLocks: a lock renewal still at the
// broker when Shutdown runs is answered before the unlock goes out, so the
// queue is not left locked to a consumer that is gone (the broker may run
// the earlier LOCK_BATCH_MQ after the later UNLOCK_BATCH_MQ).
func TestPushConsumerShutdownWaitsForLocks(t *testing.T) {
	c := startTopic(t, 1)
	br := c.Brokers[0]
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}
	cons := startPush(t, c, "o", "G", "T", func(context.Context, *client.ConsumeRequest) client.ConsumeResult {
		return client.ConsumeSuccess
	}, func(cfg *client.PushConsumerConfig) { cfg.Orderly = true })
	testutil.Eventually(t, clusterWait, func() error {
		if h := br.LockHolder("G", mq); h != cons.ClientID() {
			return fmt.Errorf("lock holder %q", h)
		}
		return nil
	})
	// Renewals (every 100 ms here) now take 300 ms at the broker: one is
	// in flight whenever Shutdown starts.
	br.SetLockDelay(300 * time.Millisecond)
	time.Sleep(150 * time.Millisecond)
	if err := cons.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // a lock left behind would land by now
	if h := br.LockHolder("G", mq); h != "" {
		t.Fatalf("lock held by %q after Shutdown", h)
	}
}

// TestPushConsumerShutdownCommitNotOvertaken: a periodic commit still at
// the broker when Shutdown runs is waited for, so Shutdown's newer commit
// lands after it (the broker's pool may run an abandoned older commit
// last, moving the group back).
func TestPushConsumerShutdownCommitNotOvertaken(t *testing.T) {
	c := startTopic(t, 1)
	br := c.Brokers[0]
	rec := newRecord()
	cons := startPush(t, c, "o", "G", "T", rec.success(), nil)
	p := startProducer(t, c, nil)
	consumed := func(n int) {
		t.Helper()
		testutil.Eventually(t, clusterWait, func() error {
			if got := rec.count(); got != n {
				return fmt.Errorf("consumed %d of %d", got, n)
			}
			return nil
		})
	}
	sendBodies(t, p, "T", "a1", "a2")
	consumed(2)
	held := br.DelayNextCommit("T", time.Second)
	sendBodies(t, p, "T", "b1", "b2")
	select {
	case off := <-held.Arrived():
		// Usually 4; 2 or 3 when the commit left before b1 or b2 was
		// consumed (a loaded machine). Any of them is older than what
		// Shutdown commits, which is what the test is about.
		if off < 2 || off > 4 {
			t.Fatalf("held commit carries %d, want 2..4", off)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no commit held")
	}
	sendBodies(t, p, "T", "c1", "c2")
	consumed(6)
	if err := cons.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-held.Stored()
	if got := br.Committed("G", "T", 0); got != 6 {
		t.Fatalf("committed %d after Shutdown, want 6", got)
	}
}

// Broadcasting consumers both get every message and keep their offsets in
// Java's offsets.json layout.
func TestPushConsumerBroadcasting(t *testing.T) {
	c := startTopic(t, 2)
	dir := t.TempDir()
	recA, recB := newRecord(), newRecord()
	h := func(r *record) client.PushHandler {
		return func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			r.add(req)
			return client.ConsumeRetryLater // dropped, not retried, when broadcasting
		}
	}
	bcast := func(cfg *client.PushConsumerConfig) {
		cfg.Model = client.Broadcasting
		cfg.OffsetStoreDir = dir
	}
	a := startPush(t, c, "a", "G", "T", h(recA), bcast)
	startPush(t, c, "b", "G", "T", h(recB), bcast)
	p := startProducer(t, c, nil)
	sendBodies(t, p, "T", "x1", "x2", "x3", "x4")
	testutil.Eventually(t, clusterWait, func() error {
		if recA.count() != 4 || recB.count() != 4 {
			return fmt.Errorf("a got %d, b %d", recA.count(), recB.count())
		}
		return nil
	})
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, a.ClientID(), "G", "offsets.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:2,{"brokerName":"broker-a","queueId":1,"topic":"T"}:2}}`; string(raw) != want {
		t.Fatalf("offsets.json = %s\nwant %s", raw, want)
	}
	if len(c.Brokers[0].SendBacks()) != 0 || c.Brokers[0].Committed("G", "T", 0) >= 0 {
		t.Fatal("a broadcasting consumer sent messages back or committed offsets on the broker")
	}
	for _, body := range []string{"x1", "x2", "x3", "x4"} {
		if d := recA.deliveries(body); len(d) != 1 {
			t.Fatalf("%s delivered %v to a", body, d)
		}
	}
}

// The broker's requests to the consumer: running info, status, direct
// consumption and an offset reset (which makes it consume again).
func TestPushConsumerBrokerRequests(t *testing.T) {
	c := startTopic(t, 2)
	br := c.Brokers[0]
	rec := newRecord()
	cons := startPush(t, c, "r", "G", "T", rec.success(), nil)
	p := startProducer(t, c, nil)
	sendBodies(t, p, "T", "a", "b", "c", "d")
	testutil.Eventually(t, clusterWait, func() error {
		if rec.count() != 4 {
			return fmt.Errorf("consumed %d", rec.count())
		}
		return nil
	})
	ctx := context.Background()
	testutil.Eventually(t, clusterWait, func() error {
		resp, err := br.AskClient(ctx, "G", cons.ClientID(), code.GetConsumerRunningInfo, map[string]string{"consumerGroup": "G", "clientId": cons.ClientID(), "jstackEnable": "true"}, nil)
		if err != nil {
			return err
		}
		body := string(resp.Body)
		for _, want := range []string{`"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"`, `"messageModel":"CLUSTERING"`, `{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"cachedMsgCount"`,
			`"topic":"%RETRY%G"`, `"commitOffset":2`, `"jstack":"goroutine `} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("running info lacks %s: %s", want, body)
			}
		}
		return nil
	})
	resp, err := br.AskClient(ctx, "G", cons.ClientID(), code.GetConsumerRunningInfo, map[string]string{"consumerGroup": "other", "clientId": cons.ClientID()}, nil)
	if err != nil || resp.Code != code.SystemError {
		t.Fatalf("running info of another group: %v %v", resp, err)
	}
	resp, err = br.AskClient(ctx, "G", cons.ClientID(), code.GetConsumerStatusFromClient, map[string]string{"topic": "T", "group": "G"}, nil)
	if err != nil || resp.Code != code.Success {
		t.Fatalf("consumer status: %v %v", resp, err)
	}
	var status struct {
		MessageQueueTable protocol.MQMap[int64] `json:"messageQueueTable"`
	}
	if err := protocol.UnmarshalMQKeyed(resp.Body, &status); err != nil || len(status.MessageQueueTable) != 2 {
		t.Fatalf("consumer status body %s: %v", resp.Body, err)
	}

	stored, _ := br.Messages("T", 0)
	rec0, err := message.EncodeStored(stored[0])
	if err != nil {
		t.Fatal(err)
	}
	resp, err = br.AskClient(ctx, "G", cons.ClientID(), code.ConsumeMessageDirectly, map[string]string{"consumerGroup": "G", "clientId": cons.ClientID(), "brokerName": "broker-a"}, rec0)
	if err != nil || resp.Code != code.Success {
		t.Fatalf("consume directly: %v %v", resp, err)
	}
	var direct map[string]any
	if err := json.Unmarshal(resp.Body, &direct); err != nil || direct["consumeResult"] != "CR_SUCCESS" || direct["autoCommit"] != true {
		t.Fatalf("consume directly answer %s", resp.Body)
	}

	// Reset both queues to 0: everything is consumed again.
	testutil.Eventually(t, clusterWait, func() error {
		if br.Committed("G", "T", 0)+br.Committed("G", "T", 1) != 4 {
			return fmt.Errorf("offsets not committed yet")
		}
		return nil
	})
	if err := br.ResetConsumerOffset("G", "T", map[protocol.MessageQueue]int64{
		{Topic: "T", BrokerName: "broker-a", QueueID: 0}: 0,
		{Topic: "T", BrokerName: "broker-a", QueueID: 1}: 0,
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, clusterWait, func() error {
		for _, b := range []string{"a", "b", "c", "d"} {
			// Consumed once normally, once directly (the first stored
			// one), once after the reset.
			want := 2
			if b == string(stored[0].Body) {
				want = 3
			}
			if d := rec.deliveries(b); len(d) != want {
				return fmt.Errorf("%s delivered %d times, want %d", b, len(d), want)
			}
		}
		return nil
	})
}

// Every goroutine a push consumer (and a transactional producer, a simple
// consumer) starts ends with Shutdown, also with queues held, handlers
// blocked and long polls parked.
func TestPushConsumerShutdownLeavesNoGoroutines(t *testing.T) {
	c := startTopic(t, 4)
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	for _, orderly := range []bool{false, true} {
		block := make(chan struct{})
		var once sync.Once
		entered := make(chan struct{})
		cfg := client.PushConsumerConfig{
			CommonConfig: client.CommonConfig{NameServers: []string{c.Namesrv.Addr()}, HeartbeatInterval: 50 * time.Millisecond},
			Group:        "leak", Orderly: orderly, ConsumeFrom: client.ConsumeFromFirstOffset,
			RebalanceInterval: 50 * time.Millisecond, LongPollingSuspend: 5 * time.Second,
			Handler: func(ctx context.Context, _ *client.ConsumeRequest) client.ConsumeResult {
				once.Do(func() { close(entered) })
				select { // a handler that honours ctx
				case <-block:
				case <-ctx.Done():
				}
				return client.ConsumeSuccess
			},
		}
		pc, err := client.NewPushConsumer(cfg)
		pc = clienttest.Subscribed(t, pc, err, "T", "*")
		p := startProducer(t, c, nil)
		sendBodies(t, p, "T", "1", "2", "3", "4", "5")
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("orderly=%v: the handler was never called (holding %v)", orderly, pc.Assigned())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := pc.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		close(block)
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// A transactional producer answering a check, and a simple consumer
	// with a receive in flight at Shutdown.
	tp, err := client.NewTransactionProducer(client.ProducerConfig{CommonConfig: common(c), Group: "TXLEAK", SendTimeout: testSendTimeout},
		func(context.Context, *message.Message) (client.TransactionState, error) {
			return client.TransactionCommit, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(); err != nil {
		t.Fatal(err)
	}
	res, err := tp.SendInTransaction(context.Background(), msg("T", "tx"), func(context.Context, *message.Message) (client.TransactionState, error) {
		return client.TransactionUnknown, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := c.Brokers[0].Messages("T", res.Queue.QueueID)
	checkTx(t, c.Brokers[0], "TXLEAK", stored[res.QueueOffset])
	endTxFor(t, c.Brokers[0], res.MsgID, true)
	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{CommonConfig: common(c), Group: "SLEAK", AwaitDuration: 10 * time.Second})
	sc = clienttest.Subscribed(t, sc, err, "T", "*")
	received := make(chan error, 1)
	go func() {
		_, err := sc.Receive(context.Background(), 1, time.Minute)
		received <- err
	}()
	time.Sleep(50 * time.Millisecond)
	for _, s := range []interface{ Shutdown(context.Context) error }{tp, sc} {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-received:
	case <-time.After(5 * time.Second):
		t.Fatal("Receive still blocked after Shutdown")
	}

	waitGoroutines(t, before)
}

// Where a queue without a committed offset starts: first, last (the end),
// a timestamp; a committed offset wins over all of them.
func TestPushConsumerConsumeFrom(t *testing.T) {
	c := startTopic(t, 1)
	p := startProducer(t, c, nil)
	sendBodies(t, p, "T", "old1", "old2")
	time.Sleep(20 * time.Millisecond)
	mid := time.Now()
	time.Sleep(20 * time.Millisecond)
	sendBodies(t, p, "T", "mid1")
	tests := []struct {
		name  string
		group string
		mod   func(*client.PushConsumerConfig)
		want  []string // consumed before the new message
	}{
		{"first", "G1", func(cfg *client.PushConsumerConfig) { cfg.ConsumeFrom = client.ConsumeFromFirstOffset }, []string{"old1", "old2", "mid1"}},
		{"last", "G2", func(cfg *client.PushConsumerConfig) { cfg.ConsumeFrom = client.ConsumeFromLastOffset }, nil},
		{"timestamp", "G3", func(cfg *client.PushConsumerConfig) {
			cfg.ConsumeFrom = client.ConsumeFromTimestamp
			cfg.ConsumeTimestamp = mid
		}, []string{"mid1"}},
	}
	recs := map[string]*record{}
	for _, tt := range tests {
		rec := newRecord()
		recs[tt.name] = rec
		pc := startPush(t, c, tt.name, tt.group, "T", rec.success(), tt.mod)
		testutil.Eventually(t, clusterWait, func() error {
			if len(topicQueues(pc.Assigned(), "T")) != 1 {
				return fmt.Errorf("%s: no queue yet", tt.name)
			}
			return nil
		})
	}
	// A queue is positioned when it is assigned; give the pulls a moment,
	// then one more message shows who is positioned where.
	time.Sleep(100 * time.Millisecond)
	sendBodies(t, p, "T", "new")
	for _, tt := range tests {
		rec := recs[tt.name]
		testutil.Eventually(t, clusterWait, func() error {
			want := append(slices.Clone(tt.want), "new")
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.bodies) != len(want) {
				return fmt.Errorf("%s consumed %v, want %v", tt.name, rec.bodies, want)
			}
			for _, b := range want {
				if len(rec.bodies[b]) != 1 {
					return fmt.Errorf("%s consumed %v, want %v", tt.name, rec.bodies, want)
				}
			}
			return nil
		})
	}

	// G2 committed 4 (it consumed "new"): another consumer of G2 starting
	// "from first" resumes at the committed offset instead.
	testutil.Eventually(t, clusterWait, func() error {
		if off := c.Brokers[0].Committed("G2", "T", 0); off != 4 {
			return fmt.Errorf("G2 committed %d", off)
		}
		return nil
	})
	// Its id sorts before the running G2 consumer's: it gets the queue.
	rec := newRecord()
	again := startPush(t, c, "again", "G2", "T", rec.success(), func(cfg *client.PushConsumerConfig) { cfg.ConsumeFrom = client.ConsumeFromFirstOffset })
	testutil.Eventually(t, clusterWait, func() error {
		if q := topicQueues(again.Assigned(), "T"); len(q) != 1 {
			return fmt.Errorf("the new consumer holds %v", q)
		}
		return nil
	})
	sendBodies(t, p, "T", "newer")
	testutil.Eventually(t, clusterWait, func() error {
		if d := rec.deliveries("newer"); len(d) != 1 {
			return fmt.Errorf("newer delivered %v", d)
		}
		return nil
	})
	if rec.count() != 1 {
		t.Fatalf("a consumer with a committed offset re-read old messages: %v", rec.bodies)
	}
}

// NOTIFY_CONSUMER_IDS_CHANGED rebalances at once, without waiting for the
// periodic rebalance; Unsubscribe releases the topic's queues.
func TestPushConsumerRebalanceOnNotify(t *testing.T) {
	c := startTopic(t, 4)
	ok := func(context.Context, *client.ConsumeRequest) client.ConsumeResult { return client.ConsumeSuccess }
	slow := func(cfg *client.PushConsumerConfig) { cfg.RebalanceInterval = time.Hour }
	a := startPush(t, c, "a", "G", "T", ok, slow)
	testutil.Eventually(t, clusterWait, func() error {
		if n := len(topicQueues(a.Assigned(), "T")); n != 4 {
			return fmt.Errorf("a holds %d queues", n)
		}
		return nil
	})
	b := startPush(t, c, "b", "G", "T", ok, slow)
	testutil.Eventually(t, clusterWait, func() error {
		if na, nb := len(topicQueues(a.Assigned(), "T")), len(topicQueues(b.Assigned(), "T")); na != 2 || nb != 2 {
			return fmt.Errorf("a holds %d, b %d", na, nb)
		}
		return nil
	})
	// b vanishes without unregistering (as after a crash); the broker's
	// notification makes a take everything back.
	c.Brokers[0].RemoveConsumer("G", b.ClientID())
	testutil.Eventually(t, clusterWait, func() error {
		if n := len(topicQueues(a.Assigned(), "T")); n != 4 {
			return fmt.Errorf("a holds %d queues", n)
		}
		return nil
	})
	a.Unsubscribe("T")
	c.Brokers[0].NotifyConsumersChanged("G")
	testutil.Eventually(t, clusterWait, func() error {
		if q := a.Assigned(); len(q) != 0 {
			return fmt.Errorf("a still holds %v", q)
		}
		return nil
	})
}

// With a tiny pull threshold the pull loop pauses and resumes as the
// handler makes room, for concurrent and orderly consumers alike.
func TestPushConsumerFlowControl(t *testing.T) {
	for _, orderly := range []bool{false, true} {
		t.Run(fmt.Sprintf("orderly=%v", orderly), func(t *testing.T) {
			c := startCluster(t, "broker-a")
			c.CreateTopic("T", 1)
			p := startProducer(t, c, nil)
			var bodies []string
			for i := range 40 {
				bodies = append(bodies, strconv.Itoa(i))
			}
			sendBodies(t, p, "T", bodies...)
			rec := newRecord()
			startPush(t, c, "fc", "G", "T", func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
				rec.add(req)
				time.Sleep(time.Millisecond)
				return client.ConsumeSuccess
			}, func(cfg *client.PushConsumerConfig) {
				cfg.Orderly = orderly
				cfg.PullThresholdForQueue = 3
				cfg.PullBatchSize = 2
			})
			testutil.Eventually(t, clusterWait, func() error {
				if n := rec.count(); n != 40 {
					return fmt.Errorf("consumed %d of 40", n)
				}
				return nil
			})
		})
	}
}
