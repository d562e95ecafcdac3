package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// popClient drives a broker with raw POP_MESSAGE / ACK_MESSAGE requests,
// building receipts as the Java client does (MQClientAPIImpl
// .processPopResponse).
type popClient struct {
	t     *testing.T
	rc    *remoting.Client
	addr  func() string
	group string
	topic string
}

// newPopClients creates topic and orderTopic with queues queues each on
// c's first broker and returns it with raw pop clients of group for the
// two topics; their remoting client closes when t ends.
func newPopClients(t *testing.T, c framework.Cluster, group, topic, orderTopic string, queues int) (b framework.Broker, pc, oc *popClient) {
	t.Helper()
	b = c.Brokers()[0]
	n := strconv.Itoa(queues)
	for _, tp := range []string{topic, orderTopic} {
		mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", tp, "-r", n, "-w", n)
	}
	rc := remoting.NewClient(remoting.DefaultClientConfig(), slog.New(slog.DiscardHandler))
	t.Cleanup(func() { rc.Close() })
	addr := func() string { return b.Addr() }
	return b, &popClient{t: t, rc: rc, addr: addr, group: group, topic: topic}, &popClient{t: t, rc: rc, addr: addr, group: group, topic: orderTopic}
}

// popMsg is one popped message with its receipt handle (POP_CK).
type popMsg struct {
	body      string
	queueID   int32
	offset    int64
	reconsume int32
	count     int // orderly consume count
	receipt   string
	ackTopic  string
}

func (c *popClient) send(qid int32, body string) {
	c.t.Helper()
	props, err := message.EncodeProperties(map[string]string{message.PropertyTags: "P", message.PropertyKeys: body})
	if err != nil {
		c.t.Fatal(err)
	}
	req := remoting.NewRequest(code.SendMessage, map[string]string{
		"producerGroup": "pop_pg", "topic": c.topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": strconv.Itoa(int(qid)), "sysFlag": "0", "flag": "0", "properties": string(props),
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
	}, []byte(body))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, c.addr(), req)
	if err != nil || resp.Code != code.Success {
		c.t.Fatalf("send %s: %v %+v", body, err, resp)
	}
	// A send is answered before the consume queue has the message: wait
	// for it, so that a pop right after sees everything sent (under load
	// one popped two of three).
	qo, err := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
	if err != nil {
		c.t.Fatalf("send %s: queueOffset %q", body, resp.Ext("queueOffset"))
	}
	testutil.Eventually(c.t, 5*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := c.rc.Invoke(ctx, c.addr(), remoting.NewRequest(code.GetMaxOffset,
			map[string]string{"topic": c.topic, "queueId": strconv.Itoa(int(qid))}, nil))
		if err != nil {
			return err
		}
		if max, _ := strconv.ParseInt(r.Ext("offset"), 10, 64); max <= qo {
			return fmt.Errorf("%s/%d: max offset %d, the message sent is at %d", c.topic, qid, max, qo)
		}
		return nil
	})
}

// pop pops up to max messages from every queue, waiting up to poll.
func (c *popClient) pop(max int, invisible, poll time.Duration, order bool) []popMsg {
	c.t.Helper()
	req := remoting.NewRequest(code.PopMessage, map[string]string{
		"consumerGroup": c.group, "topic": c.topic, "queueId": "-1", "maxMsgNums": strconv.Itoa(max),
		"invisibleTime": strconv.FormatInt(invisible.Milliseconds(), 10), "pollTime": strconv.FormatInt(poll.Milliseconds(), 10),
		"bornTime": strconv.FormatInt(time.Now().UnixMilli(), 10), "initMode": "0", "order": strconv.FormatBool(order),
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), poll+5*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, c.addr(), req)
	if err != nil {
		c.t.Fatalf("pop: %v", err)
	}
	switch resp.Code {
	case code.Success:
	case code.PollingTimeout, code.PullNotFound:
		return nil
	default:
		c.t.Fatalf("pop: code %d %s", resp.Code, resp.Remark)
	}
	msgs, err := message.DecodeAll(resp.Body, message.DecodeOptions{})
	if err != nil {
		c.t.Fatalf("decode pop body: %v", err)
	}
	starts := infoMap(c.t, resp.Ext("startOffsetInfo"))
	counts := infoMap(c.t, resp.Ext("orderCountInfo"))
	var out []popMsg
	for _, m := range msgs {
		pm := popMsg{body: string(m.Body), queueID: m.QueueID, offset: m.QueueOffset, reconsume: m.ReconsumeTimes, ackTopic: c.topic}
		pm.receipt = m.Properties[message.PropertyPopCK]
		flag := "0"
		if strings.HasPrefix(m.Topic, "%RETRY%") {
			flag = "1"
		}
		if pm.receipt == "" {
			start, ok := starts[flag+"@"+strconv.Itoa(int(m.QueueID))]
			if !ok {
				c.t.Fatalf("no startOffsetInfo for queue %d in %q", m.QueueID, resp.Ext("startOffsetInfo"))
			}
			pm.receipt = fmt.Sprintf("%s %s %s %s %s broker-a %d %d", start, resp.Ext("popTime"), resp.Ext("invisibleTime"),
				resp.Ext("reviveQid"), flag, m.QueueID, m.QueueOffset)
		}
		f := strings.Fields(pm.receipt)
		if len(f) != 8 {
			c.t.Fatalf("receipt %q", pm.receipt)
		}
		if f[4] == "1" {
			pm.ackTopic = "%RETRY%" + c.group + "_" + c.topic
		}
		if n, ok := counts[fmt.Sprintf("%s@qo%d%%%d", flag, m.QueueID, m.QueueOffset)]; ok {
			pm.count, _ = strconv.Atoi(n)
		}
		if m.Topic != c.topic {
			c.t.Errorf("popped message shows topic %q", m.Topic)
		}
		out = append(out, pm)
	}
	return out
}

func infoMap(t *testing.T, s string) map[string]string {
	out := map[string]string{}
	if s == "" {
		return out
	}
	for _, e := range strings.Split(s, ";") {
		p := strings.Split(e, " ")
		if len(p) != 3 {
			t.Fatalf("offset info entry %q", e)
		}
		out[p[0]+"@"+p[1]] = p[2]
	}
	return out
}

// ack acks one message; it reports the response code.
func (c *popClient) ack(m popMsg) int32 {
	c.t.Helper()
	req := remoting.NewRequest(code.AckMessage, map[string]string{
		"consumerGroup": c.group, "topic": m.ackTopic, "queueId": strconv.Itoa(int(m.queueID)),
		"extraInfo": m.receipt, "offset": strconv.FormatInt(m.offset, 10),
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, c.addr(), req)
	if err != nil {
		c.t.Fatalf("ack: %v", err)
	}
	return resp.Code
}

// popLedger checks the pop guarantees: what was acked (SUCCESS) is never
// handed out again, what was not comes back with reconsumeTimes+1.
type popLedger struct {
	t          *testing.T
	acked      map[string]bool
	deliveries map[string][]int32 // reconsume times of each delivery
	violations []string
}

func newPopLedger(t *testing.T) *popLedger {
	return &popLedger{t: t, acked: map[string]bool{}, deliveries: map[string][]int32{}}
}

func (l *popLedger) delivered(m popMsg) {
	if l.acked[m.body] {
		l.violations = append(l.violations, fmt.Sprintf("%s delivered again after its ack (reconsume %d)", m.body, m.reconsume))
	}
	l.deliveries[m.body] = append(l.deliveries[m.body], m.reconsume)
}

// TestPopAckReviveAndKill pops with raw requests, acks two thirds of the
// messages, lets the others time out, restarts the broker in the middle
// (with messages in flight) and pops on: no acked message is handed out
// again, every un-acked one comes back through the retry topic with
// reconsumeTimes+1, and orderly pops keep each queue in order across the
// restart. The restart is a graceful stop, and, where the cluster can, a
// kill with SIGKILL (consumer offsets not yet flushed).
func TestPopAckReviveAndKill(t *testing.T) {
	skipShort(t, "real processes")
	t.Parallel() // mostly waits for invisible times to pass and revives
	t.Run("graceful", func(t *testing.T) { testPopAckRevive(t, false) })
	t.Run("kill -9", func(t *testing.T) { testPopAckRevive(t, true) })
}

func testPopAckRevive(t *testing.T, crash bool) {
	var needs []framework.Capability
	if crash {
		needs = append(needs, framework.Crash)
	}
	const (
		topic     = "PopE2ETopic"
		orderTpc  = "PopE2EOrderTopic"
		group     = "pop_e2e_cg"
		total     = 120
		perQueue  = 8
		invisible = 2500 * time.Millisecond
		// orderInvisible outlasts the restart, so that the blocked queues
		// can be seen still blocked after it.
		orderInvisible = 6 * time.Second
	)
	c := startCluster(t, framework.Options{Brokers: 1, Needs: needs})
	b, pc, oc := newPopClients(t, c, group, topic, orderTpc, 4)
	for i := 0; i < total; i++ {
		pc.send(int32(i%4), fmt.Sprintf("pop-%03d", i))
	}
	for q := int32(0); q < 4; q++ {
		for i := 0; i < perQueue; i++ {
			oc.send(q, fmt.Sprintf("ord-%d-%02d", q, i))
		}
	}

	led := newPopLedger(t)
	n := 0
	// Phase 1: first deliveries; every third message is left un-acked.
	for len(led.deliveries) < total {
		msgs := pc.pop(16, invisible, time.Second, false)
		if len(msgs) == 0 && len(led.deliveries) < total {
			t.Fatalf("pop found nothing with %d of %d messages delivered", len(led.deliveries), total)
		}
		for _, m := range msgs {
			led.delivered(m)
			if m.reconsume > 0 {
				continue // too early for a redelivery; counted below
			}
			n++
			if n%3 != 0 {
				if got := pc.ack(m); got != code.Success {
					t.Fatalf("ack %s: code %d", m.body, got)
				}
				led.acked[m.body] = true
			}
		}
	}
	// Orderly phase 1: one pop per queue, ack only the first message of each.
	order := map[int32][]int64{} // acked offsets per queue, in ack order
	orderPopped := time.Now()
	for range 4 {
		for _, m := range oc.pop(3, orderInvisible, 500*time.Millisecond, true) {
			if m.offset == 0 {
				if got := oc.ack(m); got != code.Success {
					t.Fatalf("orderly ack %s: code %d", m.body, got)
				}
				order[m.queueID] = append(order[m.queueID], m.offset)
			}
		}
	}
	if len(order) != 4 {
		t.Fatalf("orderly pops reached %d queues, want 4", len(order))
	}
	// The queues are blocked by their un-acked messages.
	if msgs := oc.pop(3, orderInvisible, 0, true); len(msgs) != 0 {
		t.Fatalf("blocked orderly queues popped %v", msgs)
	}

	// Crash: consumer offsets are flushed every 5 s; Pebble keeps no WAL.
	if crash {
		b.Kill(t)
		b.Start(t)
	} else {
		b.Restart(t)
	}
	for _, line := range strings.Split(b.Logs(), "\n") {
		if strings.Contains(line, "pop journal replayed") || strings.Contains(line, "raised to the pop journal") {
			t.Logf("restarted broker: %s", line)
		}
	}

	// Orderly: still blocked right after the restart.
	if msgs := oc.pop(3, orderInvisible, 0, true); len(msgs) != 0 && time.Since(orderPopped) < orderInvisible-time.Second {
		t.Fatalf("orderly queues unblocked by the restart: %v", msgs)
	} else if len(msgs) != 0 {
		t.Fatalf("the restart took longer than the orderly invisible time (%v): cannot tell", orderInvisible)
	}
	// Phase 2: pop on until every message is acked.
	deadline := time.Now().Add(20 * time.Second)
	for len(led.acked) < total && time.Now().Before(deadline) {
		for _, m := range pc.pop(16, invisible, time.Second, false) {
			led.delivered(m)
			if m.reconsume == 0 {
				// Only a message popped before the restart and not acked
				// may come back; it must come through the retry topic.
				led.violations = append(led.violations, fmt.Sprintf("%s delivered again without reconsumeTimes+1", m.body))
			}
			if got := pc.ack(m); got != code.Success {
				t.Fatalf("ack %s: code %d", m.body, got)
			}
			led.acked[m.body] = true
		}
	}
	for body, d := range led.deliveries {
		if !led.acked[body] {
			led.violations = append(led.violations, fmt.Sprintf("%s lost: delivered %v, never back", body, d))
		}
	}
	if len(led.deliveries) != total {
		t.Errorf("%d distinct messages delivered, want %d", len(led.deliveries), total)
	}
	if len(led.violations) > 0 {
		slices.Sort(led.violations)
		t.Fatalf("%d violations:\n%s", len(led.violations), strings.Join(led.violations[:min(20, len(led.violations))], "\n"))
	}
	redelivered := 0
	for _, d := range led.deliveries {
		if len(d) > 1 {
			redelivered++
		}
	}
	t.Logf("%d messages, %d acked at first delivery, %d redelivered with reconsumeTimes+1 across the restart", total, total-redelivered, redelivered)
	if redelivered != total/3 {
		t.Errorf("%d redelivered, want %d (every third)", redelivered, total/3)
	}

	// Orderly phase 2: each queue continues at its first un-acked offset,
	// strictly in order, the re-popped ones counted.
	deadline = time.Now().Add(15 * time.Second)
	done := func() bool {
		for q := int32(0); q < 4; q++ {
			if len(order[q]) < perQueue {
				return false
			}
		}
		return true
	}
	for !done() && time.Now().Before(deadline) {
		for _, m := range oc.pop(4, orderInvisible, time.Second, true) {
			want := int64(len(order[m.queueID]))
			if m.offset != want {
				t.Fatalf("orderly queue %d handed out offset %d, want %d (acked %v)", m.queueID, m.offset, want, order[m.queueID])
			}
			// Offset 1 was handed out before the restart and leads the
			// queue's first pop after it: counted once. (Offset 2 may fall
			// into a later pop, whose count only looks at the previous
			// pop's offsets, as Java's does.)
			if m.offset == 1 && m.count != 1 {
				t.Errorf("orderly queue %d offset 1: consume count %d, want 1", m.queueID, m.count)
			}
			if got := oc.ack(m); got != code.Success {
				t.Fatalf("orderly ack %s: code %d", m.body, got)
			}
			order[m.queueID] = append(order[m.queueID], m.offset)
		}
	}
	if !done() {
		t.Fatalf("orderly queues not consumed in time: %v", order)
	}
}

// TestPopDeadLetter: messages popped (with our SDK's simple consumer) and
// never acked, one of them also given a new invisible time at each
// delivery, are revived through the group's pop retry topic with
// reconsume times 1, 2, … and, once the group's retryMaxTimes (2, set with
// updateSubGroup -r) is used up, land in %DLQ%<group> (reconsume times
// max+1, same message id) and are never handed out again.
func TestPopDeadLetter(t *testing.T) {
	skipShort(t, "real processes")
	t.Parallel()
	const (
		topic     = "PopDlqTopic"
		group     = "pop_dlq_cg"
		maxTimes  = 2
		invisible = time.Second // the SDK's minimum
	)
	c := startCluster(t, framework.Options{Brokers: 1})
	b := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", topic, "-r", "2", "-w", "2")
	mqadmin(t, c, "updateSubGroup", "-b", b.Addr(), "-g", group, "-r", strconv.Itoa(maxTimes))
	common := client.CommonConfig{NameServers: []string{c.NamesrvAddr()}, Logger: slog.New(slog.DiscardHandler)}
	testutil.Eventually(t, 15*time.Second, func() error {
		_, err := c.MQAdmin(t, "topicRoute", "-t", topic)
		return err
	})
	p := startProducer(t, client.ProducerConfig{CommonConfig: common, Group: "pop_dlq_pg"})
	ctx := context.Background()
	ids := map[string]string{}
	for _, body := range []string{"never-acked", "extended"} {
		res, err := p.SendSync(ctx, &message.Message{Topic: topic, Body: []byte(body)})
		if err != nil {
			t.Fatal(err)
		}
		ids[body] = res.MsgID
	}
	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig: common, Group: group, AwaitDuration: 500 * time.Millisecond, ConsumeFrom: client.ConsumeFromFirstOffset,
	})
	subscribed(t, sc, err, topic)
	defer sc.Shutdown(context.Background())

	seen := map[string][]int32{} // body → reconsume times of its deliveries
	dlq := protocol.DLQTopic(group)
	r := newTopicReader(t, c.NamesrvAddr(), "pop_dlq_reader")
	var dead []*message.Message
	deadline := time.Now().Add(30 * time.Second)
	for len(dead) < len(ids) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: deliveries %v, %d in %s", seen, len(dead), dlq)
		}
		msgs, err := sc.Receive(ctx, 4, invisible)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			body := string(m.Body)
			seen[body] = append(seen[body], m.ReconsumeTimes)
			if m.Topic != topic || m.UniqKey() != ids[body] {
				t.Fatalf("delivered %s as topic %s id %s, sent to %s as %s", body, m.Topic, m.UniqKey(), topic, ids[body])
			}
			if body == "extended" {
				// The change writes a new checkpoint and acks the popped
				// one: the message is revived once, from the new
				// checkpoint, and still counted.
				if err := sc.ChangeInvisibleTime(ctx, m, invisible); err != nil {
					t.Fatalf("change invisible time of %s: %v", body, err)
				}
			}
		}
		if dead, err = readAll(ctx, r.c, dlq); err != nil && !errors.Is(err, client.ErrNoRoute) {
			t.Fatal(err)
		}
	}
	// Nothing more comes once they are dead letters.
	for end := time.Now().Add(2 * invisible); time.Now().Before(end); {
		msgs, err := sc.Receive(ctx, 4, invisible)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			t.Errorf("%s delivered again (reconsume %d) after it went to %s", m.Body, m.ReconsumeTimes, dlq)
		}
	}
	want := []int32{0, 1, 2}
	for body := range ids {
		if !slices.Equal(seen[body], want) {
			t.Errorf("%s delivered with reconsume times %v, want %v", body, seen[body], want)
		}
	}
	if dead, err = readAll(ctx, r.c, dlq); err != nil {
		t.Fatal(err)
	}
	for _, m := range dead {
		body := string(m.Body)
		if m.ReconsumeTimes != maxTimes+1 || m.UniqKey() != ids[body] || m.Property(message.PropertyRetryTopic) != topic {
			t.Errorf("%s in %s: reconsume %d (want %d), id %s (sent %s), RETRY_TOPIC %q", body, dlq, m.ReconsumeTimes, maxTimes+1,
				m.UniqKey(), ids[body], m.Property(message.PropertyRetryTopic))
		}
	}
	if len(dead) != len(ids) {
		t.Errorf("%d messages in %s, want %d", len(dead), dlq, len(ids))
	}
}
