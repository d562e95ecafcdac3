package send

import (
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// The send processor in front of the real store, whose CommitLog runs on a
// FaultFS: a full disk or a failed fsync must answer SERVICE_NOT_AVAILABLE
// (14) with a remark that says why — never SUCCESS — and a message the
// store finds illegal MESSAGE_ILLEGAL (13).

// realStoreFixture is newFixture with the fake store replaced by a real
// store.Store (SYNC_FLUSH) on ffs.
func realStoreFixture(t *testing.T, storeMax int) (*fixture, *store.Store, *vfs.FaultFS) {
	t.Helper()
	f := newFixture(t)
	ffs := vfs.NewFaultFS(vfs.NewMem())
	cfg := store.DefaultConfig(t.TempDir())
	cfg.CommitLog.Dir = "/store/commitlog"
	cfg.CommitLog.FS = ffs
	cfg.CommitLog.FileSize = 1 << 20
	cfg.CommitLog.Preallocate = false
	cfg.CommitLog.CleanResourceInterval = 0
	cfg.CommitLog.FlushDiskType = commitlog.SyncFlush
	cfg.StoreHost = testStoreHost
	cfg.MaxMessageSize = storeMax
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.p.d.Store = s
	return f, s, ffs
}

func TestRealStoreFaultCodes(t *testing.T) {
	cases := []struct {
		name   string
		inject func(ffs *vfs.FaultFS, s *store.Store)
		remark string
	}{
		{"ENOSPC", func(ffs *vfs.FaultFS, _ *store.Store) { ffs.DiskFullAfter(0) }, "disk full"},
		{"fsync EIO", func(ffs *vfs.FaultFS, _ *store.Store) { ffs.FailSyncs(syscall.EIO) }, "flush failed"},
		{"write EIO", func(ffs *vfs.FaultFS, _ *store.Store) { ffs.FailWrites(syscall.EIO) }, "write failed"},
		{"disk usage over warning level", func(ffs *vfs.FaultFS, s *store.Store) {
			ffs.SetDiskUsage(&vfs.DiskUsage{Total: 100 << 30, Free: 5 << 30})
			if _, err := s.CommitLog().RunRetention(time.Now()); err != nil {
				t.Fatal(err)
			}
		}, "disk full"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, s, ffs := realStoreFixture(t, 4<<20)
			for i := range 3 {
				resp := f.call(t, sendV2("TopicTest", 1, basicProps, fmt.Sprint("ok-", i)))
				wantCode(t, resp, code.Success)
				if resp.Ext("queueOffset") != fmt.Sprint(i) {
					t.Fatalf("queueOffset %q, want %d", resp.Ext("queueOffset"), i)
				}
			}
			c.inject(ffs, s)
			for i, req := range []*remoting.Command{
				sendV2("TopicTest", 1, basicProps, "refused"),
				sendV1("TopicTest", 1, basicProps, "refused again"),
				batchReq("TopicTest", 1, batchBody(t, 3, func(int) map[string]string { return nil })),
			} {
				resp := f.call(t, req)
				wantCode(t, resp, code.ServiceNotAvailable)
				if !strings.Contains(resp.Remark, c.remark) {
					t.Errorf("request %d: remark %q lacks %q", i, resp.Remark, c.remark)
				}
				if id := resp.Ext("msgId"); id != "" {
					t.Errorf("request %d: refused send answered msgId %q", i, id)
				}
			}
			// Nothing past the three acknowledged messages was stored. (A
			// failed fsync comes after the write: that record reached the
			// page cache and may be dispatched, but it was not
			// acknowledged and a power cut may take it.)
			if c.name != "fsync EIO" {
				time.Sleep(50 * time.Millisecond) // give the dispatcher a chance
				if max := s.MaxOffset("TopicTest", 1); max != 3 {
					t.Errorf("queue max offset %d after refusals, want 3", max)
				}
			}
		})
	}
}

func TestRealStoreIllegalMessage(t *testing.T) {
	// The processor's own maxMessageSize check (4 MiB) lets 2 KiB through;
	// the store, configured for 1 KiB, refuses it.
	f, s, _ := realStoreFixture(t, 1<<10)
	resp := f.call(t, sendV2("TopicTest", 0, basicProps, strings.Repeat("x", 2<<10)))
	wantCode(t, resp, code.MessageIllegal)
	if !strings.Contains(resp.Remark, "maxMessageSize") || resp.Ext("msgId") != "" {
		t.Fatalf("response %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	// Not a fault: the next message is stored.
	resp = f.call(t, sendV2("TopicTest", 0, basicProps, "small"))
	wantCode(t, resp, code.Success)
	if resp.Ext("queueOffset") != "0" {
		t.Fatalf("queueOffset %q after the refused message, want 0", resp.Ext("queueOffset"))
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if got := s.MaxOffset("TopicTest", 0); got != 1 {
			return fmt.Errorf("queue max offset %d, want 1", got)
		}
		return nil
	})
}
