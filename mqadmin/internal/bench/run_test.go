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

// TestProducerRate: --rate paces the sends (not faster than asked, and
// close to it on an idle pair of in-process brokers), and the summary says
// so.
func TestProducerRate(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	var out, errOut bytes.Buffer
	const rate, n = 200, 100 // 0.5 s at the rate
	start := time.Now()
	code := Main(context.Background(), []string{"producer", "-n", c.Namesrv.Addr(), "-w", "8", "-q", "100", "-s", "100",
		"--rate", "200", "-ri", "600000", "--json"}, &out, &errOut, func(string) string { return "" })
	took := time.Since(start)
	if code != ExitOK {
		t.Fatalf("producer exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	var ps ProducerSummary
	if err := json.Unmarshal([]byte(lastLine(out.String())), &ps); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out.String())
	}
	if ps.SendSuccess != n || ps.Rate != rate {
		t.Fatalf("summary = %+v, want %d sends at rate %d", ps, n, rate)
	}
	// The last send is due at (n-1)/rate; unpaced, 100 sends to in-process
	// brokers take a few ms.
	if minimum := time.Duration(n-1) * time.Second / rate; took < minimum || ps.ElapsedSeconds < minimum.Seconds() {
		t.Fatalf("%d sends at %d/s took %v (summary %.3f s), want >= %v", n, rate, took, ps.ElapsedSeconds, minimum)
	}
	if ps.TPS > rate*1.1 {
		t.Fatalf("TPS %.1f over the rate %d", ps.TPS, rate)
	}
}

// TestPacerDue: due times are start + i/rate whichever sender takes them,
// and a stopped run stops waiting.
func TestPacerDue(t *testing.T) {
	t.Parallel()
	start := time.Now().Add(-time.Second) // all due already: no waiting
	p := &pacer{start: start, interval: float64(10 * time.Millisecond)}
	for i := range 5 {
		at, ok := p.due(context.Background())
		if !ok || !at.Equal(start.Add(time.Duration(i)*10*time.Millisecond)) {
			t.Fatalf("send %d due %v (ok %v), want start+%dms", i, at.Sub(start), ok, 10*i)
		}
	}
	later := &pacer{start: time.Now().Add(time.Hour), interval: 1}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := later.due(ctx); ok {
		t.Fatal("due returned ok after the run stopped")
	}
}
