package brokerstats

import (
	"testing"
	"time"
)

// TestWindows: the minute window covers the last 6 ten-second periods (7
// samples), starting from a zero sample one period before the first; the
// hour and day windows likewise; tps is per second, avgpt per call.
func TestWindows(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	m := New(func() time.Time { return now })
	if _, ok := m.View(TopicPutNums, "T"); ok {
		t.Fatal("an item nobody recorded")
	}
	m.TopicPut("T", 10, 100)
	if d, ok := m.View(TopicPutNums, "T"); !ok || d != (Data{}) {
		t.Fatalf("before any sample: %+v %v", d, ok)
	}
	m.SampleMinute()
	m.SampleHour()
	m.SampleDay()
	d, _ := m.View(TopicPutNums, "T")
	want := Snapshot{Sum: 10, Tps: 1, Avgpt: 10} // 10 messages over the 10 s back to the zero sample
	if d.StatsMinute != want {
		t.Fatalf("minute %+v, want %+v", d.StatsMinute, want)
	}
	if d.StatsHour.Sum != 10 || d.StatsDay.Sum != 10 {
		t.Fatalf("hour %+v day %+v", d.StatsHour, d.StatsDay)
	}
	// Ten more sends of 3 over the next 70 s: the minute window keeps the
	// last 7 samples (60 s); the hour window still has the first sample.
	for range 7 {
		now = now.Add(minuteEvery)
		m.TopicPut("T", 3, 1)
		m.TopicPut("T", 3, 1)
		m.SampleMinute()
	}
	d, _ = m.View(TopicPutNums, "T")
	if d.StatsMinute.Sum != 36 || d.StatsMinute.Tps != 0.6 || d.StatsMinute.Avgpt != 3 {
		t.Fatalf("minute after 70 s: %+v", d.StatsMinute)
	}
	m.SampleHour()
	if d, _ = m.View(TopicPutNums, "T"); d.StatsHour.Sum != 52 {
		t.Fatalf("hour %+v", d.StatsHour)
	}
	m.GroupGet("g", "T", 4, 40)
	m.SampleMinute()
	if d, ok := m.View(GroupGetNums, "T@g"); !ok || d.StatsMinute.Sum != 4 {
		t.Fatalf("group get %+v %v", d, ok)
	}
	if d, ok := m.View(GroupGetSize, "T@g"); !ok || d.StatsMinute.Sum != 40 {
		t.Fatalf("group get size %+v %v", d, ok)
	}
}

func TestRunStops(t *testing.T) {
	m := New(nil)
	m.TopicPut("T", 1, 1)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { m.Run(stop); close(done) }()
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	if d, _ := m.View(TopicPutNums, "T"); d.StatsMinute.Sum != 1 {
		t.Fatalf("Run's first samples: %+v", d)
	}
}
