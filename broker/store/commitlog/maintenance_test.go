package commitlog

import (
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// TestMasterFlushedOffsetPersists: RESET_MASTER_FLUSH_OFFSET's value is
// kept in the checkpoint across a restart (Apache's StoreCheckpoint).
func TestMasterFlushedOffsetPersists(t *testing.T) {
	cfg := testConfig(vfs.NewMem(), "/s")
	l := mustOpen(t, cfg)
	l.SetMasterFlushedOffset(4096)
	if got := l.MasterFlushedOffset(); got != 4096 {
		t.Fatalf("before restart: %d", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, cfg)
	defer l.Close()
	if got := l.MasterFlushedOffset(); got != 4096 {
		t.Errorf("after restart: %d, want 4096", got)
	}
}

// TestSetReadAhead: the mode is kept for new segments and mapped segments
// are advised without error (a real file system: mmap and madvise).
func TestSetReadAhead(t *testing.T) {
	cfg := testConfig(vfs.OS(), t.TempDir())
	cfg.UseMmap = true
	l := mustOpen(t, cfg)
	defer l.Close()
	mustAppend(t, l, record(t, "R", 0, 0, 100))
	if !l.ReadAhead() {
		t.Fatal("read-ahead off by default")
	}
	if err := l.SetReadAhead(false); err != nil || l.ReadAhead() {
		t.Fatalf("off: %v, readAhead %v", err, l.ReadAhead())
	}
	if err := l.SetReadAhead(true); err != nil || !l.ReadAhead() {
		t.Fatalf("on: %v, readAhead %v", err, l.ReadAhead())
	}
	cfg2 := testConfig(vfs.OS(), t.TempDir())
	cfg2.NoReadAhead = true
	l2 := mustOpen(t, cfg2)
	defer l2.Close()
	if l2.ReadAhead() {
		t.Error("NoReadAhead: read-ahead on")
	}
}
