package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/internal/chaos"
)

// TestControllerModeFailover (docs/replication.md, controller mode): three
// nameservers with embedded controllers, one broker set of three replicas
// with allAckInSyncStateSet=true. Under a producer/checker run the master
// is killed with SIGKILL; a new master is elected from the SyncStateSet;
// the old master restarts as a slave of the new epoch and truncates to it;
// every SEND_OK message is consumed, and a topic created and a consumer
// offset committed seconds before the kill are the new master's. Before the run, our mqadmin and the
// Java tool print the same getBrokerEpoch and haStatus (ctrlAdminMatchesJava).
func TestControllerModeFailover(t *testing.T) {
	processOnly(t, "kills broker processes")
	// Mostly waiting for elections and client-go's route refresh: runs
	// beside the other slow tests.
	t.Parallel()
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: "FailoverCluster", Topic: "ControllerFailoverTopic"})
	rc, bin, nsAddrs, brokers, topic := c.rc, c.bin, c.nsAddrs, c.brokers, c.topic
	master := c.master
	ctrlAdminMatchesJava(t, c)

	run, err := chaos.Start(chaos.Options{Namesrv: nsAddrs, Topic: topic, Group: "controller_failover", Run: "cf",
		Interval: 10 * time.Millisecond, Senders: 2, SendTimeout: 3 * time.Second, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	testutil.WaitFor(t, 15*time.Second, "acked sends", func() bool { return run.Acked() >= 100 })

	// A topic created on the master alone (as `mqadmin updateTopic -c`
	// does), with messages, just before the kill: the slaves copy the
	// master's topic table as soon as they store a message of a topic they
	// do not know, not at the next full copy (60 s), so the elected one
	// routes it and serves its messages.
	const late = "ControllerFailoverLateTopic"
	createTopic(t, rc, master, late)
	c.sendFreshTo(t, late, "controller_failover_late", 3)
	for _, b := range brokers {
		if b.addr != master {
			testutil.WaitFor(t, 5*time.Second, b.addr+" knows "+late, func() bool { return topicKnown(t, rc, b.addr, late) })
		}
	}

	// A topic without messages and a consumer offset, both new on the
	// master: the slaves copy small topic and offset tables at every check
	// (3 s), not at the next full copy (60 s), so the elected one routes
	// the topic and serves the offset (a pop consumer or a queue's next
	// owner does not consume that minute again).
	const empty, offGroup = "ControllerFailoverEmptyTopic", "controller_failover_offsets"
	createTopic(t, rc, master, empty)
	c.commitOffset(t, master, offGroup, topic, 1, 7)
	for _, b := range brokers {
		if b.addr != master {
			testutil.WaitFor(t, 10*time.Second, b.addr+" knows "+empty+" and holds the committed offset", func() bool {
				return topicKnown(t, rc, b.addr, empty) && c.consumerOffset(t, b.addr, offGroup, topic, 1) == 7
			})
		}
	}

	old := c.broker(t, master)
	oldEpochs := epochCache(t, rc, old.addr)
	old.proc.Kill()
	killed := time.Now()
	var next string
	testutil.WaitFor(t, 15*time.Second, "a new master registered", func() bool {
		next = c.masterAddr()
		return next != "" && next != old.addr
	})
	t.Logf("new master %s registered %v after the kill", next, time.Since(killed))
	newEpochs := epochCache(t, rc, next)
	if last, prev := newEpochs.EpochList[len(newEpochs.EpochList)-1], oldEpochs.EpochList[len(oldEpochs.EpochList)-1]; last.Epoch <= prev.Epoch {
		t.Fatalf("new master's epoch %d is not newer than the old %d", last.Epoch, prev.Epoch)
	}

	// A producer that asks for routes now writes to the new master: with
	// allAckInSyncStateSet its SEND_OK needs every SyncStateSet member.
	c.sendFresh(t, "controller_failover_after", 20)
	if n, err := harness.QueuedMessages(rc, next, late, 4); err != nil || n != 3 {
		t.Fatalf("new master %s holds %d messages of %s (%v), want 3", next, n, late, err)
	}
	c.sendFreshTo(t, late, "controller_failover_late_after", 2)
	t.Logf("the new master acknowledged sends %v after the kill", time.Since(killed))
	if got := c.consumerOffset(t, next, offGroup, topic, 1); got != 7 {
		t.Fatalf("new master %s serves offset %d for %s, want the 7 committed before the kill", next, got, offGroup)
	}
	if !topicKnown(t, rc, next, empty) {
		t.Fatalf("new master %s lacks %s, created on the old master before the kill", next, empty)
	}

	// The old master comes back as a slave of the new epoch, truncates to
	// the common point and copies the new epoch.
	old.start(t, bin, -1)
	c.waitFollows(t, old.addr, next, 20*time.Second)
	// The checker's consumer resumes once client-go refreshes its routes
	// (every 30 s from its start, not configurable): before that it keeps
	// pulling at the old master's address and makes no progress there.
	rep := run.Drain(35 * time.Second)
	t.Logf("report: %v", rep)
	for _, b := range brokers {
		n, err := harness.QueuedMessages(rc, b.addr, topic, 4)
		t.Logf("broker %s indexes %d messages (err %v), HA %+v", b.addr, n, err, harness.HAStatus(t, rc, b.addr))
	}
	if rep.Lost != 0 {
		c.logOffsets(t, "controller_failover")
	}
	if rep.Lost != 0 || rep.Acked == 0 {
		t.Fatalf("acked messages lost across the failover: %v", rep)
	}
	nm, om := epochCache(t, rc, next), epochCache(t, rc, old.addr)
	if !slices.Equal(trimEnds(nm.EpochList), trimEnds(om.EpochList)) {
		t.Fatalf("epoch lists differ: new master %v, old master %v", nm.EpochList, om.EpochList)
	}
}
