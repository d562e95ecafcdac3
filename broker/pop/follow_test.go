package pop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"github.com/rmqgo/rmq/internal/testutil"
)

// replicate copies the master rig's CommitLog after what the slave rig
// holds into the slave's (as its HA link does) and waits for the slave to
// dispatch it.
func replicate(t *testing.T, master, slave *rig) {
	t.Helper()
	cl := slave.st.CommitLog()
	from, end := cl.MaxOffset(), master.st.CommitLog().MaxOffset()
	names, err := filepath.Glob(filepath.Join(master.dir, "commitlog", "[0-9]*"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for _, n := range names {
		base, err := strconv.ParseInt(filepath.Base(n), 10, 64)
		if err != nil {
			continue
		}
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		lo, hi := max(from, base), min(end, base+st.Size())
		if lo < hi {
			buf := make([]byte, hi-lo)
			if _, err := f.ReadAt(buf, lo-base); err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if err := cl.AppendRaw(context.Background(), lo, buf); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if got := slave.st.DispatchedOffset(); got < end {
			return fmt.Errorf("slave dispatched to %d of %d", got, end)
		}
		return nil
	})
}

// TestSlaveFollowsJournalAndRevivesWhenPromoted: a slave applies the pop
// journal it replicates (the master's checkpoints and acks) while it is a
// slave, and once promoted (CatchUp) it hands out none of what the old
// master's consumers popped and revives exactly what they left unacked.
// Before the slave followed the journal, a promoted slave knew the pop
// offsets but none of the checkpoints: the unacked messages were lost to
// the group.
func TestSlaveFollowsJournalAndRevivesWhenPromoted(t *testing.T) {
	m := newRig(t)
	s := newRig(t)
	s.cfg.BrokerRole, s.cfg.BrokerID = config.RoleSlave, 1
	s.st.SetReplica(true)

	m.send(testTopic, 0, 12, "A")
	m.send(testTopic, 1, 12, "A")
	i := 0
	_, acked1, unacked1 := popAll(m, 10_000, func(popped) bool { i++; return i%3 != 0 })
	replicate(t, m, s)
	if n, err := s.p.j.follow(); err != nil || n == 0 {
		t.Fatalf("slave follow: %d ops, %v", n, err)
	}
	if _, ok := s.p.revive.nextDue(); !ok {
		t.Fatal("the slave holds no checkpoint after following the journal")
	}
	if s.p.Revive() != 0 {
		t.Fatal("a slave revived checkpoints")
	}

	// More pops after the slave followed: the promotion catches them up.
	m.send(testTopic, 0, 6, "A")
	_, acked2, unacked2 := popAll(m, 10_000, func(popped) bool { i++; return i%3 != 0 })
	replicate(t, m, s)
	m.close()

	s.cfg.BrokerRole, s.cfg.BrokerID = config.RoleSyncMaster, 0
	s.st.SetReplica(false)
	if err := s.p.CatchUp(); err != nil {
		t.Fatal(err)
	}
	checkAfterRestart(t, s, append(acked1, acked2...), append(unacked1, unacked2...), 10*time.Second)
}

// TestTruncationLowersJournalPosition: a former master's CommitLog cut
// back to its new master's (Store.TruncateTo) takes the journal positions
// with it, so the records replicated there next, the new master's, are
// applied rather than skipped.
func TestTruncationLowersJournalPosition(t *testing.T) {
	r := newRig(t)
	r.send(testTopic, 0, 10, "A")
	popAll(r, 10_000, func(popped) bool { return false })
	testutil.Eventually(t, 5*time.Second, func() error {
		if got, end := r.st.DispatchedOffset(), r.st.CommitLog().MaxOffset(); got < end {
			return fmt.Errorf("dispatched to %d of %d", got, end)
		}
		return nil
	})
	revive := r.p.j.topic
	var q int32 = -1
	var cut int64
	for _, qq := range r.st.Queues(revive) {
		es, err := r.st.ConsumeQueue().Entries(revive, qq, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) > 0 && (q < 0 || es[0].CommitLogOffset < cut) {
			q, cut = qq, es[0].CommitLogOffset
		}
	}
	if q < 0 {
		t.Fatal("no journal record written")
	}
	unlock := r.p.j.lock(q)
	before, _ := r.p.j.position(q)
	unlock()
	if before == 0 {
		t.Fatalf("journal queue %d: position 0 after the pops", q)
	}
	r.cfg.BrokerRole, r.cfg.BrokerID = config.RoleSlave, 1
	r.st.SetReplica(true)
	if err := r.st.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	unlock = r.p.j.lock(q)
	after, err := r.p.j.position(q)
	unlock()
	if err != nil || after != 0 {
		t.Fatalf("journal queue %d: position %d after the truncation to its first record (was %d), %v", q, after, before, err)
	}
}

// TestJournalWaitsForReplicas: a pop is answered only after the slaves
// were waited for up to its checkpoint record's end (Apache's checkpoint
// messages wait as SYNC_MASTER sends do), holding no journal lock
// meanwhile; acks do not wait; a wait that fails leaves the checkpoint in
// force and the pop answered.
func TestJournalWaitsForReplicas(t *testing.T) {
	r := newRig(t)
	var ends []int64
	fail := false
	r.replicas = func(_ context.Context, end int64) error {
		ends = append(ends, end)
		// The wait must hold no journal queue's lock.
		r.p.j.queues.Range(func(k, v any) bool {
			if !v.(*jqueue).mu.TryLock() {
				t.Errorf("waiting for the slaves while holding journal queue %d's lock", k)
			} else {
				v.(*jqueue).mu.Unlock()
			}
			return true
		})
		if fail {
			return errors.New("slaves gone")
		}
		return nil
	}
	r.restart()
	r.send(testTopic, 0, 4, "A")
	res := r.pop(0, 2, 10_000, nil)
	if len(res.msgs) != 2 || len(ends) != 1 {
		t.Fatalf("popped %d, %d waits", len(res.msgs), len(ends))
	}
	if ends[0] != r.st.CommitLog().MaxOffset() {
		t.Fatalf("waited for %d, the checkpoint record ends at %d", ends[0], r.st.CommitLog().MaxOffset())
	}
	r.mustAck(res.msgs[0])
	r.mustAck(res.msgs[1])
	if len(ends) != 1 {
		t.Fatalf("%d waits after the acks, want the pop's only", len(ends))
	}
	fail = true
	left := r.pop(0, 2, 10_000, nil)
	if len(left.msgs) != 2 || len(ends) != 2 {
		t.Fatalf("after a failed wait: popped %d of the 2 left, %d waits", len(left.msgs), len(ends))
	}
	r.clk.Advance(11 * time.Second)
	if n := r.p.Revive(); n == 0 {
		t.Fatal("nothing due: the last pop's checkpoint was not applied")
	}
	r.waitDispatched(popcodec.RetryTopicV1(testTopic, testGroup), 0, 2)
	back, _, _ := popAll(r, 10_000, func(popped) bool { return true })
	if got, want := sortedBodies(back), sortedBodies(left.msgs); !slices.Equal(got, want) {
		t.Fatalf("redelivered %v, want the two popped unacked %v (the acked ones stay acked)", got, want)
	}
}
