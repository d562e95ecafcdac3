package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// TestGrpcJavaConsumerAdmin: the admin tools reach a RocketMQ 5.x Java
// PushConsumer (rocketmq-client-java 5.2.0, scripts/java5
// GrpcAdminConsumer) as Apache's proxy makes them: our and Java's mqadmin
// consumerStatus -s show the client's thread stack trace (a
// PrintThreadStackTraceCommand on its Telemetry stream, answered by the
// client library), and consumeMessageDirectly of a message of a topic it
// does not subscribe runs its listener (a VerifyMessageCommand) and
// answers CR_SUCCESS "from gRPC client".
//
// Skips with a message when java or mvn is missing.
func TestGrpcJavaConsumerAdmin(t *testing.T) {
	skipShort(t, "real processes and a Java 5.x client")
	t.Parallel()
	const topic, direct, group, stop = "GrpcJavaAdmin", "GrpcJavaAdminDirect", "GID_grpc_java_admin", "direct-stop"
	// Short long polling: the PushConsumer's close waits for its receives.
	c, endpoint := startGrpcCluster(t, map[string]string{
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	})
	broker := c.Brokers()[0].Addr()
	for _, tp := range []string{topic, direct} {
		mqadmin(t, c, "updateTopic", "-b", broker, "-t", tp, "-r", "1", "-w", "1")
	}
	lines, wait := java5(t).start(t, "GrpcAdminConsumer", endpoint, topic, group, stop)
	for l := range lines {
		if strings.HasPrefix(l, `{"ready":true`) {
			break
		}
	}
	// The client's id, once its heartbeat registered it.
	var clientID string
	testutil.Eventually(t, 20*time.Second, func() error {
		out, _ := c.MQAdmin(t, "consumerConnection", "-g", group)
		rows := strings.Split(strings.TrimSpace(out), "\n")
		if len(rows) < 2 || !strings.Contains(out, " JAVA ") {
			return fmt.Errorf("consumerConnection -g %s:\n%s", group, out)
		}
		clientID = strings.Fields(rows[1])[0]
		return nil
	})
	// A 5.x PushConsumer registers as the proxy registers it (Apache 5.5.0
	// ClientActivity.buildConsumeType / buildMessageModel).
	if out := mqadmin(t, c, "consumerConnection", "-g", group); !strings.Contains(out, "ConsumeType: CONSUME_PASSIVELY") ||
		!strings.Contains(out, "MessageModel: CLUSTERING") {
		t.Fatalf("consumerConnection -g %s of a 5.x PushConsumer:\n%s", group, out)
	}

	status := mqadmin(t, c, "consumerStatus", "-g", group, "-i", clientID, "-s")
	if !strings.Contains(status, "#Consumer jstack#") || !strings.Contains(status, "rmqgo.GrpcAdminConsumer.main") {
		t.Fatalf("consumerStatus -s of the 5.x consumer %s:\n%s", clientID, status)
	}
	jStatus, err := harness.RunJavaMQAdmin(t, "consumerStatus", "-g", group, "-i", clientID, "-s", "-n", c.NamesrvAddr())
	if err != nil || !strings.Contains(jStatus, "rmqgo.GrpcAdminConsumer.main") {
		t.Fatalf("Java consumerStatus -s of the 5.x consumer %s: %v\n%s", clientID, err, jStatus)
	}

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("grpc_java_admin_pg"), producer.WithInstanceName("grpc-java-admin"), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	t.Cleanup(func() { _ = p.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := primitive.NewMessage(direct, []byte(stop))
	m.WithTag("TagD")
	sent, err := p.SendSync(ctx, m)
	if err != nil || sent.Status != primitive.SendOK {
		t.Fatalf("send: %v %v", sent, err)
	}
	ac, err := admin.New(admin.Config{NameServers: []string{c.NamesrvAddr()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	res, err := ac.ConsumeMessageDirectly(ctx, broker, group, clientID, direct, sent.OffsetMsgID)
	if err != nil || res.ConsumeResult != "CR_SUCCESS" || res.Remark != "from gRPC client" || !res.AutoCommit {
		t.Fatalf("consumeMessageDirectly of %s by %s: %v %v", sent.OffsetMsgID, clientID, res, err)
	}
	var got struct {
		Got []javaReceived `json:"got"`
	}
	wait(&got)
	if len(got.Got) != 1 || got.Got[0].Body != stop || got.Got[0].ID != sent.MsgID || got.Got[0].Tag != "TagD" {
		t.Fatalf("the listener got %+v, want the directly consumed %s (%s) alone", got.Got, sent.MsgID, stop)
	}
}
