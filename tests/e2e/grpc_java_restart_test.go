package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGrpcJavaAcrossBrokerRestartAndKill: a RocketMQ 5.x Java Producer and
// SimpleConsumer (rocketmq-client-java 5.2.0, scripts/java5's
// GrpcRestartCheck) keep sending and receiving over gRPC while the broker
// is restarted gracefully and then killed with SIGKILL and started again.
// Every send the client saw acknowledged is consumed, and no message whose
// ack succeeded is delivered again (issue 17: across a broker restart and
// a kill -9, no acked message lost, no acked message redelivered).
// Skips with a message when java or mvn is missing.
func TestGrpcJavaAcrossBrokerRestartAndKill(t *testing.T) {
	skipShort(t, "real processes and a Java 5.x client")
	processOnly(t, "kills the broker process")
	t.Parallel()
	c, endpoint := startGrpcCluster(t, map[string]string{
		"minInvisibleTimeMillsForRecv":                  "1000",
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	})
	const topic, group = "GrpcRestartTopic", "grpc_restart_cg"
	b := c.Brokers()[0]
	mqadmin(t, c, "updateTopic", "-b", b.Addr(), "-t", topic, "-r", "4", "-w", "4")
	mqadmin(t, c, "updateSubGroup", "-b", b.Addr(), "-g", group)

	lines, wait := java5(t).start(t, "GrpcRestartCheck", endpoint, topic, group, "false", "14", "30", "3")
	var res struct {
		Sent        int   `json:"sent"`
		AckedSends  int   `json:"acked_sends"`
		SendFailed  int   `json:"send_failed"`
		Consumed    int   `json:"consumed"`
		AckFailed   int   `json:"ack_failed"`
		DrainMS     int64 `json:"drain_ms"`
		Lost        []int `json:"lost"`
		Redelivered []int `json:"redelivered"`
	}
	// acked reads progress lines until the client reports at least n
	// acknowledged sends.
	acked := 0
	waitAcked := func(n int, what string) {
		t.Helper()
		deadline := time.After(90 * time.Second) // the first run compiles the client
		for acked < n {
			select {
			case l, ok := <-lines:
				if !ok {
					wait(&res) // fails the test with the client's output if it failed
					t.Fatalf("the Java client ended before %s (%d sends acknowledged)", what, acked)
				}
				if v, found := strings.CutPrefix(l, "acked "); found {
					acked, _ = strconv.Atoi(v)
				}
			case <-deadline:
				t.Fatalf("%d sends acknowledged before %s, want %d", acked, what, n)
			}
		}
	}
	waitAcked(40, "the restart")
	b.Restart(t)
	t.Logf("broker restarted after %d acknowledged sends", acked)
	waitAcked(acked+40, "the kill")
	b.Kill(t)
	b.Start(t)
	t.Logf("broker killed and started again after %d acknowledged sends", acked)
	go func() {
		for range lines {
		}
	}()
	wait(&res)
	t.Logf("java 5.x: sent %d, acknowledged %d, send failures %d, consumed %d, ack failures %d, drained %d ms after the last send",
		res.Sent, res.AckedSends, res.SendFailed, res.Consumed, res.AckFailed, res.DrainMS)
	if res.AckedSends <= acked {
		t.Fatalf("no send acknowledged after the kill (%d before it, %d in all)", acked, res.AckedSends)
	}
}
