package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// TestPopJavaPushConsumer runs the Java client 5.5.0's DefaultMQPushConsumer
// in pop mode against our broker (scripts/java/.../PopCheck.java):
// SET_MESSAGE_REQUEST_MODE through DefaultMQAdminExt, QUERY_ASSIGNMENT with
// clientRebalance=false, POP_MESSAGE / ACK_MESSAGE, and a RECONSUME_LATER
// that the client turns into CHANGE_MESSAGE_INVISIBLETIME and the broker
// redelivers through the pop retry topic with reconsumeTimes 1. Skips with
// a message when java or mvn is missing.
func TestPopJavaPushConsumer(t *testing.T) {
	skipShort(t, "real processes and a Java client")
	t.Parallel()
	const topic = "PopJavaTopic"
	c := startCluster(t, framework.Options{Brokers: 1})
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "4", "-w", "4")
	testutil.Eventually(t, 20*time.Second, func() error {
		out, err := c.MQAdmin(t, "topicRoute", "-t", topic)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	res := interop.RunJavaCheck(t, "pop", "-n", c.NamesrvAddr(), "-t", topic, "-g", "pop_java_cg", "-count", "40", "-timeout", "35")
	t.Logf("java pop: %s", res.Line)
	res.RequireOK(t)
}
