package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/internal/chaos"
)

// Failure scenarios of controller mode (docs/replication.md §2.6–§2.7),
// each on its own three-controller, three-replica topology
// (startCtrlCluster) under a chaos producer/checker run.

// startScenario starts the topology with the given master lease and
// controller heartbeat timeout (0: the topology's 2 s and 3 s) and a chaos
// run on it, and waits for the run's first acknowledgements.
func startScenario(t *testing.T, name string, lease, heartbeatTimeout time.Duration) (*ctrlCluster, *chaos.Run) {
	t.Helper()
	processOnly(t, "kills and stops processes")
	broker := map[string]string{}
	if lease > 0 {
		broker["masterLeaseMillis"] = strconv.FormatInt(lease.Milliseconds(), 10)
		broker["controllerHeartBeatTimeoutMills"] = strconv.FormatInt(heartbeatTimeout.Milliseconds(), 10)
	}
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: name, Topic: name + "Topic", Broker: broker})
	return c, startChaos(t, c, name)
}

// startChaos starts a chaos run (consumer group name_cg) on c's topic and
// waits for its first acknowledgements.
func startChaos(t *testing.T, c *ctrlCluster, name string) *chaos.Run {
	t.Helper()
	run, err := chaos.Start(chaos.Options{Namesrv: c.nsAddrs, Topic: c.topic, Group: name + "_cg", Run: name,
		Interval: 10 * time.Millisecond, Senders: 2, SendTimeout: 3 * time.Second, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	testutil.WaitFor(t, 15*time.Second, "acked sends", func() bool { return run.Acked() >= 50 })
	return run
}

// mustSyncState reads the set's replica info from the controller leader.
func (c *ctrlCluster) mustSyncState(t *testing.T) protocol.ReplicasInfo {
	t.Helper()
	return c.waitSyncState(t, 10*time.Second, "the SyncStateSet from a controller leader",
		func(protocol.ReplicasInfo) bool { return true })
}

// fullSyncState waits until all three replicas are in the SyncStateSet
// and returns it: on a loaded machine a slave that fell behind for
// haMaxTimeSlaveNotCatchup is dropped from the set for a while, and a
// fault injected then has no slave to elect (by design: with
// allAckInSyncStateSet only the set's members hold every acked message).
func (c *ctrlCluster) fullSyncState(t *testing.T) protocol.ReplicasInfo {
	t.Helper()
	return c.waitSyncState(t, 20*time.Second, "all three replicas in the SyncStateSet",
		func(ri protocol.ReplicasInfo) bool { return len(ri.InSyncReplicas) == 3 })
}

// waitSyncState waits until a controller leader answers with a set that
// satisfies ok, and returns it.
func (c *ctrlCluster) waitSyncState(t *testing.T, timeout time.Duration, what string, ok func(protocol.ReplicasInfo) bool) protocol.ReplicasInfo {
	t.Helper()
	var ri protocol.ReplicasInfo
	testutil.WaitFor(t, timeout, what, func() bool {
		var found bool
		ri, found = c.syncState()
		return found && ok(ri)
	})
	return ri
}

// replicaID is the controller id of the replica at addr in ri.
func replicaID(t *testing.T, ri protocol.ReplicasInfo, addr string) int64 {
	t.Helper()
	for _, r := range append(slices.Clone(ri.InSyncReplicas), ri.NotInSyncReplicas...) {
		if r.BrokerAddress == addr {
			return r.BrokerID
		}
	}
	t.Fatalf("replica %s unknown to the controller: %+v", addr, ri)
	return 0
}

func inSync(ri protocol.ReplicasInfo, id int64) bool {
	return slices.ContainsFunc(ri.InSyncReplicas, func(r protocol.ReplicaIdentity) bool { return r.BrokerID == id })
}

// waitShrunk waits until the controller's set has dropped replica id
// (failed at since) and checks it is the one change: syncStateSetEpoch + 1,
// the same master. It returns the set and when the change was seen.
func (c *ctrlCluster) waitShrunk(t *testing.T, before protocol.ReplicasInfo, id int64, since time.Time, timeout time.Duration) (protocol.ReplicasInfo, time.Time) {
	t.Helper()
	var shrunk protocol.ReplicasInfo
	testutil.WaitFor(t, timeout, "the SyncStateSet without the failed slave", func() bool {
		shrunk, _ = c.syncState()
		return shrunk.SyncStateSetEpoch > before.SyncStateSetEpoch
	})
	seen := time.Now()
	t.Logf("shrink seen %v after the failure: %+v", seen.Sub(since), shrunk)
	if shrunk.SyncStateSetEpoch != before.SyncStateSetEpoch+1 || inSync(shrunk, id) || len(shrunk.InSyncReplicas) != 2 ||
		shrunk.MasterEpoch != before.MasterEpoch || shrunk.MasterBrokerID != before.MasterBrokerID {
		t.Fatalf("after slave %d failed: %+v, before %+v", id, shrunk, before)
	}
	return shrunk, seen
}

// waitRegrown waits until replica id, failed into shrunk, is back in the
// controller's set (since: the moment it came back, by after: "the heal",
// "its restart") and checks it is the one change: syncStateSetEpoch + 1,
// all three replicas, the master epoch of before.
func (c *ctrlCluster) waitRegrown(t *testing.T, before, shrunk protocol.ReplicasInfo, id int64, since time.Time, after string) {
	t.Helper()
	var grown protocol.ReplicasInfo
	testutil.WaitFor(t, 15*time.Second, "the slave back in the SyncStateSet after "+after, func() bool {
		grown, _ = c.syncState()
		return inSync(grown, id)
	})
	t.Logf("slave back in the set %v after %s: %+v", time.Since(since), after, grown)
	if grown.SyncStateSetEpoch != shrunk.SyncStateSetEpoch+1 || len(grown.InSyncReplicas) != 3 || grown.MasterEpoch != before.MasterEpoch {
		t.Fatalf("after %s: %+v, shrunk %+v", after, grown, shrunk)
	}
}

// aSlave is a replica other than the first master.
func (c *ctrlCluster) aSlave(t *testing.T) *ctrlBroker {
	t.Helper()
	for _, b := range c.brokers {
		if b.addr != c.master {
			return b
		}
	}
	t.Fatal("no slave")
	return nil
}

// sendsSucceedAfter fails t unless, over the next 3 s, sends answered
// more than a second after confirmed all succeeded: sends that waited for
// a removed member before the controller confirmed the shrink may have
// failed, none after.
func sendsSucceedAfter(t *testing.T, run *chaos.Run, confirmed time.Time) {
	t.Helper()
	time.Sleep(3 * time.Second)
	after := confirmed.Add(time.Second)
	if n, acks := run.Failures(after), len(run.Acks(after)); n != 0 || acks == 0 {
		t.Fatalf("after the shrink: %d failed sends, %d acked (%v)", n, acks, run.Report())
	}
}

// drainNoLoss drains the run and fails t unless every SEND_OK id was
// consumed.
func drainNoLoss(t *testing.T, c *ctrlCluster, run *chaos.Run, group string, timeout time.Duration) chaos.Report {
	t.Helper()
	rep := run.Drain(timeout)
	t.Logf("report: %v", rep)
	if rep.Lost != 0 || rep.Acked == 0 {
		c.logOffsets(t, group)
		t.Fatalf("acked messages lost: %v", rep)
	}
	return rep
}

// TestHAScenarioSlaveKill (failure checklist row 6): kill -9 of a slave.
// The master shrinks the SyncStateSet at once (syncStateSetEpoch + 1, the
// slave not in sync) and sends succeed again; the restarted slave is added
// back (epoch + 1 again); nothing acknowledged is lost.
func TestHAScenarioSlaveKill(t *testing.T) {
	t.Parallel()
	c, run := startScenario(t, "ScenSlaveKill", 0, 0)
	before := c.mustSyncState(t)
	if len(before.InSyncReplicas) != 3 {
		t.Fatalf("SyncStateSet before the kill: %+v", before)
	}
	slave := c.aSlave(t)
	id := replicaID(t, before, slave.addr)
	slave.proc.Kill()
	killed := time.Now()

	shrunk, confirmed := c.waitShrunk(t, before, id, killed, 10*time.Second)
	sendsSucceedAfter(t, run, confirmed)

	slave.start(t, c.bin, -1)
	c.waitRegrown(t, before, shrunk, id, time.Now(), "its restart")
	drainNoLoss(t, c, run, "ScenSlaveKill_cg", 20*time.Second)
}

// TestHAScenarioControllerLeaderKill (checklist row 7): kill -9 of the
// raft leader controller (with its nameserver) under load. No broker role
// changes, the master renews its lease with the new leader (it keeps
// acknowledging past a lease length), no send fails, nothing is lost.
//
// The lease and heartbeat timeout are the defaults (6 s, 10 s): the lease
// must outlast a raft election (≈ 1.5 s here) plus the brokers' search for
// the new leader (backoff up to 2 s). With the 2 s lease of the other
// scenarios the master fences itself for about half a second on every
// controller leader change and answers SERVICE_NOT_AVAILABLE.
func TestHAScenarioControllerLeaderKill(t *testing.T) {
	t.Parallel()
	const lease = 6 * time.Second
	c, run := startScenario(t, "ScenCtrlKill", lease, 10*time.Second)
	start := time.Now()
	before := c.mustSyncState(t)
	masterEpochs := epochCache(t, c.rc, c.master)
	li := c.leader()
	if li < 0 {
		t.Fatal("no controller leader")
	}
	c.namesrvs[li].Kill()
	killed := time.Now()
	testutil.WaitFor(t, 15*time.Second, "a new controller leader", func() bool { l := c.leader(); return l >= 0 && l != li })
	elected := time.Now()
	t.Logf("new controller leader n%d %v after the kill", c.leader(), elected.Sub(killed))
	// A master that did not renew its lease with the new leader has
	// fenced itself one lease after the kill.
	renewed := killed.Add(lease + time.Second)
	time.Sleep(time.Until(renewed.Add(time.Second)))
	if acks := run.Acks(renewed); len(acks) == 0 {
		t.Fatalf("no SEND_OK more than a lease after the kill: %v", run.Report())
	}
	after := c.mustSyncState(t)
	if after.MasterEpoch != before.MasterEpoch || after.MasterBrokerID != before.MasterBrokerID ||
		after.SyncStateSetEpoch != before.SyncStateSetEpoch || len(after.InSyncReplicas) != 3 {
		t.Fatalf("replica info changed across the controller leader kill: before %+v, after %+v", before, after)
	}
	if m := c.masterAddr(); m != c.master {
		t.Fatalf("master moved from %s to %s", c.master, m)
	}
	if e := epochCache(t, c.rc, c.master); e.BrokerID != 0 || !slices.Equal(trimEnds(e.EpochList), trimEnds(masterEpochs.EpochList)) {
		t.Fatalf("master's epochs changed: before %+v, after %+v", masterEpochs, e)
	}
	if n := run.Failures(start); n != 0 {
		t.Fatalf("%d sends failed across the controller leader kill: %v", n, run.Report())
	}
	drainNoLoss(t, c, run, "ScenCtrlKill_cg", 20*time.Second)
}

// TestHAScenarioMasterSIGSTOP (checklist row 3, the master lease of
// docs/replication.md §2.7): the master is frozen with SIGSTOP. Its
// heartbeats stop, the controllers elect another replica once
// controllerHeartBeatTimeoutMills passed; the old master, resumed, must
// not acknowledge anything after its lease ran out, follows the new
// master at the new epoch, and nothing acknowledged is lost.
func TestHAScenarioMasterSIGSTOP(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	c, run := startScenario(t, "ScenMasterStop", lease, 4*time.Second)
	before := c.mustSyncState(t)
	old := c.broker(t, c.master)
	if err := old.proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := old.proc.Signal(syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT: %v", err)
			}
		}
	}
	defer resume()

	var next protocol.ReplicasInfo
	testutil.WaitFor(t, 15*time.Second, "a new master elected", func() bool {
		next, _ = c.syncState()
		return next.MasterEpoch > before.MasterEpoch && next.MasterBrokerID > 0 && next.MasterBrokerID != before.MasterBrokerID
	})
	t.Logf("new master %d (%s) at epoch %d, %v after SIGSTOP", next.MasterBrokerID, next.MasterAddress, next.MasterEpoch, time.Since(stopped))
	resume()
	resumedAt := time.Now()

	// Writes in the new epoch, through fresh routes (the chaos producer
	// keeps its routes for 30 s).
	c.waitRouted(t, next.MasterAddress, 10*time.Second)
	c.sendFresh(t, "ScenMasterStop_after", 10)
	c.waitFollows(t, old.addr, next.MasterAddress, 15*time.Second)
	t.Logf("old master is a slave %v after SIGCONT", time.Since(resumedAt))

	// The lease began at the latest with the last heartbeat before SIGSTOP:
	// one second of slack for answers already on their way.
	expiry := stopped.Add(lease + time.Second)
	var late []chaos.Ack
	for _, a := range run.Acks(expiry) {
		if a.Store == old.addr {
			late = append(late, a)
		}
	}
	if len(late) != 0 {
		t.Fatalf("the old master acknowledged %d sends after its lease expired (first %+v, resumed %v)", len(late), late[0], resumedAt)
	}
	rep := drainNoLoss(t, c, run, "ScenMasterStop_cg", 35*time.Second)
	o, n := epochCache(t, c.rc, old.addr), epochCache(t, c.rc, next.MasterAddress)
	if !slices.Equal(trimEnds(o.EpochList), trimEnds(n.EpochList)) {
		t.Fatalf("epoch lists differ: new master %v, old master %v (%v)", n.EpochList, o.EpochList, rep)
	}
}

// TestHAScenarioUnackedTailRejoin (checklist rows 2 and 14): both slaves
// are frozen, so the master stores messages nobody else has and answers
// FLUSH_SLAVE_TIMEOUT; the master is killed, a slave is elected, and the
// old master, restarted, truncates its log exactly to the new epoch's
// start and then holds the new master's log (docs/replication.md §2.6). Killed again right after
// that truncation and restarted, it still holds no byte of the old tail.
func TestHAScenarioUnackedTailRejoin(t *testing.T) {
	t.Parallel()
	processOnly(t, "kills and stops processes")
	// The set never shrinks here: the frozen slaves stay members, so
	// nothing stored while they are away can be acknowledged.
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: "ScenTail", Topic: "ScenTailTopic",
		Broker: map[string]string{"haMaxTimeSlaveNotCatchup": "600000", "slaveTimeout": "1000"}})
	c.sendFresh(t, "ScenTail_before", 20)
	before := c.mustSyncState(t)
	old := c.broker(t, c.master)
	common := epochCache(t, c.rc, old.addr).MaxOffset
	var slaves []*ctrlBroker
	for _, b := range c.brokers {
		if b != old {
			slaves = append(slaves, b)
			if err := b.proc.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.proc.Signal(syscall.SIGCONT) })
		}
	}

	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(c.nsAddrs)),
		producer.WithGroupName("ScenTail_tail"), producer.WithInstanceName("ScenTail_tail"), producer.WithRetry(0), producer.WithSendMsgTimeout(5*time.Second))
	started(t, p, err)
	defer p.Shutdown()
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(c.topic, fmt.Appendf(nil, "tail-%d", i)))
		cancel()
		if err != nil || res.Status != primitive.SendFlushSlaveTimeout {
			t.Fatalf("send %d with both slaves frozen: %v %v", i, res, err)
		}
	}
	tail := epochCache(t, c.rc, old.addr).MaxOffset
	if tail <= common {
		t.Fatalf("the master stored no tail: max %d, common %d", tail, common)
	}

	old.proc.Kill()
	for _, b := range slaves {
		if err := b.proc.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	next := c.waitElected(t, 15*time.Second, before)
	c.waitRouted(t, next.MasterAddress, 10*time.Second)
	// A frozen slave's socket buffer may hold the first frames of the
	// tail; it appends them when it resumes, and the new master keeps its
	// whole log (they were never acknowledged, so either way is right).
	ne := epochCache(t, c.rc, next.MasterAddress)
	start := ne.EpochList[len(ne.EpochList)-1]
	if start.Epoch != next.MasterEpoch || start.StartOffset < common || start.StartOffset >= tail {
		t.Fatalf("new master's last epoch %+v: want epoch %d from [%d, %d)", start, next.MasterEpoch, common, tail)
	}
	t.Logf("new epoch %d starts at %d: common prefix %d, old master's tail to %d", start.Epoch, start.StartOffset, common, tail)
	c.sendFresh(t, "ScenTail_after", 10)

	old.start(t, c.bin, -1)
	c.waitFollows(t, old.addr, next.MasterAddress, 20*time.Second)
	if want := fmt.Sprintf("from=%d to=%d", tail, start.StartOffset); !strings.Contains(old.proc.Logs(), want) {
		t.Fatalf("the old master did not truncate %s", want)
	}
	// Row 14: a crash right after the truncation resurrects nothing.
	old.proc.Kill()
	old.start(t, c.bin, -1)
	c.waitFollows(t, old.addr, next.MasterAddress, 20*time.Second)
	// Same queues everywhere, holding at least the 30 acknowledged
	// messages (plus whatever part of the tail the new master kept).
	want, err := harness.QueuedMessages(c.rc, next.MasterAddress, c.topic, 4)
	if err != nil || want < 30 {
		t.Fatalf("the new master indexes %d messages (%v), want ≥ 30", want, err)
	}
	for _, b := range c.brokers {
		testutil.Eventually(t, 10*time.Second, func() error {
			if n, err := harness.QueuedMessages(c.rc, b.addr, c.topic, 4); err != nil || n != want {
				return fmt.Errorf("%s indexes %d messages (%v), the master %d", b.addr, n, err, want)
			}
			return nil
		})
	}
}

// TestHAScenarioSlaveSIGSTOP (checklist row 5): a frozen slave. Sends wait
// for it and fail (FLUSH_SLAVE_TIMEOUT) only until the master has dropped
// it from the SyncStateSet — within haMaxTimeSlaveNotCatchup (3 s) +
// checkSyncStateSetPeriod (1 s) + an alter round trip — then succeed
// again; resumed, the slave catches up and is added back.
func TestHAScenarioSlaveSIGSTOP(t *testing.T) {
	t.Parallel()
	c, run := startScenario(t, "ScenSlaveStop", 0, 0)
	before := c.mustSyncState(t)
	slave := c.aSlave(t)
	id := replicaID(t, before, slave.addr)
	if err := slave.proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			_ = slave.proc.Signal(syscall.SIGCONT)
		}
	}()

	shrunk, confirmed := c.waitShrunk(t, before, id, stopped, 15*time.Second)
	if confirmed.Sub(stopped) > 6*time.Second {
		t.Fatalf("the set shrank %v after the slave froze, want ≤ 3 s + 1 s + an alter (+ 2 s slack)", confirmed.Sub(stopped))
	}
	sendsSucceedAfter(t, run, confirmed)
	t.Logf("while frozen: %v", run.Report())

	resumed = true
	if err := slave.proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var grown protocol.ReplicasInfo
	testutil.WaitFor(t, 15*time.Second, "the resumed slave back in the SyncStateSet", func() bool {
		grown, _ = c.syncState()
		return inSync(grown, id)
	})
	if grown.SyncStateSetEpoch != shrunk.SyncStateSetEpoch+1 || len(grown.InSyncReplicas) != 3 || grown.MasterEpoch != before.MasterEpoch {
		t.Fatalf("after SIGCONT: %+v, shrunk %+v", grown, shrunk)
	}
	drainNoLoss(t, c, run, "ScenSlaveStop_cg", 20*time.Second)
}
