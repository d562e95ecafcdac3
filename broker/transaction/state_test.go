package transaction

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// gateStore blocks puts to the test topic until released, then fails them
// with failErr (nil: stores them).
type gateStore struct {
	*storetest.Store
	mu      sync.Mutex
	gate    chan struct{}
	entered chan struct{}
	failErr error
}

func (g *gateStore) PutMessage(ctx context.Context, m *message.Message) (store.PutResult, error) {
	g.mu.Lock()
	gate, entered, failErr := g.gate, g.entered, g.failErr
	g.mu.Unlock()
	if m.Topic == testTopic && gate != nil {
		close(entered)
		<-gate
		if failErr != nil {
			return store.PutResult{}, failErr
		}
	}
	return g.Store.PutMessage(ctx, m)
}

func (g *gateStore) arm(failErr error) {
	g.mu.Lock()
	g.gate, g.entered, g.failErr = make(chan struct{}), make(chan struct{}), failErr
	g.mu.Unlock()
}

func (g *gateStore) open() {
	g.mu.Lock()
	close(g.gate)
	g.gate = nil
	g.mu.Unlock()
}

// TestEndInFlightHoldsScan: while END_TRANSACTION stores a commit, the
// check scan neither checks the transaction nor writes an op record for
// it; when the commit fails the transaction is pending again and checked.
func TestEndInFlightHoldsScan(t *testing.T) {
	clk := testutil.NewFakeClock(time.UnixMilli(1_700_000_000_000))
	gs := &gateStore{Store: storetest.New(storetest.WithClock(clk.Now), storetest.WithStoreHost(testHost))}
	f := newFixture(t, nil, withStore(gs), withClock(clk))
	h := f.sendHalf("gated")
	f.clk.Advance(7 * time.Second)

	gs.arm(store.ErrDiskFull)
	done := make(chan int32)
	go func() { done <- f.end(f.svc, h, message.TransactionCommitType, false).Code }()
	<-gs.entered
	if n := len(f.check(f.svc)); n != 0 || f.store.MaxOffset(protocol.TransOpHalfTopic, 0) != 0 || f.store.MaxOffset(protocol.TransHalfTopic, 0) != 1 {
		t.Fatalf("scan acted on a transaction being ended: %d checks, %d ops", n, f.store.MaxOffset(protocol.TransOpHalfTopic, 0))
	}
	gs.open()
	if c := <-done; c != code.ServiceNotAvailable {
		t.Fatalf("failed commit answered %d", c)
	}
	reqs := f.check(f.svc)
	if len(reqs) != 1 {
		t.Fatalf("%d checks after the failed commit, want 1", len(reqs))
	}
	c, _ := checkedHalf(t, reqs[0])
	wantCode(t, "commit from check", f.end(f.svc, c, message.TransactionCommitType, true), code.Success)
	if got := f.delivered(); got["gated"] != 1 {
		t.Fatalf("delivered %v", got)
	}
}

func TestStateClaimAndChains(t *testing.T) {
	st := newState(10, 0)
	// Below progress, no copy known: ended.
	if c := st.claimEnd("u1", 5); c.ok {
		t.Fatal("claim below progress without a chain")
	}
	// A chain lets a late END on the original through, with every copy.
	if !st.replaced("u1", 5, 12) || !st.replaced("u1", 12, 15) {
		t.Fatal("replaced")
	}
	c := st.claimEnd("u1", 5)
	if !c.ok || len(c.targets) != 3 || c.targets[0] != 5 || c.targets[2] != 15 {
		t.Fatalf("claim %+v", c)
	}
	if v := st.classify(15, "u1"); v != ending {
		t.Fatalf("classify during the claim: %v", v)
	}
	st.unclaim("u1", c)
	if v := st.classify(15, "u1"); v != pending {
		t.Fatalf("classify after unclaim: %v", v)
	}
	c = st.claimEnd("u1", 15)
	if !c.ok {
		t.Fatal("claim after unclaim")
	}
	st.markDone(c.targets)
	st.finishEnd("u1", message.TransactionCommitType, 20)
	if v := st.classify(18, "u1"); v != endedInMemory {
		t.Fatalf("another copy after the end: %v", v)
	}
	if st.replaced("u1", 18, 21) {
		t.Fatal("replaced an ended transaction")
	}
	if c := st.claimEnd("u1", 15); c.ok || c.prevOutcome != message.TransactionCommitType {
		t.Fatalf("second claim %+v", c)
	}
	// Pruning forgets what progress passed.
	st.advance(20)
	st.prune()
	if snap := st.snapshot(); snap.ended != 0 || snap.done != 0 {
		t.Fatalf("after prune: %+v", snap)
	}
	// Op positions: an op naming an offset ≥ progress holds the op position.
	st.addOp(0, []int64{3})
	st.addOp(1, []int64{25})
	st.addOp(2, []int64{4})
	if half, op := st.offsets(); half != 20 || op != 1 {
		t.Fatalf("positions %d/%d, want 20/1", half, op)
	}
	st.advance(26)
	if _, op := st.offsets(); op != 3 {
		t.Fatalf("op position %d, want 3", op)
	}
}
