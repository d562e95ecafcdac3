package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/remoting/code"
)

func startCluster(t *testing.T) *clienttest.Cluster {
	c := startBrokers(t)
	c.CreateTopic(DefaultTopic, 4)
	return c
}

// startBrokers starts a nameserver with brokers broker-a and broker-b,
// closed when the test ends.
func startBrokers(t *testing.T) *clienttest.Cluster {
	t.Helper()
	c, err := clienttest.StartCluster("broker-a", "broker-b")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestMainProducerAndConsumer(t *testing.T) {
	c := startCluster(t)
	getenv := func(k string) string {
		if k == "NAMESRV_ADDR" {
			return c.Namesrv.Addr()
		}
		return ""
	}
	ctx := context.Background()

	var out, errOut bytes.Buffer
	// -ri beyond the run's length: one snapshot, so the short [Complete]
	// line whatever the machine's load (a 1 s interval gave the long form
	// when the run took longer).
	code := Main(ctx, []string{"producer", "-w", "4", "-q", "203", "-s", "5000", "-k", "true", "-l", "3", "-p", "40",
		"-c", "true", "-ch", "4096", "-ri", "600000", "--flush-check", "--json"}, &out, &errOut, getenv)
	if code != ExitOK {
		t.Fatalf("producer exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	text := out.String()
	for _, want := range []string{
		"topic: BenchmarkTest, threadCount: 4, messageSize: 5000, keyEnable: true, propertySize: 40, tagCount: 3,",
		"compressType: ZLIB compressLevel: 5",
		"[Complete] Send Total: 203 Send Failed: 0 Response Failed: 0",
		"[Flush Check] Acked: 203 | Max Offsets Advanced: 203 | OK",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("producer output lacks %q:\n%s", want, text)
		}
	}
	var ps ProducerSummary
	if err := json.Unmarshal([]byte(lastLine(text)), &ps); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, text)
	}
	if ps.Type != "producer" || ps.SendSuccess != 203 || ps.Messages != 203 || ps.Status["SEND_OK"] != 203 ||
		ps.FlushCheck == nil || !ps.FlushCheck.OK || ps.Latency.P50 <= 0 || ps.Latency.Max < ps.Latency.P99 {
		t.Fatalf("summary = %+v", ps)
	}
	// Bodies were compressed, keys and tags set as Java's tool does.
	var stored int
	for _, b := range c.Brokers {
		for q := range 4 {
			msgs, err := b.Messages(DefaultTopic, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.SysFlag&1 == 0 || len(m.Keys()) != 1 || !strings.HasPrefix(m.Tags(), "tag") || m.Property("prop0") == "" {
					t.Fatalf("stored message = %+v", m)
				}
			}
			stored += len(msgs)
		}
	}
	if stored != 203 {
		t.Fatalf("%d messages stored", stored)
	}

	// Batch and async modes.
	out.Reset()
	if code := Main(ctx, []string{"producer", "-n", c.Namesrv.Addr(), "-b", "10", "-y", "true", "-q", "95", "--json"}, &out, &errOut, nil); code != ExitOK {
		t.Fatalf("batch producer exit %d: %s", code, errOut.String())
	}
	if err := json.Unmarshal([]byte(lastLine(out.String())), &ps); err != nil || ps.Messages != 95 || ps.SendSuccess != 10 || !ps.Async || ps.Threads != 1 {
		t.Fatalf("batch summary = %+v (%v)\n%s", ps, err, out.String())
	}

	// The consumer reads everything from the start, decompressing bodies.
	out.Reset()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	code = Main(cctx, []string{"consumer", "-n", c.Namesrv.Addr(), "-g", "bench_cg", "--from-first", "--count", "298", "-w", "4", "--json"}, &out, &errOut, nil)
	if code != ExitOK {
		t.Fatalf("consumer exit %d: %s", code, errOut.String())
	}
	var cs ConsumerSummary
	if err := json.Unmarshal([]byte(lastLine(out.String())), &cs); err != nil {
		t.Fatalf("consumer JSON: %v\n%s", err, out.String())
	}
	if cs.Consumed < 298 || cs.Group != "bench_cg" || cs.B2C.Max < cs.B2C.P50 || cctx.Err() != nil {
		t.Fatalf("consumer summary = %+v", cs)
	}
	if !strings.Contains(out.String(), "Consumer Started.") || !strings.Contains(out.String(), "[Complete] Consume Total: ") {
		t.Fatalf("consumer output:\n%s", out.String())
	}
}

func TestProducerCountsFailures(t *testing.T) {
	c := startCluster(t)
	for _, b := range c.Brokers {
		b.FailSends(code.MessageIllegal, code.MessageIllegal)
	}
	var out bytes.Buffer
	sum, err := RunProducer(context.Background(), ProducerOptions{
		RunOptions: RunOptions{NameServer: c.Namesrv.Addr(), Out: &out},
		Threads:    1, MessageQuantity: 10, ErrorPause: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	// MESSAGE_ILLEGAL is a broker answer: "Response Failed", not retried.
	if sum.ResponseFailed != 4 || sum.SendSuccess != 6 || sum.SendTotal != 6 {
		t.Fatalf("summary = %+v\n%s", sum, out.String())
	}
	if !strings.Contains(out.String(), "[Complete] Send Total: 6 Send Failed: 0 Response Failed: 4") {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestMainUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"producer", "--nope"}, &out, &errOut, nil); code != ExitUsage {
		t.Fatalf("unknown flag: exit %d", code)
	}
	if code := Main(context.Background(), []string{"producer", "-ct", "LZ4"}, &out, &errOut, nil); code != ExitUsage {
		t.Fatalf("LZ4: exit %d", code)
	}
	if code := Main(context.Background(), []string{"producer", "-k"}, &out, &errOut, nil); code != ExitUsage {
		t.Fatalf("-k without a value: exit %d", code)
	}
}

func TestDurationStopsProducer(t *testing.T) {
	c := startCluster(t)
	start := time.Now()
	sum, err := RunProducer(context.Background(), ProducerOptions{
		RunOptions: RunOptions{NameServer: c.Namesrv.Addr(), Duration: 300 * time.Millisecond}, Threads: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second || sum.SendSuccess == 0 {
		t.Fatalf("ran %v, %d sends", d, sum.SendSuccess)
	}
}
