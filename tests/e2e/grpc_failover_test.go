package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
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
	const group = "grpc_failover_cg"
	c, endpoint := startGrpcCtrlSet(t, "GrpcFailover", group, nil)
	var endpoints []string
	for _, b := range c.brokers {
		endpoints = append(endpoints, endpoint[b.addr])
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

// startGrpcCtrlSet starts a controller-mode set of three replicas serving
// gRPC (short long-polling bounds, extra broker keys on top) with the
// topic <cluster>Topic and the subscription group on every replica; it
// returns the set and each replica's gRPC endpoint by its remoting address.
func startGrpcCtrlSet(t *testing.T, cluster, group string, extra map[string]string) (*ctrlCluster, map[string]string) {
	t.Helper()
	ports := []int{harness.LatePort(t), harness.LatePort(t), harness.LatePort(t)}
	conf := map[string]string{
		"enableGrpcServer":                              "true",
		"minInvisibleTimeMillsForRecv":                  "1000",
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	}
	maps.Copy(conf, extra)
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: cluster, Topic: cluster + "Topic", Broker: conf,
		PerBroker: func(i int) map[string]string { return map[string]string{"grpcServerPort": strconv.Itoa(ports[i])} },
	})
	endpoint := map[string]string{}
	for i, b := range c.brokers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.ac.CreateSubscriptionGroup(ctx, b.addr, admin.NewSubscriptionGroupConfig(group)); err != nil {
			cancel()
			t.Fatalf("create group on %s: %v", b.addr, err)
		}
		cancel()
		endpoint[b.addr] = fmt.Sprintf("127.0.0.1:%d", ports[i])
	}
	return c, endpoint
}

// TestGrpcJavaPopAcrossControllerFailover: the RocketMQ 5.x Java client's
// SimpleConsumer (gRPC, scripts/java5's GrpcSimpleConsumer) receives 20
// messages from the controller-mode master and acks 16; the master is
// killed with SIGKILL once its slaves hold its whole CommitLog (the pop
// journal with it) and the group's offsets. A new SimpleConsumer of the
// group on the promoted slave then receives the 4 it left unacked, once
// their invisible time is over, with delivery attempt 2, and none of the
// 16 acked ones: the promoted slave applied the replicated checkpoints
// and acks (docs/replication.md §2.7), it did not only learn the offsets.
func TestGrpcJavaPopAcrossControllerFailover(t *testing.T) {
	skipShort(t, "a controller-mode broker set and the Java 5.x client")
	processOnly(t, "kills broker processes")
	t.Parallel()
	const group, acked, held, invisible = "grpc_pop_failover_cg", 16, 4, 12 * time.Second
	c, endpoint := startGrpcCtrlSet(t, "GrpcPopFailover", group,
		map[string]string{"slaveSyncCheckInterval": "500", "slaveSyncFullInterval": "1000"})
	p := startProducer(t, client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: c.nsAddrs, InstanceName: "grpc-pop-failover-p"},
		Group: "grpc_pop_failover_pg"})
	heldBodies := map[string]bool{}
	for i := range acked + held {
		body := fmt.Sprintf("ack-%d", i)
		if i >= acked {
			body = fmt.Sprintf("%d-held", i)
			heldBodies[body] = true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.SendSync(ctx, &message.Message{Topic: c.topic, Body: []byte(body)})
		cancel()
		if err != nil {
			t.Fatalf("send %s: %v", body, err)
		}
	}
	receive := func(endpoints []string, count int, keep string) []javaReceived {
		t.Helper()
		out := runGrpcJavaConsumerRaw(t, "simple", strings.Join(endpoints, ";"), c.topic, group, "false",
			strconv.Itoa(count), keep, strconv.Itoa(int(invisible/time.Second)), "0", "0")
		var res struct {
			First []javaReceived `json:"first"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("java5-consumer simple: %v in %s", err, out)
		}
		return res.First
	}
	master := c.masterAddr()
	var all []string
	for _, b := range c.brokers {
		all = append(all, endpoint[b.addr])
	}
	first := receive(all, acked+held, "-held")
	popped := time.Now()
	if len(first) != acked+held {
		t.Fatalf("received %d of %d messages before the kill: %+v", len(first), acked+held, first)
	}
	// Both slaves hold the master's CommitLog to its end (the pop
	// checkpoints and the acks are journal records in it) and the group's
	// offsets past every message.
	testutil.WaitFor(t, 10*time.Second, "the slaves holding the master's CommitLog and the group's offsets", func() bool {
		st := harness.HAStatus(t, c.rc, master)
		if len(st.HAConnectionInfo) != 2 {
			return false
		}
		for _, s := range st.HAConnectionInfo {
			if s.SlaveAckOffset != st.MasterCommitLogMaxOffset {
				return false
			}
		}
		for _, b := range c.brokers {
			if b.addr == master {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			cs, err := c.ac.GetConsumeStats(ctx, b.addr, group, c.topic)
			cancel()
			if err != nil || cs.TotalDiff() != 0 {
				return false
			}
			var end int64
			for _, w := range cs.OffsetTable {
				end += w.ConsumerOffset
			}
			if end != acked+held {
				return false
			}
		}
		return true
	})
	if d := time.Since(popped); d > invisible/2 {
		t.Fatalf("the held messages were received %v before the kill: the old master may revive them first", d)
	}
	s := &clientsCtrlSet{c}
	next := s.killMaster(t)
	var live []string
	for _, b := range c.brokers {
		if b.addr != master {
			live = append(live, endpoint[b.addr])
		}
	}
	again := receive(live, held, "-none")
	got := map[string]int{}
	for _, m := range again {
		got[m.Body] = m.Attempt
	}
	for body := range heldBodies {
		if a, ok := got[body]; !ok || a != 2 {
			t.Errorf("%s (unacked on the old master): delivered by %s with attempt %d (present %v), want attempt 2", body, next, a, ok)
		}
	}
	for body := range got {
		if !heldBodies[body] {
			t.Errorf("%s was acked on the old master but delivered again by %s", body, next)
		}
	}
	if t.Failed() {
		t.Logf("after the failover: %+v", again)
	}
}
