package bench

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestHistogram(t *testing.T) {
	var h Histogram
	if h.Percentile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("empty histogram must read 0")
	}
	for v := int64(1); v <= 10000; v++ {
		h.Record(v)
	}
	tests := []struct {
		q    float64
		want int64
	}{{0.5, 5000}, {0.99, 9900}, {0.999, 9990}, {1, 10000}, {0.0001, 1}}
	for _, tt := range tests {
		got := h.Percentile(tt.q)
		if math.Abs(float64(got-tt.want)) > float64(tt.want)/64+1 {
			t.Errorf("p%v = %d, want %d ±1.6%%", tt.q*100, got, tt.want)
		}
	}
	if h.Count() != 10000 || h.Max() != 10000 || h.Mean() != 5000.5 {
		t.Fatalf("count %d max %d mean %v", h.Count(), h.Max(), h.Mean())
	}

	// Exact below 64, ≤ 1/64 relative error above, across the int64 range.
	for _, v := range []int64{0, 1, 63, 64, 65, 127, 128, 1000, 123456, 1 << 40, math.MaxInt64} {
		i := bucketOf(v)
		if i < 0 || i >= nBuckets {
			t.Fatalf("bucketOf(%d) = %d out of range", v, i)
		}
		got := bucketValue(i)
		if v < 64 && got != v {
			t.Errorf("value %d reads %d", v, got)
		}
		if v >= 64 && math.Abs(float64(got)-float64(v)) > float64(v)/64 {
			t.Errorf("value %d reads %d", v, got)
		}
	}
	var neg Histogram
	neg.Record(-5)
	if neg.Max() != 0 || neg.Percentile(1) != 0 {
		t.Fatal("negative values must count as 0")
	}
}

func TestHistogramConcurrent(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(int64(g*1000 + i))
			}
		})
	}
	wg.Wait()
	if h.Count() != 8000 || h.Max() != 7999 {
		t.Fatalf("count %d max %d", h.Count(), h.Max())
	}
}

func TestJavaTime(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 8_900_000, time.Local)
	if got := JavaTime(at); got != "2025-03-04 05:06:07,008" {
		t.Fatalf("JavaTime = %q", got)
	}
}

func TestProducerLines(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.Local)
	t0 := now.Add(-9 * time.Second)
	begin := ProducerSnapshot{At: t0, SendSuccess: 1000, RespSuccess: 1000, RTMicros: 1_000_000}
	end := ProducerSnapshot{At: t0.Add(9 * time.Second), SendSuccess: 10000, SendFailed: 3, RespSuccess: 10000, RespFailed: 2, MsgSuccess: 80000, MsgFailed: 24, RTMicros: 19_000_000}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{
			"producer",
			ProducerLine(now, begin, end, 12_345),
			// 9000 responses in 9 s = 1000 TPS; 18 s of RT / 9000 = 2 ms.
			"Current Time: 2025-01-02 03:04:05,006 | Send TPS: 1000 | Max RT(ms): 12 | Average RT(ms):   2.000 | Send Failed: 3 | Response Failed: 2\n",
		},
		{
			"producer, nothing sent: Java prints NaN",
			ProducerLine(now, begin, ProducerSnapshot{At: end.At, SendSuccess: 1000, RespSuccess: 1000, RTMicros: 1_000_000}, 0),
			"Current Time: 2025-01-02 03:04:05,006 | Send TPS: 0 | Max RT(ms): 0 | Average RT(ms):     NaN | Send Failed: 0 | Response Failed: 0\n",
		},
		{
			"batch producer",
			BatchProducerLine(now, begin, ProducerSnapshot{At: end.At, SendSuccess: 1900, MsgSuccess: 16000, RTMicros: 10_000_000, SendFailed: 1, MsgFailed: 16}, 7_999),
			// 900 requests, 16000 messages in 9 s; 9 s of RT over 900 / 16000.
			"Current Time: 2025-01-02 03:04:05,006 | Send TPS: 100 | Send MPS: 1777 | Max RT(ms): 7 | Average RT(ms):  10.000 | Average Message RT(ms):   0.562 | Send Failed: 1 | Send Message Failed: 16\n",
		},
		{
			"complete over the window",
			ProducerComplete([]ProducerSnapshot{begin, end}, end, 12_345),
			"[Complete] Send Total: 10003 | Send TPS: 1000 | Max RT(ms): 12 | Average RT(ms):   2.000 | Send Failed: 3 | Response Failed: 2\n",
		},
		{
			"complete without a window",
			ProducerComplete([]ProducerSnapshot{begin}, end, 12_345),
			"[Complete] Send Total: 10003 Send Failed: 3 Response Failed: 2\n",
		},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestConsumerLine(t *testing.T) {
	var s ConsumerStats
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.Local)
	begin := s.Snapshot(now.Add(-9 * time.Second))
	born := now.UnixMilli() - 30
	for range 900 {
		s.Consumed(now, born, born+10, false)
	}
	s.Consumed(now, born-100, born, true) // the slowest one failed
	end := s.Snapshot(now)
	got := s.ConsumerLine(now, begin, end)
	// 901 in 9 s; B2C (900×30 + 130) / 901, S2C (900×20 + 30) / 901.
	want := "Current Time: 2025-01-02 03:04:05,000 | Consume TPS: 100 | AVG(B2C) RT(ms):  30.111 | AVG(S2C) RT(ms):  20.011 | MAX(B2C) RT(ms): 130 | MAX(S2C) RT(ms): 30 | Consume Fail: 1\n"
	if got != want {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
	// Java resets the maxima after each report; the window's failures are a
	// difference, not a total.
	if s.B2CMaxMS.Load() != 0 || s.S2CMaxMS.Load() != 0 {
		t.Fatal("maxima not reset")
	}
	again := s.ConsumerLine(now.Add(time.Second), end, s.Snapshot(now.Add(time.Second)))
	if want := "Current Time: 2025-01-02 03:04:06,000 | Consume TPS: 0 | AVG(B2C) RT(ms):     NaN | AVG(S2C) RT(ms):     NaN | MAX(B2C) RT(ms): 0 | MAX(S2C) RT(ms): 0 | Consume Fail: 0\n"; again != want {
		t.Fatalf("\n got %q\nwant %q", again, want)
	}
	l := latencyOf(&s.B2CLatency)
	if math.Abs(l.P50-30) > 30.0/64 || l.Max != 130 {
		t.Fatalf("B2C latency = %+v", l)
	}
}

func TestWindow(t *testing.T) {
	var w window[int]
	for i := range 15 {
		w.add(i)
		if w.full() != (i >= windowSize-1) {
			t.Fatalf("full() after %d adds = %v", i+1, w.full())
		}
	}
	if b, e := w.ends(); b != 5 || e != 14 || len(w.snaps) != windowSize {
		t.Fatalf("window = %v", w.snaps)
	}
}

func TestSplitQuantity(t *testing.T) {
	tests := []struct {
		q       int64
		threads int
		want    []int64
	}{
		{0, 3, []int64{0, 0, 0}},
		{10, 3, []int64{4, 3, 3}},
		{2, 4, []int64{2, 0, 0, 0}},
	}
	for _, tt := range tests {
		if got := splitQuantity(tt.q, tt.threads); !slices.Equal(got, tt.want) {
			t.Errorf("splitQuantity(%d, %d) = %v, want %v", tt.q, tt.threads, got, tt.want)
		}
	}
}

func TestNormalizeArgs(t *testing.T) {
	multi := map[string]string{"ri": "reportInterval", "ak": "accessKey"}
	longs := []string{"topic", "reportInterval", "accessKey", "t"}
	tests := []struct{ in, want []string }{
		{[]string{"producer", "-ri", "5000", "-t", "T"}, []string{"producer", "--reportInterval", "5000", "-t", "T"}},
		{[]string{"-ak=x", "-topic", "T"}, []string{"--accessKey=x", "--topic", "T"}},
		{[]string{"-tT", "--topic", "-w64"}, []string{"-tT", "--topic", "-w64"}},
		{[]string{"--", "-ri"}, []string{"--", "-ri"}},
	}
	for _, tt := range tests {
		if got := NormalizeArgs(tt.in, multi, longs); !slices.Equal(got, tt.want) {
			t.Errorf("NormalizeArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJavaBool(t *testing.T) {
	for in, want := range map[string]bool{"true": true, "TRUE": true, " True ": true, "false": false, "yes": false, "1": false} {
		var b JavaBool
		if err := b.Set(in); err != nil || bool(b) != want {
			t.Errorf("Set(%q) = %v, %v", in, b, err)
		}
	}
}
