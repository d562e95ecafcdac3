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
