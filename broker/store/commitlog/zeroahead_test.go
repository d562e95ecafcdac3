package commitlog

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// TestZeroAheadKeepsRecords appends from many writers while the zero-ahead
// writer works a page ahead of them (tiny segments and window, so that
// appends reach the chunk being zeroed all the time): every record reads
// back as appended, before and after a reopen, and zeros were written.
func TestZeroAheadKeepsRecords(t *testing.T) {
	for _, fsName := range []string{"os", "mem", "slow-zeros"} {
		for _, mode := range []FlushDiskType{AsyncFlush, SyncFlush} {
			t.Run(fsName+"/"+mode.String(), func(t *testing.T) {
				var fsys vfs.FS = vfs.OS()
				switch fsName {
				case "mem":
					fsys = vfs.NewMem()
				case "slow-zeros":
					// Page-sized, page-aligned writes (the zero-ahead
					// writer's chunks here) are held up, so that appends
					// overtake the chunk being written.
					ffs := vfs.NewFaultFS(vfs.NewMem())
					ffs.SetHook(func(op vfs.Op) error {
						if op.Kind == vfs.OpWrite && op.Len == pageSize && op.Off%pageSize == 0 {
							time.Sleep(2 * time.Millisecond)
						}
						return nil
					})
					fsys = ffs
				}
				cfg := testConfig(fsys, t.TempDir())
				cfg.FileSize = 256 << 10
				cfg.MaxRecordSize = 4096
				cfg.MaxBatchBytes = 16 << 10
				cfg.FlushDiskType = mode
				cfg.ZeroAhead = 32 << 10
				if fsName == "slow-zeros" {
					cfg.ZeroAhead = 2 * pageSize // chunks start at the page after the end
				}
				cfg.Assigner = newAssigner()
				l := mustOpen(t, cfg)
				const writers, each = 8, 250
				var mu sync.Mutex
				appended := map[int64][]byte{}
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						for i := range each {
							rec := record(t, "Z", int32(w%4), w*1000+i, 30+(i*37)%900)
							res, err := l.Append(context.Background(), rec)
							if err != nil {
								t.Error(err)
								return
							}
							mu.Lock()
							appended[res.PhysicalOffset] = rec
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				if l.zeroWritten.Load() == 0 {
					t.Fatal("the zero-ahead writer wrote nothing")
				}
				check := func(l *Log, when string) {
					recs := readAll(t, l)
					if len(recs) != writers*each {
						t.Fatalf("%s: %d records, want %d", when, len(recs), writers*each)
					}
					for _, r := range recs {
						if want := appended[r.Offset]; want == nil || !sameRecord(r.View, want) {
							t.Fatalf("%s: record at %d differs from the one appended there", when, r.Offset)
						}
					}
				}
				check(l, "before reopen")
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, cfg)
				defer l.Close()
				check(l, "after reopen")
			})
		}
	}
}

// TestZeroAheadPaced checks the pacing of the zero-ahead writer: it never
// writes a chunk of zeros while the previous one is not written back yet,
// and every chunk it writes is written back.
func TestZeroAheadPaced(t *testing.T) {
	ffs := vfs.NewFaultFS(vfs.NewMem())
	cfg := testConfig(ffs, t.TempDir())
	cfg.FileSize = 1 << 20
	cfg.MaxRecordSize = 2048
	cfg.MaxBatchBytes = 4096
	cfg.FlushDiskType = SyncFlush
	cfg.ZeroAhead = 64 << 10
	cfg.Assigner = newAssigner()
	l := mustOpen(t, cfg)
	defer l.Close()
	chunk := l.zeroChunkSize()
	if chunk <= int64(cfg.MaxBatchBytes) {
		t.Fatalf("chunk %d must exceed the largest append %d to tell them apart", chunk, cfg.MaxBatchBytes)
	}
	var mu sync.Mutex
	pending := map[int64]bool{} // chunks of zeros written, not yet written back
	var chunks, overlaps int
	ffs.SetHook(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op.Kind == vfs.OpWrite && int64(op.Len) == chunk:
			if len(pending) > 0 {
				overlaps++
			}
			pending[op.Off] = true
			chunks++
		case op.Kind == vfs.OpWriteBack:
			delete(pending, op.Off)
		}
		return nil
	})
	for i := range 3000 {
		if _, err := l.Append(context.Background(), record(t, "P", int32(i%4), i, 100+(i*53)%1500)); err != nil {
			t.Fatal(err)
		}
	}
	// The writer may still be on its last chunk: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		run := l.zeroRun
		l.mu.Unlock()
		if !run || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if chunks < 8 {
		t.Fatalf("the zero-ahead writer wrote %d chunks, want many", chunks)
	}
	if overlaps > 0 {
		t.Fatalf("%d of %d chunks were written while an earlier one was not written back", overlaps, chunks)
	}
	if len(pending) > 0 {
		t.Fatalf("%d chunks never written back", len(pending))
	}
}
