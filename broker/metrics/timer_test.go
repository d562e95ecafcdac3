package metrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestTimerFamilies: after a known workload the timer wheel families have
// Java's types, labels and values: enqueues and dequeues by real topic
// (markers included), the timers still parked (the timer service's timing
// counts, Sources.Timing: never below zero), the birth-to-delivery seconds
// in Java's buckets, and a delay-level delivery counted in under its real
// topic and out of SCHEDULE_TOPIC_XXXX to SCHEDULE_CONSUMER.
func TestTimerFamilies(t *testing.T) {
	timing := func() map[string]int64 { return map[string]int64{"ta": 1, "tb": 0, "tc": -1} }
	m := newTestMetrics(t, testConfig(), Sources{Timing: timing})
	m.Start()
	const born = int64(1_000_000)
	for _, secs := range []int64{2, 90, 2 * 86400} {
		m.TimerEnqueued("ta", false, born, born+secs*1000)
	}
	m.TimerEnqueued("ta", true, born, born+5000) // a cancellation marker
	m.TimerDequeued("ta", false)
	m.TimerDequeued("ta", false)
	m.TimerDequeued("ta", true)
	m.TimerEnqueued("tb", false, born, born+1500)
	m.TimerDequeued("tb", false)
	m.TimerDequeued("tc", false) // parked before a restart
	m.DelayDelivered("td", 2, 400)

	got, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	store := map[string]string{"storage_type": "local", "storage_medium": "disk", "cluster": "c1", "node_id": "b1", "node_type": "broker"}
	with := func(topic string) map[string]string {
		out := map[string]string{"topic": topic}
		for k, v := range store {
			out[k] = v
		}
		return out
	}
	checkSamples(t, got, []sampleCheck{
		{"rocketmq_timer_enqueue_total", with("ta"), 4},
		{"rocketmq_timer_enqueue_total", with("tb"), 1},
		{"rocketmq_timer_dequeue_total", with("ta"), 3},
		{"rocketmq_timer_dequeue_total", with("tb"), 1},
		{"rocketmq_timer_dequeue_total", with("tc"), 1},
		{"rocketmq_timing_messages", with("ta"), 1},
		{"rocketmq_timing_messages", with("tb"), 0},
		{"rocketmq_timing_messages", with("tc"), 0},
		{"rocketmq_delay_message_latency_seconds", with("ta"), 3},
		{"rocketmq_delay_message_latency_seconds", with("tb"), 1},
		{"rocketmq_messages_in_total", map[string]string{"topic": "td", "message_type": "delay", "is_system": "false"}, 2},
		{"rocketmq_throughput_in_total", map[string]string{"topic": "td", "message_type": "delay"}, 400},
		{"rocketmq_messages_out_total", map[string]string{"topic": "SCHEDULE_TOPIC_XXXX", "consumer_group": "SCHEDULE_CONSUMER", "is_system": "true"}, 2},
	})
	for name, typ := range map[string]string{
		"rocketmq_timer_enqueue_total": "counter", "rocketmq_timer_dequeue_total": "counter",
		"rocketmq_timing_messages": "gauge", "rocketmq_delay_message_latency_seconds": "histogram",
	} {
		if f := got[name]; f == nil || f.Type != typ {
			t.Errorf("%s = %+v, want a %s", name, f, typ)
		}
	}

	// Buckets: Java's 1 min … 3 days view.
	mfs, err := m.promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var h *dto.Histogram
	for _, mf := range mfs {
		if mf.GetName() != "rocketmq_delay_message_latency_seconds" {
			continue
		}
		for _, mt := range mf.Metric {
			for _, l := range mt.Label {
				if l.GetName() == "topic" && l.GetValue() == "ta" {
					h = mt.Histogram
				}
			}
		}
	}
	if h == nil {
		t.Fatal("no latency histogram for ta")
	}
	want := map[float64]uint64{60: 1, 600: 2, 3600: 2, 43200: 2, 86400: 2, 259200: 3}
	if len(h.Bucket) != len(want) {
		t.Errorf("%d buckets, want %d", len(h.Bucket), len(want))
	}
	for _, b := range h.Bucket {
		if w, ok := want[b.GetUpperBound()]; !ok || b.GetCumulativeCount() != w {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	if h.GetSampleCount() != 3 || h.GetSampleSum() != 2+90+2*86400 {
		t.Errorf("count %d sum %v, want 3 and %d", h.GetSampleCount(), h.GetSampleSum(), 2+90+2*86400)
	}

	// Off with enableMessageStoreMetrics=false.
	cfg := testConfig()
	cfg.EnableStoreMetrics = false
	m2 := newTestMetrics(t, cfg, Sources{})
	m2.TimerEnqueued("ta", false, born, born+1000)
	got2, err := m2.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"rocketmq_timer_enqueue_total", "rocketmq_timing_messages", "rocketmq_delay_message_latency_seconds"} {
		if got2[n] != nil {
			t.Errorf("%s exported with enableMessageStoreMetrics=false", n)
		}
	}
}
