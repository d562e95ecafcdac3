package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// benchN is the number of timers of the delivery benchmarks
// (RMQ_TIMER_BENCH_N, default 100k; the report's figures use 1M).
func benchN(b *testing.B) int {
	if v := os.Getenv("RMQ_TIMER_BENCH_N"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("RMQ_TIMER_BENCH_N=%q", v)
		}
		return n
	}
	return 100_000
}

// shiftedClock is the service's clock, moved forward on demand so that
// timers parked far ahead come due when the benchmark wants.
type shiftedClock struct{ off atomic.Int64 }

func (c *shiftedClock) now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// setNow makes the clock read t now.
func (c *shiftedClock) setNow(t time.Time) { c.off.Store(int64(time.Until(t))) }

func openBenchStore(b *testing.B, dir string) *store.Store {
	b.Helper()
	sc := store.DefaultConfig(dir)
	sc.CommitLog.FileSize = 256 << 20
	sc.Logger = slog.New(slog.DiscardHandler)
	st, err := store.Open(sc)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// enqueue parks n timers (128-byte bodies, 8 real queues) due at due(i),
// from 8 goroutines, and returns the rate.
func enqueue(b *testing.B, svc *Service, st *store.Store, n int, due func(i int) int64) float64 {
	b.Helper()
	body := []byte(strings.Repeat("x", 128))
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				m := &message.Message{Topic: "BenchReal", QueueID: int32(i % 8), Body: body, BornTimestamp: time.Now().UnixMilli(),
					Properties: map[string]string{
						message.PropertyUniqClientMessageIDKeyIdx: fmt.Sprintf("U%010d", i),
						message.PropertyTimerDeliverMS:            strconv.FormatInt(due(i), 10),
					}}
				if err := svc.Schedule(m); err != nil {
					b.Error(err)
					return
				}
				if _, err := st.PutMessage(ctx, m); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

func waitStat(b *testing.B, svc *Service, what string, timeout time.Duration, done func(Stats) bool) time.Duration {
	b.Helper()
	start := time.Now()
	for !done(svc.Stats()) {
		if time.Since(start) > timeout {
			b.Fatalf("%s: not done after %v: %+v", what, timeout, svc.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// BenchmarkTimerDelivery parks N timers, then delivers them: "burst" has
// all of them due at the same millisecond (drain throughput), "minute"
// spreads them uniformly over one minute (lateness when keeping up).
// Figures: enqueue (hook + store) and index rates, delivery rate,
// lateness p50/p99/max. Run with -benchtime=1x.
func BenchmarkTimerDelivery(b *testing.B) {
	for _, mode := range []string{"burst", "minute"} {
		b.Run(mode, func(b *testing.B) {
			n := benchN(b)
			for b.Loop() {
				benchDelivery(b, mode, n)
			}
		})
	}
}

func benchDelivery(b *testing.B, mode string, n int) {
	clock := &shiftedClock{}
	cfg := config.Default(config.Host{Hostname: "bench", IP: "127.0.0.1", Home: b.TempDir()})
	st := openBenchStore(b, b.TempDir())
	defer st.Close()
	svc, err := Open(Options{Config: func() *config.Config { return cfg }, Store: st, Now: clock.now})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	svc.Start()
	base := time.Now().Add(24 * time.Hour).Truncate(time.Minute)
	var due func(int) int64
	window := time.Duration(0)
	if mode == "burst" {
		due = func(int) int64 { return base.UnixMilli() }
	} else {
		window = time.Minute
		r := rand.New(rand.NewPCG(1, 2))
		dues := make([]int64, n)
		for i := range dues {
			dues[i] = base.UnixMilli() + r.Int64N(window.Milliseconds())
		}
		due = func(i int) int64 { return dues[i] }
	}
	putRate := enqueue(b, svc, st, n, due)
	idx := waitStat(b, svc, "index", 10*time.Minute, func(s Stats) bool { return s.Indexed >= int64(n) })
	svc.ResetLateness()
	clock.setNow(base)
	took := waitStat(b, svc, "delivery", window+10*time.Minute, func(s Stats) bool { return s.Delivered >= int64(n) })
	s := svc.Stats()
	b.ReportMetric(putRate, "enqueue/s")
	b.ReportMetric(float64(n)/took.Seconds(), "delivered/s")
	b.ReportMetric(float64(s.LatenessP50.Milliseconds()), "p50-ms")
	b.ReportMetric(float64(s.LatenessP99.Milliseconds()), "p99-ms")
	b.ReportMetric(float64(s.LatenessMax.Milliseconds()), "max-ms")
	b.Logf("%s n=%d: enqueue %.0f/s, index done %v after enqueue, delivery took %v (%.0f/s), lateness p50 %v p99 %v max %v, stats %+v",
		mode, n, putRate, idx.Round(time.Millisecond), took.Round(time.Millisecond), float64(n)/took.Seconds(),
		s.LatenessP50, s.LatenessP99, s.LatenessMax, s)
	if s.Dropped != 0 || s.Failed != 0 || s.Indexed != int64(n) {
		b.Fatalf("stats %+v", s)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		total := int64(0)
		for q := int32(0); q < 8; q++ {
			total += st.MaxOffset("BenchReal", q)
		}
		if total >= int64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for q := int32(0); q < 8; q++ {
		if got := st.MaxOffset("BenchReal", q); got != int64((n+7-int(q))/8) {
			b.Fatalf("queue %d holds %d, want %d", q, got, n/8)
		}
	}
}

// BenchmarkSendMix measures SEND_MESSAGE_V2 through the send processor
// (header parsing, checks, hook, real store; no network) from parallel
// senders: plain messages, and one delay message (level 1) in ten, whose
// deliveries the running service adds to the store's load.
func BenchmarkSendMix(b *testing.B) {
	for _, bc := range []struct {
		name  string
		every int // one delay message in every; 0: none
	}{{"plain", 0}, {"delay10pct", 10}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := config.Default(config.Host{Hostname: "bench", IP: "127.0.0.1", Home: b.TempDir()})
			get := func() *config.Config { return cfg }
			st := openBenchStore(b, b.TempDir())
			defer st.Close()
			svc, err := Open(Options{Config: get, Store: st})
			if err != nil {
				b.Fatal(err)
			}
			defer svc.Close()
			svc.Start()
			topics, err := topic.New(topic.Options{Config: get})
			if err != nil {
				b.Fatal(err)
			}
			tc := protocol.NewTopicConfig("BenchSend")
			tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 8, 8, 6
			if _, err := topics.Update(tc); err != nil {
				b.Fatal(err)
			}
			p, err := send.New(send.Deps{Config: get, Topics: topics, Store: st, Schedule: svc})
			if err != nil {
				b.Fatal(err)
			}
			h := p.Handlers()[code.SendMessageV2]
			plain := sendReq(false)
			delayed := sendReq(true)
			var seq atomic.Int64
			b.SetParallelism(8) // × GOMAXPROCS senders
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					req := plain
					if bc.every > 0 && seq.Add(1)%int64(bc.every) == 0 {
						req = delayed
					}
					resp, err := h(ctx, nil, req)
					if err != nil || resp.Code != code.Success {
						b.Fatalf("%v %+v", err, resp)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sends/s")
		})
	}
}

func sendReq(delay bool) *remoting.Command {
	props := map[string]string{message.PropertyTags: "TagA", message.PropertyKeys: "k1", message.PropertyWaitStoreMsgOK: "true"}
	if delay {
		props[message.PropertyDelayTimeLevel] = "1"
	}
	enc, _ := message.EncodeProperties(props)
	return remoting.NewRequest(code.SendMessageV2, map[string]string{
		"a": "bench_pg", "b": "BenchSend", "c": "TBW102", "d": "4", "e": "-1", "f": "0",
		"g": strconv.FormatInt(time.Now().UnixMilli(), 10), "h": "0", "i": string(enc), "j": "0", "k": "false", "m": "false",
	}, []byte(strings.Repeat("x", 1024)))
}
