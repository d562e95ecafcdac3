package metrics

import (
	"testing"
	"time"
)

type sampleCheck struct {
	family string
	match  map[string]string
	want   float64
}

func checkSamples(t *testing.T, got map[string]*Family, checks []sampleCheck) {
	t.Helper()
	for _, c := range checks {
		s := got[c.family].Find(c.match)
		if len(s) != 1 || s[0].Value != c.want {
			t.Errorf("%s%v = %v, want one sample of %v", c.family, c.match, s, c.want)
		}
	}
}

// TestHalfMessages: rocketmq_half_messages by topic counts stored prepared
// messages less those committed, rolled back or discarded, from the count
// seeded at start (Java's TransactionMetrics).
func TestHalfMessages(t *testing.T) {
	cfg := testConfig()
	cfg.EnableTransactionMetrics = true
	m := newTestMetrics(t, cfg, Sources{})
	m.Start()
	m.SeedHalfMessages(map[string]int64{"tx": 2, "old": 1})
	for range 5 {
		m.MessagesIn("tx", Transaction, 1, 200)
	}
	m.MessagesIn("tx", Normal, 1, 200) // not a half message
	m.TransactionEnded("tx", true, time.Now().UnixMilli())
	m.TransactionEnded("tx", false, 0)
	m.TransactionDiscarded("tx")
	m.TransactionEnded("old", true, time.Now().UnixMilli())
	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, got, []sampleCheck{
		{"rocketmq_half_messages", map[string]string{"topic": "tx", "cluster": "c1", "node_id": "b1"}, 2 + 5 - 3},
		{"rocketmq_half_messages", map[string]string{"topic": "old"}, 0},
		{"rocketmq_messages_in_total", map[string]string{"topic": "RMQ_SYS_TRANS_HALF_TOPIC", "message_type": "transaction", "is_system": "true"}, 5},
	})
	if f := got["rocketmq_half_messages"]; f == nil || f.Type != "gauge" || len(f.Samples) != 2 {
		t.Errorf("rocketmq_half_messages = %+v, want a gauge of 2 series", f)
	}

	// Off with enableTransactionMetrics=false.
	cfg.EnableTransactionMetrics = false
	m2 := newTestMetrics(t, cfg, Sources{})
	m2.MessagesIn("tx", Transaction, 1, 200)
	if got, _ := m2.Gather(); got["rocketmq_half_messages"] != nil {
		t.Errorf("half messages exported with enableTransactionMetrics=false")
	}
}

// TestPopReviveCounters: the three revive counters with Java's labels.
func TestPopReviveCounters(t *testing.T) {
	m := newTestMetrics(t, testConfig(), Sources{})
	for range 3 {
		m.RevivePut("g", "t", true, "PUT_OK")
	}
	m.RevivePut("g", "t", false, "PUT_OK")
	m.RevivePut("g", "t", false, "FLUSH_DISK_TIMEOUT")
	m.ReviveGot("g", "t", 2, false)
	m.ReviveGot("g", "t", 2, true)
	m.ReviveGot("g", "t", 2, true)
	m.ReviveRetry("g", "t", "PUT_OK")
	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, got, []sampleCheck{
		{"rocketmq_pop_revive_in_message_total", map[string]string{"consumer_group": "g", "topic": "t", "revive_message_type": "CK", "put_status": "PUT_OK"}, 3},
		{"rocketmq_pop_revive_in_message_total", map[string]string{"revive_message_type": "ACK", "put_status": "PUT_OK"}, 1},
		{"rocketmq_pop_revive_in_message_total", map[string]string{"revive_message_type": "ACK", "put_status": "FLUSH_DISK_TIMEOUT"}, 1},
		{"rocketmq_pop_revive_out_message_total", map[string]string{"consumer_group": "g", "topic": "t", "queue_id": "2", "revive_message_type": "CK"}, 2},
		{"rocketmq_pop_revive_out_message_total", map[string]string{"queue_id": "2", "revive_message_type": "ACK"}, 1},
		{"rocketmq_pop_revive_retry_messages_total", map[string]string{"consumer_group": "g", "topic": "t", "put_status": "PUT_OK"}, 1},
	})
	want := map[string][]string{
		"rocketmq_pop_revive_in_message_total":     {"cluster", "consumer_group", "node_id", "node_type", "put_status", "revive_message_type", "topic"},
		"rocketmq_pop_revive_out_message_total":    {"cluster", "consumer_group", "node_id", "node_type", "queue_id", "revive_message_type", "topic"},
		"rocketmq_pop_revive_retry_messages_total": {"cluster", "consumer_group", "node_id", "node_type", "put_status", "topic"},
	}
	for name, labels := range want {
		f := got[name]
		if f == nil || f.Type != "counter" || len(f.Labels) != len(labels) {
			t.Errorf("%s = %+v, want a counter labelled %v", name, f, labels)
			continue
		}
		for i := range labels {
			if f.Labels[i] != labels[i] {
				t.Errorf("%s labels %v, want %v", name, f.Labels, labels)
				break
			}
		}
	}
}

// TestLiteLag: lite lag joins the consumer lag gauges under the parent
// topic: the count (lag and ready messages) with liteLagCountMetricsEnable,
// the latency of the oldest of the liteLagLatencyTopK lag times with
// liteLagLatencyMetricsEnable; nothing per lite topic, nothing in the
// inflight or queueing gauges.
func TestLiteLag(t *testing.T) {
	now := time.Now()
	settings := LiteSettings{}
	src := Sources{
		Lags: func() []Lag {
			return []Lag{{Group: "g1", Topic: "t1", Lag: 7, Inflight: 2, Ready: 5}}
		},
		Lite:          func() LiteSettings { return settings },
		LiteLagCounts: func() []Lag { return []Lag{{Group: "lg", Topic: "chat", Lag: 40}} },
	}
	m := newTestMetrics(t, testConfig(), src)
	m.now = func() time.Time { return now }
	m.Start()
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	// Three LMQs behind, top-K of 2 keeps the two oldest (30 s, 20 s).
	m.LitePopped("lg", "chat", "%LMQ%$chat$a", ms(10*time.Second), 2)
	m.LitePopped("lg", "chat", "%LMQ%$chat$b", ms(30*time.Second), 2)
	m.LitePopped("lg", "chat", "%LMQ%$chat$c", ms(20*time.Second), 2)
	// b caught up: the oldest left is c (20 s).
	m.LitePopped("lg", "chat", "%LMQ%$chat$b", 0, 2)

	gather := func() map[string]*Family {
		t.Helper()
		m.now = func() time.Time { return now }
		now = now.Add(2 * time.Second) // past the lag cache
		got, err := m.Gather()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	lite := map[string]string{"consumer_group": "lg", "topic": "chat"}
	got := gather()
	for _, f := range []string{"rocketmq_consumer_lag_messages", "rocketmq_consumer_lag_latency_milliseconds"} {
		if s := got[f].Find(lite); len(s) != 0 {
			t.Errorf("%s with the lite switches off: %v", f, s)
		}
	}
	settings = LiteSettings{CountMetrics: true, LatencyMetrics: true}
	got = gather()
	checkSamples(t, got, []sampleCheck{
		{"rocketmq_consumer_lag_messages", map[string]string{"consumer_group": "lg", "topic": "chat", "is_retry": "false"}, 40},
		{"rocketmq_consumer_ready_messages", lite, 40},
		{"rocketmq_consumer_lag_latency_milliseconds", lite, float64(20*time.Second/time.Millisecond) + 4000},
		{"rocketmq_consumer_lag_messages", map[string]string{"consumer_group": "g1", "topic": "t1"}, 7},
	})
	for _, f := range []string{"rocketmq_consumer_inflight_messages", "rocketmq_consumer_queueing_latency_milliseconds"} {
		if s := got[f].Find(lite); len(s) != 0 {
			t.Errorf("%s has lite series: %v", f, s)
		}
	}
	// The deleted lite topic c leaves a (30 s is gone too): 10 s + 6 s.
	m.LiteTopicRemoved("chat", "%LMQ%$chat$c")
	m.LitePopped("lg", "chat", "%LMQ%$chat$a", ms(10*time.Second), 2)
	got = gather()
	checkSamples(t, got, []sampleCheck{{"rocketmq_consumer_lag_latency_milliseconds", lite, float64(10*time.Second/time.Millisecond) + 2000}})
}

// TestLiteLagMerge: a group listed by both the regular and the lite lag
// gets the sum (Java records both under the same labels).
func TestLiteLagMerge(t *testing.T) {
	lags := []Lag{{Group: "g", Topic: "p", Lag: 3, Ready: 1, EarliestUnconsumedMs: 500}, {Group: "g", Topic: "p", Retry: true, Lag: 9}}
	lite := []Lag{{Group: "g", Topic: "p", Lag: 10, Ready: 10, lite: liteCount}, {Group: "g", Topic: "p", EarliestUnconsumedMs: 100, lite: liteLatency},
		{Group: "h", Topic: "p", Lag: 1, Ready: 1, lite: liteCount}, {Group: "h", Topic: "p", EarliestUnconsumedMs: 50, lite: liteLatency}}
	got := mergeLite(lags, lite)
	want := []Lag{{Group: "g", Topic: "p", Lag: 13, Ready: 11, EarliestUnconsumedMs: 100}, {Group: "g", Topic: "p", Retry: true, Lag: 9},
		{Group: "h", Topic: "p", Lag: 1, Ready: 1, EarliestUnconsumedMs: 50, lite: liteCount | liteLatency}}
	if len(got) != len(want) {
		t.Fatalf("merge = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("merge[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestPoppedOut: pops are counted with is_retry (Java's
// PopMessageProcessor), pulls without it.
func TestPoppedOut(t *testing.T) {
	m := newTestMetrics(t, testConfig(), Sources{})
	m.PoppedOut("t", "g", false, 3, 300)
	m.PoppedOut("t", "g", true, 2, 200)
	m.MessagesOut("t", "g", 4, 400)
	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	checkSamples(t, got, []sampleCheck{
		{"rocketmq_messages_out_total", map[string]string{"topic": "t", "consumer_group": "g", "is_retry": "false"}, 3},
		{"rocketmq_messages_out_total", map[string]string{"topic": "t", "consumer_group": "g", "is_retry": "true"}, 2},
		{"rocketmq_throughput_out_total", map[string]string{"topic": "t", "is_retry": "true"}, 200},
	})
	if s := got["rocketmq_messages_out_total"].Find(map[string]string{"topic": "t"}); len(s) != 3 {
		t.Errorf("messages_out series %v, want 3 (two pops, one pull)", s)
	}
}
