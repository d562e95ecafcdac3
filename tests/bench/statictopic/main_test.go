// Package statictopicbench measures static topics (issue 7) on a real
// cluster of a nameserver and three brokers: the wall time of remapping 64
// logic queues under producer load, with no message lost and no logic
// offset given twice, and the send and pull throughput of a static topic
// against a normal topic of the same queue count on the same brokers.
//
// It is a benchmark, not a test of the default suite: it runs only with
// RMQ_BENCH_STATIC=1 (make bench-static, scripts/bench/statictopic.sh).
package statictopicbench

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/e2e/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// envEnable opts in; the other variables tune the run.
const envEnable = "RMQ_BENCH_STATIC"

// config is one run's shape, from STATIC_BENCH_* variables.
type config struct {
	Queues   int           // logic queues of the static topic (and queues of the normal one)
	Senders  int           // goroutines sending with SendSync
	Pullers  int           // goroutines pulling in the TPS rounds
	Body     int           // message body size in bytes
	Warmup   time.Duration // load before the first remap
	After    time.Duration // load after each remap
	Rounds   int           // TPS rounds per topic (alternating)
	Round    time.Duration // length of one TPS round
	RemapMax time.Duration // target for the remap's wall time
	MinRatio float64       // target for static / normal TPS
	// NoFaultAvoidance turns off the producers' latency fault avoidance
	// (STATIC_BENCH_FAULT_AVOIDANCE=0): it keys on the queue's broker name,
	// which for a logic queue is the one mock broker.
	NoFaultAvoidance bool
}

func loadConfig(t *testing.T) config {
	t.Helper()
	c := config{Queues: 64, Senders: 16, Pullers: 8, Body: 256, Warmup: 3 * time.Second, After: 3 * time.Second,
		Rounds: 9, Round: 2 * time.Second, RemapMax: 2 * time.Second, MinRatio: 0.9}
	ints := map[string]*int{"QUEUES": &c.Queues, "SENDERS": &c.Senders, "PULLERS": &c.Pullers, "BODY": &c.Body, "ROUNDS": &c.Rounds}
	for k, p := range ints {
		if v := os.Getenv("STATIC_BENCH_" + k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("STATIC_BENCH_%s=%q: want a positive integer", k, v)
			}
			*p = n
		}
	}
	durs := map[string]*time.Duration{"WARMUP": &c.Warmup, "AFTER": &c.After, "ROUND": &c.Round}
	for k, p := range durs {
		if v := os.Getenv("STATIC_BENCH_" + k); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				t.Fatalf("STATIC_BENCH_%s=%q: want a positive duration like 3s", k, v)
			}
			*p = d
		}
	}
	switch v := os.Getenv("STATIC_BENCH_FAULT_AVOIDANCE"); v {
	case "", "1":
	case "0":
		c.NoFaultAvoidance = true
	default:
		t.Fatalf("STATIC_BENCH_FAULT_AVOIDANCE=%q: want 0 or 1", v)
	}
	if c.Queues%2 != 0 {
		t.Fatalf("STATIC_BENCH_QUEUES=%d: want an even count (the normal topic splits it over two brokers)", c.Queues)
	}
	return c
}

func (c config) String() string {
	fa := "on"
	if c.NoFaultAvoidance {
		fa = "off"
	}
	return fmt.Sprintf("%d logic queues, %d senders, %d pullers, %d-byte bodies, warmup %v, %v after each remap, %d TPS rounds of %v, producer fault avoidance %s",
		c.Queues, c.Senders, c.Pullers, c.Body, c.Warmup, c.After, c.Rounds, c.Round, fa)
}

// loadAvg is the machine's 1-minute load average, for the record ("?" off
// Linux).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(b) == 0 {
		return "?"
	}
	var one string
	fmt.Sscan(string(b), &one)
	return one
}
