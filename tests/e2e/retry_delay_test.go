package e2e

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// oneSecondLevels is an 18-level messageDelayLevel of 1 s each, so that
// retries come back within seconds.
var oneSecondLevels = strings.TrimSpace(strings.Repeat("1s ", 18))

// attempt is one delivery seen by the push consumer.
type attempt struct {
	reconsume int32
	at        time.Time
	msgID     string
	topic     string
}

type attemptLog struct {
	mu  sync.Mutex
	got map[string][]attempt
}

func (l *attemptLog) add(body string, a attempt) {
	l.mu.Lock()
	l.got[body] = append(l.got[body], a)
	l.mu.Unlock()
}

func (l *attemptLog) of(body string) []attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got[body])
}

// TestRetryEscalationToDLQ: a client-go clustering push consumer that
// answers ConsumeRetryLater gets the message back through
// CONSUMER_SEND_MSG_BACK and %RETRY%<group> (subscribed automatically, the
// topic created by the broker) with reconsume times 0, 1, 2, 3, at least a
// delay level apart; after maxReconsumeTimes (3, the client's option, sent
// in the send-back header) the message lands in %DLQ%<group> with reconsume
// times 4 and the original message id. Then the client fallback, a
// SEND_MESSAGE to %RETRY%<group> with DELAY and reconsumeTimes headers, is
// delayed to the retry topic, or redirected to the DLQ past the maximum.
func TestRetryEscalationToDLQ(t *testing.T) {
	skipShort(t, "real processes")
	t.Parallel()
	rlog.SetLogLevel("error")
	const (
		topic = "RetryDelayTopic"
		group = "retry_cg"
	)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{"messageDelayLevel": oneSecondLevels}})
	b := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", topic, "-r", "2", "-w", "2")
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})
	log := &attemptLog{got: map[string][]attempt{}}
	handler := func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			log.add(string(m.Body), attempt{reconsume: m.ReconsumeTimes, at: time.Now(), msgID: m.MsgId, topic: m.Topic})
			if strings.HasPrefix(string(m.Body), "fail") {
				return consumer.ConsumeRetryLater, nil
			}
		}
		return consumer.ConsumeSuccess, nil
	}
	newConsumer := func(instance string) rocketmq.PushConsumer {
		pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(group),
			consumer.WithInstance(instance), consumer.WithConsumerModel(consumer.Clustering),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithMaxReconsumeTimes(3),
			consumer.WithConsumeMessageBatchMaxSize(1))
		goSubscribed(t, pc, err, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, handler)
		return pc
	}
	// The first consumer's heartbeat makes the broker create %RETRY%<group>
	// and register it; client-go reads routes only at start and every 30 s,
	// so the consumer that does the work starts once the route exists.
	warm := newConsumer("retry-warmup")
	probe := newProbe(t, c.NamesrvAddr(), "retry_probe")
	testutil.Eventually(t, 20*time.Second, func() error {
		_, err := probe.Queues(context.Background(), protocol.RetryTopic(group))
		return err
	})
	if err := warm.Shutdown(); err != nil {
		t.Fatal(err)
	}
	pc := newConsumer("retry-consumer")
	defer pc.Shutdown()

	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("retry_pg"), producer.WithInstanceName("retry-producer"))
	started(t, p, err)
	defer p.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("fail-0")))
	if err != nil {
		t.Fatal(err)
	}
	msgID := res.MsgID
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("ok-0"))); err != nil {
		t.Fatal(err)
	}

	dlq := protocol.DLQTopic(group)
	var dead []*message.Message
	testutil.Eventually(t, 60*time.Second, func() error {
		if n := len(log.of("fail-0")); n < 4 {
			return fmt.Errorf("fail-0 consumed %d times", n)
		}
		var err error
		if dead, err = readAll(ctx, probe, dlq); err != nil {
			return err
		}
		if len(dead) == 0 {
			return fmt.Errorf("DLQ empty")
		}
		return nil
	})
	time.Sleep(1500 * time.Millisecond) // nothing more may come
	tries := log.of("fail-0")
	var times []int32
	for i, a := range tries {
		times = append(times, a.reconsume)
		if a.msgID != msgID || a.topic != topic {
			t.Errorf("attempt %d: msgId %s topic %s, want %s %s", i, a.msgID, a.topic, msgID, topic)
		}
		if i > 0 && a.at.Sub(tries[i-1].at) < 900*time.Millisecond {
			t.Errorf("attempt %d came %v after the previous one, before the 1 s delay level", i, a.at.Sub(tries[i-1].at))
		}
	}
	if !slices.Equal(times, []int32{0, 1, 2, 3}) {
		t.Fatalf("reconsume times %v, want [0 1 2 3]", times)
	}
	if n := len(log.of("ok-0")); n != 1 {
		t.Errorf("ok-0 consumed %d times", n)
	}
	if len(dead) != 1 {
		t.Fatalf("%d messages in %s", len(dead), dlq)
	}
	d := dead[0]
	if string(d.Body) != "fail-0" || d.ReconsumeTimes != 4 || d.UniqKey() != msgID || d.Property(message.PropertyRetryTopic) != topic {
		t.Fatalf("DLQ message: body %q reconsumeTimes %d uniqKey %s props %v", d.Body, d.ReconsumeTimes, d.UniqKey(), d.Properties)
	}
	t.Logf("attempts at +%v", offsets(tries))

	// The fallback path: SEND_MESSAGE to %RETRY%<group>, as client-go sends
	// when CONSUMER_SEND_MSG_BACK fails.
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	sendRetry := func(body string, reconsume, maxTimes int) *remoting.Command {
		t.Helper()
		props, err := message.EncodeProperties(map[string]string{
			message.PropertyDelayTimeLevel:            strconv.Itoa(3 + reconsume - 1),
			message.PropertyRetryTopic:                topic,
			message.PropertyUniqClientMessageIDKeyIdx: "FALLBACK-" + body,
		})
		if err != nil {
			t.Fatal(err)
		}
		req := remoting.NewRequest(code.SendMessage, map[string]string{
			"producerGroup": "CLIENT_INNER_PRODUCER", "topic": protocol.RetryTopic(group), "defaultTopic": "TBW102",
			"defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0", "flag": "0",
			"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "properties": string(props),
			"reconsumeTimes": strconv.Itoa(reconsume), "maxReconsumeTimes": strconv.Itoa(maxTimes), "unitMode": "false", "batch": "false",
		}, []byte(body))
		resp, err := rc.Invoke(ctx, b.Addr(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	sent := time.Now()
	if resp := sendRetry("fallback-ok", 2, 3); resp.Code != code.Success {
		t.Fatalf("fallback send: %d %s", resp.Code, resp.Remark)
	}
	if resp := sendRetry("fallback-dead", 4, 3); resp.Code != code.Success {
		t.Fatalf("fallback send past the max: %d %s", resp.Code, resp.Remark)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if len(log.of("fallback-ok")) == 0 {
			return fmt.Errorf("fallback-ok not consumed")
		}
		dead, err = readAll(ctx, probe, dlq)
		if err != nil {
			return err
		}
		if len(dead) != 2 {
			return fmt.Errorf("%d messages in the DLQ", len(dead))
		}
		return nil
	})
	a := log.of("fallback-ok")
	if len(a) != 1 || a[0].reconsume != 2 || a[0].at.Sub(sent) < 900*time.Millisecond {
		t.Fatalf("fallback-ok: %+v (sent %v)", a, sent)
	}
	if d := dead[1]; string(d.Body) != "fallback-dead" || d.ReconsumeTimes != 4 || d.Property(message.PropertyDelayTimeLevel) != "-1" {
		t.Fatalf("fallback DLQ message: %q %d %v", d.Body, d.ReconsumeTimes, d.Properties)
	}
	if n := len(log.of("fallback-dead")); n != 0 {
		t.Fatalf("fallback-dead consumed %d times", n)
	}

	// An unknown group, with auto-creation off: 26 for send-back and for
	// the fallback.
	mqadmin(t, c, "updateBrokerConfig", "-b", b.Addr(), "-k", "autoCreateSubscriptionGroup", "-v", "false")
	resp, err := rc.Invoke(ctx, b.Addr(), remoting.NewRequest(code.ConsumerSendMsgBack, map[string]string{
		"offset": "0", "group": "no_such_group", "delayLevel": "0", "originTopic": topic}, nil))
	if err != nil || resp.Code != code.SubscriptionGroupNotExist {
		t.Fatalf("send back for an unknown group: %v %+v", err, resp)
	}
}

// TestDelayAndTimerAcrossKill9: the default delay table (level 3 = 10 s),
// TIMER_DELIVER_MS on time, bad timer values (MESSAGE_ILLEGAL), and a
// broker killed with SIGKILL while timers are pending, some already
// delivered, some due while it is down: every timer is delivered once,
// none early.
func TestDelayAndTimerAcrossKill9(t *testing.T) {
	skipShort(t, "real processes, 25 s of timers")
	// Mostly waiting for timers: runs beside the other slow tests.
	t.Parallel()
	const topic = "TimerTopicE2E"
	c := startCluster(t, framework.Options{Needs: []framework.Capability{framework.Crash}, Brokers: 1})
	b := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", topic, "-r", "4", "-w", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{c.NamesrvAddr()}},
		Group: "timer_pg", CompressOver: -1, RetryTimesWhenSendFailed: -1})
	started(t, p, err)
	defer p.Shutdown(context.Background())
	send := func(body string, kv ...string) error {
		m := &message.Message{Topic: topic, Body: []byte(body)}
		for i := 0; i+1 < len(kv); i += 2 {
			m.SetProperty(kv[i], kv[i+1])
		}
		_, err := p.SendSync(ctx, m)
		return err
	}

	// Bad input.
	now := time.Now()
	big := make([]byte, 70<<10)
	_, _ = rand.Read(big)
	for _, c := range []struct {
		what string
		kv   []string
		body string
	}{
		{"beyond 40 days", []string{message.PropertyTimerDeliverMS, strconv.FormatInt(now.Add(41*24*time.Hour).UnixMilli(), 10)}, "x"},
		{"negative delay", []string{message.PropertyTimerDelaySec, "-5"}, "x"},
		{"garbage", []string{message.PropertyTimerDelayMS, "soon"}, "x"},
		{"oversized delay message", []string{message.PropertyDelayTimeLevel, "1"}, string(big)},
	} {
		// The SDK refuses values it can tell are malformed before sending;
		// the rest reach the broker. Either way the send fails clearly.
		if err := send(c.body, c.kv...); !client.IsCode(err, code.MessageIllegal) && !errors.Is(err, client.ErrInvalidMessage) {
			t.Errorf("%s: SDK send: %v, want MESSAGE_ILLEGAL or ErrInvalidMessage", c.what, err)
		}
		// The broker itself, sent raw as any client could.
		props := map[string]string{}
		for i := 0; i+1 < len(c.kv); i += 2 {
			props[c.kv[i]] = c.kv[i+1]
		}
		enc, err := message.EncodeProperties(props)
		if err != nil {
			t.Fatal(err)
		}
		req := sendV1Request(topic, 0, []byte(c.body))
		req.ExtFields["properties"] = string(enc)
		req.ExtFields["producerGroup"] = "timer_pg"
		resp, err := rc.Invoke(ctx, b.Addr(), req)
		if err != nil {
			t.Fatalf("%s: raw send: %v", c.what, err)
		}
		wantResp(t, c.what+" (raw send)", resp, code.MessageIllegal)
	}
	if err := send("far", message.PropertyTimerDeliverMS, strconv.FormatInt(now.Add(39*24*time.Hour).UnixMilli(), 10)); err != nil {
		t.Fatalf("39 days: %v", err)
	}

	// due maps a body to its delivery time (ms).
	due := map[string]int64{}
	start := time.Now()
	if err := send("level3", message.PropertyDelayTimeLevel, "3"); err != nil {
		t.Fatal(err)
	}
	due["level3"] = start.Add(10 * time.Second).UnixMilli()
	at3 := start.Add(3 * time.Second)
	if err := send("at3", message.PropertyTimerDeliverMS, strconv.FormatInt(at3.UnixMilli(), 10)); err != nil {
		t.Fatal(err)
	}
	due["at3"] = at3.UnixMilli()
	const perGroup = 100
	for i := 0; i < 3*perGroup; i++ {
		var at time.Time
		switch g := i / perGroup; g {
		case 0: // delivered before the kill
			at = start.Add(1500*time.Millisecond + time.Duration(i%perGroup)*20*time.Millisecond)
		case 1: // due around the kill and while the broker is down
			at = start.Add(5500*time.Millisecond + time.Duration(i%perGroup)*20*time.Millisecond)
		default: // due after the restart
			at = start.Add(12*time.Second + time.Duration(i%perGroup)*20*time.Millisecond)
		}
		body := fmt.Sprintf("t%03d", i)
		if err := send(body, message.PropertyTimerDeliverMS, strconv.FormatInt(at.UnixMilli(), 10)); err != nil {
			t.Fatal(err)
		}
		due[body] = at.UnixMilli()
	}
	probe := newProbe(t, c.NamesrvAddr(), "timer_probe")
	// Let group 0 and at3 be delivered, then kill.
	if d := time.Until(start.Add(5500 * time.Millisecond)); d > 0 {
		time.Sleep(d)
	}
	before, err := readAll(ctx, probe, topic)
	if err != nil {
		t.Fatal(err)
	}
	b.Kill(t)
	t.Logf("killed at +%v with %d timers delivered", time.Since(start).Round(time.Millisecond), len(before))
	b.Start(t)
	t.Logf("restarted at +%v", time.Since(start).Round(time.Millisecond))
	for _, line := range strings.Split(b.Logs(), "\n") {
		if strings.Contains(line, "timer index recovered") {
			t.Logf("broker: %s", line)
		}
	}

	var got []*message.Message
	testutil.Eventually(t, 60*time.Second, func() error {
		var err error
		if got, err = readAll(ctx, probe, topic); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, m := range got {
			seen[string(m.Body)] = true
		}
		missing := 0
		for body := range due {
			if !seen[body] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d timers not delivered", missing, len(due))
		}
		return nil
	})
	time.Sleep(time.Second)
	if got, err = readAll(ctx, probe, topic); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, m := range got {
		body := string(m.Body)
		count[body]++
		d, ok := due[body]
		if !ok {
			t.Errorf("unexpected message %q", body)
			continue
		}
		if m.StoreTimestamp < d {
			t.Errorf("%s delivered %d ms early", body, d-m.StoreTimestamp)
		}
		if m.Property(message.PropertyRealTopic) != topic || m.Property(message.PropertyTimerDeliverMS) != "" || m.Property(message.PropertyDelayTimeLevel) != "" {
			t.Errorf("%s: properties %v", body, m.Properties)
		}
	}
	for body, n := range count {
		if n != 1 {
			t.Errorf("%s delivered %d times", body, n)
		}
	}
	for _, m := range got {
		switch string(m.Body) {
		case "at3":
			if late := m.StoreTimestamp - due["at3"]; late > 1000 {
				t.Errorf("at3 delivered %d ms late", late)
			}
		case "level3":
			t.Logf("level 3 delivered %v after the send", time.UnixMilli(m.StoreTimestamp).Sub(start).Round(time.Millisecond))
		}
	}
}

// newProbe is a pull consumer that only reads (no subscription).
func newProbe(t *testing.T, namesrv, group string) *client.PullConsumer {
	t.Helper()
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{namesrv}, InstanceName: group},
		Group:        group,
	})
	return clienttest.Started(t, pc, err)
}

// readAll reads every message of a topic, queue by queue, from offset 0.
func readAll(ctx context.Context, pc *client.PullConsumer, topic string) ([]*message.Message, error) {
	qs, err := pc.Queues(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []*message.Message
	for _, q := range qs {
		for off := int64(0); ; {
			res, err := pc.Pull(ctx, client.PullRequest{Queue: q, Offset: off, MaxNums: 32})
			if err != nil {
				return nil, err
			}
			out = append(out, res.Messages...)
			if res.Status != client.PullFound || res.NextBeginOffset <= off {
				break
			}
			off = res.NextBeginOffset
		}
	}
	return out, nil
}

func offsets(a []attempt) []time.Duration {
	var out []time.Duration
	for _, x := range a {
		out = append(out, x.at.Sub(a[0].at).Round(10*time.Millisecond))
	}
	return out
}
