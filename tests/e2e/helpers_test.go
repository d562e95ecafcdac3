package e2e

import (
	"context"
	"log/slog"
	"os"
	"regexp"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
)

// skipShort skips t in short mode (go test -short), saying what the test
// needs that short mode avoids.
func skipShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skip("short mode: " + needs)
	}
}

// mqadmin runs our mqadmin against c and returns its output, failing t
// when the command fails. The static-topic commands' plan files (written
// to the system's temporary directory, as Java's tool does) go at the
// end of the test.
func mqadmin(t *testing.T, c framework.Cluster, args ...string) string {
	t.Helper()
	out, err := c.MQAdmin(t, args...)
	removePlanFiles(t, out)
	if err != nil {
		t.Fatalf("mqadmin %v: %v\n%s", args, err, out)
	}
	return out
}

var planFile = regexp.MustCompile(`mapping data is written to file (\S+)`)

// removePlanFiles removes, when t ends, the plan files an mqadmin
// static-topic command's output names.
func removePlanFiles(t *testing.T, out string) {
	for _, m := range planFile.FindAllStringSubmatch(out, -1) {
		t.Cleanup(func() { _ = os.Remove(m[1]) })
	}
}

// started fails t on err from a client constructor (ours or client-go's)
// and starts x; the caller shuts x down.
func started[T interface{ Start() error }](t *testing.T, x T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	return x
}

// goSubscribed fails t on err from rocketmq.NewPushConsumer, subscribes pc
// to topic with sel and h, and starts it; the caller shuts pc down.
func goSubscribed(t *testing.T, pc rocketmq.PushConsumer, err error, topic string, sel consumer.MessageSelector,
	h func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) rocketmq.PushConsumer {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, sel, h); err != nil {
		t.Fatal(err)
	}
	return started(t, pc, nil)
}

// inBackground calls step(0), step(1), ... in a goroutine until the
// returned stop is called; stop returns once the goroutine has ended.
func inBackground(step func(i int)) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			step(i)
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// subscribed is started for one of our SDK's consumers that first
// subscribes to all of topic; the caller shuts x down.
func subscribed[T interface {
	Subscribe(topic, expression, expressionType string) error
	Start() error
}](t *testing.T, x T, err error, topic string) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Subscribe(topic, "*", ""); err != nil {
		t.Fatal(err)
	}
	return started(t, x, nil)
}

// sdkCommon is our SDK's client config in these tests: c's nameserver, and
// heartbeats and route refreshes shortened so the tests stay short.
func sdkCommon(c framework.Cluster, log *slog.Logger, instance string) client.CommonConfig {
	return client.CommonConfig{
		NameServers:          []string{c.NamesrvAddr()},
		InstanceName:         instance,
		HeartbeatInterval:    time.Second,
		RouteRefreshInterval: 2 * time.Second,
		Logger:               log,
	}
}

// javaMQAdmin returns a runner of the Java mqadmin against c's nameserver
// that fails t when the tool fails and otherwise returns its output.
func javaMQAdmin(t *testing.T, c framework.Cluster) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := harness.RunJavaMQAdmin(t, append(args, "-n", c.NamesrvAddr())...)
		if err != nil {
			t.Fatalf("java mqadmin %v: %v", args, err)
		}
		return out
	}
}
