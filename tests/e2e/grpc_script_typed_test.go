package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestGrpcScriptClientsTypedProducer: the Node.js, Python and Rust 5.x
// producers (their drivers' produce mode) send FIFO messages (a message
// group) to a FIFO topic and delayed messages to a DELAY topic over gRPC;
// client-go consumes over remoting: each group's messages on one queue, in
// order (orderly consumer), and no delayed message before its delivery
// time. A client skips with a message when its runtime is missing (Rust:
// or its driver is not built, make rust5-client).
func TestGrpcScriptClientsTypedProducer(t *testing.T) {
	skipShort(t, "real processes and 5.x clients")
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script func(t *testing.T) clientScript
	}{
		{"Node", func(*testing.T) clientScript { return node5() }},
		{"Python", python5},
		{"Rust", rust5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scriptTypedProducer(t, tc.script(t), tc.name)
		})
	}
}

func scriptTypedProducer(t *testing.T, client clientScript, name string) {
	c, endpoint := startGrpcCluster(t, nil)
	fifoTopic, delayTopic := "GrpcFifo"+name, "GrpcDelay"+name
	addr := c.Brokers()[0].Addr()
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", fifoTopic, "-r", "4", "-w", "4", "-a", "+message.type=FIFO")
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", delayTopic, "-r", "4", "-w", "4", "-a", "+message.type=DELAY")
	instance := "grpc-typed-" + name
	fifo := grpcCollect(t, c, instance, fifoTopic, "grpc_fifo_cg_"+name, true)
	delay := grpcCollect(t, c, instance, delayTopic, "grpc_delay_cg_"+name, false)

	var res struct {
		IDs []string `json:"ids"`
	}
	var fifoIDs []string
	for _, g := range []string{"g0", "g1"} {
		client.run(t, &res, "produce", "--endpoint", endpoint, "--topic", fifoTopic, "--count", "4", "--prefix", "fifo-"+g, "--group", g)
		fifoIDs = append(fifoIDs, res.IDs...)
	}
	const delayMs = 3000
	sentAt := time.Now()
	client.run(t, &res, "produce", "--endpoint", endpoint, "--topic", delayTopic, "--count", "2", "--prefix", "delay", "--delay", strconv.Itoa(delayMs))
	delayIDs := res.IDs
	if len(fifoIDs) != 8 || len(delayIDs) != 2 {
		t.Fatalf("sent %d FIFO and %d delayed messages, want 8 and 2", len(fifoIDs), len(delayIDs))
	}

	deadline := time.Now().Add(20 * time.Second)
	for !(fifo.has(fifoIDs...) && delay.has(delayIDs...)) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}

	queues, order := fifo.groupOrder(nil)
	for _, g := range []string{"g0", "g1"} {
		want := []string{"fifo-" + g + "-0", "fifo-" + g + "-1", "fifo-" + g + "-2", "fifo-" + g + "-3"}
		if len(queues[g]) != 1 || fmt.Sprint(order[g]) != fmt.Sprint(want) {
			t.Errorf("group %s: queues %v, order %v; want one queue, %v", g, queues[g], order[g], want)
		}
	}

	delay.mu.Lock()
	defer delay.mu.Unlock()
	// The clients compute the delivery time from their own clock just
	// before the send, after sentAt.
	due := sentAt.Add(delayMs * time.Millisecond)
	for _, id := range delayIDs {
		ds := delay.got[id]
		if len(ds) == 0 {
			t.Errorf("delayed message %s never delivered", id)
			continue
		}
		if ds[0].at.Before(due) {
			t.Errorf("delayed message %s delivered at %v, %v before its delivery time", id, ds[0].at, due.Sub(ds[0].at))
		}
	}
}
