package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/remoting"
)

// clientShutdownTimeout bounds the shutdown of a run's producer or
// consumer.
const clientShutdownTimeout = 5 * time.Second

// runClientConfig is the pkg/client configuration of a run's producer or
// consumer: one nameserver, Java's instance name (namePrefix and the
// current time in ms) and the headers in serialize.
func runClientConfig(o RunOptions, namePrefix string, serialize remoting.SerializeType) client.CommonConfig {
	return client.CommonConfig{
		NameServers:   []string{o.NameServer},
		InstanceName:  namePrefix + strconv.FormatInt(time.Now().UnixMilli(), 10),
		Credentials:   o.Credentials,
		SerializeType: serialize,
		Remoting:      remoting.ClientConfig{TLS: o.TLS},
		Logger:        o.Logger,
	}
}

// startStopper is a pkg/client producer or consumer.
type startStopper interface {
	Start() error
	Shutdown(context.Context) error
}

// started starts the client a constructor returned (with its error).
func started[C startStopper](c C, err error) (C, error) {
	if err != nil {
		return c, err
	}
	return c, c.Start()
}

// shutdown stops c within clientShutdownTimeout, even after ctx ended.
func shutdown(ctx context.Context, c startStopper) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clientShutdownTimeout)
	defer cancel()
	_ = c.Shutdown(sctx)
}

// runContext is the context a run works in: ctx, ended after d when d > 0,
// or earlier by stop.
func runContext(ctx context.Context, d time.Duration) (_ context.Context, stop context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// reportConsumer prints a consumer's report line every interval until the
// returned func is called.
func reportConsumer(out io.Writer, interval time.Duration, stats *ConsumerStats) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	rep := startReporter(ctx, interval, stats.Snapshot, func(now time.Time, begin, end ConsumerSnapshot) {
		fmt.Fprint(out, stats.ConsumerLine(now, begin, end))
	})
	return func() {
		cancel()
		rep.wait()
	}
}

// finishConsumer fills sum from the run's stats and elapsed time and prints
// it: the text lines and, with asJSON, the JSON line.
func finishConsumer(out io.Writer, asJSON bool, sum *ConsumerSummary, stats *ConsumerStats, elapsed time.Duration) (*ConsumerSummary, error) {
	n := stats.Received.Load()
	sum.ElapsedSeconds = elapsed.Seconds()
	sum.Consumed = n
	sum.Failed = stats.Failed.Load()
	sum.B2C = latencyOf(&stats.B2CLatency)
	sum.S2C = latencyOf(&stats.S2CLatency)
	if s := elapsed.Seconds(); s > 0 {
		sum.TPS = float64(n) / s
	}
	return printSummary(out, asJSON, sum)
}

// printSummary prints a run's summary lines and, with asJSON, its JSON line.
func printSummary[S interface{ printText(io.Writer) }](out io.Writer, asJSON bool, sum S) (S, error) {
	sum.printText(out)
	if asJSON {
		if err := writeJSON(out, sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}
