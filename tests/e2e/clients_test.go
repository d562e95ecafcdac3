package e2e

import (
	"strings"
	"testing"

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

	interop.RunCrossChecks(t, addr, "OursFrom", count)
}
