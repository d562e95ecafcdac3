package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/framework"
	"github.com/rmqgo/rmq/tests/framework/netfault"
)

// Network partitions in controller mode (docs/replication.md §2.6–§2.7):
// each broker of the topology sits behind netfault proxies
// (ctrlClusterOptions.Links), so a test can cut it off as a network would:
// held bytes, timeouts, nobody told.

// minorityAnswer is one answer to a send made on the old master's side of
// a partition.
type minorityAnswer struct {
	body string
	code int32 // -1: no answer (err)
	at   time.Time
	err  error
}

// minoritySender sends a message every 50 ms (each on its own, not
// waiting for the one before: a master waiting for its slaves holds a
// send up to slaveTimeout) to queue 0 of topic at a broker's own listening
// address, which the partition does not cut: a client on the broker's side
// of it. It records every answer.
type minoritySender struct {
	mu      sync.Mutex
	answers []minorityAnswer
	stop    func()
}

func startMinoritySender(c *ctrlCluster, addr, topic string) *minoritySender {
	s := &minoritySender{}
	var wg sync.WaitGroup
	stopLoop := inBackground(func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf("minority-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := c.rc.Invoke(ctx, addr, sendV2Request(topic, "TBW102", 0, []byte(body)))
			cancel()
			a := minorityAnswer{body: body, code: -1, at: time.Now(), err: err}
			if err == nil {
				a.code = resp.Code
			}
			s.mu.Lock()
			s.answers = append(s.answers, a)
			s.mu.Unlock()
		}()
		time.Sleep(50 * time.Millisecond)
	})
	var once sync.Once
	s.stop = func() { once.Do(func() { stopLoop(); wg.Wait() }) }
	return s
}

// acked is the SEND_OK answers that arrived after since.
func (s *minoritySender) acked(since time.Time) []minorityAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []minorityAnswer
	for _, a := range s.answers {
		if a.code == code.Success && a.at.After(since) {
			out = append(out, a)
		}
	}
	return out
}

// codes counts the answers after since by code (-1: none).
func (s *minoritySender) codes(since time.Time) map[int32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int32]int{}
	for _, a := range s.answers {
		if a.at.After(since) {
			out[a.code]++
		}
	}
	return out
}

// queueBodies reads queue 0 of topic from the set's master (through the
// nameservers' route) from offset 0 to its end.
func queueBodies(t *testing.T, c *ctrlCluster, topic string) map[string]bool {
	t.Helper()
	pc, err := client.NewPullConsumer(client.PullConsumerConfig{CommonConfig: client.CommonConfig{NameServers: c.nsAddrs}, Group: topic + "_reader"})
	pc = started(t, pc, err)
	defer pc.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mq := protocol.MessageQueue{Topic: topic, BrokerName: c.name, QueueID: 0}
	end, err := pc.GetMaxOffset(ctx, mq)
	if err != nil {
		t.Fatalf("max offset of %v: %v", mq, err)
	}
	got := map[string]bool{}
	for off := int64(0); off < end; {
		res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32})
		if err != nil {
			t.Fatalf("pull %v at %d: %v", mq, off, err)
		}
		for _, m := range res.Messages {
			got[string(m.Body)] = true
		}
		if res.NextBeginOffset <= off {
			t.Fatalf("pull %v at %d: no progress (%+v)", mq, off, res.Status)
		}
		off = res.NextBeginOffset
	}
	return got
}

// TestHAScenarioMasterPartition (failure checklist: the master partitioned):
// the master loses the controllers, the nameservers and its slaves at once
// (every link of its own blackholed) while the chaos producer runs and a
// client on the master's side keeps sending to it directly. The master
// cannot renew its lease, so it must stop acknowledging within it
// (masterLeaseMillis 2 s): nothing it acknowledged after that, and
// everything it did acknowledge is on the new master (no split brain).
// The controllers elect a slave once controllerHeartBeatTimeoutMills (4 s)
// passed, producers with fresh routes send to it; healed, the old master
// rejoins as a slave, truncates the tail it stored but never got
// acknowledged and holds the new master's log; the chaos checker loses no
// acknowledged id.
func TestHAScenarioMasterPartition(t *testing.T) {
	t.Parallel()
	if framework.Kind(*clusterFlag) == framework.InProcess {
		t.Skip("partitions broker processes: runs with -cluster=process only")
	}
	const (
		name     = "ScenPartition"
		lease    = 2 * time.Second
		minority = name + "Minority"
	)
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: name, Topic: name + "Topic", Links: true,
		Broker: map[string]string{"masterLeaseMillis": "2000", "controllerHeartBeatTimeoutMills": "4000"}})
	for _, b := range c.brokers {
		createTopic(t, c.rc, b.addr, minority)
	}
	run := startChaos(t, c, name)
	old := c.broker(t, c.master)
	ms := startMinoritySender(c, old.direct, minority)
	defer ms.stop()
	testutil.WaitFor(t, 10*time.Second, "sends acknowledged on the old master's side", func() bool { return len(ms.acked(time.Time{})) >= 10 })
	before := c.fullSyncState(t)

	c.partition(old, netfault.Blackhole)
	cut := time.Now()
	healed := false
	heal := func() {
		if !healed {
			healed = true
			c.partition(old, netfault.Pass)
		}
	}
	defer heal()

	next := c.waitElected(t, 15*time.Second, before)
	elected := time.Now()
	t.Logf("new master %d (%s) at epoch %d, %v after the partition", next.MasterBrokerID, next.MasterAddress, next.MasterEpoch, elected.Sub(cut))
	if next.MasterAddress == old.addr {
		t.Fatalf("the partitioned master was elected again: %+v", next)
	}
	c.waitRouted(t, next.MasterAddress, 10*time.Second)
	c.sendFresh(t, name+"_after", 10)

	// The lease began at the latest with the last heartbeat before the
	// cut: one second of slack for answers already on their way.
	expiry := cut.Add(lease + time.Second)
	time.Sleep(time.Until(elected.Add(time.Second)))
	if late := ms.acked(expiry); len(late) != 0 {
		t.Fatalf("the partitioned master acknowledged %d sends after its lease (first %s at %v, cut at %v)", len(late), late[0].body, late[0].at.Sub(cut), cut)
	}
	t.Logf("answers on the old master's side after its lease: %v (code: count; -1 no answer)", ms.codes(expiry))
	if ms.codes(expiry)[code.ServiceNotAvailable] == 0 {
		t.Fatalf("the partitioned master never answered SERVICE_NOT_AVAILABLE after its lease: %v", ms.codes(expiry))
	}
	for _, a := range run.Acks(expiry) {
		if a.Store == old.addr {
			t.Fatalf("the chaos producer got SEND_OK from the partitioned master after its lease: %+v", a)
		}
	}
	ms.stop()

	// The old master stored what it could not replicate: a tail past the
	// new epoch's start.
	ne := epochCache(t, c.rc, next.MasterAddress)
	start := ne.EpochList[len(ne.EpochList)-1]
	tail := epochCache(t, c.rc, old.direct).MaxOffset
	if start.Epoch != next.MasterEpoch || tail <= start.StartOffset {
		t.Fatalf("new master's last epoch %+v (want %d); the old master's log ends at %d: no unacknowledged tail", start, next.MasterEpoch, tail)
	}

	heal()
	healedAt := time.Now()
	c.waitFollows(t, old.addr, next.MasterAddress, 20*time.Second)
	t.Logf("old master follows %v after the heal", time.Since(healedAt))
	// Its lapsed lease fenced it; the role the controller named on the
	// heal lifts that: it serves reads as a slave, registered again.
	testutil.WaitFor(t, 10*time.Second, "the old master registered as a slave", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		ci, err := c.ac.GetBrokerClusterInfo(ctx)
		if err != nil {
			return false
		}
		for id, a := range ci.BrokerAddrTable[c.name].BrokerAddrs {
			if a == old.addr && id != 0 {
				return true
			}
		}
		return false
	})
	if want := fmt.Sprintf("from=%d to=%d", tail, start.StartOffset); !strings.Contains(old.proc.Logs(), want) {
		t.Fatalf("the old master did not truncate its tail %s", want)
	}

	// Everything the old master acknowledged, on either side, survived.
	got := queueBodies(t, c, minority)
	acked := ms.acked(time.Time{})
	for _, a := range acked {
		if !got[a.body] {
			t.Fatalf("%s was acknowledged by the old master (%v after the cut) and is lost", a.body, a.at.Sub(cut))
		}
	}
	t.Logf("%d sends acknowledged on the old master's side, all on the new master", len(acked))
	rep := drainNoLoss(t, c, run, name+"_cg", 35*time.Second)
	o := epochCache(t, c.rc, old.addr)
	if !slices.Equal(trimEnds(o.EpochList), trimEnds(ne.EpochList)) {
		t.Fatalf("epoch lists differ: new master %v, old master %v (%v)", ne.EpochList, o.EpochList, rep)
	}
}

// TestHAScenarioSlavePartition (failure checklist: a slow slave): one
// slave's replication link to the master is blackholed (its connections to
// the master's HA address; it still reaches the controllers and the
// master's other port). The master drops it from the SyncStateSet
// (syncStateSetEpoch + 1, as `mqadmin getSyncStateSet` shows) and sends
// are acknowledged again; healed, the slave catches up and is added back;
// nothing acknowledged is lost.
func TestHAScenarioSlavePartition(t *testing.T) {
	t.Parallel()
	if framework.Kind(*clusterFlag) == framework.InProcess {
		t.Skip("partitions broker processes: runs with -cluster=process only")
	}
	const name = "ScenSlavePart"
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: name, Topic: name + "Topic", Links: true})
	run := startChaos(t, c, name)
	before := c.fullSyncState(t)
	master := c.broker(t, c.master)
	slave := c.aSlave(t)
	id := replicaID(t, before, slave.addr)

	master.links.ha.SetModeFor(netfault.FromProcess(slave.proc.Pid()), netfault.Blackhole)
	cut := time.Now()
	healed := false
	heal := func() {
		if !healed {
			healed = true
			master.links.ha.SetModeFor(nil, netfault.Pass)
		}
	}
	defer heal()
	shrunk, confirmed := c.waitShrunk(t, before, id, cut, 15*time.Second)
	if confirmed.Sub(cut) > 6*time.Second {
		t.Fatalf("the set shrank %v after the cut, want ≤ 3 s + 1 s + an alter (+ 2 s slack)", confirmed.Sub(cut))
	}
	// The controller answers the master's shrink before the master
	// applies it: its own count follows a moment later.
	testutil.Eventually(t, 5*time.Second, func() error {
		if st := harness.HAStatus(t, c.rc, master.addr); st.InSyncSlaveNums != 1 {
			return fmt.Errorf("the master counts %d slaves in sync, want 1: %+v", st.InSyncSlaveNums, st)
		}
		return nil
	})
	sendsSucceedAfter(t, run, confirmed)

	heal()
	c.waitRegrown(t, before, shrunk, id, time.Now(), "the heal")
	drainNoLoss(t, c, run, name+"_cg", 20*time.Second)
}
