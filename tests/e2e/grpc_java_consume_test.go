package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
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

// javaReceived is one message as scripts/java5's GrpcSimpleConsumer
// reports it.
type javaReceived struct {
	ID      string `json:"id"`
	Body    string `json:"body"`
	Tag     string `json:"tag"`
	Keys    string `json:"keys"`
	Color   string `json:"color"`
	Attempt int    `json:"attempt"`
}

// TestGrpcJavaSimpleConsumer: one store, two protocols (issue 17).
// client-go sends over remoting; the RocketMQ 5.x Java SimpleConsumer
// (rocketmq-client-java 5.2.0, scripts/java5-consumer.sh) receives them
// over gRPC with the same message id, body, tag, keys and user property,
// delivery attempt 1, and acks all but one. After the invisible time only
// the un-acked message comes back, with delivery attempt 2, and nothing
// else is redelivered. Skips with a message when java or mvn is missing.
func TestGrpcJavaSimpleConsumer(t *testing.T) {
	skipShort(t, "real processes and a Java 5.x client")
	t.Parallel()
	grpcPort := harness.FreePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"enableGrpcServer": "true",
		"grpcServerPort":   strconv.Itoa(grpcPort),
		// A 2 s invisible time and short long polling keep the test short.
		"minInvisibleTimeMillsForRecv":                  "1000",
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
	}})
	const topic, group = "GrpcJavaConsume", "GID_grpc_java_simple"
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", topic, "-r", "2", "-w", "2")

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr()})),
		producer.WithGroupName("grpc_java_consume_pg"), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer func() { _ = p.Shutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sent := map[string]string{} // message id → body
	for i := range 4 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("c-%d", i)))
		m.WithTag("TagA")
		m.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		m.WithProperty("color", "red")
		res, err := p.SendSync(ctx, m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("client-go send %d: %v %v", i, res, err)
		}
		sent[res.MsgID] = string(m.Body)
	}

	first, again := runGrpcSimpleConsumer(t, "127.0.0.1:"+strconv.Itoa(grpcPort), topic, group, len(sent), "-0")
	if len(first) != len(sent) {
		t.Fatalf("SimpleConsumer received %d messages, want %d: %+v", len(first), len(sent), first)
	}
	var kept string
	for _, m := range first {
		i := strings.TrimPrefix(m.Body, "c-")
		if sent[m.ID] != m.Body || m.Tag != "TagA" || m.Keys != "key-"+i || m.Color != "red" || m.Attempt != 1 {
			t.Errorf("received %+v; sent %q under that id, tag TagA, keys key-%s, color red, attempt 1", m, sent[m.ID], i)
		}
		if m.Body == "c-0" {
			kept = m.ID
		}
	}
	if len(again) != 1 || again[0].ID != kept || again[0].Body != "c-0" || again[0].Attempt != 2 {
		t.Fatalf("after the invisible time the SimpleConsumer got %+v, want the un-acked %s (c-0) alone with attempt 2", again, kept)
	}
}

// runGrpcSimpleConsumer runs scripts/java5-consumer.sh simple (2 s
// invisible time, 10 s to see the un-acked message back, then 2 s quiet)
// and returns what it received first and after; it skips the test when
// java or mvn is missing.
func runGrpcSimpleConsumer(t *testing.T, endpoint, topic, group string, count int, keep string) (first, again []javaReceived) {
	t.Helper()
	script := filepath.Join(harness.RepoRoot(t), "scripts", "java5-consumer.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a first run resolves Maven
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "simple", endpoint, topic, group, "false", strconv.Itoa(count), keep, "2", "10", "2")
	cmd.Env = append(cmd.Environ(), "RMQ_JAVA_LOG_DIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("java 5.x client: %s", strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		OK    bool           `json:"ok"`
		First []javaReceived `json:"first"`
		Again []javaReceived `json:"again"`
		Error string         `json:"error"`
	}
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil || err != nil || !res.OK {
		t.Fatalf("java5-consumer simple: %v %v %+v\nstdout:\n%s\nstderr:\n%s", err, jerr, res, out, stderr.String())
	}
	return res.First, res.Again
}
