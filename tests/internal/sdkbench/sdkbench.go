// Package sdkbench measures producer throughput of our SDK (pkg/client)
// and of rocketmq-client-go v2 against the same cluster in one run, so the
// two figures are comparable: same broker, same topic, same message size,
// same number of sending goroutines, rounds interleaved so that drift
// (page cache, compaction, other load) hits both alike.
package sdkbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

// Options of a run.
type Options struct {
	NameServer string
	Topic      string
	Goroutines int           // concurrent SendSync callers per client
	BodySize   int           // bytes
	Round      time.Duration // length of one measured round
	Rounds     int           // rounds per client, interleaved
	Warmup     time.Duration // unmeasured sending before the first round
	Logger     *slog.Logger  // for our SDK; nil discards
	Progress   io.Writer     // per-round lines; nil discards
}

// Result is one client's figures over all its rounds.
type Result struct {
	Client  string
	Sent    int64
	Errors  int64
	Elapsed time.Duration
	TPS     float64
	P50     time.Duration
	P99     time.Duration
	Max     time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("%-10s %9.0f msg/s  sent %d  errors %d  latency p50 %v p99 %v max %v",
		r.Client, r.TPS, r.Sent, r.Errors, r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond))
}

// sender sends one message and reports the error.
type sender func(ctx context.Context, body []byte) error

// Run measures both clients and returns (ours, client-go).
func Run(ctx context.Context, o Options) (Result, Result, error) {
	if o.Goroutines <= 0 || o.BodySize <= 0 || o.Round <= 0 || o.Rounds <= 0 {
		return Result{}, Result{}, errors.New("sdkbench: goroutines, body size, round and rounds must be positive")
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	ours, closeOurs, err := newOurs(o)
	if err != nil {
		return Result{}, Result{}, err
	}
	defer closeOurs()
	theirs, closeTheirs, err := newClientGo(o)
	if err != nil {
		return Result{}, Result{}, err
	}
	defer closeTheirs()

	body := make([]byte, o.BodySize)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	// Warm both up (routes, connections, JIT-free but page cache and
	// allocator warm).
	for _, s := range []sender{ours, theirs} {
		if _, err := round(ctx, s, body, o.Goroutines, o.Warmup); err != nil {
			return Result{}, Result{}, fmt.Errorf("sdkbench: warmup: %w", err)
		}
	}
	var rOurs, rTheirs []roundStats
	for i := range o.Rounds {
		for _, c := range []struct {
			name string
			s    sender
			acc  *[]roundStats
		}{{"ours", ours, &rOurs}, {"client-go", theirs, &rTheirs}} {
			st, err := round(ctx, c.s, body, o.Goroutines, o.Round)
			if err != nil {
				return Result{}, Result{}, fmt.Errorf("sdkbench: %s round %d: %w", c.name, i+1, err)
			}
			*c.acc = append(*c.acc, st)
			fmt.Fprintf(o.Progress, "round %d %-10s %9.0f msg/s (%d errors)\n", i+1, c.name, float64(st.sent)/st.elapsed.Seconds(), st.errors)
		}
	}
	return summarize("ours", rOurs), summarize("client-go", rTheirs), nil
}

type roundStats struct {
	sent, errors int64
	elapsed      time.Duration
	lat          []time.Duration
}

// round sends from n goroutines for d and records every latency.
func round(ctx context.Context, s sender, body []byte, n int, d time.Duration) (roundStats, error) {
	if d <= 0 {
		return roundStats{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var sent, failed atomic.Int64
	lats := make([][]time.Duration, n)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				err := s(context.Background(), body)
				lat := time.Since(t0)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				sent.Add(1)
				lats[g] = append(lats[g], lat)
			}
		}()
	}
	wg.Wait()
	st := roundStats{sent: sent.Load(), errors: failed.Load(), elapsed: time.Since(start)}
	for _, l := range lats {
		st.lat = append(st.lat, l...)
	}
	if st.sent == 0 {
		err, _ := firstErr.Load().(error)
		return st, fmt.Errorf("nothing sent: %v", err)
	}
	return st, nil
}

func summarize(name string, rs []roundStats) Result {
	r := Result{Client: name}
	var lat []time.Duration
	for _, st := range rs {
		r.Sent += st.sent
		r.Errors += st.errors
		r.Elapsed += st.elapsed
		lat = append(lat, st.lat...)
	}
	r.TPS = float64(r.Sent) / r.Elapsed.Seconds()
	slices.Sort(lat)
	if len(lat) > 0 {
		r.P50 = lat[len(lat)/2]
		r.P99 = lat[len(lat)*99/100]
		r.Max = lat[len(lat)-1]
	}
	return r
}

// newOurs is our SDK's producer with its defaults (retries, compression
// threshold, fault avoidance), as an application would use it.
func newOurs(o Options) (sender, func(), error) {
	p, err := client.NewProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{o.NameServer}, Logger: o.Logger},
		Group:        "sdkbench_ours",
	})
	if err != nil {
		return nil, nil, err
	}
	if err := p.Start(); err != nil {
		return nil, nil, err
	}
	send := func(ctx context.Context, body []byte) error {
		_, err := p.SendSync(ctx, &message.Message{Topic: o.Topic, Body: body})
		return err
	}
	return send, func() { p.Shutdown(context.Background()) }, nil
}

// newClientGo is rocketmq-client-go's producer with its defaults.
func newClientGo(o Options) (sender, func(), error) {
	rlog.SetLogLevel("error")
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{o.NameServer})),
		producer.WithGroupName("sdkbench_clientgo"),
		producer.WithInstanceName("sdkbench_clientgo"),
	)
	if err != nil {
		return nil, nil, err
	}
	if err := p.Start(); err != nil {
		return nil, nil, err
	}
	send := func(ctx context.Context, body []byte) error {
		res, err := p.SendSync(ctx, primitive.NewMessage(o.Topic, body))
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", res.Status)
		}
		return err
	}
	return send, func() { p.Shutdown() }, nil
}
