package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/tests/e2e/harness"
)

// TestGrpcJavaAcrossControllerFailover: the RocketMQ 5.x Java client
// (rocketmq-client-java 5.2.0 over gRPC, scripts/java5's GrpcRestartCheck)
// keeps a Producer sending and a SimpleConsumer receiving while the
// controller-mode master is killed with SIGKILL. The client's endpoints
// are every replica's gRPC port; QueryRoute names the master's, and after
// the election the new master's, which then acknowledges sends. Every send
// the client saw acknowledged is received (allAckInSyncStateSet: the new
// master holds it); messages may come again (the elected replica knows the
// group's progress as of its last metadata copy: at least once).
func TestGrpcJavaAcrossControllerFailover(t *testing.T) {
	skipShort(t, "a controller-mode broker set and the Java 5.x client")
	processOnly(t, "kills broker processes")
	t.Parallel()
	client := java5(t)
	ports := []int{harness.LatePort(t), harness.LatePort(t), harness.LatePort(t)}
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: "GrpcFailover", Topic: "GrpcFailoverTopic",
		Broker: map[string]string{
			"enableGrpcServer":                              "true",
			"minInvisibleTimeMillsForRecv":                  "1000",
			"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
			"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
		},
		PerBroker: func(i int) map[string]string { return map[string]string{"grpcServerPort": strconv.Itoa(ports[i])} },
	})
	const group = "grpc_failover_cg"
	var endpoints []string
	for i, b := range c.brokers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.ac.CreateSubscriptionGroup(ctx, b.addr, admin.NewSubscriptionGroupConfig(group)); err != nil {
			cancel()
			t.Fatalf("create group on %s: %v", b.addr, err)
		}
		cancel()
		endpoints = append(endpoints, fmt.Sprintf("127.0.0.1:%d", ports[i]))
	}

	lines, wait := client.start(t, "GrpcRestartCheck", strings.Join(endpoints, ";"), c.topic, group, "false", "38", "60", "3", "redelivery-ok")
	var res restartResult
	progress := &ackProgress{lines: lines, wait: func() { wait(&res) }}
	waitAcked := func(n int, what string) { t.Helper(); progress.waitAcked(t, n, what, 2*time.Minute) }
	waitAcked(40, "the kill")
	s := &clientsCtrlSet{c}
	killed := time.Now()
	next := s.killMaster(t)
	before := progress.acked
	waitAcked(before+40, "sends on the new master")
	t.Logf("master killed after %d acknowledged sends; %s elected; 40 more acknowledged %v after the kill", before, next, time.Since(killed).Round(100*time.Millisecond))
	go func() {
		for range lines {
		}
	}()
	wait(&res)
	t.Logf("java 5.x: sent %d, acknowledged %d, send failures %d, received %d, acked %d, ack failures %d, delivered again %d, drained %d ms after the last send",
		res.Sent, res.AckedSends, res.SendFailed, res.Received, res.Consumed, res.AckFailed, res.RedeliveredN, res.DrainMS)
	for _, e := range res.Errors {
		t.Logf("java 5.x: %s", e)
	}
	if len(res.Lost) != 0 {
		t.Fatalf("acknowledged sends never received: %v", res.Lost)
	}
}
