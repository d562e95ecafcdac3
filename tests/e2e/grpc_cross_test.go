package e2e

import (
	"testing"

	"github.com/rmqgo/rmq/tests/interop"
)

// TestGrpcCrossProtocolChecks: the interop check (docs/interop.md: bodies
// of 16 B to 64 KiB regenerated and compared byte for byte, CRC, tags,
// keys, a non-ASCII property) between the RocketMQ 5.x Node.js client on
// the broker's gRPC endpoint and the remoting clients client-go and
// ali-ons, both ways: what one protocol sends, the other receives intact,
// each message once. Node.js clients skip with a message when node or npm
// is missing.
func TestGrpcCrossProtocolChecks(t *testing.T) {
	skipShort(t, "real processes and three client runtimes")
	t.Parallel()
	c, endpoint := startGrpcCluster(t, map[string]string{"grpcClientConsumerMinLongPollingTimeoutMillis": "1000"})
	ns, broker := c.NamesrvAddr(), c.Brokers()[0].Addr()
	const count = "100"
	topic := func(name string) string {
		mqadmin(t, c, "updateTopic", "-b", broker, "-t", name, "-r", "4", "-w", "4")
		return name
	}

	t.Run("node5/roundtrip", func(t *testing.T) {
		interop.RunNode5Check(t, "roundtrip", "-endpoint", endpoint, "-t", topic("X5Round"), "-count", count, "-timeout", "60").RequireOK(t)
	})
	remoting := []struct {
		name string
		run  func(testing.TB, ...string) interop.Result
	}{{"go", interop.RunGoCheck}, {"node", interop.RunNodeCheck}}
	for _, r := range remoting {
		t.Run(r.name+"-produces/node5-consumes", func(t *testing.T) {
			tp := topic("X5From" + r.name)
			prod := r.run(t, "produce", "-n", ns, "-t", tp, "-count", count)
			prod.RequireOK(t)
			interop.RunNode5Check(t, "consume", "-endpoint", endpoint, "-t", tp, "-run", prod.Run, "-count", count, "-timeout", "60").RequireOK(t)
		})
	}
	t.Run("node5-produces", func(t *testing.T) {
		tp := topic("X5ToRemoting")
		prod := interop.RunNode5Check(t, "produce", "-endpoint", endpoint, "-t", tp, "-count", count)
		prod.RequireOK(t)
		for _, r := range remoting {
			t.Run(r.name+"-consumes", func(t *testing.T) {
				r.run(t, "consume", "-n", ns, "-t", tp, "-run", prod.Run, "-count", count, "-timeout", "60").RequireOK(t)
			})
		}
	})
}
