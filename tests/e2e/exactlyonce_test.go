package e2e

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/interop"
)

// TestClientGo100kExactlyOncePerGroup: rocketmq-client-go v2 sends 100k
// messages (bodies 16 B to 64 KiB, the larger ones compressed, with tags,
// keys and user properties) asynchronously; two consumer groups of two push
// consumers each receive every message exactly once per group, with
// identical body, tags, keys and properties. The consumers start (and
// their rebalance settles) before the first send: with a rebalance in
// flight, RocketMQ's delivery is at-least-once, not exactly-once.
// RMQ_E2E_BIG_COUNT overrides the count.
func TestClientGo100kExactlyOncePerGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: sends 100k messages through real processes")
	}
	count := 100000
	if v := os.Getenv("RMQ_E2E_BIG_COUNT"); v != "" {
		count, _ = strconv.Atoi(v)
	}
	c := harness.StartCluster(t, harness.ClusterOptions{Brokers: 1})
	if _, err := c.MQAdmin(t, "updateTopic", "-c", "DefaultCluster", "-t", "Exact100k", "-r", "8", "-w", "8"); err != nil {
		t.Fatal(err)
	}
	n := strconv.Itoa(count)
	done := make(chan interop.Result, 1)
	go func() {
		done <- interop.RunGoCheck(t, "consume", "-n", c.NamesrvAddr, "-t", "Exact100k", "-run", "exact", "-count", n,
			"-groups", "2", "-consumers", "2")
	}()
	time.Sleep(8 * time.Second) // four consumers join and rebalance before the first message
	prod := interop.RunGoCheck(t, "produce", "-n", c.NamesrvAddr, "-t", "Exact100k", "-run", "exact", "-count", n, "-send-mode", "async")
	prod.RequireOK(t)
	res := <-done
	res.RequireOK(t)
	if res.Duplicates != 0 || res.Distinct != int64(count) || res.Received != 2*int64(count) || len(res.Groups) != 2 {
		t.Fatalf("consumed %+v", res.Result)
	}
	for _, g := range res.Groups {
		if g.Distinct != int64(count) || g.Duplicates != 0 || g.Mismatched != 0 {
			t.Fatalf("group %s: %+v", g.Group, g)
		}
	}
}
