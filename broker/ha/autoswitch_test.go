package ha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/epoch"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/internal/testutil"
)

// asNode is one replica of an auto-switch test set: a store, its epoch
// list, and whichever side of the protocol it runs.
type asNode struct {
	dir string
	id  int64
	st  *store.Store
	ep  *epoch.Cache
	m   *AutoSwitchMaster
	s   *AutoSwitchSlave
}

func openNode(t *testing.T, dir string, id int64) *asNode {
	t.Helper()
	n := &asNode{dir: dir, id: id, st: openStore(t, dir)}
	ep, err := epoch.Open(vfs.OS(), filepath.Join(dir, "epochFileCheckpoint"), n.st.CommitLog().MaxOffset())
	if err != nil {
		t.Fatal(err)
	}
	n.ep = ep
	t.Cleanup(n.close)
	return n
}

func (n *asNode) close() {
	n.stopRole()
	if n.st != nil {
		_ = n.st.Close()
		n.st = nil
	}
}

func (n *asNode) stopRole() {
	if n.m != nil {
		_ = n.m.Close()
		n.m = nil
	}
	if n.s != nil {
		n.s.Close()
		n.s = nil
	}
}

// becomeMaster appends the epoch at the log end and serves slaves.
func (n *asNode) becomeMaster(t *testing.T, e int32, cfg AutoSwitchConfig, set SyncState) {
	t.Helper()
	n.stopRole()
	if _, err := n.st.CutPartialTail(); err != nil {
		t.Fatal(err)
	}
	if err := n.ep.Append(e, n.st.CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	cfg.SelfID, cfg.Epochs = n.id, n.ep
	n.m = NewAutoSwitchMaster(n.st.CommitLog(), testutil.Listen(t), fastOptions(nil), cfg, set)
	n.st.SetDispatchLimit(n.m.ConfirmOffset)
	n.st.SetReplica(false)
	n.m.Start()
}

func (n *asNode) becomeSlave(master *asNode, log *logBuffer) {
	n.stopRole()
	n.st.SetReplica(true)
	n.st.SetDispatchLimit(n.st.CommitLog().ConfirmOffset)
	addr := master.m.Addr().String()
	opts := fastOptions(nil)
	if log != nil {
		opts.Logger = log.logger()
	}
	n.s = NewAutoSwitchSlave(n.st, func() string { return addr }, opts, AutoSwitchSlaveConfig{SelfID: n.id, Epochs: n.ep})
	n.s.Start()
}

func sameEpochs(t *testing.T, a, b *asNode) {
	t.Helper()
	if ea, eb := a.ep.Entries(), b.ep.Entries(); !slices.Equal(ea, eb) {
		t.Fatalf("epoch lists differ: %v vs %v", ea, eb)
	}
}

func nodesCaughtUp(m, s *asNode) func() bool {
	return func() bool { return s.st.CommitLog().MaxOffset() == m.st.CommitLog().MaxOffset() }
}

// TestAutoSwitchReplicatesEpochs: the slave copies the log byte for byte,
// records each epoch from the frames, follows the confirm offset and
// builds its consume queues only up to it.
func TestAutoSwitchReplicatesEpochs(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	b := openNode(t, tempDir(t, "b"), 2)
	a.becomeMaster(t, 1, AutoSwitchConfig{}, SyncState{Set: []int64{1}, Epoch: 1})
	put(t, a.st, "TopicE", 0, 30)
	b.becomeSlave(a, nil)
	put(t, a.st, "TopicE", 30, 10)
	// The same broker elected again: a new epoch at its end.
	a.becomeMaster(t, 3, AutoSwitchConfig{}, SyncState{Set: []int64{1}, Epoch: 2})
	b.becomeSlave(a, nil)
	put(t, a.st, "TopicE", 40, 25)
	testutil.WaitFor(t, 10*time.Second, "slave caught up", nodesCaughtUp(a, b))
	sameLog(t, a.st, b.st)
	sameEpochs(t, a, b)
	max := a.st.CommitLog().MaxOffset()
	testutil.WaitFor(t, 5*time.Second, "slave confirm offset", func() bool { return b.st.CommitLog().ConfirmOffset() == max })
	testutil.WaitFor(t, 5*time.Second, "slave dispatched", func() bool { return b.st.DispatchedOffset() == max })
	for q := int32(0); q < 2; q++ {
		if x, y := a.st.MaxOffset("TopicE", q), b.st.MaxOffset("TopicE", q); x != y {
			t.Fatalf("queue %d: master max %d, slave %d", q, x, y)
		}
	}
}

// TestAutoSwitchFramesStayInsideEpochs drives the master with a raw
// client: the handshake carries the epoch list, no frame crosses an epoch
// boundary, and every frame names its epoch and the confirm offset.
func TestAutoSwitchFramesStayInsideEpochs(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	put(t, a.st, "TopicF", 0, 7)
	if err := a.ep.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	boundary := a.st.CommitLog().MaxOffset()
	a.becomeMaster(t, 2, AutoSwitchConfig{}, SyncState{Set: []int64{1}, Epoch: 1})
	put(t, a.st, "TopicF", 7, 7)
	max := a.st.CommitLog().MaxOffset()

	nc := dialAsSlave(t, a, 2, 10*time.Second)
	fr := NewMasterFrameReader(nc)
	f, err := fr.Next()
	if err != nil || f.State != StateHandshake {
		t.Fatalf("handshake: %+v, %v", f, err)
	}
	want := []epoch.Entry{{Epoch: 1, Start: 0}, {Epoch: 2, Start: boundary}}
	if !slices.Equal(f.Hello.Epochs, want) || f.Hello.LastEpoch != 2 || f.Hello.MaxOffset != max {
		t.Fatalf("master hello %+v", f.Hello)
	}
	if _, err := nc.Write(AppendAck(nil, 0)); err != nil {
		t.Fatal(err)
	}
	for next := int64(0); next < max; {
		f, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		h := f.Transfer
		if h.Start != next {
			t.Fatalf("frame at %d, expected %d", h.Start, next)
		}
		end := h.Start + int64(len(f.Body))
		wantEpoch, wantStart := int32(1), int64(0)
		if h.Start >= boundary {
			wantEpoch, wantStart = 2, boundary
		}
		if h.Epoch != wantEpoch || h.EpochStart != wantStart {
			t.Fatalf("frame [%d,%d) sent under epoch %d@%d", h.Start, end, h.Epoch, h.EpochStart)
		}
		if h.Start < boundary && end > boundary {
			t.Fatalf("frame [%d,%d) crosses the epoch boundary %d", h.Start, end, boundary)
		}
		if h.Confirm != max {
			t.Fatalf("confirm %d, master max %d (SyncStateSet is the master alone)", h.Confirm, max)
		}
		next = end
	}
	// An ack past the master's end closes the connection.
	if _, err := nc.Write(AppendAck(nil, max+1)); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := fr.Next(); err != nil {
			break
		}
	}
}

// TestAutoSwitchUnknownSlaveClosed: a handshake from an id that is not a
// replica of the set is refused.
func TestAutoSwitchUnknownSlaveClosed(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	a.becomeMaster(t, 1, AutoSwitchConfig{IsReplica: func(id int64) bool { return id == 2 }}, SyncState{Set: []int64{1}, Epoch: 1})
	nc := dialAsSlave(t, a, 9, 5*time.Second)
	if _, err := NewMasterFrameReader(nc).Next(); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("unknown slave got %v, want the connection closed", err)
	}
}

// dialAsSlave connects to n's master and sends the handshake of slave id;
// the connection has a deadline of within and is closed when the test
// ends.
func dialAsSlave(t *testing.T, n *asNode, id int64, within time.Duration) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", n.m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(within))
	if _, err := nc.Write(AppendSlaveHandshake(nil, SlaveHello{SlaveID: id})); err != nil {
		t.Fatal(err)
	}
	return nc
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestAutoSwitchOldMasterTruncates: the old master wrote a tail its slave
// never got; the slave became master of a new epoch and wrote more. The
// old master restarts as a slave, truncates its tail at the new epoch's
// start and then copies the new master's log.
func TestAutoSwitchOldMasterTruncates(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	b := openNode(t, tempDir(t, "b"), 2)
	a.becomeMaster(t, 1, AutoSwitchConfig{}, SyncState{Set: []int64{1}, Epoch: 1})
	b.becomeSlave(a, nil)
	put(t, a.st, "TopicR", 0, 12)
	testutil.WaitFor(t, 10*time.Second, "slave caught up", nodesCaughtUp(a, b))
	b.stopRole()
	put(t, a.st, "TopicR", 12, 9) // never reaches b
	tailEnd := a.st.CommitLog().MaxOffset()
	a.close() // the old master dies

	b.becomeMaster(t, 2, AutoSwitchConfig{}, SyncState{Set: []int64{2}, Epoch: 2})
	newEpochStart := b.st.CommitLog().MaxOffset()
	if newEpochStart >= tailEnd {
		t.Fatalf("test setup: b holds %d, a held %d", newEpochStart, tailEnd)
	}
	put(t, b.st, "TopicR", 100, 5)

	a = openNode(t, a.dir, 1) // restart: the epoch list comes from disk
	if got := a.st.CommitLog().MaxOffset(); got != tailEnd {
		t.Fatalf("restarted old master holds %d, want %d", got, tailEnd)
	}
	var log logBuffer
	a.becomeSlave(b, &log)
	testutil.WaitFor(t, 10*time.Second, "old master caught up", nodesCaughtUp(b, a))
	sameLog(t, b.st, a.st)
	sameEpochs(t, a, b)
	if !log.contains("truncating the log to the common point") {
		t.Fatal("no truncation logged")
	}
	max := b.st.CommitLog().MaxOffset()
	testutil.WaitFor(t, 5*time.Second, "queues rebuilt", func() bool { return a.st.DispatchedOffset() == max })
	for q := int32(0); q < 2; q++ {
		if x, y := b.st.MaxOffset("TopicR", q), a.st.MaxOffset("TopicR", q); x != y {
			t.Fatalf("queue %d: master max %d, truncated replica %d", q, x, y)
		}
	}
}

// TestAutoSwitchOldMasterOfEmptyLogRejoins: a master that wrote nothing
// before it lost the role holds an epoch its successor never saw (no
// frame carried it). It follows the new master all the same, drops that
// epoch, and records the master's; a lost first master of a new set no
// longer needs a wipe.
func TestAutoSwitchOldMasterOfEmptyLogRejoins(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	b := openNode(t, tempDir(t, "b"), 2)
	a.becomeMaster(t, 1, AutoSwitchConfig{}, SyncState{Set: []int64{1}, Epoch: 1})
	b.becomeSlave(a, nil)
	a.close() // dies before its first message

	b.becomeMaster(t, 2, AutoSwitchConfig{}, SyncState{Set: []int64{2}, Epoch: 2})
	put(t, b.st, "TopicZ", 0, 7)

	a = openNode(t, a.dir, 1)
	if got := a.ep.Entries(); !slices.Equal(got, []epoch.Entry{{Epoch: 1, Start: 0}}) {
		t.Fatalf("test setup: old master's epochs %v", got)
	}
	var log logBuffer
	a.becomeSlave(b, &log)
	testutil.WaitFor(t, 10*time.Second, "old master caught up", nodesCaughtUp(b, a))
	sameLog(t, b.st, a.st)
	sameEpochs(t, a, b)
	if log.contains("diverged") {
		t.Fatal("the empty old master was refused")
	}
}

// fakeAlter plays the controller for ALTER_SYNC_STATE_SET.
type fakeAlter struct {
	mu    sync.Mutex
	state SyncState
	calls [][]int64
	fail  bool
}

func (f *fakeAlter) alter(_ context.Context, set []int64) (SyncState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, slices.Clone(set))
	if f.fail {
		return SyncState{}, errors.New("controller unavailable")
	}
	f.state = SyncState{Set: slices.Sorted(slices.Values(set)), Epoch: f.state.Epoch + 1}
	return f.state, nil
}

func (f *fakeAlter) set() SyncState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// TestAutoSwitchAllAckCommitRules: with allAckInSyncStateSet a send waits
// for every SyncStateSet member, the confirm offset (and so the master's
// consume queues) holds while a member is away, a member that stays away
// is removed only once the controller agreed, and it is added back when it
// catches up.
func TestAutoSwitchAllAckCommitRules(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	b := openNode(t, tempDir(t, "b"), 2)
	fa := &fakeAlter{state: SyncState{Set: []int64{1, 2}, Epoch: 5}}
	cfg := AutoSwitchConfig{AllAckInSyncStateSet: true, MaxTimeSlaveNotCatchup: 500 * time.Millisecond, CheckInterval: 100 * time.Millisecond, Alter: fa.alter}
	fa.mu.Lock()
	fa.fail = true // the set cannot shrink yet
	fa.mu.Unlock()
	a.becomeMaster(t, 1, cfg, fa.state)
	if n := a.m.EffectiveSize(); n != 2 {
		t.Fatalf("effective SyncStateSet of %d members, want 2", n)
	}
	start := a.st.CommitLog().MaxOffset()
	res := put(t, a.st, "TopicC", 0, 3)
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := a.m.WaitAcks(short, res.End); !errors.Is(err, ErrReplicaTimeout) {
		t.Fatalf("member 2 absent: %v", err)
	}
	if c := a.m.ConfirmOffset(); c != start {
		t.Fatalf("confirm offset moved to %d without member 2", c)
	}
	if d := a.st.DispatchedOffset(); d > start {
		t.Fatalf("master dispatched to %d past its confirm offset %d", d, start)
	}
	if got := a.st.MaxOffset("TopicC", 0); got != 0 {
		t.Fatalf("unconfirmed message visible in the consume queue (max %d)", got)
	}

	b.becomeSlave(a, nil)
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := a.m.WaitAcks(ctx, res.End); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "confirm offset", func() bool { return a.m.ConfirmOffset() == res.End })
	testutil.WaitFor(t, 5*time.Second, "master dispatched", func() bool { return a.st.DispatchedOffset() == res.End })

	// Member 2 goes away: sends wait for it until the controller agrees
	// to the smaller set.
	b.stopRole()
	res = put(t, a.st, "TopicC", 3, 1)
	short2, cancel3 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel3()
	if err := a.m.WaitAcks(short2, res.End); !errors.Is(err, ErrReplicaTimeout) {
		t.Fatalf("shrink not agreed yet: %v", err)
	}
	fa.mu.Lock()
	fa.fail = false
	fa.mu.Unlock()
	testutil.WaitFor(t, 5*time.Second, "set shrunk", func() bool {
		s, eff := a.m.SyncStateSet()
		return slices.Equal(s.Set, []int64{1}) && slices.Equal(eff, []int64{1})
	})
	if err := a.m.WaitAcks(ctx, res.End); err != nil {
		t.Fatalf("set {me}: %v", err)
	}

	// Member 2 returns and catches up: it is proposed and added back.
	b.becomeSlave(a, nil)
	testutil.WaitFor(t, 5*time.Second, "set expanded", func() bool { return slices.Equal(fa.set().Set, []int64{1, 2}) })
	testutil.WaitFor(t, 5*time.Second, "master adopted", func() bool {
		s, _ := a.m.SyncStateSet()
		return slices.Equal(s.Set, []int64{1, 2})
	})
	res = put(t, a.st, "TopicC", 4, 2)
	if err := a.m.WaitAcks(ctx, res.End); err != nil {
		t.Fatal(err)
	}
}

// TestAutoSwitchFencedFailsWaiters: a master that fences itself completes
// a waiting send at once instead of at its deadline.
func TestAutoSwitchFencedFailsWaiters(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	a.becomeMaster(t, 1, AutoSwitchConfig{AllAckInSyncStateSet: true}, SyncState{Set: []int64{1, 2}, Epoch: 1})
	res := put(t, a.st, "TopicL", 0, 1)
	errc := make(chan error, 1)
	go func() { errc <- a.m.WaitAcks(context.Background(), res.End) }()
	time.Sleep(50 * time.Millisecond)
	a.m.SetFenced(true)
	wantReplicaTimeout(t, errc, "fencing")
}

// TestAutoSwitchAckReleasesOnlyCommittedSends: a change of acks completes
// exactly the waiting sends it commits (the smallest ack of the other
// members with allAckInSyncStateSet, the InSyncReplicas−1-th largest
// otherwise); the others stay asleep in the waiter list.
func TestAutoSwitchAckReleasesOnlyCommittedSends(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   AutoSwitchConfig
		acks  [][2]int64 // per step: the acks of slaves 2 and 3
		waits []int      // waiters left after each step (ends 100 and 200)
	}{
		{"all ack", AutoSwitchConfig{AllAckInSyncStateSet: true},
			[][2]int64{{200, -1}, {200, 150}, {200, 200}}, []int{2, 1, 0}},
		{"two of three", AutoSwitchConfig{InSyncReplicas: 2},
			[][2]int64{{-1, -1}, {-1, 150}, {200, 150}}, []int{2, 1, 0}},
		{"three of three", AutoSwitchConfig{InSyncReplicas: 3},
			[][2]int64{{200, -1}, {120, 200}, {200, 200}}, []int{2, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := openNode(t, tempDir(t, "a"), 1)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ln.Close() })
			tc.cfg.SelfID = 1
			m := NewAutoSwitchMaster(a.st.CommitLog(), ln, Options{}, tc.cfg, SyncState{Set: []int64{1, 2, 3}, Epoch: 1})
			slaves := [2]*asConn{}
			m.mu.Lock()
			for i := range slaves {
				c := &asConn{m: m, id: int64(2 + i)}
				c.ack.Store(-1)
				slaves[i] = c
				m.conns[c] = struct{}{}
				m.byID[c.id] = c
			}
			m.mu.Unlock()
			errs := make(chan error, 2)
			for _, end := range []int64{100, 200} {
				go func() { errs <- m.WaitAcks(context.Background(), end) }()
			}
			waiting := func() int {
				m.mu.Lock()
				defer m.mu.Unlock()
				return len(m.waiters)
			}
			testutil.WaitFor(t, 5*time.Second, "two waiting sends", func() bool { return waiting() == 2 })
			done := 0
			for i, acks := range tc.acks {
				m.mu.Lock()
				for j, ack := range acks {
					slaves[j].ack.Store(ack)
				}
				m.releaseLocked()
				m.mu.Unlock()
				if got := waiting(); got != tc.waits[i] {
					t.Fatalf("step %d (acks %v): %d sends waiting, want %d", i, acks, got, tc.waits[i])
				}
				for ; done < 2-tc.waits[i]; done++ {
					if err := <-errs; err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
				select {
				case err := <-errs:
					t.Fatalf("step %d: a send not committed returned: %v", i, err)
				default:
				}
			}
		})
	}
}

// TestAutoSwitchSlaveKeepsEmptyMastersHeartbeat: an Apache master whose
// CommitLog has no file yet heartbeats with offset -1 and no body
// (AutoSwitchHAConnection, nextTransferFromWhere -1). The slave keeps the
// connection and goes on acking: it used to drop it as a bad frame and
// reconnect, and the Apache master shrank its SyncStateSet each time.
func TestAutoSwitchSlaveKeepsEmptyMastersHeartbeat(t *testing.T) {
	ln := testutil.Listen(t)
	n := openNode(t, t.TempDir(), 2)
	n.st.SetReplica(true)
	addr := ln.Addr().String()
	n.s = NewAutoSwitchSlave(n.st, func() string { return addr }, fastOptions(nil), AutoSwitchSlaveConfig{SelfID: n.id, Epochs: n.ep})
	n.s.Start()

	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if f, err := ReadSlaveFrame(conn); err != nil || f.State != StateHandshake || f.Hello.SlaveID != 2 {
		t.Fatalf("slave handshake %+v, %v", f, err)
	}
	if _, err := conn.Write(AppendMasterHandshake(nil, MasterHello{LastEpoch: 1, Epochs: []epoch.Entry{{Epoch: 1}}})); err != nil {
		t.Fatal(err)
	}
	acks := make(chan error, 1)
	go func() {
		for {
			f, err := ReadSlaveFrame(conn)
			if err != nil {
				acks <- err
				return
			}
			if f.State != StateTransfer || f.Ack != 0 {
				acks <- fmt.Errorf("slave frame %+v", f)
				return
			}
		}
	}()
	hb := AppendTransferHeader(nil, TransferHeader{Start: -1, Epoch: 1}, 0)
	for range 10 {
		if _, err := conn.Write(hb); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-acks:
		t.Fatalf("the slave ended the connection after heartbeats: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestAutoSwitchReelectedMasterTakesTheNewTermsSet: a master elected again
// takes the SyncStateSet of its new term even when that set's epoch is
// lower (controllers that lost their state number it from 1), and then
// adds a caught-up slave to it. Before, it kept the old term's set and
// proposed the same shrink to the controller forever.
func TestAutoSwitchReelectedMasterTakesTheNewTermsSet(t *testing.T) {
	a := openNode(t, tempDir(t, "a"), 1)
	b := openNode(t, tempDir(t, "b"), 2)
	fa := &fakeAlter{state: SyncState{Set: []int64{1, 2}, Epoch: 6}}
	cfg := AutoSwitchConfig{AllAckInSyncStateSet: true, MaxTimeSlaveNotCatchup: 500 * time.Millisecond, CheckInterval: 50 * time.Millisecond, Alter: fa.alter}
	a.becomeMaster(t, 2, cfg, fa.state)
	b.becomeSlave(a, nil)
	put(t, a.st, "TopicN", 0, 4)
	testutil.WaitFor(t, 5*time.Second, "slave caught up", nodesCaughtUp(a, b))

	// The new term: master 1 again at epoch 3, set {1} at epoch 1.
	fa.mu.Lock()
	fa.state = SyncState{Set: []int64{1}, Epoch: 1}
	fa.mu.Unlock()
	if err := a.ep.Append(3, a.st.CommitLog().MaxOffset()); err != nil {
		t.Fatal(err)
	}
	a.m.ResetSyncState(SyncState{Set: []int64{1}, Epoch: 1})
	a.m.CloseConnections("new master epoch")
	if got, _ := a.m.SyncStateSet(); !slices.Equal(got.Set, []int64{1}) || got.Epoch != 1 {
		t.Fatalf("set after the new term %+v", got)
	}
	testutil.WaitFor(t, 5*time.Second, "slave added back", func() bool {
		got, _ := a.m.SyncStateSet()
		return slices.Equal(got.Set, []int64{1, 2}) && got.Epoch == 2
	})
}
