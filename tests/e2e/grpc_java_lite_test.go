package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestGrpcJavaLitePushConsumer: the RocketMQ 5.x Java LitePushConsumer
// (rocketmq-client-java 5.2.0, scripts/java5-consumer.sh lite) consumes
// lite topics over gRPC (issue 17, docs/lite-topics.md). It binds a LITE
// parent topic and subscribes two of its lite topics (SyncLiteSubscription
// PARTIAL_ADD); a remoting producer (pkg/client, __LITE_TOPIC) then sends
// two messages to each of three lite topics. The consumer receives
// (POP_LITE_MESSAGE) exactly the four messages of its two lite topics,
// each once, with their lite topic, and acks them (ACK_MESSAGE with
// liteTopic): nothing comes back in the quiet second after, and the
// group's lag on both lite topics is 0 (mqadmin getLiteGroupInfo).
//
// Skips with a message when java or mvn is missing.
func TestGrpcJavaLitePushConsumer(t *testing.T) {
	skipShort(t, "real processes and a Java 5.x client")
	t.Parallel()
	const parent, group = "GrpcLiteParent", "GID_grpc_java_lite"
	grpcPort := harness.FreePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"enableGrpcServer": "true",
		"grpcServerPort":   strconv.Itoa(grpcPort),
		"enableLmq":        "true", "enableMultiDispatch": "true",
		// Short long polling: the consumer's close waits for its receives.
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	}})
	mqadmin(t, c, "updateTopic", "-b", c.Brokers()[0].Addr(), "-t", parent, "-r", "2", "-w", "2", "-a", "+message.type=LITE")
	mqadmin(t, c, "updateSubGroup", "-b", c.Brokers()[0].Addr(), "-g", group, "--attributes", "+lite.bind.topic="+parent)

	script := filepath.Join(harness.RepoRoot(t), "scripts", "java5-consumer.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a first run resolves Maven
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "lite", "127.0.0.1:"+strconv.Itoa(grpcPort), parent, group, "false", "lite-a,lite-b", "4", "1")
	cmd.Env = append(cmd.Environ(), "RMQ_JAVA_LOG_DIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out []string
	wait := func() {
		t.Helper()
		for l := range lines {
			out = append(out, l)
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			t.Skipf("java 5.x client: %s", strings.TrimSpace(stderr.String()))
		}
		if err != nil {
			t.Fatalf("java5-consumer lite: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(out, "\n"), stderr.String())
		}
	}
	// The consumer subscribed both lite topics before anything is sent.
	ready := false
	for !ready {
		l, open := <-lines
		if !open {
			wait()
			t.Fatalf("java5-consumer lite ended before it was ready:\n%s\nstderr:\n%s", strings.Join(out, "\n"), stderr.String())
		}
		out = append(out, l)
		ready = strings.HasPrefix(l, `{"ready":true,"lites":2`)
	}

	p := startProducer(t, client.ProducerConfig{CommonConfig: sdkCommon(c, slog.New(slog.DiscardHandler), "grpc-java-lite-p"), Group: "grpc_java_lite_pg"})
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	want := map[string]string{} // body → lite topic, of the subscribed ones
	for _, lite := range []string{"lite-a", "lite-b", "lite-c"} {
		for i := range 2 {
			body := fmt.Sprintf("%s-%d", lite, i)
			m := &message.Message{Topic: parent, Body: []byte(body)}
			m.SetLiteTopic(lite)
			if _, err := p.SendSync(sctx, m); err != nil {
				t.Fatalf("send %s: %v", body, err)
			}
			if lite != "lite-c" {
				want[body] = lite
			}
		}
	}
	wait()
	var res struct {
		OK  bool `json:"ok"`
		Got []struct {
			ID, Body, Lite string
			Attempt        int
		} `json:"got"`
	}
	if err := json.Unmarshal([]byte(out[len(out)-1]), &res); err != nil || !res.OK {
		t.Fatalf("java5-consumer lite: %v in %s\nstderr:\n%s", err, out[len(out)-1], stderr.String())
	}
	seen := map[string]int{}
	for _, m := range res.Got {
		seen[m.Body]++
		if lite, ok := want[m.Body]; !ok || m.Lite != lite || m.Attempt != 1 || seen[m.Body] > 1 {
			t.Errorf("received %+v (delivery %d); want each message of lite-a and lite-b once, attempt 1, with its lite topic", m, seen[m.Body])
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("received %d distinct messages %v, want %d: %v", len(seen), seen, len(want), want)
	}
	// The acks committed the group's offsets of both lite topics.
	for _, lite := range []string{"lite-a", "lite-b"} {
		testutil.Eventually(t, 5*time.Second, func() error {
			out, err := c.MQAdmin(t, "getLiteGroupInfo", "-p", parent, "-g", group, "-l", lite)
			if err != nil {
				return err
			}
			if !strings.Contains(out, "Total Lag Count: 0") {
				return fmt.Errorf("group %s on %s after the acks:\n%s", group, lite, out)
			}
			return nil
		})
	}
}
