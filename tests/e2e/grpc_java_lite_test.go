package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

// TestGrpcLitePushConsumers: the RocketMQ 5.x LitePushConsumers consume
// lite topics over gRPC (issue 17, docs/lite-topics.md §6.12) — Java's
// (rocketmq-client-java 5.2.0, scripts/java5's GrpcLitePushConsumer) and
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
// A client skips with a message when java/mvn, node/npm or python3 is
// missing.
func TestGrpcLitePushConsumers(t *testing.T) {
	skipShort(t, "real processes and 5.x clients")
	t.Parallel()
	const parent = "GrpcLiteParent"
	c, endpoint := startGrpcCluster(t, map[string]string{
		"enableLmq": "true", "enableMultiDispatch": "true",
		// Short long polling: the consumer's close waits for its receives.
		"grpcClientConsumerMinLongPollingTimeoutMillis": "500",
		"grpcClientConsumerMaxLongPollingTimeoutMillis": "2000",
	})
	broker := c.Brokers()[0].Addr()
	mqadmin(t, c, "updateTopic", "-b", broker, "-t", parent, "-r", "2", "-w", "2", "-a", "+message.type=LITE")
	p := startProducer(t, client.ProducerConfig{CommonConfig: sdkCommon(c, slog.New(slog.DiscardHandler), "grpc-lite-p"), Group: "grpc_lite_pg"})

	for _, tc := range []struct {
		name, group, prefix string
		script              func(t *testing.T) clientScript
		args                func(group, lites string) []string
	}{
		{"Java", "GID_grpc_java_lite", "j", java5, func(group, lites string) []string {
			return []string{"GrpcLitePushConsumer", endpoint, parent, group, "false", lites, "4", "1"}
		}},
		{"Node", "GID_grpc_node_lite", "n", func(*testing.T) clientScript { return node5() }, func(group, lites string) []string {
			return []string{"lite", "--endpoint", endpoint, "--topic", parent, "--group", group, "--lites", lites, "--count", "4", "--quiet", "1"}
		}},
		{"Python", "GID_grpc_python_lite", "p", python5, func(group, lites string) []string {
			return []string{"lite", "--endpoint", endpoint, "--topic", parent, "--group", group, "--lites", lites, "--count", "4", "--quiet", "1"}
		}},
		// The lite simple consumer (LITE_SIMPLE_CONSUMER, 5.5.1) receives
		// and acks by itself.
		{"PythonSimple", "GID_grpc_python_lite_simple", "s", python5, func(group, lites string) []string {
			return []string{"lite-simple", "--endpoint", endpoint, "--topic", parent, "--group", group, "--lites", lites, "--count", "4", "--quiet", "1", "--invisible", "10000"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mqadmin(t, c, "updateSubGroup", "-b", broker, "-g", tc.group, "--attributes", "+lite.bind.topic="+parent)
			a, b, other := tc.prefix+"-a", tc.prefix+"-b", tc.prefix+"-c"
			lines, wait := tc.script(t).start(t, tc.args(tc.group, a+","+b)...)
			// The consumer subscribed both lite topics before anything is
			// sent (a client that ends first is reported by wait).
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
				Got []struct {
					ID, Body, Lite string
					Attempt        int
				} `json:"got"`
			}
			wait(&res)
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
