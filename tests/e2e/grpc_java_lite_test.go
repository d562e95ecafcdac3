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

// TestGrpcLitePushConsumers: the RocketMQ 5.x LitePushConsumers consume
// lite topics over gRPC (issue 17, docs/lite-topics.md §6.12) — Java's
// (rocketmq-client-java 5.2.0, scripts/java5-consumer.sh lite) and
// Node's (rocketmq-client-nodejs 1.0.8, scripts/node5-client.sh lite), each
// in a group of its own. A consumer binds a LITE parent topic and subscribes
// two of its lite topics (SyncLiteSubscription PARTIAL_ADD); a remoting
// producer (pkg/client, __LITE_TOPIC) then sends two messages to each of
// three lite topics. The consumer receives (POP_LITE_MESSAGE) exactly the
// four messages of its two lite topics, each once, with their lite topic,
// and acks them (ACK_MESSAGE with liteTopic): nothing comes back in the
// quiet second after, and the group's lag on both lite topics is 0
// (mqadmin getLiteGroupInfo).
//
// A client skips with a message when java/mvn or node/npm is missing.
func TestGrpcLitePushConsumers(t *testing.T) {
	skipShort(t, "real processes and 5.x clients")
	t.Parallel()
	const parent = "GrpcLiteParent"
	grpcPort := harness.FreePort(t)
	c := startCluster(t, framework.Options{Brokers: 1, BrokerConf: map[string]string{
		"enableGrpcServer": "true",
		"grpcServerPort":   strconv.Itoa(grpcPort),
		"enableLmq":        "true", "enableMultiDispatch": "true",
		// Short long polling: the consumer's close waits for its receives.
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	}})
	broker := c.Brokers()[0].Addr()
	endpoint := "127.0.0.1:" + strconv.Itoa(grpcPort)
	mqadmin(t, c, "updateTopic", "-b", broker, "-t", parent, "-r", "2", "-w", "2", "-a", "+message.type=LITE")
	p := startProducer(t, client.ProducerConfig{CommonConfig: sdkCommon(c, slog.New(slog.DiscardHandler), "grpc-lite-p"), Group: "grpc_lite_pg"})

	for _, tc := range []struct {
		name, group, prefix, skipWith string
		script                        string
		args                          func(lites string) []string
	}{
		{"Java", "GID_grpc_java_lite", "j", "java 5.x client", "java5-consumer.sh", func(lites string) []string {
			return []string{"lite", endpoint, parent, "GID_grpc_java_lite", "false", lites, "4", "1"}
		}},
		{"Node", "GID_grpc_node_lite", "n", "Node.js 5.x client", "node5-client.sh", func(lites string) []string {
			return []string{"lite", "--endpoint", endpoint, "--topic", parent, "--group", "GID_grpc_node_lite", "--lites", lites, "--count", "4", "--quiet", "1"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mqadmin(t, c, "updateSubGroup", "-b", broker, "-g", tc.group, "--attributes", "+lite.bind.topic="+parent)
			a, b, other := tc.prefix+"-a", tc.prefix+"-b", tc.prefix+"-c"
			lines, wait := startLiteConsumer(t, tc.skipWith, filepath.Join(harness.RepoRoot(t), "scripts", tc.script), tc.args(a+","+b)...)
			// The consumer subscribed both lite topics before anything is sent.
			for l := range lines {
				if strings.HasPrefix(l, `{"ready":true,"lites":2`) {
					break
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			want := map[string]string{} // body → lite topic, of the subscribed ones
			for _, lite := range []string{a, b, other} {
				for i := range 2 {
					body := fmt.Sprintf("%s-%d", lite, i)
					m := &message.Message{Topic: parent, Body: []byte(body)}
					m.SetLiteTopic(lite)
					if _, err := p.SendSync(ctx, m); err != nil {
						t.Fatalf("send %s: %v", body, err)
					}
					if lite != other {
						want[body] = lite
					}
				}
			}
			var res struct {
				OK  bool `json:"ok"`
				Got []struct {
					ID, Body, Lite string
					Attempt        int
				} `json:"got"`
			}
			if last := wait(); json.Unmarshal([]byte(last), &res) != nil || !res.OK {
				t.Fatalf("%s: unreadable result %s", tc.script, last)
			}
			seen := map[string]int{}
			for _, m := range res.Got {
				seen[m.Body]++
				if lite, ok := want[m.Body]; !ok || m.Lite != lite || m.Attempt != 1 || seen[m.Body] > 1 {
					t.Errorf("received %+v (delivery %d); want each message of %s and %s once, attempt 1, with its lite topic", m, seen[m.Body], a, b)
				}
			}
			if len(seen) != len(want) {
				t.Fatalf("received %d distinct messages %v, want %d: %v", len(seen), seen, len(want), want)
			}
			// The acks committed the group's offsets of both lite topics.
			for _, lite := range []string{a, b} {
				testutil.Eventually(t, 5*time.Second, func() error {
					out, err := c.MQAdmin(t, "getLiteGroupInfo", "-p", parent, "-g", tc.group, "-l", lite)
					if err != nil {
						return err
					}
					if !strings.Contains(out, "Total Lag Count: 0") {
						return fmt.Errorf("group %s on %s after the acks:\n%s", tc.group, lite, out)
					}
					return nil
				})
			}
		})
	}
}

// startLiteConsumer starts a lite consumer script and returns its stdout
// lines and a wait that drains them, waits for the exit and returns the
// last line. A script that exits 3 (its runtime missing) skips the test
// with skipWith and stderr; another failure fails it.
func startLiteConsumer(t *testing.T, skipWith, script string, args ...string) (<-chan string, func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a first run resolves Maven or npm
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(cmd.Environ(), "RMQ_JAVA_LOG_DIR="+t.TempDir())
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	raw := make(chan string, 16)
	go func() {
		defer close(raw)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			raw <- sc.Text()
		}
	}()
	// lines passes the lines on and keeps them for wait.
	lines := make(chan string, 16)
	var out []string
	kept := make(chan []string, 1)
	go func() {
		defer close(lines)
		for l := range raw {
			out = append(out, l)
			select {
			case lines <- l:
			default:
			}
		}
		kept <- out
	}()
	wait := func() string {
		t.Helper()
		all := <-kept
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			t.Skipf("%s: %s", skipWith, strings.TrimSpace(stderr.String()))
		}
		if err != nil || len(all) == 0 {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(script), err, strings.Join(all, "\n"), stderr.String())
		}
		return all[len(all)-1]
	}
	return lines, wait
}
