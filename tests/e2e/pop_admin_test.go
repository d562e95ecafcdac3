package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/framework"
)

// TestMQAdminPopStatus pops messages without acking them and reads the
// broker's pop state with our mqadmin popStatus (GET_POP_STATUS): the
// in-flight counts match what was popped, drop as messages are acked, and
// an orderly pop shows its queue blocked until it is acked.
func TestMQAdminPopStatus(t *testing.T) {
	skipShort(t, "real processes")
	const (
		topic    = "PopAdminTopic"
		orderTpc = "PopAdminOrderTopic"
		group    = "pop_admin_cg"
		n        = 6
	)
	c := startCluster(t, framework.Options{Brokers: 1})
	b, pc, oc := newPopClients(t, c, group, topic, orderTpc, 2)
	for i := 0; i < n; i++ {
		pc.send(int32(i%2), fmt.Sprintf("pa-%d", i))
	}
	oc.send(0, "ord-0")
	oc.send(0, "ord-1")

	status := func(args ...string) protocol.PopGroupStatus {
		t.Helper()
		out, err := c.MQAdmin(t, append([]string{"popStatus", "-b", b.Addr(), "-g", group, "--output", "json"}, args...)...)
		if err != nil {
			t.Fatalf("popStatus: %v", err)
		}
		var res struct {
			Brokers []struct {
				Addr   string                  `json:"addr"`
				Status *protocol.PopStatusBody `json:"status"`
				Error  string                  `json:"error"`
			} `json:"brokers"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("popStatus output: %v\n%s", err, out)
		}
		if len(res.Brokers) != 1 || res.Brokers[0].Status == nil || len(res.Brokers[0].Status.Groups) != 1 {
			t.Fatalf("popStatus output:\n%s", out)
		}
		return res.Brokers[0].Status.Groups[0]
	}

	var popped []popMsg
	deadline := time.Now().Add(5 * time.Second)
	for len(popped) < n && time.Now().Before(deadline) {
		popped = append(popped, pc.pop(n, time.Minute, 500*time.Millisecond, false)...)
	}
	if len(popped) != n {
		t.Fatalf("popped %d of %d", len(popped), n)
	}
	g := status("-t", topic, "-d")
	if g.Topic != topic || g.InFlight != n || g.Overdue != 0 || g.Checkpoints < 2 || g.OldestPopTime == 0 || g.Backlog != 0 {
		t.Fatalf("after popping %d: %+v", n, g)
	}
	var perQueue [2]int64
	for _, q := range g.Queues {
		if q.Topic == topic {
			perQueue[q.QueueID] = q.InFlight
		}
	}
	if perQueue != [2]int64{n / 2, n / 2} {
		t.Errorf("in flight per queue %v, want %d each", perQueue, n/2)
	}

	for _, m := range popped[:4] {
		if got := pc.ack(m); got != code.Success {
			t.Fatalf("ack %s: code %d", m.body, got)
		}
	}
	if g := status("-t", topic); g.InFlight != n-4 {
		t.Fatalf("after 4 acks: in flight %d, want %d (%+v)", g.InFlight, n-4, g)
	}

	// Orderly: the popped queue is blocked until its messages are acked.
	om := oc.pop(2, time.Minute, 500*time.Millisecond, true)
	if len(om) != 2 {
		t.Fatalf("orderly pop: %d messages", len(om))
	}
	if g := status("-t", orderTpc); g.BlockedQueues != 1 || g.InFlight != 2 {
		t.Fatalf("orderly in flight: %+v", g)
	}
	// The text form lists both topics of the group and the revive line.
	out, err := c.MQAdmin(t, "popStatus", "-c", "DefaultCluster", "-g", group)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{topic, orderTpc, "#Revive Lag(ms)", "Total: 2 group(s), 4 in flight"} {
		if !strings.Contains(out, want) {
			t.Errorf("popStatus text lacks %q:\n%s", want, out)
		}
	}
	for _, m := range append(om, popped[4:]...) {
		if got := oc.ack(m); got != code.Success {
			t.Fatalf("ack %s: code %d", m.body, got)
		}
	}
	if g := status("-t", orderTpc); g.BlockedQueues != 0 || g.InFlight != 0 {
		t.Errorf("orderly after acks: %+v", g)
	}
	if g := status("-t", topic); g.InFlight != 0 || g.Checkpoints != 0 {
		t.Errorf("after every ack: %+v", g)
	}
}
