package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// TestRealClientsAgainstOurBroker runs the same check programs that are
// proven against Apache RocketMQ (tests/interop) against our nameserver and
// broker: rocketmq-client-go v2, the Java client 5.5.0 and ali-ons each
// produce and consume, and each consumes what the others produced, checking
// body, tags, keys and properties byte for byte. Java and Node skip with a
// message when their runtime is missing.
func TestRealClientsAgainstOurBroker(t *testing.T) {
	skipShort(t, "starts real processes and three client runtimes")
	t.Parallel()
	c := startCluster(t, framework.Options{Brokers: 2})
	addr := c.NamesrvAddr()
	const count = "1000"

	t.Run("go/sync", func(t *testing.T) {
		interop.RunGoCheck(t, "roundtrip", "-n", addr, "-t", "OursGoSync", "-count", count, "-send-mode", "sync", "-groups", "2").RequireOK(t)
	})
	t.Run("go/async", func(t *testing.T) {
		interop.RunGoCheck(t, "roundtrip", "-n", addr, "-t", "OursGoAsync", "-count", count, "-send-mode", "async").RequireOK(t)
	})
	t.Run("go/batch", func(t *testing.T) {
		interop.RunGoCheck(t, "roundtrip", "-n", addr, "-t", "OursGoBatch", "-count", count, "-send-mode", "batch").RequireOK(t)
	})
	t.Run("java/roundtrip", func(t *testing.T) {
		interop.RunJavaCheck(t, "roundtrip", "-n", addr, "-t", "OursJava", "-count", count).RequireOK(t)
	})
	// A Collection of messages in one send (SEND_BATCH_MESSAGE).
	t.Run("java/batch", func(t *testing.T) {
		interop.RunJavaCheck(t, "roundtrip", "-n", addr, "-t", "OursJavaBatch", "-count", count, "-send-mode", "batch").RequireOK(t)
	})
	// setNamespace: the clients prefix topics and groups with "tenant1%"
	// (and retry topics: %RETRY%tenant1%group); the broker sees only
	// those names.
	t.Run("java/namespace", func(t *testing.T) {
		res := interop.RunJavaCheck(t, "roundtrip", "-n", addr, "-t", "OursJavaNs", "-count", "100", "-namespace", "tenant1")
		res.RequireOK(t)
		out, err := c.MQAdmin(t, "topicList")
		if err != nil || !strings.Contains(out, "tenant1%OursJavaNs\n") || !strings.Contains(out, "%RETRY%tenant1%rmqgo_check_java_"+res.Run) {
			t.Fatalf("topicList after namespaced clients: %v\n%s", err, out)
		}
	})
	t.Run("node/roundtrip", func(t *testing.T) {
		interop.RunNodeCheck(t, "roundtrip", "-n", addr, "-t", "OursNode", "-count", count).RequireOK(t)
	})

	// ali-ons fails each first delivery: its CONSUMER_SEND_MSG_BACK
	// puts the message in %RETRY%<group> (delay level 3, 10 s) and it comes
	// back once, reconsumeTimes 1, with its body and properties. The retry
	// topic exists first: ali-ons would find its route only at its next
	// route refresh (30 s).
	t.Run("node/retry", func(t *testing.T) {
		mqadmin(t, c, "updateTopic", "-c", "DefaultCluster", "-t", "%RETRY%node_retry_cg", "-r", "1", "-w", "1")
		testutil.Eventually(t, 10*time.Second, func() error {
			_, err := c.MQAdmin(t, "topicRoute", "-t", "%RETRY%node_retry_cg")
			return err
		})
		res := interop.RunNodeCheck(t, "roundtrip", "-n", addr, "-t", "OursNodeRetry", "-g", "node_retry_cg", "-count", "20", "-fail-first", "-timeout", "60")
		res.RequireOK(t)
	})

	interop.RunCrossChecks(t, addr, "OursFrom", count)
}
