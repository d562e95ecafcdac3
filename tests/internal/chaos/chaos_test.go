package chaos

import (
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/framework/inproc"
)

// TestReportCounts: lost is acked-but-never-consumed; duplicates and
// unknown ids are counted apart.
func TestReportCounts(t *testing.T) {
	r := &Run{o: Options{Run: "r1"}, acked: map[string]struct{}{}, failed: map[string]int{"timeout": 2}, received: map[string]int{}}
	for _, id := range []string{"r1-0-0", "r1-0-1", "r1-0-2", "r1-0-3"} {
		r.acked[id] = struct{}{}
	}
	r.enqueued = 6
	r.received["r1-0-0"] = 1
	r.received["r1-0-1"] = 3
	r.received["r1-0-4"] = 1 // sent, answered with an error, stored anyway
	r.deliveries, r.unknown = 6, 1
	rep := r.Report()
	if rep.Enqueued != 6 || rep.Acked != 4 || rep.Dequeued != 3 || rep.Lost != 2 || rep.Duplicated != 1 || rep.Unknown != 1 || rep.Failed["timeout"] != 2 {
		t.Fatalf("report %s", rep)
	}
	if len(rep.LostIDs) != 2 || rep.LostIDs[0] != "r1-0-2" || rep.LostIDs[1] != "r1-0-3" {
		t.Fatalf("lost ids %v", rep.LostIDs)
	}
}

// TestHealthyRun: against a healthy in-process broker everything acked
// is consumed, once.
func TestHealthyRun(t *testing.T) {
	rlog.SetLogLevel("error")
	c := inproc.Start(t, framework.Options{Brokers: 1})
	if out, err := c.MQAdmin(t, "updateTopic", "-t", "ChaosTopic", "-c", "DefaultCluster", "-r", "2", "-w", "2"); err != nil {
		t.Fatalf("updateTopic: %v\n%s", err, out)
	}
	r, err := Start(Options{Namesrv: c.NamesrvAddrs(), Topic: "ChaosTopic", Group: "chaos_cg", Run: "healthy", Interval: 10 * time.Millisecond, Senders: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for r.Acked() < 100 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	rep := r.Drain(30 * time.Second)
	t.Log(rep)
	acks := r.Acks(time.Time{})
	if len(acks) != rep.Acked || r.Failures(time.Time{}) != 0 {
		t.Fatalf("%d ack records, %d failures for %s", len(acks), r.Failures(time.Time{}), rep)
	}
	brokerAddr := c.Brokers()[0].Addr()
	for _, a := range acks {
		if a.Store != brokerAddr {
			t.Fatalf("ack %s stored by %q, the broker is %s", a.ID, a.Store, brokerAddr)
		}
	}
	if rep.Acked < 100 || rep.Lost != 0 || rep.Unknown != 0 || rep.Dequeued != rep.Acked || rep.Enqueued != rep.Acked {
		t.Fatalf("healthy run: %s", rep)
	}
}
