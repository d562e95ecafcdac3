package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

const bcastTopic = "BcastTopic"

// bcastCollector counts, per "i" property, how often a broadcasting
// consumer got message i.
type bcastCollector struct {
	mu  sync.Mutex
	got map[int]int
}

func newBcastCollector() *bcastCollector { return &bcastCollector{got: map[int]int{}} }

func (c *bcastCollector) handle(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		i, _ := strconv.Atoi(m.GetProperty("i"))
		c.got[i]++
	}
	return consumer.ConsumeSuccess, nil
}

// check reports whether the collector holds exactly want, each once.
func (c *bcastCollector) check(want []int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int
	for i, n := range c.got {
		if n != 1 {
			return fmt.Errorf("message %d delivered %d times", i, n)
		}
		ids = append(ids, i)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		return fmt.Errorf("got %v, want %v", ids, want)
	}
	return nil
}

func (c *bcastCollector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// startBcastConsumer starts a broadcasting client-go push consumer of
// bcastTopic in group, named instance.
func startBcastConsumer(t *testing.T, namesrv, group, instance string, col *bcastCollector) rocketmq.PushConsumer {
	t.Helper()
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{namesrv})),
		consumer.WithGroupName(group), consumer.WithInstance(instance), consumer.WithConsumerModel(consumer.BroadCasting),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	goSubscribed(t, pc, err, bcastTopic, consumer.MessageSelector{}, col.handle)
	return pc
}

// TestBroadcastClientGo: two rocketmq-client-go push consumers of one
// group in BROADCASTING mode each receive every message, once; one of them
// restarts and resumes from its client-side (local file) offsets: it gets
// only what was sent while it was down, nothing twice. The broker keeps no
// offsets for the group. A group whose subscription-group config has
// consumeBroadcastEnable=false is refused (NO_PERMISSION) and its
// broadcasting consumer receives nothing.
func TestBroadcastClientGo(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("error") // client-go logs through a process-wide logger
	c := startCluster(t, framework.Options{Brokers: 1})
	addr := c.Brokers()[0].Addr()
	// client-go keeps broadcasting offsets under
	// $HOME/.rocketmq_client_go/<group>/<clientId>/offset.json (its
	// location is fixed when the package initialises): a group name unique
	// to this run keeps runs apart, and the files go at cleanup.
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	group, denied := "bcast_cg_"+suffix, "bcast_denied_cg_"+suffix
	t.Cleanup(func() {
		home, err := os.UserHomeDir()
		if err != nil {
			return
		}
		for _, g := range []string{group, denied} {
			_ = os.RemoveAll(filepath.Join(home, ".rocketmq_client_go", g))
		}
	})
	for _, args := range [][]string{
		{"updateTopic", "-b", addr, "-t", bcastTopic, "-r", "4", "-w", "4"},
		{"updateSubGroup", "-b", addr, "-g", denied, "-d", "false"},
	} {
		mqadmin(t, c, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	colA, colB, colDenied := newBcastCollector(), newBcastCollector(), newBcastCollector()
	pcA := startBcastConsumer(t, c.NamesrvAddr(), group, "bcast-a", colA)
	pcB := startBcastConsumer(t, c.NamesrvAddr(), group, "bcast-b", colB)
	defer func() { _ = pcB.Shutdown() }()
	pcDenied := startBcastConsumer(t, c.NamesrvAddr(), denied, "bcast-denied", colDenied)
	defer func() { _ = pcDenied.Shutdown() }()

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("bcast_pg"), producer.WithInstanceName("bcast-producer"), producer.WithRetry(0),
		producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	send := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			m := primitive.NewMessage(bcastTopic, []byte(fmt.Sprint("bcast-", i)))
			m.WithProperty("i", strconv.Itoa(i))
			if _, err := p.SendSync(ctx, m); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
	}

	const first, second = 40, 20
	start := time.Now()
	send(0, first)
	testutil.Eventually(t, 60*time.Second, func() error {
		if err := colA.check(span(0, first)); err != nil {
			return fmt.Errorf("consumer a: %w", err)
		}
		if err := colB.check(span(0, first)); err != nil {
			return fmt.Errorf("consumer b: %w", err)
		}
		return nil
	})

	t.Logf("both consumers got all %d messages after %v", first, time.Since(start).Round(time.Millisecond))

	// Consumer a stops (client-go persists its local offsets on
	// shutdown); b keeps consuming what is sent meanwhile.
	if err := pcA.Shutdown(); err != nil {
		t.Fatal(err)
	}
	send(first, first+second)
	testutil.Eventually(t, 60*time.Second, func() error { return colB.check(span(0, first+second)) })

	// Restarted with the same group and instance, a resumes at its own
	// offsets: exactly the messages it missed.
	colA2 := newBcastCollector()
	pcA2 := startBcastConsumer(t, c.NamesrvAddr(), group, "bcast-a", colA2)
	defer func() { _ = pcA2.Shutdown() }()
	restarted := time.Now()
	testutil.Eventually(t, 60*time.Second, func() error { return colA2.check(span(first, first+second)) })
	t.Logf("the restarted consumer caught up after %v", time.Since(restarted).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // nothing older trickles in later
	if err := colA2.check(span(first, first+second)); err != nil {
		t.Fatalf("restarted broadcasting consumer: %v", err)
	}
	if err := colB.check(span(0, first+second)); err != nil {
		t.Fatalf("consumer b at the end: %v", err)
	}

	// Broadcasting offsets live in the clients, not on the broker.
	for q := 0; q < 4; q++ {
		resp := roundTrip(t, addr, remoting.NewRequest(code.QueryConsumerOffset, map[string]string{
			"consumerGroup": group, "topic": bcastTopic, "queueId": strconv.Itoa(q), "setZeroIfNotFound": "false",
		}, nil))
		if resp.Code != code.QueryNotFound {
			t.Fatalf("broker has an offset for broadcasting group %s queue %d: %d %q %v", group, q, resp.Code, resp.Remark, resp.ExtFields)
		}
	}

	// consumeBroadcastEnable=false: the group's broadcasting pulls are
	// refused and its consumer never gets a message.
	pull := remoting.NewRequest(code.PullMessage, map[string]string{
		"consumerGroup": denied, "topic": bcastTopic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0", "expressionType": "TAG",
	}, nil)
	if resp := roundTrip(t, addr, pull); resp.Code != code.NoPermission {
		t.Fatalf("pull of a group with consumeBroadcastEnable=false: %d %q, want NO_PERMISSION", resp.Code, resp.Remark)
	}
	if n := colDenied.count(); n != 0 {
		t.Fatalf("consumer of a group with consumeBroadcastEnable=false got %d messages", n)
	}
}
