package commitlog

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// faultCase sets up one fault after some good appends and names the error
// Append must return.
type faultCase struct {
	name   string
	mode   FlushDiskType
	inject func(f *vfs.FaultFS)
	want   error
}

func TestFaultsStopAcks(t *testing.T) {
	cases := []faultCase{
		{"short write", AsyncFlush, func(f *vfs.FaultFS) { f.ShortWriteOnce(100) }, ErrWriteFailed},
		{"write EIO", AsyncFlush, func(f *vfs.FaultFS) { f.FailWrites(syscall.EIO) }, ErrWriteFailed},
		{"ENOSPC", AsyncFlush, func(f *vfs.FaultFS) { f.DiskFullAfter(300) }, ErrDiskFull},
		{"ENOSPC sync", SyncFlush, func(f *vfs.FaultFS) { f.DiskFullAfter(0) }, ErrDiskFull},
		{"fsync EIO", SyncFlush, func(f *vfs.FaultFS) { f.FailSyncs(syscall.EIO) }, ErrFlushFailed},
		{"ENOSPC creating a segment", AsyncFlush, func(f *vfs.FaultFS) {
			f.SetHook(func(op vfs.Op) error {
				if op.Kind == vfs.OpAllocate {
					return syscall.ENOSPC
				}
				return nil
			})
		}, ErrDiskFull},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			ffs := vfs.NewFaultFS(mem)
			cfg := testConfig(ffs, "/s")
			smallSegments(&cfg, 8192)
			cfg.FlushDiskType = c.mode
			l := mustOpen(t, cfg)
			var good []AppendResult
			for i := range 5 {
				good = append(good, mustAppend(t, l, record(t, "F", 0, i, 400)))
			}
			max := l.MaxOffset()
			c.inject(ffs)
			// Keep appending until the fault bites (the segment-creation
			// case needs a roll first).
			var err error
			for i := 0; i < 40 && err == nil; i++ {
				var res AppendResult
				if res, err = l.Append(context.Background(), record(t, "F", 0, 100+i, 400)); err == nil {
					good = append(good, res)
					max = l.MaxOffset()
				}
			}
			if !errors.Is(err, c.want) || !errors.Is(err, ErrNotWritable) {
				t.Fatalf("append error %v, want %v", err, c.want)
			}
			if l.Writable() || !errors.Is(l.Err(), c.want) {
				t.Fatal("log should refuse writes")
			}
			// Sticky: even with the fault gone nothing is acknowledged.
			ffs.Reset()
			if _, err := l.Append(context.Background(), record(t, "F", 0, 999, 10)); !errors.Is(err, ErrNotWritable) {
				t.Fatalf("second append: %v", err)
			}
			// What was acknowledged stays readable; nothing else is visible.
			// (A roll may have completed the old segment's BLANK tail.)
			if c.mode == AsyncFlush && l.MaxOffset() != max && l.MaxOffset()%cfg.FileSize != 0 {
				t.Fatalf("max moved from %d to %d", max, l.MaxOffset())
			}
			for _, r := range good {
				rec, err := l.ReadRecord(r.PhysicalOffset)
				if err != nil {
					t.Fatal(err)
				}
				rec.Release()
			}
			if err := l.Close(); err == nil {
				// Close of a failed log must not claim a clean shutdown.
				if _, serr := mem.Stat("/s/abort"); serr != nil {
					t.Fatal("abort marker removed after a failure")
				}
			}
			// Restart recovers: acknowledged records are there, the torn
			// tail is gone, and writes work again.
			l = mustOpen(t, cfg)
			defer l.Close()
			if !l.Recovery().Abnormal {
				t.Fatal("restart after failure should recover as after a crash")
			}
			recs := readAll(t, l)
			if len(recs) < len(good) {
				t.Fatalf("recovered %d records, %d were acknowledged", len(recs), len(good))
			}
			for i, r := range good {
				if recs[i].Offset != r.PhysicalOffset {
					t.Fatalf("record %d at %d, want %d", i, recs[i].Offset, r.PhysicalOffset)
				}
			}
			mustAppend(t, l, record(t, "F", 0, 1000, 400))
		})
	}
}

func TestFlushTimeout(t *testing.T) {
	l, ffs := syncFlushLog(t, func(cfg *Config) { cfg.SyncFlushTimeout = 30 * time.Millisecond })
	mustAppend(t, l, record(t, "T", 0, 0, 100))
	release := make(chan struct{})
	var once sync.Once
	onSync(ffs, func() { <-release })
	res, err := l.Append(context.Background(), record(t, "T", 0, 1, 100))
	if !errors.Is(err, ErrFlushTimeout) || res.Size == 0 {
		t.Fatalf("got %+v %v, want a result with ErrFlushTimeout", res, err)
	}
	once.Do(func() { close(release) })
	ffs.SetHook(nil)
	// The log stays writable: a slow disk is not a broken one.
	if _, err := l.Append(context.Background(), record(t, "T", 0, 2, 100)); err != nil {
		t.Fatal(err)
	}
	if l.FlushedOffset() != l.MaxOffset() {
		t.Fatal("flush did not catch up")
	}
	// A cancelled context stops the wait too.
	onSync(ffs, func() { time.Sleep(50 * time.Millisecond) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := l.Append(ctx, record(t, "T", 0, 3, 100)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ctx: %v", err)
	}
}

// TestSyncFlushGroupsCommits checks that concurrent SYNC_FLUSH writers share
// fsyncs.
func TestSyncFlushGroupsCommits(t *testing.T) {
	l, ffs := syncFlushLog(t, nil)
	// Slow fsyncs make batching visible.
	onSync(ffs, func() { time.Sleep(2 * time.Millisecond) })
	_, syncs0, _ := ffs.Stats()
	const writers, each = 16, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := l.Append(context.Background(), record(t, "G", int32(w), i, 200)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	_, syncs1, _ := ffs.Stats()
	if n := syncs1 - syncs0; n >= writers*each/2 {
		t.Fatalf("%d fsyncs for %d appends: no group commit", n, writers*each)
	}
	if l.FlushedOffset() != l.MaxOffset() {
		t.Fatal("not flushed")
	}
}

// TestNoFlushWait: a WAIT=false producer under SYNC_FLUSH is acknowledged
// once the bytes are in the page cache, even while fsyncs stall.
func TestNoFlushWait(t *testing.T) {
	l, ffs := syncFlushLog(t, nil)
	mustAppend(t, l, record(t, "W", 0, 0, 100)) // creates the segment (which fsyncs)
	release := make(chan struct{})
	onSync(ffs, func() { <-release })
	res, err := l.AppendWith(context.Background(), record(t, "W", 0, 0, 100), AppendOptions{NoFlushWait: true})
	if err != nil || l.MaxOffset() != res.End() || l.FlushedOffset() >= res.End() {
		t.Fatalf("%+v %v flushed %d", res, err, l.FlushedOffset())
	}
	close(release)
	ffs.SetHook(nil)
}

// TestWriteStalledFor: a write stuck in the page cache (a stalled disk) is
// reported for as long as it lasts, and no longer once it completed.
func TestWriteStalledFor(t *testing.T) {
	l, ffs := syncFlushLog(t, nil)
	mustAppend(t, l, record(t, "S", 0, 0, 100)) // creates the segment
	if d := l.WriteStalledFor(); d != 0 {
		t.Fatalf("WriteStalledFor = %v with no write in progress", d)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ffs.SetHook(func(op vfs.Op) error {
		if op.Kind == vfs.OpWrite {
			once.Do(func() { close(entered) })
			<-release
		}
		return nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := l.AppendWith(context.Background(), record(t, "S", 0, 1, 100), AppendOptions{NoFlushWait: true})
		done <- err
	}()
	<-entered
	time.Sleep(30 * time.Millisecond)
	if d := l.WriteStalledFor(); d < 25*time.Millisecond {
		t.Fatalf("WriteStalledFor = %v during a write stuck for 30ms", d)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ffs.SetHook(nil)
	if d := l.WriteStalledFor(); d != 0 {
		t.Fatalf("WriteStalledFor = %v after the write completed", d)
	}
}
