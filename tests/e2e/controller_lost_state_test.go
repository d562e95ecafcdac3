package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/tests/e2e/harness"
	"github.com/rmqgo/rmq/tests/internal/chaos"
)

// TestControllersLoseTheirState (docs/replication.md §3.9): under a
// producer/checker run, all three nameservers with their embedded
// controllers are killed with SIGKILL and restarted on empty controller
// stores, as controllers redeployed without their disks (or new ones put
// in place of others) are. The replicas apply for their persisted ids
// again; the master, which its slaves still hear over HA, is elected again
// at an epoch above the one the replicas hold (a fresh controller would
// start at 1, which they refuse); the slaves follow and rejoin the
// SyncStateSet; sends are acknowledged again; no acked message is lost.
// Before, the brokers answered "not registered" forever and the master,
// its lease lapsed, refused every write.
func TestControllersLoseTheirState(t *testing.T) {
	processOnly(t, "kills nameserver processes")
	t.Parallel()
	c := startCtrlCluster(t, ctrlClusterOptions{Cluster: "LostStateCluster", Topic: "ControllerLostStateTopic"})
	before, ok := c.syncState()
	if !ok {
		t.Fatal("no SyncStateSet before the loss")
	}
	beforeIDs := replicaIDs(before)
	master := c.master

	run, err := chaos.Start(chaos.Options{Namesrv: c.nsAddrs, Topic: c.topic, Group: "controller_lost_state", Run: "cl",
		Interval: 10 * time.Millisecond, Senders: 2, SendTimeout: 3 * time.Second, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	testutil.WaitFor(t, 15*time.Second, "acked sends", func() bool { return run.Acked() >= 100 })

	for _, p := range c.namesrvs {
		p.Kill()
	}
	for _, dir := range c.nsDirs {
		if err := os.RemoveAll(filepath.Join(dir, "controller")); err != nil {
			t.Fatal(err)
		}
	}
	lost := time.Now()
	for i, start := range c.nsStart {
		c.namesrvs[i] = start(t)
	}

	// The controllers' liveness warm-up (10 s) holds the election: a
	// replica with a newer log may not have been heard yet.
	var after protocol.ReplicasInfo
	testutil.Eventually(t, 45*time.Second, func() error {
		var err error
		after, err = c.syncStateWhy()
		switch {
		case err != nil:
			return err
		case after.MasterBrokerID <= 0 || len(after.InSyncReplicas) != 3:
			return fmt.Errorf("master %d at epoch %d, SyncStateSet %v", after.MasterBrokerID, after.MasterEpoch, replicaIDs(after))
		}
		return nil
	})
	t.Logf("set whole again %v after the loss: master %d at epoch %d", time.Since(lost), after.MasterBrokerID, after.MasterEpoch)
	if after.MasterBrokerID != before.MasterBrokerID || after.MasterAddress != master {
		t.Errorf("master moved from %d (%s) to %d (%s): its slaves still heard it", before.MasterBrokerID, master, after.MasterBrokerID, after.MasterAddress)
	}
	if after.MasterEpoch <= before.MasterEpoch {
		t.Errorf("master epoch %d after the loss, %d before: epochs went back", after.MasterEpoch, before.MasterEpoch)
	}
	if ids := replicaIDs(after); !slices.Equal(ids, beforeIDs) {
		t.Errorf("replica ids %v after the loss, %v before", ids, beforeIDs)
	}

	c.waitRouted(t, after.MasterAddress, 30*time.Second)
	c.sendFresh(t, "controller_lost_state_after", 20)
	t.Logf("sends acknowledged again %v after the loss", time.Since(lost))
	for _, b := range c.brokers {
		if b.addr != after.MasterAddress {
			c.waitFollows(t, b.addr, after.MasterAddress, 20*time.Second)
		}
	}
	rep := run.Drain(35 * time.Second)
	t.Logf("report: %v", rep)
	for _, b := range c.brokers {
		n, err := harness.QueuedMessages(c.rc, b.addr, c.topic, 4)
		t.Logf("broker %s indexes %d messages (err %v), HA %+v", b.addr, n, err, harness.HAStatus(t, c.rc, b.addr))
	}
	if rep.Lost != 0 || rep.Acked == 0 {
		c.logOffsets(t, "controller_lost_state")
		t.Fatalf("acked messages lost across the controllers' loss: %v", rep)
	}
}

// replicaIDs lists every replica of the set the controller knows, sorted.
func replicaIDs(ri protocol.ReplicasInfo) []int64 {
	var ids []int64
	for _, r := range slices.Concat(ri.InSyncReplicas, ri.NotInSyncReplicas) {
		ids = append(ids, r.BrokerID)
	}
	slices.Sort(ids)
	return ids
}
