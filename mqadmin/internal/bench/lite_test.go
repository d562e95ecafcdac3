package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/client/clienttest"
)

func startLiteCluster(t *testing.T) *clienttest.Cluster {
	c := startBrokers(t)
	for _, b := range c.Brokers {
		b.CreateLiteTopic(DefaultTopic, 2)
		b.CreateLiteGroup(DefaultLiteConsumerGroup, DefaultTopic, 0)
	}
	return c
}

// lmqCount is how many messages the lite topic's LMQs hold.
func lmqCount(t *testing.T, c *clienttest.Cluster, lite string) int {
	t.Helper()
	n := 0
	for _, b := range c.Brokers {
		msgs, err := b.Messages(clienttest.LiteLMQ(DefaultTopic, lite), 0)
		if err != nil {
			t.Fatal(err)
		}
		n += len(msgs)
	}
	return n
}

func TestLiteProducerAndConsumer(t *testing.T) {
	c := startLiteCluster(t)
	ns := c.Namesrv.Addr()
	ctx := context.Background()

	var out, errOut bytes.Buffer
	if code := Main(ctx, []string{"producer", "-n", ns, "-w", "3", "-q", "50", "-lite-topics", "5", "--lite-prefix", "s-", "--json"}, &out, &errOut, nil); code != ExitOK {
		t.Fatalf("lite producer exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), " liteTopics: 5, litePrefix: s-, liteRandom: false\n") ||
		!strings.Contains(out.String(), "[Complete] Send Total: 50 Send Failed: 0 Response Failed: 0") {
		t.Fatalf("producer output:\n%s", out.String())
	}
	var ps ProducerSummary
	if err := json.Unmarshal([]byte(lastLine(out.String())), &ps); err != nil || ps.LiteTopics != 5 || ps.SendSuccess != 50 {
		t.Fatalf("summary %+v %v", ps, err)
	}
	// Round-robin: ten messages per lite topic.
	for _, l := range []string{"s-0", "s-1", "s-2", "s-3", "s-4"} {
		if n := lmqCount(t, c, l); n != 10 {
			t.Fatalf("%s holds %d messages", l, n)
		}
	}

	out.Reset()
	if code := Main(ctx, []string{"producer", "-n", ns, "-q", "30", "--lite-topics", "3", "--lite-random", "-b", "3"}, &out, &errOut, nil); code != ExitOK {
		t.Fatalf("random batch lite producer exit %d: %s", code, errOut.String())
	}
	if got := lmqCount(t, c, "lite-0") + lmqCount(t, c, "lite-1") + lmqCount(t, c, "lite-2"); got != 30 {
		t.Fatalf("random lite mode stored %d messages", got)
	}

	// The consumer takes 2 of the 5 lite topics (0.3 rounded up), from s-4
	// on: s-4 and s-0, ten messages each.
	out.Reset()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	code := Main(cctx, []string{"lite-consumer", "-n", ns, "--lite-topics", "5", "--lite-prefix", "s-", "--lite-fraction", "0.3",
		"--lite-first", "4", "--count", "20", "-w", "4", "--json"}, &out, &errOut, nil)
	if code != ExitOK {
		t.Fatalf("lite consumer exit %d: %s", code, errOut.String())
	}
	var cs ConsumerSummary
	if err := json.Unmarshal([]byte(lastLine(out.String())), &cs); err != nil {
		t.Fatalf("consumer JSON: %v\n%s", err, out.String())
	}
	if cs.Type != "lite-consumer" || cs.Consumed != 20 || cs.LiteTopics != 2 || cs.Group != DefaultLiteConsumerGroup ||
		cs.S2C.Max < cs.S2C.P50 || cs.B2C.P99 < cs.B2C.P50 || cctx.Err() != nil {
		t.Fatalf("consumer summary %+v", cs)
	}
	for _, want := range []string{"liteTopics: 5, subscribed: 2 (s-4 … s-0)", "Consumer Started. Subscribed 2 lite topics in ", "[Complete] Consume Total: 20", "[Summary] S2C RT(ms): "} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("consumer output lacks %q:\n%s", want, out.String())
		}
	}
	// --from-max skips what s-1 … s-3 hold.
	out.Reset()
	code = Main(ctx, []string{"lite-consumer", "-n", ns, "--lite-topics", "5", "--lite-prefix", "s-", "--lite-fraction", "0.6",
		"--lite-first", "1", "--from-max", "--duration", "500ms", "--json"}, &out, &errOut, nil)
	if err := json.Unmarshal([]byte(lastLine(out.String())), &cs); code != ExitOK || err != nil || cs.Consumed != 0 || cs.LiteTopics != 3 {
		t.Fatalf("--from-max: exit %d, %+v %v\n%s", code, cs, err, out.String())
	}
	for _, ctl := range c.Brokers[0].LiteCtls() {
		if ctl.Action == "PARTIAL_ADD" && ctl.LiteTopicSet[0] == "s-2" && (ctl.OffsetOption == nil || ctl.OffsetOption.Type != "POLICY" || ctl.OffsetOption.Value != 2) {
			t.Fatalf("--from-max subscription %+v", ctl)
		}
	}
	for _, b := range c.Brokers {
		for _, a := range b.LiteAcks() {
			if a["liteTopic"] != "s-4" && a["liteTopic"] != "s-0" {
				t.Fatalf("ack of an unsubscribed lite topic: %v", a)
			}
		}
	}
}

func TestLiteOptions(t *testing.T) {
	c := startLiteCluster(t)
	ns := c.Namesrv.Addr()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"negative lite topics", []string{"producer", "-n", ns, "-q", "1", "--lite-topics", "-1"}},
		{"bad prefix", []string{"producer", "-n", ns, "-q", "1", "--lite-topics", "2", "--lite-prefix", "a$"}},
		{"long names", []string{"producer", "-n", ns, "-q", "1", "--lite-topics", "10", "--lite-prefix", strings.Repeat("p", 64)}},
		{"delayed lite", []string{"producer", "-n", ns, "-q", "1", "--lite-topics", "2", "-d", "true"}},
		{"consumer without lite topics", []string{"lite-consumer", "-n", ns, "--duration", "1s"}},
		{"fraction over 1", []string{"lite-consumer", "-n", ns, "--lite-topics", "4", "--lite-fraction", "1.5"}},
		{"negative fraction", []string{"lite-consumer", "-n", ns, "--lite-topics", "4", "--lite-fraction", "-0.5"}},
		{"negative first", []string{"lite-consumer", "-n", ns, "--lite-topics", "4", "--lite-first", "-1"}},
	} {
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), tc.args, &out, &errOut, nil); code != ExitError {
			t.Errorf("%s: exit %d, want %d (%s)", tc.name, code, ExitError, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"lite-consumer", "--lite-fraction", "x"}, &out, &errOut, nil); code != ExitUsage {
		t.Errorf("non-numeric fraction: exit %d", code)
	}

	for _, tc := range []struct {
		n, first int
		fraction float64
		want     []string
	}{
		{4, 0, 1, []string{"lite-0", "lite-1", "lite-2", "lite-3"}},
		{4, 0, 0, []string{"lite-0", "lite-1", "lite-2", "lite-3"}}, // 0: the default, all
		{10, 8, 0.25, []string{"lite-8", "lite-9", "lite-0"}},
		{3, 1, 0.01, []string{"lite-1"}},
		{3, 7, 0.5, []string{"lite-1", "lite-2"}},
	} {
		o := LiteConsumerOptions{LiteTopics: tc.n, First: tc.first, Fraction: tc.fraction}
		if err := o.defaults(); err != nil {
			t.Fatal(err)
		}
		if got := o.Subscribed(); !slices.Equal(got, tc.want) {
			t.Errorf("%d lite topics from %d, fraction %v: %v, want %v", tc.n, tc.first, tc.fraction, got, tc.want)
		}
	}
}
