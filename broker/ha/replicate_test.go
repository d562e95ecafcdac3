package ha

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

type pair struct {
	master, slave *store.Store
	m             *Master
	s             *Slave
}

// startPair starts a master store and server, runs prefill on the master
// store (may be nil), then starts a slave on slaveDir.
func startPair(t *testing.T, slaveDir string, prefill func(*store.Store)) *pair {
	t.Helper()
	p := &pair{master: openStore(t, tempDir(t, "master"))}
	if prefill != nil {
		prefill(p.master)
	}
	p.m = NewMaster(p.master.CommitLog(), testutil.Listen(t), fastOptions(nil))
	p.m.Start()
	p.startSlave(t, slaveDir)
	t.Cleanup(func() {
		p.stopSlave()
		_ = p.m.Close()
		_ = p.master.Close()
	})
	return p
}

func (p *pair) startSlave(t *testing.T, dir string) {
	p.slave = openStore(t, dir)
	p.slave.SetReplica(true) // as the broker does for a SLAVE
	addr := p.m.Addr().String()
	p.s = NewSlave(p.slave.CommitLog(), func() string { return addr }, fastOptions(nil))
	p.s.Start()
}

func (p *pair) stopSlave() {
	if p.s != nil {
		p.s.Close()
		_ = p.slave.Close()
		p.s, p.slave = nil, nil
	}
}

// TestReplicationByteIdentical replicates several CommitLog files in
// frames that end inside records; the slave's dispatcher indexes them.
func TestReplicationByteIdentical(t *testing.T) {
	p := startPair(t, tempDir(t, "slave"), nil)
	put(t, p.master, "TopicA", 0, 150)
	testutil.WaitFor(t, 10*time.Second, "slave caught up", caughtUp(p.master, p.slave))
	if n := len(p.master.CommitLog().SegmentBases()); n < 3 {
		t.Fatalf("only %d files: the test should cross file ends", n)
	}
	sameLog(t, p.master, p.slave)
	if _, err := p.slave.PutMessage(context.Background(), &message.Message{Topic: "TopicA", Body: []byte("local")}); !errors.Is(err, store.ErrNotWritable) {
		t.Fatalf("a local put on the replica: %v", err)
	}
	for q := int32(0); q < 2; q++ {
		want := p.master.MaxOffset("TopicA", q)
		testutil.WaitFor(t, 5*time.Second, "slave consume queue", func() bool { return p.slave.MaxOffset("TopicA", q) == want })
		r, err := p.slave.GetMessage(context.Background(), "TopicA", q, want-1, 1, 1<<20, nil)
		if err != nil || r.Status != store.Found || len(r.Records) != 1 {
			t.Fatalf("read the last message of queue %d from the slave: %v %+v", q, err, r)
		}
		r.Release()
	}
	if qr, err := p.slave.QueryMessage("TopicA", "k149", false, 4, 0, time.Now().UnixMilli()+1000); err != nil || len(qr.Records) != 1 {
		t.Fatalf("key index on the slave: %v", err)
	}
	st := p.m.Status()
	if len(st.HAConnectionInfo) != 1 || !st.HAConnectionInfo[0].InSync || st.InSyncSlaveNums != 1 ||
		st.HAConnectionInfo[0].SlaveAckOffset != st.MasterCommitLogMaxOffset {
		t.Fatalf("master status %+v", st)
	}
	if cs := p.s.Status().HAClientRuntimeInfo; cs == nil || cs.MasterAddr != p.m.Addr().String() || cs.MaxOffset != st.MasterCommitLogMaxOffset {
		t.Fatalf("slave status %+v", cs)
	}
}

// TestSlaveRestartResumes stops the slave, writes more, and restarts it on
// the same directory: it continues where its log ends.
func TestSlaveRestartResumes(t *testing.T) {
	dir := tempDir(t, "slave")
	p := startPair(t, dir, nil)
	put(t, p.master, "TopicR", 0, 40)
	testutil.WaitFor(t, 10*time.Second, "slave caught up", caughtUp(p.master, p.slave))
	p.stopSlave()
	put(t, p.master, "TopicR", 40, 40)
	p.startSlave(t, dir)
	testutil.WaitFor(t, 10*time.Second, "slave caught up after restart", caughtUp(p.master, p.slave))
	sameLog(t, p.master, p.slave)
	if p.slave.CommitLog().MinOffset() != 0 {
		t.Fatalf("restarted slave min offset %d", p.slave.CommitLog().MinOffset())
	}
}

// TestEmptySlaveStartsAtLastFile: an empty slave gets the master's last
// file only.
func TestEmptySlaveStartsAtLastFile(t *testing.T) {
	p := startLastFilePair(t)
	bases := p.master.CommitLog().SegmentBases()
	if got := p.slave.CommitLog().MinOffset(); got != bases[len(bases)-1] || got == 0 {
		t.Fatalf("slave starts at %d, master's last file at %d", got, bases[len(bases)-1])
	}
	sameLog(t, p.master, p.slave)
	put(t, p.master, "TopicL", 100, 5)
	testutil.WaitFor(t, 10*time.Second, "slave caught up", caughtUp(p.master, p.slave))
}

// startLastFilePair is a pair whose slave started empty when the master
// already had several files: the slave's log starts at a later file.
func startLastFilePair(t *testing.T) *pair {
	t.Helper()
	p := startPair(t, tempDir(t, "slave"), func(m *store.Store) { put(t, m, "TopicL", 0, 100) })
	testutil.WaitFor(t, 10*time.Second, "slave caught up", caughtUp(p.master, p.slave))
	return p
}

// TestWaitAcks: a send waits for the slave's ack; without a slave it times
// out; needed ≤ 1 never waits.
func TestWaitAcks(t *testing.T) {
	p := startPair(t, tempDir(t, "slave"), nil)
	put(t, p.master, "TopicW", 0, 3)
	end := p.master.CommitLog().MaxOffset()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.m.WaitAcks(ctx, end, 2, 0); err != nil {
		t.Fatal(err)
	}
	three, cancel3 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel3()
	if err := p.m.WaitAcks(three, end, 3, 0); !errors.Is(err, ErrReplicaTimeout) {
		t.Fatalf("three replicas with one slave: %v", err)
	}
	p.stopSlave()
	testutil.WaitFor(t, 5*time.Second, "connection gone", func() bool { return len(p.m.Status().HAConnectionInfo) == 0 })
	put(t, p.master, "TopicW", 3, 1)
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := p.m.WaitAcks(short, p.master.CommitLog().MaxOffset(), 2, 0); !errors.Is(err, ErrReplicaTimeout) {
		t.Fatalf("no slave: %v", err)
	}
	if err := p.m.WaitAcks(short, p.master.CommitLog().MaxOffset(), 1, 0); err != nil {
		t.Fatalf("needed 1: %v", err)
	}
}

// TestFlowControl: with a per-second cap the master spreads the transfer
// over seconds, and the slave still ends byte-identical.
func TestFlowControl(t *testing.T) {
	master := openStore(t, tempDir(t, "master"))
	defer master.Close()
	put(t, master, "TopicF", 0, 6)
	total := master.CommitLog().MaxOffset()
	opts := fastOptions(nil)
	// A third of the log per second: the transfer needs three one-second
	// windows, so it spans at least the whole middle one.
	opts.MaxTransferBytesPerSecond = total/3 + 1
	m := NewMaster(master.CommitLog(), testutil.Listen(t), opts)
	m.Start()
	defer m.Close()
	slave := openStore(t, tempDir(t, "slave"))
	defer slave.Close()
	addr := m.Addr().String()
	start := time.Now()
	s := NewSlave(slave.CommitLog(), func() string { return addr }, fastOptions(nil))
	s.Start()
	defer s.Close()
	testutil.WaitFor(t, 10*time.Second, "slave caught up", caughtUp(master, slave))
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("%d bytes at %d B/s arrived in %v", total, opts.MaxTransferBytesPerSecond, d)
	}
	sameLog(t, master, slave)
}
