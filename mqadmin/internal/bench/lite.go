package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// Lite mode (docs/lite-topics.md): the producer spreads messages over N lite
// topics <prefix>0 … <prefix>N-1 of a LITE parent topic; the lite consumer
// subscribes a lite group to a slice of them and reports what it receives.

// Lite mode defaults.
const (
	DefaultLitePrefix        = "lite-"
	DefaultLiteConsumerGroup = "benchmark_lite_consumer"
)

// liteDefaults checks a lite topic count and prefix (n = 0: no lite mode)
// and fills the default prefix.
func liteDefaults(n *int, prefix *string) error {
	if *n < 0 {
		return errors.New("negative lite topic count")
	}
	if *n == 0 {
		return nil
	}
	if *prefix == "" {
		*prefix = DefaultLitePrefix
	}
	// The longest name must be legal too.
	if err := protocol.ValidateLiteTopic(liteName(*prefix, *n-1), 0); err != nil {
		return fmt.Errorf("lite topic names %s0…%s: %w", *prefix, liteName(*prefix, *n-1), err)
	}
	return nil
}

func liteName(prefix string, i int) string { return prefix + strconv.Itoa(i) }

// nextLite is the lite topic of the next message (batch): round-robin over
// all threads, or random; "" outside lite mode.
func (r *producerRun) nextLite() string {
	n := r.o.LiteTopics
	if n <= 0 {
		return ""
	}
	if r.o.LiteRandom {
		return liteName(r.o.LitePrefix, rand.IntN(n))
	}
	return liteName(r.o.LitePrefix, int((r.lite.Add(1)-1)%uint64(n)))
}

// LiteConsumerOptions configure RunLiteConsumer.
type LiteConsumerOptions struct {
	RunOptions        // Topic is the LITE parent topic
	Group      string // a lite group bound to Topic (lite.bind.topic)
	// LiteTopics is how many lite topics the producer sends to
	// (<LitePrefix>0 …); Fraction of them (rounded up, at least one) are
	// subscribed, from index First on (wrapping around), so several
	// consumers can take different slices.
	LiteTopics    int
	LitePrefix    string
	Fraction      float64 // (0, 1]; default 1
	First         int
	FromMax       bool          // subscribe with OffsetPolicyMax: skip what the lite topics hold already
	Threads       int           // handler calls running at once; default 20
	InvisibleTime time.Duration // default 30 s
	Count         int64         // stop after this many messages; 0: no limit
}

func (o *LiteConsumerOptions) defaults() error {
	o.RunOptions.fill()
	o.Group = cmp.Or(o.Group, DefaultLiteConsumerGroup)
	if o.LiteTopics <= 0 {
		return errors.New("the lite consumer needs the number of lite topics (--lite-topics)")
	}
	if err := liteDefaults(&o.LiteTopics, &o.LitePrefix); err != nil {
		return err
	}
	if o.Fraction == 0 {
		o.Fraction = 1
	}
	if o.Fraction < 0 || o.Fraction > 1 || math.IsNaN(o.Fraction) {
		return fmt.Errorf("lite fraction %v out of (0, 1]", o.Fraction)
	}
	if o.First < 0 || o.Count < 0 || o.InvisibleTime < 0 {
		return errors.New("negative first lite topic, count or invisible time")
	}
	if o.Threads <= 0 {
		o.Threads = 20
	}
	if o.InvisibleTime == 0 {
		o.InvisibleTime = client.DefaultLiteInvisibleTime
	}
	return protocol.ValidateTopic(o.Topic)
}

// Subscribed lists the lite topics the options subscribe to.
func (o *LiteConsumerOptions) Subscribed() []string {
	// Rounded up, but not for float noise (25 × 0.28 is 7.000000000000001).
	k := max(1, int(math.Ceil(float64(o.LiteTopics)*o.Fraction-1e-9)))
	k = min(k, o.LiteTopics)
	out := make([]string, k)
	for i := range out {
		out[i] = liteName(o.LitePrefix, (o.First+i)%o.LiteTopics)
	}
	return out
}

// RunLiteConsumer subscribes a LitePushConsumer to its slice of the lite
// topics and consumes until Duration, Count or ctx ends, printing the
// consumer's report lines (receive TPS, born→consumed and
// stored→consumed times), the final lines and, with JSON, the summary.
func RunLiteConsumer(ctx context.Context, o LiteConsumerOptions) (*ConsumerSummary, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	lites := o.Subscribed()
	fmt.Fprintf(o.Out, "topic: %s, threadCount %d, group: %s, liteTopics: %d, subscribed: %d (%s … %s), invisibleTime: %d, aclEnable: %t, reportInterval: %d\n",
		o.Topic, o.Threads, o.Group, o.LiteTopics, len(lites), lites[0], lites[len(lites)-1], o.InvisibleTime.Milliseconds(),
		o.Credentials != nil, o.ReportInterval.Milliseconds())

	runCtx, stop := runContext(ctx, o.Duration)
	defer stop()
	var stats ConsumerStats
	c, err := started(client.NewLitePushConsumer(client.LitePushConsumerConfig{
		// The lite consumer keeps pkg/client's default header encoding.
		CommonConfig:      runClientConfig(o.RunOptions, "", remoting.SerializeJSON),
		Group:             o.Group,
		BindTopic:         o.Topic,
		ConsumeGoroutines: o.Threads,
		InvisibleTime:     o.InvisibleTime,
		Handler: func(_ context.Context, m *message.Message) client.ConsumeResult {
			stats.Consumed(time.Now(), m.BornTimestamp, m.StoreTimestamp, false)
			if o.Count > 0 && stats.Received.Load() >= o.Count {
				stop()
			}
			return client.ConsumeSuccess
		},
	}))
	if err != nil {
		return nil, err
	}
	defer shutdown(ctx, c)
	// Messages flow as soon as the first subscription is in: the clock
	// and the reports start now.
	stopReport := reportConsumer(o.Out, o.ReportInterval, &stats)
	start := time.Now()
	var opts []client.OffsetOption
	if o.FromMax {
		opts = append(opts, client.OffsetPolicyMax())
	}
	subscribed := 0
	for _, l := range lites {
		if err := c.SubscribeLite(runCtx, l, opts...); err != nil {
			if runCtx.Err() != nil {
				break
			}
			stopReport()
			return nil, fmt.Errorf("subscribe lite topic %s: %w", l, err)
		}
		subscribed++
	}
	fmt.Fprintf(o.Out, "Consumer Started. Subscribed %d lite topics in %d ms.\n", subscribed, time.Since(start).Milliseconds())
	<-runCtx.Done()
	elapsed := time.Since(start)
	stopReport()
	return finishConsumer(o.Out, o.JSON, &ConsumerSummary{Type: "lite-consumer", Topic: o.Topic, Group: o.Group, LiteTopics: subscribed}, &stats, elapsed)
}
