package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// TestJavaMessageTrace: the Java client 5.5.0 with message trace on
// (enableMsgTrace, traceTopicEnable on the broker): the producer's Pub and
// the push consumer's Sub records reach RMQ_SYS_TRACE_TOPIC, and
// queryMsgTraceById, ours and Java's, shows both for a message. The
// consumer's trace needs MSG_REGION on the stored message (Java's client
// drops the trace of a message without one; Java's broker adds it to every
// single send).
func TestJavaMessageTrace(t *testing.T) {
	skipShort(t, "a Java client")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{"traceTopicEnable": "true"}})
	const topic = "JavaTraceTopic"
	res := interop.RunJavaCheck(t, "roundtrip", "-n", c.NamesrvAddr(), "-t", topic, "-count", "5", "-trace")
	res.RequireOK(t)

	out, err := c.MQAdmin(t, "queryMsgByKey", "-t", topic, "-k", "seq-0")
	id := regexp.MustCompile(`[0-9A-F]{32,}`).FindString(out)
	if err != nil || id == "" {
		t.Fatalf("queryMsgByKey: %v\n%s", err, out)
	}
	hasBoth := func(out string) bool {
		return strings.Contains(out, "\nPub ") && strings.Contains(out, "rmqgo_check_producer_java") &&
			strings.Contains(out, "\nSub ") && strings.Contains(out, "rmqgo_check_java_"+res.Run)
	}
	// The consumer's trace dispatcher flushes as the consumer shuts down:
	// give its send a moment.
	testutil.Eventually(t, 10*time.Second, func() error {
		out, err := c.MQAdmin(t, "queryMsgTraceById", "-i", id)
		if err != nil || !hasBoth("\n"+out) {
			return fmt.Errorf("queryMsgTraceById -i %s: %v\n%s", id, err, out)
		}
		return nil
	})
	jout, err := harness.RunJavaMQAdmin(t, "queryMsgTraceById", "-n", c.NamesrvAddr(), "-i", id)
	if err != nil || !hasBoth("\n"+jout) {
		t.Fatalf("Java mqadmin queryMsgTraceById -i %s: %v\n%s", id, err, jout)
	}
}
