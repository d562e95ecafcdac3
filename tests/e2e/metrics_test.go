package e2e

import (
	"context"
	"fmt"
	"io"
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
// lag is 300.
func TestMetricsPrometheus(t *testing.T) {
	t.Parallel()
	rlog.SetLogLevel("error")
	promPort := harness.FreePort(t)
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

	var got map[string]*metrics.Family
	var text string
	base := map[string]string{"cluster": framework.DefaultCluster, "node_id": "broker-a", "node_type": "BROKER"}
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
		if miss := metrics.Missing(apacheFamilies(t), got); len(miss) > 0 {
			return fmt.Errorf("missing: %s", strings.Join(miss, "; "))
		}
		lag, err := one("rocketmq_consumer_lag_messages", with("consumer_group", group, "topic", topic, "is_retry", "false", "is_system", "false"))
		if err != nil {
			return err
		}
		if lag != sent-consumed {
			return fmt.Errorf("lag %v, want %d", lag, sent-consumed)
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
		{"rocketmq_rpc_latency_milliseconds", with("request_code", "send_message", "response_code", "success", "protocol_type", "remoting", "result", "success", "is_long_polling", "false"), func(v float64) bool { return v == sent }, "500 sends"},
		{"rocketmq_topic_create_execution_time_milliseconds", with("invocation_status", "success", "is_system", "false"), func(v float64) bool { return v >= 1 }, ">= 1"},
		{"rocketmq_broker_permission", with(), func(v float64) bool { return v == 6 }, "6"},
	}
	for _, ck := range checks {
		v, err := one(ck.family, ck.match)
		if err != nil || !ck.check(v) {
			t.Errorf("%s%v = %v (%v), want %s", ck.family, ck.match, v, err, ck.want)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", text)
	}
}
