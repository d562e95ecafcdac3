package commitlog

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/internal/testutil"
)

func TestRetention(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	type step struct {
		at        time.Time
		usedRatio float64 // 0: report 10%
		wantFiles int     // segments left
		writable  bool
		manual    bool // DeleteFilesManually before the round
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"not expired, not the hour", []step{{t0.Add(time.Hour), 0, 6, true, false}}},
		{"expired but not the hour", []step{{t0.Add(80 * time.Hour), 0, 6, true, false}}},
		{"expired at deleteWhen", []step{{time.Date(2025, 6, 5, 4, 30, 0, 0, time.UTC), 0, 1, true, false}}},
		{"second deleteWhen hour", []step{{time.Date(2025, 6, 5, 5, 0, 0, 0, time.UTC), 0, 1, true, false}}},
		{"disk above max ratio deletes expired only", []step{
			{t0.Add(2 * time.Hour), 0.80, 6, true, false},
			{t0.Add(80 * time.Hour), 0.80, 1, true, false},
		}},
		{"manual deletes expired outside the hour", []step{{t0.Add(80 * time.Hour), 0, 1, true, true}}},
		{"manual keeps unexpired", []step{{t0.Add(time.Hour), 0, 6, true, true}}},
		{"disk above forcible ratio deletes unexpired", []step{{t0.Add(time.Hour), 0.86, 1, true, false}}},
		{"disk above warning refuses writes until it drops", []step{
			{t0.Add(time.Hour), 0.95, 1, false, false},
			{t0.Add(2 * time.Hour), 0.50, 1, true, false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := testutil.NewFakeClock(t0)
			mem := vfs.NewMem()
			mem.SetClock(clock.Now)
			ffs := vfs.NewFaultFS(mem)
			ffs.SetDiskUsage(&vfs.DiskUsage{Total: 100, Free: 90})
			cfg := testConfig(ffs, "/s")
			smallSegments(&cfg, 4096)
			cfg.Clock = clock.Now
			cfg.DeleteWhen = "04;05"
			cfg.DeleteFilesBatchMax = 10
			var mins []int64
			cfg.OnMinOffsetChange = func(m int64) { mins = append(mins, m) }
			l := mustOpen(t, cfg)
			defer l.Close()
			for i := range 30 {
				mustAppend(t, l, record(t, "R", 0, i, 700))
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			if n := len(l.SegmentBases()); n != 6 {
				t.Fatalf("setup: %d segments", n)
			}
			for _, s := range c.steps {
				clock.Set(s.at)
				ratio := s.usedRatio
				if ratio == 0 {
					ratio = 0.10
				}
				ffs.SetDiskUsage(&vfs.DiskUsage{Total: 1000, Free: uint64(1000 * (1 - ratio))})
				if err := l.Flush(); err != nil { // unflushed segments are never deleted
					t.Fatal(err)
				}
				if s.manual {
					l.DeleteFilesManually()
				}
				res, err := l.RunRetention(clock.Now())
				if err != nil {
					t.Fatal(err)
				}
				bases := l.SegmentBases()
				if len(bases) != s.wantFiles {
					t.Fatalf("at %v (ratio %.2f): %d segments left, want %d (%+v)", s.at, ratio, len(bases), s.wantFiles, res)
				}
				if l.MinOffset() != bases[0] || res.MinOffset != bases[0] {
					t.Fatalf("min offset %d, first segment %d", l.MinOffset(), bases[0])
				}
				if len(res.Deleted) > 0 && mins[len(mins)-1] != bases[0] {
					t.Fatalf("callback got %v", mins)
				}
				_, err = l.Append(context.Background(), record(t, "R", 0, 100, 10))
				if s.writable != (err == nil) || (!s.writable && !errors.Is(err, ErrDiskFull)) {
					t.Fatalf("writable=%v, append: %v", s.writable, err)
				}
			}
			if l.MinOffset() > 0 {
				if _, err := l.Read(0, 100); !errors.Is(err, ErrOffsetOutOfRange) {
					t.Fatalf("read below min: %v", err)
				}
				// Consumers resume from the new minimum.
				if n := len(readAll(t, l)); n == 0 {
					t.Fatal("nothing readable after retention")
				}
			}
			names, _ := mem.List("/s/commitlog")
			if len(names) != len(l.SegmentBases()) {
				t.Fatalf("files %v vs segments %v", names, l.SegmentBases())
			}
		})
	}
}

// TestRetentionKeepsReadersSafe: a reader pinning a deleted (mapped)
// segment still reads intact bytes.
func TestRetentionKeepsReadersSafe(t *testing.T) {
	cfg := testConfig(vfs.OS(), t.TempDir())
	smallSegments(&cfg, 4096)
	l := mustOpen(t, cfg)
	defer l.Close()
	first := mustAppend(t, l, record(t, "K", 0, 0, 700))
	for i := range 10 {
		mustAppend(t, l, record(t, "K", 0, i+1, 700))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	rec, err := l.ReadRecord(first.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	// Forced clean: pretend the disk is almost full.
	l.cfg.DiskSpaceCleanForciblyRatio = 0.0001
	res, err := l.RunRetention(time.Now())
	if err != nil || len(res.Deleted) == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if !rec.View.VerifyCRC() || rec.View.PhysicalOffset() != first.PhysicalOffset {
		t.Fatal("pinned bytes changed under the reader")
	}
	rec.Release()
}
