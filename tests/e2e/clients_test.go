package e2e

import (
	"strings"
	"testing"

	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/interop"
)

// TestRealClientsAgainstOurBroker runs the same check programs that are
// proven against Apache RocketMQ (tests/interop) against our nameserver and
// broker: rocketmq-client-go v2, the Java client 5.5.0 and ali-ons each
// produce and consume, and each consumes what the others produced, checking
// body, tags, keys and properties byte for byte. Java and Node skip with a
// message when their runtime is missing.
func TestRealClientsAgainstOurBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: starts real processes and three client runtimes")
	}
	c := startCluster(t, framework.Options{Brokers: 2})
	addr := c.NamesrvAddr()
	const count = "1000"

	t.Run("go/sync", func(t *testing.T) {
		interop.RunGoCheck(t, "roundtrip", "-n", addr, "-t", "OursGoSync", "-count", count, "-send-mode", "sync", "-groups", "2").RequireOK(t)
	})
	t.Run("go/async", func(t *testing.T) {
		interop.RunGoCheck(t, "roundtrip", "-n", addr, "-t", "OursGoAsync", "-count", count, "-send-mode", "async").RequireOK(t)
	})
	t.Run("go/batch", func(t *testing.T) {
		interop.RunGoCheck(t, "roundtrip", "-n", addr, "-t", "OursGoBatch", "-count", count, "-send-mode", "batch").RequireOK(t)
	})
	t.Run("java/roundtrip", func(t *testing.T) {
		interop.RunJavaCheck(t, "roundtrip", "-n", addr, "-t", "OursJava", "-count", count).RequireOK(t)
	})
	t.Run("node/roundtrip", func(t *testing.T) {
		interop.RunNodeCheck(t, "roundtrip", "-n", addr, "-t", "OursNode", "-count", count).RequireOK(t)
	})

	type runner func(t testing.TB, args ...string) interop.Result
	clients := []struct {
		name     string
		run      runner
		sendMode string
	}{
		{"java", interop.RunJavaCheck, "async"},
		{"go", interop.RunGoCheck, "batch"},
		{"node", interop.RunNodeCheck, "async"},
	}
	for _, p := range clients {
		t.Run("cross/"+p.name+"-produces", func(t *testing.T) {
			topic := "OursFrom" + strings.ToUpper(p.name[:1]) + p.name[1:]
			prod := p.run(t, "produce", "-n", addr, "-t", topic, "-count", count, "-send-mode", p.sendMode)
			prod.RequireOK(t)
			for _, cl := range clients {
				if cl.name == p.name {
					continue
				}
				t.Run(cl.name+"-consumes", func(t *testing.T) {
					cl.run(t, "consume", "-n", addr, "-t", topic, "-run", prod.Run, "-count", count).RequireOK(t)
				})
			}
		})
	}
}
