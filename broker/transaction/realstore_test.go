package transaction

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/storetest"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

func openRealStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	return storetest.OpenDisk(t, dir, func(c *store.Config) {
		c.CommitLog.FileSize = 1 << 20
		c.StoreHost = testHost
	})
}

// TestRealStoreRestart runs transactions on the real store, closes it
// (the broker's clean shutdown) and opens it again: committed messages are
// there once, rolled back ones never, pending ones are checked.
func TestRealStoreRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := openRealStore(t, dir)
	short := func(c *config.Config) { c.TransactionTimeOut = 300 * time.Millisecond }
	f := newFixture(t, short, withStore(st), realClock())
	f.sendMixed("r", 6)
	// Half and committed messages are dispatched; half ones are not in the
	// real topic.
	testutil.WaitFor(t, 5*time.Second, "dispatch", func() bool { return st.MaxOffset(testTopic, 2) == 2 && st.MaxOffset(protocol.TransHalfTopic, 0) == 6 })
	f.svc.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openRealStore(t, dir)
	defer st.Close()
	f.store = st
	f.send = nil
	svc := f.newService()
	if got := f.delivered(); got["r0"] != 1 || got["r3"] != 1 || len(got) != 2 {
		t.Fatalf("after the restart the real topic holds %v", got)
	}
	time.Sleep(400 * time.Millisecond)
	checked := map[string]bool{}
	for _, req := range f.check(svc) {
		c, m := checkedHalf(t, req)
		checked[string(m.Body)] = true
		wantCode(t, "commit from check", f.end(svc, c, message.TransactionCommitType, true), code.Success)
	}
	if len(checked) != 2 || !checked["r2"] || !checked["r5"] {
		t.Fatalf("checked %v, want r2 and r5", checked)
	}
	testutil.WaitFor(t, 5*time.Second, "commits after the restart", func() bool { return st.MaxOffset(testTopic, 2) == 4 })
	if got := f.delivered(); len(got) != 4 || got["r1"] != 0 || got["r4"] != 0 {
		t.Fatalf("delivered %v", got)
	}
	svc.Close()
}

// TestRealStoreLateCommitAfterDiscard: on the real store (its Pebble key
// index), a commit that comes after the check scan discarded the
// transaction and after a restart is stored once; after another restart
// the same commit is answered "already ended" and stores nothing.
func TestRealStoreLateCommitAfterDiscard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	st := openRealStore(t, dir)
	cfg := func(c *config.Config) {
		c.TransactionTimeOut = 100 * time.Millisecond
		c.TransactionCheckMax = 1
	}
	f := newFixture(t, cfg, withStore(st), realClock())
	h := f.sendHalf("late")
	for range 2 {
		time.Sleep(150 * time.Millisecond)
		for _, req := range f.check(f.svc) {
			c, _ := checkedHalf(t, req)
			wantCode(t, "unknown", f.end(f.svc, c, message.TransactionNotType, true), code.Success)
		}
	}
	if st := f.svc.Stats(); st.Discards != 1 {
		t.Fatalf("stats %+v", st)
	}
	testutil.WaitFor(t, 5*time.Second, "discarded copy dispatched", func() bool { return st.MaxOffset(protocol.TransCheckMaxTopic, 0) == 1 })
	reopen := func() *Service {
		t.Helper()
		f.svc.Close()
		if err := f.store.(*store.Store).Close(); err != nil {
			t.Fatal(err)
		}
		f.store = openRealStore(t, dir)
		f.svc = f.newService()
		return f.svc
	}
	svc := reopen()
	if resp := f.end(svc, h, message.TransactionCommitType, false); resp.Code != code.Success || resp.Remark != "" {
		t.Fatalf("late commit after a restart: %d %q", resp.Code, resp.Remark)
	}
	testutil.WaitFor(t, 5*time.Second, "late commit dispatched", func() bool { return f.delivered()["late"] == 1 })
	svc = reopen()
	defer f.store.(*store.Store).Close()
	defer svc.Close()
	if resp := f.end(svc, h, message.TransactionCommitType, false); resp.Code != code.Success || resp.Remark != "transaction already ended" {
		t.Fatalf("commit repeated after another restart: %d %q", resp.Code, resp.Remark)
	}
	if got := f.delivered(); got["late"] != 1 {
		t.Fatalf("delivered %v after the repeated commit, want late once", got)
	}
}
