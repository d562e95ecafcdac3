package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// recallRun is GrpcRecall's report (scripts/java5).
type recallRun struct {
	Keep          string `json:"keep"`
	Recalled      string `json:"recalled"`
	RecallReceipt string `json:"recallReceipt"`
	Remote        string `json:"remote"`
	RemoteHandle  string `json:"remoteHandle"`
	DeliverAt     int64  `json:"deliverAt"`
	GarbageError  string `json:"garbageError"`
	ForgedError   string `json:"forgedError"`
}

// TestGrpcJavaRecallAndProducerConnection: the RocketMQ 5.x Java client
// (5.2.0, gRPC) against the broker's gRPC endpoint (issue 17):
//   - recall: of three delay messages sent together, the one the client
//     recalls with its SendReceipt's recall handle (Producer.recallMessage)
//     and the one recalled over remoting (RECALL_MESSAGE with the handle
//     the gRPC send answered) never reach the client-go consumer; the third
//     does, at its time. A handle that does not decode and a forged one
//     naming another broker are refused with the proxy's
//     INTERNAL_SERVER_ERROR (50001);
//   - producer registry: while the producer runs, mqadmin producerConnection
//     (GET_PRODUCER_CONNECTION_LIST, the topic as group, as behind the
//     proxy) lists it with its address, language and version; once it
//     closes (NotifyClientTermination) the group has no producer.
//
// Skips with a message when java or mvn is missing.
func TestGrpcJavaRecallAndProducerConnection(t *testing.T) {
	skipShort(t, "real processes and a Java 5.x client")
	t.Parallel()
	c, endpoint := startGrpcCluster(t, map[string]string{"recallMessageEnable": "true"})
	const topic = "GrpcRecallTopic"
	addr := c.Brokers()[0].Addr()
	mqadmin(t, c, "updateTopic", "-b", addr, "-t", topic, "-r", "2", "-w", "2", "-a", "+message.type=DELAY")
	col := grpcCollect(t, c, "grpc-recall", topic, "grpc_recall_cg", false)

	// The producer runs until release exists (the listing below is
	// checked by then; a fixed hold was too short on a loaded machine).
	release := filepath.Join(t.TempDir(), "release")
	lines, wait := java5(t).start(t, "GrpcRecall", endpoint, topic, "4000", "60000", release)
	var sent struct {
		Event        string `json:"event"`
		RemoteHandle string `json:"remoteHandle"`
	}
	for l := range lines {
		if json.Unmarshal([]byte(l), &sent) == nil && sent.Event == "sent" {
			break
		}
	}
	if sent.RemoteHandle == "" {
		wait(nil) // skips when java is missing, fails with the client's report
		t.Fatal("GrpcRecall ended without its progress line")
	}

	// Cross-protocol, first (well before the delivery time): the gRPC
	// send's handle recalled over remoting.
	resp := roundTrip(t, addr, remoting.NewRequest(code.RecallMessage,
		map[string]string{"topic": topic, "recallHandle": sent.RemoteHandle, "producerGroup": topic}, nil))

	// The producer is listed while it runs.
	out := mqadmin(t, c, "producerConnection", "-g", topic, "-t", topic)
	if !strings.Contains(out, "JAVA") || !strings.Contains(out, "V5_2_0") || !strings.Contains(out, "127.0.0.1:") {
		t.Errorf("producerConnection while the 5.x producer runs:\n%s\nwant it listed (127.0.0.1:port, JAVA, V5_2_0)", out)
	}

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var run recallRun
	wait(&run)
	if resp.Code != code.Success || resp.Ext("msgId") != run.Remote {
		t.Errorf("RECALL_MESSAGE over remoting: code %d %q msgId %q, want success for %s", resp.Code, resp.Remark, resp.Ext("msgId"), run.Remote)
	}
	if run.RecallReceipt != run.Recalled {
		t.Errorf("recall receipt names %q, want the recalled %q", run.RecallReceipt, run.Recalled)
	}
	for name, e := range map[string]string{"garbage handle": run.GarbageError, "forged handle": run.ForgedError} {
		if !strings.Contains(e, "50001") && !strings.Contains(e, "INTERNAL_SERVER_ERROR") {
			t.Errorf("recall with a %s: %q, want INTERNAL_SERVER_ERROR (50001)", name, e)
		}
	}

	// Closed: the group has no producer left (at once after its
	// NotifyClientTermination; when its stream's end is seen otherwise).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, err := c.MQAdmin(t, "producerConnection", "-g", topic, "-t", topic)
		if err != nil || !strings.Contains(out, "JAVA") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("producerConnection after the producer closed:\n%s", out)
			break
		}
	}

	deadline := time.Now().Add(15 * time.Second)
	for !col.has(run.Keep) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // room for a recalled message to show up wrongly
	col.mu.Lock()
	defer col.mu.Unlock()
	if ds := col.got[run.Keep]; len(ds) == 0 {
		t.Errorf("the delay message %s sent alongside never delivered", run.Keep)
	} else if at := time.UnixMilli(run.DeliverAt); ds[0].at.Before(at) {
		t.Errorf("the delay message %s delivered %v before its time", run.Keep, at.Sub(ds[0].at))
	}
	for name, id := range map[string]string{"recalled over gRPC": run.Recalled, "recalled over remoting": run.Remote} {
		if len(col.got[id]) != 0 {
			t.Errorf("message %s %s delivered: %+v", id, name, col.got[id])
		}
	}
}
