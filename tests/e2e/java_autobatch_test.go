package e2e

import (
	"strconv"
	"testing"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// TestJavaAutoBatch: the Java client 5.5.0 with setAutoBatch(true) gathers
// its async sends into SEND_BATCH_MESSAGE requests (its ProduceAccumulator)
// and gives each message its own result; every message is consumed with
// its body, tags, keys and properties, and the broker's rpc metric shows
// that batches, not single sends, carried them.
func TestJavaAutoBatch(t *testing.T) {
	skipShort(t, "a Java client")
	t.Parallel()
	promPort := harness.LatePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1", "metricsPromExporterPort": strconv.Itoa(promPort),
	}})
	const count = 1000
	interop.RunJavaCheck(t, "roundtrip", "-n", c.NamesrvAddr(), "-t", "JavaAutoBatch", "-count", strconv.Itoa(count), "-send-mode", "autobatch").RequireOK(t)

	fams, _, err := scrapeMetrics("127.0.0.1:" + strconv.Itoa(promPort))
	if err != nil {
		t.Fatal(err)
	}
	sends := map[string]float64{}
	if f := fams["rocketmq_rpc_latency_milliseconds"]; f != nil {
		for _, s := range f.Samples {
			if s.Labels["response_code"] == "success" {
				sends[s.Labels["request_code"]] += s.Value
			}
		}
	}
	batches, singles := sends["send_batch_message"], sends["send_message"]+sends["send_message_v2"]
	t.Logf("%d messages in %v batch requests and %v single sends", count, batches, singles)
	if batches == 0 || batches+singles >= count {
		t.Fatalf("the auto-batching producer sent %v batches and %v single sends for %d messages", batches, singles, count)
	}
}
