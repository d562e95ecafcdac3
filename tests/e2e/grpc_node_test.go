package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestGrpcNodeClient: the RocketMQ 5.x Node.js client
// (rocketmq-client-nodejs 1.0.8, scripts/node5-client.sh) on the broker's
// gRPC endpoint (issue 17). It sends NORMAL messages; client-go sends more
// over remoting; the Node.js SimpleConsumer receives and acks all of them
// with the ids, bodies, tags, keys and user properties they were sent with,
// whichever protocol sent them. Skips with a message when node or npm is
// missing.
func TestGrpcNodeClient(t *testing.T) {
	skipShort(t, "real processes and a Node.js 5.x client")
	t.Parallel()
	const topic = "GrpcNodeTopic"
	c, endpoint := startGrpcCluster(t, topic)

	type sent struct{ body, keys string }
	want := map[string]sent{} // message id → what was sent
	var res struct {
		IDs []string `json:"ids"`
	}
	runNode5(t, &res, "produce", "--endpoint", endpoint, "--topic", topic, "--count", "3", "--prefix", "node")
	for i, id := range res.IDs {
		want[id] = sent{fmt.Sprintf("node-%d", i), fmt.Sprintf("key-%d", i)}
	}

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})), producer.WithInstanceName("grpc-node"), producer.WithRetry(2))
	p = started(t, p, err)
	defer func() { _ = p.Shutdown() }()
	for i := range 2 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("go-%d", i)))
		m.WithTag("TagA")
		m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		m.WithProperty("color", "red")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := p.SendSync(ctx, m)
		cancel()
		if err != nil || r.Status != primitive.SendOK {
			t.Fatalf("client-go send %d: %v %v", i, r, err)
		}
		want[r.MsgID] = sent{fmt.Sprintf("go-%d", i), fmt.Sprintf("key-%d", i)}
	}
	if len(want) != 5 {
		t.Fatalf("%d distinct ids for 5 messages: %v", len(want), want)
	}

	var got struct {
		Messages []struct {
			ID, Body, Tag, Color string
			Keys                 []string
			DeliveryAttempt      int `json:"deliveryAttempt"`
		} `json:"messages"`
	}
	runNode5(t, &got, "consume", "--endpoint", endpoint, "--topic", topic, "--group", "node_grpc_cg", "--count", "5", "--timeout", "30")
	seen := map[string]bool{}
	for _, m := range got.Messages {
		w, ok := want[m.ID]
		switch {
		case !ok:
			t.Errorf("received unknown id %s (body %q)", m.ID, m.Body)
		case seen[m.ID]:
			t.Errorf("received %s twice", m.ID)
		case m.Body != w.body || m.Tag != "TagA" || strings.Join(m.Keys, " ") != w.keys || m.Color != "red" || m.DeliveryAttempt != 1:
			t.Errorf("message %s: body %q tag %q keys %v color %q attempt %d; want body %q tag TagA keys [%s] color red attempt 1",
				m.ID, m.Body, m.Tag, m.Keys, m.Color, m.DeliveryAttempt, w.body, w.keys)
		}
		seen[m.ID] = true
	}
	if len(seen) != len(want) {
		var missing []string
		for id := range want {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		t.Errorf("the Node.js consumer got %d of %d messages; missing %v", len(seen), len(want), missing)
	}
}

// startGrpcCluster starts a one-broker cluster with the gRPC endpoint on
// and a topic of two queues; it returns the cluster and the endpoint.
func startGrpcCluster(t *testing.T, topic string) (framework.Cluster, string) {
	t.Helper()
	grpcPort := harness.FreePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"enableGrpcServer": "true",
		"grpcServerPort":   strconv.Itoa(grpcPort),
		// As the proxy, a receive's long polling is at least
		// grpcClientConsumerMinLongPollingTimeoutMillis (5 s by default) and
		// one whose deadline leaves less is refused ILLEGAL_POLLING_TIME:
		// the test consumers' 2 s await plus 3 s request timeout leave
		// just under 5 s.
		"grpcClientConsumerMinLongPollingTimeoutMillis": "1000",
	}})
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "2", "-w", "2")
	return c, "127.0.0.1:" + strconv.Itoa(grpcPort)
}

// runNode5 runs scripts/node5-client.sh with args and decodes its JSON
// result (the last stdout line) into out; it skips the test when node or
// npm is missing and fails it when the client reports a failure.
func runNode5(t *testing.T, out any, args ...string) {
	t.Helper()
	script := filepath.Join(harness.RepoRoot(t), "scripts", "node5-client.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a first run installs the client
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("Node.js 5.x client: %s", strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := lines[len(lines)-1]
	var res struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal([]byte(last), &res); jerr != nil || err != nil || !res.OK {
		t.Fatalf("node5-client %s: %v %s\nstdout:\n%s\nstderr:\n%s", args[0], err, res.Error, stdout, stderr.String())
	}
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("node5-client %s: %v in %s", args[0], err, last)
	}
}
