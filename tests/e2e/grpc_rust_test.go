package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestGrpcRustClient: the RocketMQ 5.x Rust client (crate rocketmq 5.0.0,
// scripts/rust5-client.sh) on the broker's gRPC endpoint (issue 17): see
// grpcScriptClientRoundTrip. Skips with a message when cargo is missing or
// the driver is not built (make rust5-client).
func TestGrpcRustClient(t *testing.T) {
	skipShort(t, "real processes and a Rust 5.x client")
	t.Parallel()
	grpcScriptClientRoundTrip(t, rust5(t), "GrpcRustTopic", "rust")
}

// TestGrpcRustTransactionAndViews: the Rust 5.x client's transaction
// producer and SimpleConsumer against the broker's gRPC endpoint, with
// client-go reading over remoting (issue 17):
//   - transaction: one message committed, one rolled back, one left open
//     and resolved by the broker's check-back through the producer's
//     Telemetry stream (its TransactionChecker commits and is asked about
//     the open one only); client-go receives the committed and the checked
//     ones with the tag, keys and user property they were sent with and the
//     producer's address as born host, never the rolled-back one; the
//     Rust SimpleConsumer receives the same two;
//   - FIFO: the Rust SimpleConsumer reads the messages the Rust producer
//     sent with a message group, the group on each, in the order sent.
func TestGrpcRustTransactionAndViews(t *testing.T) {
	skipShort(t, "real processes and a Rust 5.x client")
	t.Parallel()
	rust := rust5(t)
	c, endpoint := startGrpcCluster(t, map[string]string{
		"transactionCheckInterval":                      "1000",
		"transactionTimeOut":                            "1000",
		"grpcClientConsumerMinLongPollingTimeoutMillis": "1000",
	})
	const txTopic, fifoTopic = "GrpcRustTxTopic", "GrpcRustFifoTopic"
	addr := c.Brokers()[0].Addr()
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", txTopic, "-r", "2", "-w", "2", "-a", "+message.type=TRANSACTION")
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", fifoTopic, "-r", "2", "-w", "2", "-a", "+message.type=FIFO")
	tx := grpcCollect(t, c, "grpc-rust-tx", txTopic, "grpc_rust_tx_cg", false)

	var txRun struct {
		IDs []string `json:"ids"`
		Tx  struct {
			Commit, Rollback, Check string
		} `json:"tx"`
		Checked []string `json:"checked"`
	}
	rust.run(t, &txRun, "transaction", "--endpoint", endpoint, "--topic", txTopic, "--tx", "commit,rollback,check", "--prefix", "tx", "--timeout", "20")
	if len(txRun.IDs) != 3 || txRun.Tx.Commit == "" || txRun.Tx.Rollback == "" || txRun.Tx.Check == "" {
		t.Fatalf("transaction run %+v", txRun)
	}
	// Asked about the open transaction only (twice is possible on a loaded
	// machine: a check may fire again before the first answer lands).
	for _, id := range txRun.Checked {
		if id != txRun.Tx.Check {
			t.Errorf("transaction checker asked about %v, want only the open %s", txRun.Checked, txRun.Tx.Check)
			break
		}
	}

	var fifoRun struct {
		IDs []string `json:"ids"`
	}
	rust.run(t, &fifoRun, "produce", "--endpoint", endpoint, "--topic", fifoTopic, "--count", "3", "--prefix", "fifo", "--group", "g0")

	deadline := time.Now().Add(15 * time.Second)
	for !tx.has(txRun.Tx.Commit, txRun.Tx.Check) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // room for the rolled-back message to show up wrongly
	tx.mu.Lock()
	for name, m := range map[string]struct{ id, body, keys string }{
		"committed":             {txRun.Tx.Commit, "tx-0", "key-0"},
		"checked and committed": {txRun.Tx.Check, "tx-2", "key-2"},
	} {
		ds := tx.got[m.id]
		switch {
		case len(ds) == 0:
			t.Errorf("%s transactional message %s never delivered to client-go", name, m.id)
		case ds[0].body != m.body || ds[0].tag != "TagA" || ds[0].keys != m.keys || ds[0].color != "red":
			t.Errorf("%s message %s over remoting: body %q tag %q keys %q color %q; want %s TagA %s red",
				name, m.id, ds[0].body, ds[0].tag, ds[0].keys, ds[0].color, m.body, m.keys)
		case !strings.HasPrefix(ds[0].bornHost, "127.0.0.1:"):
			t.Errorf("%s message %s born host %q, want the Rust client's 127.0.0.1:<port>", name, m.id, ds[0].bornHost)
		}
	}
	if ds := tx.got[txRun.Tx.Rollback]; len(ds) != 0 {
		t.Errorf("rolled-back transactional message %s delivered: %+v", txRun.Tx.Rollback, ds)
	}
	tx.mu.Unlock()

	type view struct {
		ID, Body, Tag, Color string
		Keys                 []string
		MessageGroup         string `json:"messageGroup"`
	}
	var got struct {
		Messages []view `json:"messages"`
	}
	rust.run(t, &got, "consume", "--endpoint", endpoint, "--topic", txTopic, "--group", "grpc_rust_tx_simple", "--count", "2", "--timeout", "15")
	ids := map[string]string{}
	for _, m := range got.Messages {
		ids[m.ID] = m.Body
	}
	if len(got.Messages) != 2 || ids[txRun.Tx.Commit] != "tx-0" || ids[txRun.Tx.Check] != "tx-2" {
		t.Errorf("the Rust SimpleConsumer got %+v from the transaction topic, want %s (tx-0) and %s (tx-2)",
			got.Messages, txRun.Tx.Commit, txRun.Tx.Check)
	}

	rust.run(t, &got, "consume", "--endpoint", endpoint, "--topic", fifoTopic, "--group", "grpc_rust_fifo_simple", "--count", "3", "--timeout", "15")
	var order []string
	for i, m := range got.Messages {
		order = append(order, m.Body)
		if m.MessageGroup != "g0" || m.Tag != "TagA" || m.Color != "red" || len(m.Keys) != 1 || (i < len(fifoRun.IDs) && m.ID != fifoRun.IDs[i]) {
			t.Errorf("FIFO message %d: %+v; want id %v[%d], group g0, tag TagA, color red, one key", i, m, fifoRun.IDs, i)
		}
	}
	if fmt.Sprint(order) != "[fifo-0 fifo-1 fifo-2]" {
		t.Errorf("the Rust SimpleConsumer read the FIFO messages as %v, want [fifo-0 fifo-1 fifo-2]", order)
	}
}
