package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/broker/metrics"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// scrapeMetrics reads the broker's Prometheus endpoint.
func scrapeMetrics(addr string) (map[string]*metrics.Family, string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, string(body), fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	fams, err := metrics.ParseText(strings.NewReader(string(body)))
	return fams, string(body), err
}

// apacheFamilies is the committed list of Apache 5.5.0's broker families.
func apacheFamilies(t testing.TB) map[string]*metrics.Family {
	t.Helper()
	f, err := os.Open(filepath.Join(harness.RepoRoot(t), "broker", "metrics", "testdata", "apache-5.5.0-families.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := metrics.ReadFamilyList(f)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// TestMetricsPrometheus: a broker with metricsExporterType=PROM serves
// Apache 5.5.0's families on metricsPromExporterHost:Port; after client-go
// sends 500 messages to a one-queue topic and a push consumer takes the
// first 200 (and stalls on the 201st), messages_in is 500 and the group's
// lag is 300. Five transactions (two committed, one rolled back, two left
// UNKNOW) leave rocketmq_half_messages at 2; a pop of three messages with
// one ack gives one checkpoint and one ack written to the revive topic and
// two messages revived into the retry topic. A timer message (1 s) is
// enqueued into and dequeued from the timer index, once each; a
// delay-level message counts in under SCHEDULE_TOPIC_XXXX at its send and
// under its topic at its delivery.
func TestMetricsPrometheus(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("error")
	promPort := harness.LatePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"metricsExporterType":     "PROM",
		"metricsPromExporterHost": "127.0.0.1",
		"metricsPromExporterPort": strconv.Itoa(promPort),
	}})
	promAddr := "127.0.0.1:" + strconv.Itoa(promPort)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, group, sent, consumed = "MetricsTopic", "metrics_group", 500, 200
	ns := primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})

	adm, err := admin.NewAdmin(admin.WithResolver(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(c.Brokers()[0].Addr()),
		admin.WithReadQueueNums(1), admin.WithWriteQueueNums(1)); err != nil {
		t.Fatal(err)
	}
	p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("metrics_producer"),
		producer.WithRetry(0), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	body := []byte(strings.Repeat("x", 100))
	for i := range sent {
		m := primitive.NewMessage(topic, body)
		m.WithProperty("i", strconv.Itoa(i))
		if r, err := p.SendSync(ctx, m); err != nil || r.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, r, err)
		}
	}

	// The consumer takes messages 0..199 and blocks on 200: client-go then
	// commits offset 200 (the lowest message still in process).
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(ns), consumer.WithGroupName(group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithConsumeMessageBatchMaxSize(1))
	goSubscribed(t, pc, err, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if i, _ := strconv.Atoi(m.GetProperty("i")); i >= consumed {
					<-release
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	defer pc.Shutdown()
	defer once.Do(func() { close(release) }) // before Shutdown: unblock the handlers

	// Transactions: two committed, one rolled back, two left UNKNOW (the
	// producer keeps answering UNKNOW to the checks): two half messages
	// wait.
	const txTopic = "MetricsTxTopic"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", txTopic, "-r", "1", "-w", "1")
	txp := startTxProducer(t, c.NamesrvAddr(), "metrics_tx_pg", newTxListener())
	defer txp.Shutdown()
	sendTx(ctx, t, txp, txTopic, "commit", 2)
	sendTx(ctx, t, txp, txTopic, "rollback", 1)
	sendTx(ctx, t, txp, txTopic, "unknown", 2)

	// Pop: three messages popped in one checkpoint, one acked; the revive
	// service puts the other two into the retry topic once invisible time
	// passed.
	const popTopic, popGroup = "MetricsPopTopic", "metrics_pop_cg"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", popTopic, "-r", "1", "-w", "1")
	rc := remoting.NewClient(remoting.DefaultClientConfig(), slog.New(slog.DiscardHandler))
	defer rc.Close()
	pop := &popClient{t: t, rc: rc, addr: c.Brokers()[0].Addr, group: popGroup, topic: popTopic}
	for i := range 3 {
		pop.send(0, fmt.Sprintf("pop-%d", i))
	}
	popped := pop.pop(3, time.Second, time.Second, false)
	if len(popped) != 3 {
		t.Fatalf("popped %d messages, want 3", len(popped))
	}
	if rc := pop.ack(popped[0]); rc != code.Success {
		t.Fatalf("ack: code %d", rc)
	}

	// A timer message (TIMER_DELAY_SEC=1): it goes through the timer
	// index and comes out a second later.
	const delayTopic = "MetricsDelayTopic"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", delayTopic, "-r", "1", "-w", "1")
	dm := primitive.NewMessage(delayTopic, body)
	dm.WithProperty("TIMER_DELAY_SEC", "1")
	if r, err := p.SendSync(ctx, dm); err != nil || r.Status != primitive.SendOK {
		t.Fatalf("send delayed: %v %v", r, err)
	}
	// A delay-level message (DELAY=1, 1 s): counted in under
	// SCHEDULE_TOPIC_XXXX at the send, then in under its real topic and out
	// of SCHEDULE_TOPIC_XXXX to SCHEDULE_CONSUMER at its delivery (Apache's
	// SendMessageProcessor and ScheduleMessageService).
	const levelTopic = "MetricsDelayLevelTopic"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", levelTopic, "-r", "1", "-w", "1")
	lm := primitive.NewMessage(levelTopic, body)
	lm.WithDelayTimeLevel(1)
	if r, err := p.SendSync(ctx, lm); err != nil || r.Status != primitive.SendOK {
		t.Fatalf("send a delay-level message: %v %v", r, err)
	}

	var got map[string]*metrics.Family
	var text string
	base := map[string]string{"cluster": framework.DefaultCluster, "node_id": "broker-a", "node_type": "broker"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	one := func(family string, match map[string]string) (float64, error) {
		s := got[family].Find(match)
		if len(s) != 1 {
			return 0, fmt.Errorf("%s%v: %d series", family, match, len(s))
		}
		return s[0].Value, nil
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		var err error
		if got, text, err = scrapeMetrics(promAddr); err != nil {
			return err
		}
		want := apacheFamilies(t)
		miss := metrics.SplitNotYet(want, got)
		if miss = append(miss, metrics.Missing(want, got)...); len(miss) > 0 {
			return fmt.Errorf("missing: %s", strings.Join(miss, "; "))
		}
		lag, err := one("rocketmq_consumer_lag_messages", with("consumer_group", group, "topic", topic, "is_retry", "false", "is_system", "false"))
		if err != nil {
			return err
		}
		if lag != sent-consumed {
			return fmt.Errorf("lag %v, want %d", lag, sent-consumed)
		}
		if n, err := one("rocketmq_pop_revive_retry_messages_total", with("consumer_group", popGroup, "topic", popTopic, "put_status", "PUT_OK")); err != nil || n != 2 {
			return fmt.Errorf("revived %v (%v), want 2", n, err)
		}
		if n, err := one("rocketmq_timer_dequeue_total", with("topic", delayTopic)); err != nil || n != 1 {
			return fmt.Errorf("timer dequeues %v (%v), want 1", n, err)
		}
		if n, err := one("rocketmq_messages_in_total", with("topic", levelTopic)); err != nil || n != 1 {
			return fmt.Errorf("delay-level deliveries %v (%v), want 1", n, err)
		}
		return nil
	})
	checks := []struct {
		family string
		match  map[string]string
		check  func(float64) bool
		want   string
	}{
		{"rocketmq_messages_in_total", with("topic", topic, "message_type", "normal", "is_system", "false"), func(v float64) bool { return v == sent }, "500"},
		{"rocketmq_throughput_in_total", with("topic", topic, "message_type", "normal"), func(v float64) bool { return v > sent*100 && v < sent*1000 }, "500 records of 100-byte bodies"},
		{"rocketmq_message_size", with("topic", topic, "message_type", "normal"), func(v float64) bool { return v == sent }, "500 observations"},
		{"rocketmq_messages_out_total", with("topic", topic, "consumer_group", group, "is_system", "false"), func(v float64) bool { return v > consumed && v <= sent }, "201..500"},
		{"rocketmq_consumer_inflight_messages", with("consumer_group", group, "topic", topic), func(v float64) bool { return v >= 1 && v <= sent-consumed }, "1..300"},
		{"rocketmq_consumer_lag_latency_milliseconds", with("consumer_group", group, "topic", topic), func(v float64) bool { return v > 0 && v < 120000 }, "> 0"},
		{"rocketmq_consumer_connections", with("consumer_group", group, "consume_mode", "push", "protocol_type", "remoting", "language", "go"), func(v float64) bool { return v == 1 }, "1"},
		{"rocketmq_producer_connections", with("protocol_type", "remoting", "language", "go"), func(v float64) bool { return v >= 1 }, ">= 1"},
		{"rocketmq_rpc_latency_milliseconds", with("request_code", "send_message", "response_code", "success", "protocol_type", "remoting", "result", "success", "is_long_polling", "false"), func(v float64) bool { return v == sent+5+3+2 }, "510 sends (500, 5 transactional, 3 to pop, 1 timer, 1 delay level)"},
		{"rocketmq_topic_create_execution_time_milliseconds", with("invocation_status", "success", "is_system", "false"), func(v float64) bool { return v >= 1 }, ">= 1"},
		{"rocketmq_broker_permission", with(), func(v float64) bool { return v == 6 }, "6"},
		{"rocketmq_half_messages", with("topic", txTopic), func(v float64) bool { return v == 2 }, "2 (two UNKNOW transactions)"},
		{"rocketmq_messages_in_total", with("topic", "RMQ_SYS_TRANS_HALF_TOPIC", "message_type", "transaction", "is_system", "true"), func(v float64) bool { return v == 5 }, "5 half messages (Apache counts them under the half topic)"},
		{"rocketmq_messages_out_total", with("topic", popTopic, "consumer_group", popGroup, "is_retry", "false"), func(v float64) bool { return v == 3 }, "3 popped"},
		{"rocketmq_commit_messages_total", with("topic", txTopic), func(v float64) bool { return v == 2 }, "2"},
		{"rocketmq_rollback_messages_total", with("topic", txTopic), func(v float64) bool { return v == 1 }, "1"},
		{"rocketmq_pop_revive_in_message_total", with("consumer_group", popGroup, "topic", popTopic, "revive_message_type", "CK", "put_status", "PUT_OK"), func(v float64) bool { return v == 1 }, "1 checkpoint"},
		{"rocketmq_pop_revive_in_message_total", with("consumer_group", popGroup, "topic", popTopic, "revive_message_type", "ACK", "put_status", "PUT_OK"), func(v float64) bool { return v == 1 }, "1 ack"},
		{"rocketmq_pop_revive_out_message_total", with("consumer_group", popGroup, "topic", popTopic, "revive_message_type", "ACK"), func(v float64) bool { return v == 1 }, "1 ack"},
		{"rocketmq_pop_revive_out_message_total", with("consumer_group", popGroup, "topic", popTopic, "revive_message_type", "CK"), func(v float64) bool { return v == 1 }, "1 checkpoint revived"},
		{"rocketmq_messages_in_total", with("topic", "rmq_sys_wheel_timer", "message_type", "delay", "is_system", "true"), func(v float64) bool { return v == 1 }, "1 timer message (Apache counts it under the timer topic)"},
		{"rocketmq_timer_enqueue_total", with("topic", delayTopic, "storage_type", "local", "storage_medium", "disk"), func(v float64) bool { return v == 1 }, "1 timer"},
		{"rocketmq_timing_messages", with("topic", delayTopic, "storage_type", "local", "storage_medium", "disk"), func(v float64) bool { return v == 0 }, "0 (delivered)"},
		{"rocketmq_delay_message_latency_seconds", with("topic", delayTopic, "storage_type", "local", "storage_medium", "disk"), func(v float64) bool { return v == 1 }, "1 observation"},
		{"rocketmq_messages_in_total", with("topic", "SCHEDULE_TOPIC_XXXX", "message_type", "delay", "is_system", "true"), func(v float64) bool { return v == 1 }, "1 delay-level message (Apache counts its send under the schedule topic)"},
		{"rocketmq_messages_in_total", with("topic", levelTopic, "message_type", "delay", "is_system", "false"), func(v float64) bool { return v == 1 }, "1 delay-level delivery"},
		{"rocketmq_messages_out_total", with("topic", "SCHEDULE_TOPIC_XXXX", "consumer_group", "SCHEDULE_CONSUMER", "is_system", "true"), func(v float64) bool { return v == 1 }, "1 delay-level delivery"},
	}
	for _, ck := range checks {
		v, err := one(ck.family, ck.match)
		if err != nil || !ck.check(v) {
			t.Errorf("%s%v = %v (%v), want %s", ck.family, ck.match, v, err, ck.want)
		}
	}
	if s := got["rocketmq_messages_in_total"].Find(map[string]string{"topic": delayTopic}); len(s) != 0 {
		t.Errorf("the timer message counted in under its real topic: %v", s)
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", text)
	}
}

// TestMetricsLiteLag: with the liteLag* keys on, a lite group's lag shows
// under the parent topic in the consumer lag gauges (Apache 5.5.0's
// LiteConsumerLagCalculator): five messages to one lite topic, a pop of two
// (a full batch: its lag time is recorded) and their acks leave a lag of 3,
// and a lag latency of the third message's age; no series names the lite
// topic.
func TestMetricsLiteLag(t *testing.T) {
	t.Parallel()
	promPort := harness.LatePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, LiteExpirationUnit: liteExpirationUnit, BrokerConf: map[string]string{
		"enableLmq": "true", "enableMultiDispatch": "true",
		"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1", "metricsPromExporterPort": strconv.Itoa(promPort),
		"liteLagLatencyCollectEnable": "true", "liteLagLatencyMetricsEnable": "true", "liteLagCountMetricsEnable": "true",
		"liteLagLatencyTopK": "2",
	}})
	bp := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-c", "DefaultCluster", "-t", liteParent, "-r", "1", "-w", "1",
		"-a", "+message.type=LITE,+lite.topic.expiration=60")
	mqadmin(t, c, "updateSubGroup", "-c", "DefaultCluster", "-g", liteGroup, "--attributes", "+lite.bind.topic="+liteParent)
	rc := remoting.NewClient(remoting.DefaultClientConfig(), nil)
	defer rc.Close()
	lc := &liteClient{t: t, rc: rc, addr: bp.Addr()}
	lc.want("subscribe", lc.subscribe("client-m", liteGroup, []string{liteName}), code.Success, "")
	var sentAt []time.Time
	for i := range 5 {
		sentAt = append(sentAt, time.Now())
		lc.want("send", lc.send(liteParent, 0, fmt.Sprintf("lag-%d", i), liteName), code.Success, "")
	}
	// The lite topic's queue is filled by dispatch, after the sends are
	// answered: a pop right away may find fewer (a loaded CI run popped 1).
	testutil.WaitFor(t, 10*time.Second, "the five messages dispatched to the lite topic", func() bool {
		n, err := harness.QueuedMessages(rc, bp.Addr(), liteLMQ, 1)
		return err == nil && n == 5
	})
	ext := litePopExt("client-m", liteGroup, time.Second)
	ext["maxMsgNum"] = "2"
	var p litePopped
	testutil.Eventually(t, 10*time.Second, func() error {
		resp := lc.invoke(code.PopLiteMessage, ext, nil)
		if resp.Code != code.Success {
			return fmt.Errorf("pop: code %d %s", resp.Code, resp.Remark)
		}
		p = decodeLitePop(t, resp)
		return nil
	})
	if len(p.msgs) != 2 {
		t.Fatalf("popped %d messages, want 2", len(p.msgs))
	}
	for off := range int64(2) {
		lc.want("ack", lc.ack(liteGroup, liteName, off, p), code.Success, "")
	}
	match := map[string]string{"consumer_group": liteGroup, "topic": liteParent, "is_retry": "false"}
	var got map[string]*metrics.Family
	var text string
	testutil.Eventually(t, 15*time.Second, func() error {
		var err error
		if got, text, err = scrapeMetrics("127.0.0.1:" + strconv.Itoa(promPort)); err != nil {
			return err
		}
		for _, f := range []string{"rocketmq_consumer_lag_messages", "rocketmq_consumer_ready_messages"} {
			if s := got[f].Find(match); len(s) != 1 || s[0].Value != 3 {
				return fmt.Errorf("%s%v = %v, want 3", f, match, s)
			}
		}
		return nil
	})
	age := float64(time.Since(sentAt[2]).Milliseconds())
	if s := got["rocketmq_consumer_lag_latency_milliseconds"].Find(match); len(s) != 1 || s[0].Value <= 0 || s[0].Value > age+2000 {
		t.Errorf("lag latency = %v, want one series in (0, %v] ms", s, age+2000)
	}
	for _, f := range []string{"rocketmq_consumer_inflight_messages", "rocketmq_consumer_queueing_latency_milliseconds"} {
		if s := got[f].Find(map[string]string{"consumer_group": liteGroup}); len(s) != 0 {
			t.Errorf("%s has lite group series: %v", f, s)
		}
	}
	if strings.Contains(text, liteName) {
		t.Errorf("the scrape names the lite topic %s", liteName)
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", text)
	}
}
