package metrics

import (
	"github.com/rmqgo/rmq/internal/testutil"

	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting/code"
)

// newTestMetrics is New(cfg, src, nil), shut down when the test ends.
func newTestMetrics(t testing.TB, cfg Config, src Sources) *Metrics {
	t.Helper()
	m, err := New(cfg, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	return m
}

func testConfig() Config {
	return Config{
		ExporterType: ExporterProm, PromHost: "127.0.0.1", Cluster: "c1", NodeID: "b1",
		EnableStatsMetrics: true, EnableRequestMetrics: true, EnableConnectionMetrics: true,
		EnableLagAndDlqMetrics: true, EnableRemotingMetrics: true, EnableStoreMetrics: true, EnablePopMetrics: true,
		EnableTransactionMetrics: true,
	}
}

func testSources(now time.Time) Sources {
	return Sources{
		BrokerPermission: func() int64 { return 6 },
		TopicCount:       func() int64 { return 3 },
		GroupCount:       func() int64 { return 2 },
		Processors:       func() map[string]int64 { return map[string]int64{"send": 1, "pull": 0} },
		Producers:        func() []Client { return []Client{{Language: "go", Version: "v5_5_0", Protocol: ProtocolRemoting}} },
		Consumers: func() []Client {
			return []Client{{Group: "g1", Language: "go", Version: "v5_5_0", Protocol: ProtocolRemoting, ConsumeMode: "push"}}
		},
		Lags: func() []Lag {
			return []Lag{{Group: "g1", Topic: "t1", Lag: 7, EarliestUnconsumedMs: now.Add(-time.Second).UnixMilli(), Inflight: 2, Ready: 5}}
		},
		Store: func() StoreStats {
			return StoreStats{SizeBytes: 1 << 20, EarliestMessageMs: now.Add(-time.Minute).UnixMilli()}
		},
		Timer:      func() TimerStats { return TimerStats{} },
		Timing:     func() map[string]int64 { return map[string]int64{"t1": 0} },
		PopBuffers: func() (int64, int64) { return 0, 0 },
		PopRevive:  func() []Revive { return []Revive{{QueueID: 0}} },
	}
}

func readApacheList(t *testing.T) map[string]*Family {
	t.Helper()
	f, err := os.Open("testdata/apache-5.5.0-families.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := ReadFamilyList(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 42 {
		t.Fatalf("committed list has %d families, want 42", len(want))
	}
	return want
}

// TestFamiliesCoverApache: after a small workload our families, types and
// labels are a superset of Apache 5.5.0's (testdata), and the values are
// what was recorded.
func TestFamiliesCoverApache(t *testing.T) {
	m, err := New(testConfig(), testSources(time.Now()), nil)
	if err != nil || m == nil {
		t.Fatalf("New: %v %v", m, err)
	}
	defer m.Shutdown(context.Background())
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	for range 500 {
		m.MessagesIn("t1", Normal, 1, 300)
	}
	m.MessagesIn("%RETRY%g1", Normal, 1, 300) // not counted, as Java
	m.MessagesOut("t1", "g1", 200, 60000)
	m.RPC(code.SendMessageV2, code.Success, 2*time.Millisecond, false, false, false)
	m.RPC(code.PullMessage, code.PullNotFound, 0, true, false, false)
	m.TopicCreated("t1", true, 5*time.Millisecond)
	m.PopBufferScan(time.Millisecond)
	m.PoppedOut("popped", "g1", true, 2, 600)
	m.MessagesIn("tx", Transaction, 1, 300)
	m.TransactionEnded("tx", true, time.Now().UnixMilli())
	m.MessagesIn("tx", Transaction, 1, 300)
	m.RevivePut("g1", "t1", true, "PUT_OK")
	m.ReviveGot("g1", "t1", 0, true)
	m.ReviveRetry("g1", "t1", "PUT_OK")
	now := time.Now().UnixMilli()
	m.TimerEnqueued("t1", false, now, now+2000)
	m.TimerDequeued("t1", false)

	// Scrape over HTTP, as Prometheus does.
	resp, err := http.Get("http://" + m.PromAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got, err := ParseText(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	want := readApacheList(t)
	if bad := SplitNotYet(want, got); len(bad) > 0 {
		t.Error(strings.Join(bad, "\n"))
	}
	if miss := Missing(want, got); len(miss) > 0 {
		t.Fatalf("missing from our export:\n%s\n--- scrape:\n%s", strings.Join(miss, "\n"), body)
	}
	checkSamples(t, got, []sampleCheck{
		{"rocketmq_messages_in_total", map[string]string{"topic": "t1", "message_type": "normal", "is_system": "false", "node_type": "broker", "cluster": "c1", "node_id": "b1"}, 500},
		{"rocketmq_throughput_in_total", map[string]string{"topic": "t1"}, 500 * 300},
		{"rocketmq_message_size", map[string]string{"topic": "t1", "message_type": "normal"}, 500},
		{"rocketmq_messages_out_total", map[string]string{"topic": "t1", "consumer_group": "g1"}, 200},
		{"rocketmq_rpc_latency_milliseconds", map[string]string{"request_code": "send_message_v2", "response_code": "success", "protocol_type": "remoting", "result": "success", "is_long_polling": "false"}, 1},
		{"rocketmq_rpc_latency_milliseconds", map[string]string{"request_code": "pull_message", "response_code": "pull_not_found", "is_long_polling": "true"}, 1},
		{"rocketmq_consumer_lag_messages", map[string]string{"consumer_group": "g1", "topic": "t1", "is_retry": "false"}, 7},
		{"rocketmq_consumer_inflight_messages", map[string]string{"consumer_group": "g1"}, 2},
		{"rocketmq_consumer_ready_messages", map[string]string{"consumer_group": "g1"}, 5},
		{"rocketmq_broker_permission", nil, 6},
		{"rocketmq_topic_number", nil, 3},
		{"rocketmq_consumer_group_number", nil, 2},
		{"rocketmq_producer_connections", map[string]string{"language": "go", "protocol_type": "remoting"}, 1},
		{"rocketmq_consumer_connections", map[string]string{"consumer_group": "g1", "consume_mode": "push"}, 1},
		{"rocketmq_topic_create_execution_time_milliseconds", map[string]string{"invocation_status": "success", "is_system": "false"}, 1},
		{"rocketmq_storage_size_bytes", map[string]string{"storage_type": "local", "storage_medium": "disk"}, 1 << 20},
	})
	if s := got["rocketmq_messages_in_total"].Find(map[string]string{"topic": "%RETRY%g1"}); len(s) != 0 {
		t.Errorf("retry topic counted: %v", s)
	}
	if s := got["rocketmq_consumer_lag_latency_milliseconds"].Find(nil); len(s) != 1 || s[0].Value < 1000 || s[0].Value > 60000 {
		t.Errorf("lag latency = %v, want about 1000 ms", s)
	}
}

// TestLiteTopicsBounded: a million lite topics (LMQ names) are one series
// per parent, and a scrape stays under 1 MiB and 100 ms.
//
// The lite lag is on (liteLagCountMetricsEnable, liteLagLatencyMetricsEnable,
// every lite pop leaving a backlog): the lag count source walks a million
// lite offsets, as the broker's does, and the lag times are kept for the
// top 50 only; still one lag series per (parent, group). The first scrape
// waits for the walk of the lite offsets; the next ones serve its result
// and walk again in the background.
func TestLiteTopicsBounded(t *testing.T) {
	const n = 1_000_000
	offsets := make([]int64, n)
	for i := range offsets {
		offsets[i] = int64(i % 7)
	}
	var walks atomic.Int64
	src := Sources{
		Lags: func() []Lag { return nil },
		Lite: func() LiteSettings { return LiteSettings{LatencyMetrics: true, CountMetrics: true} },
		LiteLagCounts: func() []Lag {
			walks.Add(1)
			sums := map[string]int64{}
			for _, o := range offsets {
				sums["g"] += 10 - o // max offset 10
			}
			return []Lag{{Group: "g", Topic: "chat", Lag: sums["g"]}}
		},
	}
	m := newTestMetrics(t, testConfig(), src)
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixMilli()
	buf := []byte("%LMQ%$chat$user-")
	var wantLag int64
	for i := range n {
		lmq := string(strconv.AppendInt(buf, int64(i), 10))
		m.MessagesIn(lmq, Normal, 1, 100)
		m.MessagesOut(lmq, "g", 1, 100)
		m.LitePopped("g", "chat", lmq, start-int64(i%100_000), 50)
		wantLag += 10 - offsets[i]
	}
	if got := m.lite.load(liteKey{"chat", "g"}); got == nil || len(got.lmqs) != 50 {
		t.Fatalf("lag times held: %v, want the top 50", got)
	}
	scrape := func() ([]byte, time.Duration) {
		t.Helper()
		t0 := time.Now()
		resp, err := http.Get("http://" + m.PromAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return body, time.Since(t0)
	}
	scrape() // walks the lite offsets once
	body, took := scrape()
	if len(body) > 1<<20 || took > 100*time.Millisecond {
		t.Errorf("scrape of %d bytes took %v, want under 1 MiB and 100 ms", len(body), took)
	}
	got, err := ParseText(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rocketmq_messages_in_total", "rocketmq_messages_out_total"} {
		s := got[f].Samples
		if len(s) != 1 || s[0].Labels["topic"] != "chat" || s[0].Value != n {
			t.Errorf("%s = %v, want one series topic=chat of %d", f, s, n)
		}
	}
	for _, f := range []string{"rocketmq_consumer_lag_messages", "rocketmq_consumer_ready_messages"} {
		s := got[f].Samples
		if len(s) != 1 || s[0].Labels["topic"] != "chat" || s[0].Value != float64(wantLag) {
			t.Errorf("%s = %v, want one series topic=chat of %d", f, s, wantLag)
		}
	}
	// The oldest lag time is start − 99 999 ms.
	s := got["rocketmq_consumer_lag_latency_milliseconds"].Samples
	if most := float64(time.Now().UnixMilli() - start + 99_999); len(s) != 1 || s[0].Value < 99_999 || s[0].Value > most {
		t.Errorf("lag latency = %v, want one series between 99999 and %v ms", s, most)
	}
	if walks.Load() < 1 {
		t.Errorf("the lite lag count source was never read")
	}
}

// TestCardinalityLimit: topics past metricsOtelCardinalityLimit are counted
// under one overflow series.
func TestCardinalityLimit(t *testing.T) {
	cfg := testConfig()
	cfg.CardinalityLimit = 10
	m := newTestMetrics(t, cfg, Sources{})
	for i := range 100 {
		m.MessagesIn(fmt.Sprintf("t%d", i), Normal, 1, 10)
	}
	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	s := got["rocketmq_messages_in_total"].Samples
	var total float64
	for _, x := range s {
		total += x.Value
	}
	if len(s) > 11 || total != 100 {
		t.Fatalf("%d series totalling %v, want at most 11 totalling 100", len(s), total)
	}
}

func TestDisabled(t *testing.T) {
	for _, typ := range []string{"", "DISABLE"} {
		cfg := testConfig()
		cfg.ExporterType = typ
		m, err := New(cfg, Sources{}, nil)
		if err != nil || m != nil {
			t.Fatalf("%q: %v %v, want nil, nil", typ, m, err)
		}
		m.MessagesIn("t", Normal, 1, 1) // a nil *Metrics records nothing
		m.RPC(1, 0, 0, false, false, false)
	}
	cfg := testConfig()
	cfg.ExporterType = "BOGUS"
	if _, err := New(cfg, Sources{}, nil); err == nil {
		t.Fatal("unknown exporter type accepted")
	}
}

// BenchmarkHotPath is the per-request recording cost: a send's
// messages_in + size, a pull's messages_out and one rpc latency.
func BenchmarkHotPath(b *testing.B) {
	m := newTestMetrics(b, testConfig(), Sources{})
	topics := make([]string, 64)
	for i := range topics {
		topics[i] = fmt.Sprintf("topic-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			t := topics[i&63]
			m.MessagesIn(t, Normal, 1, 512)
			m.MessagesOut(t, "group", 1, 512)
			m.RPC(code.SendMessageV2, code.Success, time.Millisecond, false, false, false)
			i++
		}
	})
}

// TestEventFamilies: the families that appear once their event happened
// (Java's send-to-DLQ, transaction and group creation metrics).
func TestEventFamilies(t *testing.T) {
	cfg := testConfig()
	cfg.EnableTransactionMetrics = true
	now := time.Now()
	m := newTestMetrics(t, cfg, Sources{})
	m.now = func() time.Time { return now }
	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"rocketmq_send_to_dlq_messages_total", "rocketmq_commit_messages_total", "rocketmq_finish_message_latency_milliseconds"} {
		if got[f] != nil {
			t.Errorf("%s before any event: %v", f, got[f].Samples)
		}
	}
	m.SendToDLQ("t1", "g1")
	m.SendToDLQ("t1", "g1")
	m.TransactionEnded("t1", true, now.Add(-90*time.Second).UnixMilli())
	m.TransactionEnded("t1", false, 0)
	m.GroupCreated(true, 3*time.Millisecond)
	if got, err = m.Gather(); err != nil {
		t.Fatal(err)
	}
	checkSamples(t, got, []sampleCheck{
		{"rocketmq_send_to_dlq_messages_total", map[string]string{"topic": "t1", "consumer_group": "g1", "is_system": "false"}, 2},
		{"rocketmq_commit_messages_total", map[string]string{"topic": "t1"}, 1},
		{"rocketmq_rollback_messages_total", map[string]string{"topic": "t1"}, 1},
		{"rocketmq_finish_message_latency_milliseconds", map[string]string{"topic": "t1"}, 1},
		{"rocketmq_consumer_group_create_execution_time_milliseconds", map[string]string{"invocation_status": "success"}, 1},
	})
}

// TestLogExporter: metricsExporterType=LOG writes every series to the log
// each metricLoggingExporterIntervalInMills, with its labels and value.
func TestLogExporter(t *testing.T) {
	var buf testutil.SyncBuffer
	cfg := testConfig()
	cfg.ExporterType, cfg.LogInterval = ExporterLog, 50*time.Millisecond
	m, err := New(cfg, testSources(time.Now()), slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil || m == nil {
		t.Fatalf("New(LOG): %v %v", m, err)
	}
	defer m.Shutdown(context.Background())
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	m.MessagesIn("LogTopic", Normal, 7, 7000)
	want := []string{"metric=rocketmq_messages_in", "labels.topic=LogTopic", "labels.message_type=normal", "value=7"}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(buf.String(), "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(line, w)
			}
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %v after 5 s; log:\n%s", want, buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
