package e2e

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/internal/sdkbench"
)

// TestSDKProducerTPS compares our SDK's producer with rocketmq-client-go's
// on one broker (tests/internal/sdkbench). It is a benchmark, so it runs
// only when asked:
//
//	RMQ_SDK_BENCH=1 go test -run TestSDKProducerTPS -v ./tests/e2e/
//
// RMQ_SDK_BENCH_GOROUTINES, _BODY, _ROUND (a duration) and _ROUNDS change
// the shape. It fails if ours is more than 10% slower (the figures of one
// run on a shared 2-core machine move by a few percent).
func TestSDKProducerTPS(t *testing.T) {
	if os.Getenv("RMQ_SDK_BENCH") == "" {
		t.Skip("benchmark: set RMQ_SDK_BENCH=1 to compare our producer with client-go's")
	}
	c := startCluster(t, framework.Options{Brokers: 1})
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", "SdkBench", "-r", "8", "-w", "8")
	env := func(k string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
			return v
		}
		return def
	}
	round := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("RMQ_SDK_BENCH_ROUND")); err == nil && d > 0 {
		round = d
	}
	o := sdkbench.Options{
		NameServer: c.NamesrvAddr(), Topic: "SdkBench",
		Goroutines: env("RMQ_SDK_BENCH_GOROUTINES", 32), BodySize: env("RMQ_SDK_BENCH_BODY", 1024),
		Round: round, Rounds: env("RMQ_SDK_BENCH_ROUNDS", 3), Warmup: 3 * time.Second,
		Progress: testWriter{t},
	}
	// The nameserver learns the topic with the broker's next registration.
	time.Sleep(2 * time.Second)
	ours, theirs, err := sdkbench.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d goroutines, %d-byte bodies, %d × %v rounds each", o.Goroutines, o.BodySize, o.Rounds, o.Round)
	t.Log(ours)
	t.Log(theirs)
	t.Logf("ours / client-go = %.2f", ours.TPS/theirs.TPS)
	if ours.TPS < 0.9*theirs.TPS {
		t.Fatalf("our producer is slower than client-go's: %.0f vs %.0f msg/s", ours.TPS, theirs.TPS)
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
