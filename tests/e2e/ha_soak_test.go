package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/framework/netfault"
)

// soakFault is one kind of failure TestHASoak injects into the set and
// heals again; out is how long the victim stays down, frozen or cut off.
type soakFault struct {
	name string
	run  func(t *testing.T, c *ctrlCluster, rng *rand.Rand, out time.Duration) string
}

// TestHASoak (make soak-ha): the controller-mode topology of the failover
// tests (three controllers, three replicas, allAckInSyncStateSet, master
// lease 2 s, heartbeat timeout 4 s, every broker behind netfault links)
// under a chaos producer/checker run, through RMQ_HA_SOAK_ROUNDS faults
// drawn at random one after another (RMQ_HA_SOAK_SEED replays a run): the
// master killed, stopped, frozen or partitioned; the master and a slave
// killed or frozen together; the master moved by an operator (electMaster);
// a slave restarted, killed or partitioned; the controller leader killed. After each fault heals, all
// three replicas must be back in the SyncStateSet, every nameserver must
// route the controller's master, the slaves must hold its log and epochs,
// and the producer must be acknowledged again. At the end every
// acknowledged id must have been consumed by the push checker and received
// and acked by a pop consumer (soakPop) of another group, and the three
// CommitLogs must be byte-identical. RMQ_HA_SOAK_FAULTS (words, comma-separated) keeps only
// the faults whose names hold one of them.
func TestHASoak(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("RMQ_HA_SOAK_ROUNDS"))
	if rounds <= 0 {
		t.Skip("RMQ_HA_SOAK_ROUNDS=N (make soak-ha) runs it: N failover rounds of up to a minute each, too long for make test (the single faults each have a test of their own in it)")
	}
	if framework.Kind(*clusterFlag) == framework.InProcess {
		t.Skip("kills and partitions broker processes: runs with -cluster=process only")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("RMQ_HA_SOAK_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("RMQ_HA_SOAK_SEED: %v", err)
		}
	}
	t.Logf("seed %d (RMQ_HA_SOAK_SEED=%d replays the fault schedule)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	const name = "HASoak"
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: name, Topic: name + "Topic", Links: true,
		Broker: map[string]string{"masterLeaseMillis": "2000", "controllerHeartBeatTimeoutMills": "4000"}})
	run := startChaos(t, c, name)
	pop := startSoakPop(t, c, name, name+"_pop_cg")

	faults := []soakFault{
		{"kill -9 the master", soakMaster(func(b *ctrlBroker) { b.proc.Kill() })},
		{"stop the master (SIGTERM)", soakMaster(func(b *ctrlBroker) { _ = b.proc.Stop() })},
		{"freeze the master (SIGSTOP)", soakFreezeMaster},
		{"partition the master", soakPartitionMaster},
		{"kill -9 the master and a slave", soakKillMasterAndSlave},
		{"freeze the master and a slave (SIGSTOP)", soakFreezeMasterAndSlave},
		{"switch the master (mqadmin electMaster)", soakSwitchMaster},
		{"restart a slave (SIGTERM)", soakRestartSlave},
		{"kill -9 a slave", soakKillSlave},
		{"partition a slave", soakPartitionSlave},
		{"kill -9 the controller leader", soakKillControllerLeader},
	}
	if only := os.Getenv("RMQ_HA_SOAK_FAULTS"); only != "" {
		faults = slices.DeleteFunc(faults, func(f soakFault) bool {
			return !slices.ContainsFunc(strings.Split(only, ","), func(w string) bool { return strings.Contains(f.name, w) })
		})
		if len(faults) == 0 {
			t.Fatalf("RMQ_HA_SOAK_FAULTS=%q matches no fault", only)
		}
	}
	start := time.Now()
	for r := 1; r <= rounds; r++ {
		f := faults[rng.IntN(len(faults))]
		out := time.Duration(500+rng.IntN(6500)) * time.Millisecond
		began, acked := time.Now(), run.Acked()
		what := f.run(t, c, rng, out)
		master := c.settled(t)
		testutil.WaitFor(t, 75*time.Second, "sends acknowledged again", func() bool { return run.Acked() >= acked+20 })
		t.Logf("round %d/%d: %s, %v out (%s): settled in %v, master %s, %d acked so far, %d send failures in the round (all so far: %v)",
			r, rounds, f.name, out.Round(100*time.Millisecond), what, time.Since(began).Round(100*time.Millisecond), master,
			run.Acked(), run.Failures(began), run.Report().Failed)
	}
	rep := drainNoLoss(t, c, run, name+"_cg", 75*time.Second)
	if rep.Unknown != 0 {
		t.Fatalf("consumed ids that were never sent: %v", rep)
	}
	var ids []string
	for _, a := range run.Acks(time.Time{}) {
		ids = append(ids, a.ID)
	}
	pop.drain(t, ids, 90*time.Second)
	master := c.settled(t)
	c.sameCommitLogs(t, master)
	t.Logf("%d rounds in %v: %v; %v", rounds, time.Since(start).Round(time.Second), rep, pop)
}

// settled waits until the set has healed from a fault: all three replicas
// in the controller's SyncStateSet, every nameserver routing its master,
// both slaves holding the master's log and epochs. It returns the master.
func (c *ctrlCluster) settled(t *testing.T) string {
	t.Helper()
	ri := c.waitSyncState(t, 60*time.Second, "all three replicas in the SyncStateSet under a master",
		func(ri protocol.ReplicasInfo) bool { return len(ri.InSyncReplicas) == 3 && ri.MasterAddress != "" })
	c.waitRouted(t, ri.MasterAddress, 45*time.Second)
	for _, b := range c.brokers {
		if b.addr != ri.MasterAddress {
			c.waitFollows(t, b.addr, ri.MasterAddress, 45*time.Second)
		}
	}
	return ri.MasterAddress
}

// soakMaster takes the master down with down, waits for another replica
// to be elected and starts the old master again after the fault's time
// out.
func soakMaster(down func(*ctrlBroker)) func(*testing.T, *ctrlCluster, *rand.Rand, time.Duration) string {
	return func(t *testing.T, c *ctrlCluster, _ *rand.Rand, out time.Duration) string {
		before := c.fullSyncState(t)
		old := c.broker(t, before.MasterAddress)
		down(old)
		at := time.Now()
		next := c.waitElected(t, 30*time.Second, before)
		elected := time.Since(at)
		time.Sleep(out)
		old.start(t, c.bin, -1)
		return fmt.Sprintf("%s elected in %v", next.MasterAddress, elected.Round(10*time.Millisecond))
	}
}

// soakFreezeMaster stops the master with SIGSTOP for the time out: longer
// than the heartbeat timeout, another replica is elected and the old one
// follows it once resumed; shorter, it may stay master.
func soakFreezeMaster(t *testing.T, c *ctrlCluster, _ *rand.Rand, out time.Duration) string {
	before := c.fullSyncState(t)
	old := c.broker(t, before.MasterAddress)
	if err := old.proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(out)
	if err := old.proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	return "resumed"
}

// soakPartitionMaster cuts every link of the master for the time out.
func soakPartitionMaster(t *testing.T, c *ctrlCluster, _ *rand.Rand, out time.Duration) string {
	before := c.fullSyncState(t)
	old := c.broker(t, before.MasterAddress)
	c.partition(old, netfault.Blackhole)
	time.Sleep(out)
	c.partition(old, netfault.Pass)
	return "healed"
}

// soakSlave picks one of the slaves at random.
func soakSlave(t *testing.T, c *ctrlCluster, rng *rand.Rand) *ctrlBroker {
	before := c.fullSyncState(t)
	var slaves []*ctrlBroker
	for _, b := range c.brokers {
		if b.addr != before.MasterAddress {
			slaves = append(slaves, b)
		}
	}
	return slaves[rng.IntN(len(slaves))]
}

// soakKillMasterAndSlave kills the master and one slave at once: the
// last replica, in the SyncStateSet, must be elected and serve alone until
// the others, started again after the time out, rejoin.
func soakKillMasterAndSlave(t *testing.T, c *ctrlCluster, rng *rand.Rand, out time.Duration) string {
	before := c.fullSyncState(t)
	old := c.broker(t, before.MasterAddress)
	s := soakSlave(t, c, rng)
	old.proc.Kill()
	s.proc.Kill()
	at := time.Now()
	next := c.waitElected(t, 30*time.Second, before)
	elected := time.Since(at)
	if next.MasterAddress == s.addr {
		t.Fatalf("the killed slave %s was elected: %+v", s.addr, next)
	}
	time.Sleep(out)
	old.start(t, c.bin, -1)
	s.start(t, c.bin, -1)
	return fmt.Sprintf("slave %s; %s elected in %v", s.addr, next.MasterAddress, elected.Round(10*time.Millisecond))
}

// soakFreezeMasterAndSlave stops the master and a slave with SIGSTOP for
// longer than the heartbeat timeout, as a host lost without a connection
// closed: both leave the controller's table by their timeouts, up to a
// heartbeat interval apart, and the election in between must pick the
// live replica, not the frozen slave (state.Candidate.Stale).
func soakFreezeMasterAndSlave(t *testing.T, c *ctrlCluster, rng *rand.Rand, _ time.Duration) string {
	before := c.fullSyncState(t)
	old := c.broker(t, before.MasterAddress)
	s := soakSlave(t, c, rng)
	for _, b := range []*ctrlBroker{old, s} {
		if err := b.proc.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now()
	next := c.waitElected(t, 30*time.Second, before)
	elected := time.Since(at)
	for _, b := range []*ctrlBroker{old, s} {
		if err := b.proc.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	if next.MasterAddress == s.addr {
		t.Fatalf("the frozen slave %s was elected: %+v", s.addr, next)
	}
	return fmt.Sprintf("slave %s; %s elected in %v", s.addr, next.MasterAddress, elected.Round(10*time.Millisecond))
}

// soakSwitchMaster moves the master to a slave as an operator does before
// restarting the master's host (mqadmin electMaster -b <slave id>).
func soakSwitchMaster(t *testing.T, c *ctrlCluster, rng *rand.Rand, _ time.Duration) string {
	before := c.fullSyncState(t)
	s := soakSlave(t, c, rng)
	id := replicaID(t, before, s.addr)
	var res *admin.ElectMasterResult
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		res, err = c.ac.ElectMaster(ctx, c.ctrlAddrs[rng.IntN(len(c.ctrlAddrs))], c.cluster, c.name, id)
		return err
	})
	if res.MasterBrokerID != id || res.MasterAddress != s.addr {
		t.Fatalf("electMaster of %d (%s) answered %+v", id, s.addr, res)
	}
	return fmt.Sprintf("to %s at epoch %d", s.addr, res.MasterEpoch)
}

// soakRestartSlave stops a slave gracefully and starts it again after the
// time out (one step of a rolling restart).
func soakRestartSlave(t *testing.T, c *ctrlCluster, rng *rand.Rand, out time.Duration) string {
	s := soakSlave(t, c, rng)
	if err := s.proc.Stop(); err != nil {
		t.Logf("stopping %s: %v", s.addr, err)
	}
	time.Sleep(out)
	s.start(t, c.bin, -1)
	return s.addr
}

func soakKillSlave(t *testing.T, c *ctrlCluster, rng *rand.Rand, out time.Duration) string {
	s := soakSlave(t, c, rng)
	s.proc.Kill()
	time.Sleep(out)
	s.start(t, c.bin, -1)
	return s.addr
}

func soakPartitionSlave(t *testing.T, c *ctrlCluster, rng *rand.Rand, out time.Duration) string {
	s := soakSlave(t, c, rng)
	c.partition(s, netfault.Blackhole)
	time.Sleep(out)
	c.partition(s, netfault.Pass)
	return s.addr
}

// soakKillControllerLeader kills the raft leader controller (with its
// nameserver) and starts it again on its store after the time out.
func soakKillControllerLeader(t *testing.T, c *ctrlCluster, _ *rand.Rand, out time.Duration) string {
	var li int
	testutil.WaitFor(t, 30*time.Second, "a controller leader", func() bool { li = c.leader(); return li >= 0 })
	c.namesrvs[li].Kill()
	at := time.Now()
	testutil.WaitFor(t, 30*time.Second, "a new controller leader", func() bool { l := c.leader(); return l >= 0 && l != li })
	elected := time.Since(at)
	time.Sleep(out)
	c.namesrvs[li] = c.nsStart[li](t)
	return fmt.Sprintf("n%d; n%d leads after %v", li, c.leader(), elected.Round(10*time.Millisecond))
}

// sameCommitLogs fails t unless the three replicas' CommitLogs are
// byte-identical up to the master's end.
func (c *ctrlCluster) sameCommitLogs(t *testing.T, master string) {
	t.Helper()
	end := epochCache(t, c.rc, master).MaxOffset
	var first []byte
	for i, b := range c.brokers {
		got, err := readCommitLog(filepath.Join(filepath.Dir(b.conf), "commitlog"), end)
		if err != nil {
			t.Fatalf("replica %s: %v", b.addr, err)
		}
		if i == 0 {
			first = got
			continue
		}
		if !bytes.Equal(first, got) {
			at := 0
			for at < len(first) && first[at] == got[at] {
				at++
			}
			t.Fatalf("CommitLogs of %s and %s differ first at byte %d of [0, %d)", c.brokers[0].addr, b.addr, at, end)
		}
	}
	t.Logf("the three CommitLogs are identical over [0, %d)", end)
}

// readCommitLog reads bytes [0, end) of the CommitLog in dir, whose files
// are named by their first offset (20 digits).
func readCommitLog(dir string, end int64) ([]byte, error) {
	names, err := filepath.Glob(filepath.Join(dir, "[0-9]*"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]byte, 0, end)
	for _, n := range names {
		base, err := strconv.ParseInt(filepath.Base(n), 10, 64)
		if err != nil || base != int64(len(out)) || base >= end {
			continue
		}
		f, err := os.Open(n)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(f, end-base))
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	if int64(len(out)) != end {
		return nil, fmt.Errorf("CommitLog in %s holds %d of the %d bytes", dir, len(out), end)
	}
	return out, nil
}
