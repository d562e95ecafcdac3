package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// liteRestartTopics is the number of lite topics of TestLiteRestartRecoversEvents
// (one message each).
const liteRestartTopics = 100_000

// liteDrain pops for clientID until want distinct lite topics have been
// delivered and acked (or the deadline), acking each message with
// concurrent acks; seen counts deliveries per lite topic.
type liteDrain struct {
	t        *testing.T
	rc       *remoting.Client
	addr     string
	clientID string
	mu       sync.Mutex
	seen     map[string]int
	dups     int
}

func (d *liteDrain) distinct() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

func (d *liteDrain) run(ctx context.Context, want int, timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	acks := make(chan func(), 1024)
	var ackErr atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range acks {
				f()
			}
		}()
	}
	defer func() {
		close(acks)
		wg.Wait()
		if e := ackErr.Load(); e != nil {
			d.t.Fatal(e)
		}
	}()
	for d.distinct() < want {
		if time.Now().After(deadline) {
			d.t.Fatalf("%d of %d lite topics delivered after %v", d.distinct(), want, timeout)
		}
		ext := litePopExt(d.clientID, liteGroup, time.Second)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := d.rc.Invoke(pctx, d.addr, remoting.NewRequest(code.PopLiteMessage, ext, nil))
		cancel()
		if err != nil {
			d.t.Fatalf("pop: %v", err)
		}
		if resp.Code == code.PollingTimeout || resp.Code == code.PullNotFound {
			continue
		}
		p := decodeLitePop(d.t, resp)
		for _, m := range p.msgs {
			lite := m.Properties[message.PropertyLiteTopic]
			off, err := strconv.ParseInt(m.Properties[message.PropertyInnerMultiQueueOffset], 10, 64)
			if err != nil || string(m.Body) != "body-"+lite {
				d.t.Fatalf("popped %q for lite topic %q, offset %q", m.Body, lite, m.Properties[message.PropertyInnerMultiQueueOffset])
			}
			d.mu.Lock()
			d.seen[lite]++
			if d.seen[lite] > 1 {
				d.dups++
			}
			d.mu.Unlock()
			ext := map[string]string{
				"consumerGroup": liteGroup, "topic": liteParent, "queueId": "0", "offset": strconv.FormatInt(off, 10), "liteTopic": lite,
				"extraInfo": fmt.Sprintf("0 %s %s 999 0 broker-a 0 %d", p.ext["popTime"], p.ext["invisibleTime"], off),
			}
			acks <- func() {
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				resp, err := d.rc.Invoke(actx, d.addr, remoting.NewRequest(code.AckMessage, ext, nil))
				if err != nil || resp.Code != code.Success {
					ackErr.CompareAndSwap(nil, fmt.Errorf("ack %s: %v %+v", lite, err, resp))
				}
			}
		}
	}
}

// TestLiteRestartRecoversEvents: 100k lite topics, one message each, one
// client subscribed to all of them. Its event set holds 100 lite topics
// (maxClientEventCount), so most events are dropped at dispatch and
// recovered by the full dispatch. Half are consumed; the broker is killed
// with SIGKILL, which loses every pending event; after the restart the lite
// topics, their messages and the group's offsets are all there, the client
// re-registers (the 30 s full sync of a lite consumer), and full dispatch
// brings every remaining message: each of the 100k is delivered, none of
// the consumed half again.
func TestLiteRestartRecoversEvents(t *testing.T) {
	skipShort(t, "100k lite topics on a real broker")
	t.Parallel() // alone, it kept the package's parallel tests waiting
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 1, BrokerConf: map[string]string{
		"enableLmq": "true", "enableMultiDispatch": "true",
		"maxLmqConsumeQueueNum":          strconv.Itoa(2 * liteRestartTopics),
		"maxLiteSubscriptionCount":       strconv.Itoa(2 * liteRestartTopics),
		"liteEventCheckInterval":         "200",
		"liteEventFullDispatchDelayTime": "100",
		"flushConsumerOffsetInterval":    "500",
	}})
	bp := c.Brokers()[0]
	if out, err := c.MQAdmin(t, "updateTopic", "-c", "DefaultCluster", "-t", liteParent, "-r", "4", "-w", "4",
		"-a", "+message.type=LITE,+lite.topic.expiration=1440"); err != nil {
		t.Fatalf("updateTopic: %v\n%s", err, out)
	}
	if out, err := c.MQAdmin(t, "updateSubGroup", "-c", "DefaultCluster", "-g", liteGroup, "--attributes",
		"+lite.bind.topic="+liteParent+",+lite.sub.client.quota="+strconv.Itoa(2*liteRestartTopics)); err != nil {
		t.Fatalf("updateSubGroup: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	names := make([]string, liteRestartTopics)
	for i := range names {
		names[i] = "u" + strconv.Itoa(i)
	}
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	lc := &liteClient{t: t, rc: rc, addr: bp.Addr()}
	// The full set in one COMPLETE_ADD, as a lite consumer's periodic sync.
	syncAll := func() {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"subscriptionSet": []any{map[string]any{
			"action": "COMPLETE_ADD", "clientId": "client-1", "group": liteGroup, "topic": liteParent, "liteTopicSet": names, "version": 1,
		}}})
		lc.want("complete add", lc.invoke(code.LiteSubscriptionCtl, nil, body), code.Success, "")
	}
	syncAll()

	// 100k lite topics, sent in batches by our SDK.
	p := startProducer(t, client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}}, Group: "lite_restart_pg"})
	start := time.Now()
	const batch = 200
	var sendErr atomic.Value
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := range work {
				msgs := make([]*message.Message, 0, batch)
				for _, n := range names[from:min(from+batch, len(names))] {
					m := &message.Message{Topic: liteParent, Body: []byte("body-" + n)}
					m.SetProperty(message.PropertyLiteTopic, n)
					msgs = append(msgs, m)
				}
				if _, err := p.SendBatch(ctx, msgs); err != nil {
					sendErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	for from := 0; from < len(names); from += batch {
		work <- from
	}
	close(work)
	wg.Wait()
	if e := sendErr.Load(); e != nil {
		t.Fatalf("send: %v", e)
	}
	t.Logf("%d lite topics created in %v", liteRestartTopics, time.Since(start).Round(time.Millisecond))

	adm, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	// allLMQs waits until the broker holds every lite topic's LMQ.
	allLMQs := func(within time.Duration, when string) {
		t.Helper()
		testutil.Eventually(t, within, func() error {
			bi, err := adm.GetBrokerLiteInfo(ctx, bp.Addr())
			if err != nil {
				return err
			}
			if bi.CurrentLmqNum != liteRestartTopics {
				return fmt.Errorf("%d LMQs%s", bi.CurrentLmqNum, when)
			}
			return nil
		})
	}
	allLMQs(30*time.Second, "")

	// The first half, through events and full dispatch.
	d := &liteDrain{t: t, rc: rc, addr: bp.Addr(), clientID: "client-1", seen: map[string]int{}}
	start = time.Now()
	d.run(ctx, liteRestartTopics/2, 90*time.Second)
	t.Logf("first %d lite topics consumed in %v", d.distinct(), time.Since(start).Round(time.Millisecond))
	consumed := d.distinct()
	time.Sleep(1500 * time.Millisecond) // the offsets of the acks reach Pebble
	bp.Kill(t)
	bp.Start(t)

	// Lite topics and the group's offsets survived.
	allLMQs(20*time.Second, " after the restart")
	gi, err := adm.GetLiteGroupInfo(ctx, bp.Addr(), liteGroup, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	if gi.TotalLagCount != int64(liteRestartTopics-consumed) {
		t.Fatalf("after the restart: group lag %d, want %d", gi.TotalLagCount, liteRestartTopics-consumed)
	}
	// The events died with the broker; the client's next full sync
	// re-registers it and full dispatch finds the backlog.
	syncAll()
	start = time.Now()
	d.run(ctx, liteRestartTopics, 120*time.Second)
	t.Logf("remaining lite topics consumed in %v after the restart; %d redelivered", time.Since(start).Round(time.Millisecond), d.dups)
	if d.dups != 0 {
		t.Fatalf("%d lite topics delivered twice", d.dups)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		gi, err := adm.GetLiteGroupInfo(ctx, bp.Addr(), liteGroup, "", 5)
		if err != nil {
			return err
		}
		if gi.TotalLagCount != 0 {
			return fmt.Errorf("group lag %d at the end", gi.TotalLagCount)
		}
		return nil
	})
}
