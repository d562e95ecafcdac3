package commitlog

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// TestRecoveryZeroesStaleTailOnDisk: after a crash, recovery zeroes every
// non-zero byte after the recovered end of the last segment, on a real
// (sparse) file where it reads only the file's data regions: bytes right
// after the end and bytes far into the never-written part (a later write
// that survived an earlier one) both go.
func TestRecoveryZeroesStaleTailOnDisk(t *testing.T) {
	for _, prealloc := range []bool{false, true} {
		t.Run(map[bool]string{false: "sparse", true: "preallocated"}[prealloc], func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig(filepath.Join(t.TempDir(), "commitlog"))
			cfg.FileSize = 8 << 20
			cfg.CleanResourceInterval = 0
			cfg.PrepareNext = false
			cfg.Preallocate = prealloc
			cfg.Logger = quietLogger()
			cfg.Assigner = newAssigner()
			l := mustOpen(t, cfg)
			appendRecords(t, l, "X", 50, func(int) int { return 300 })
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			end := l.MaxOffset()
			l.abandon()
			stale := record(t, "Stale", 0, 1, 300)
			path := filepath.Join(cfg.Dir, segmentName(0))
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			planted := []int64{end + 64, 6<<20 + 4096, cfg.FileSize - int64(len(stale))}
			for _, at := range planted {
				if _, err := f.WriteAt(stale, at); err != nil {
					t.Fatal(err)
				}
			}
			f.Close()

			l = mustOpen(t, cfg)
			defer l.Close()
			if r := l.Recovery(); !r.Abnormal || r.End != end {
				t.Fatalf("recovery %+v, want abnormal and end %d", r, end)
			}
			if n := len(readAll(t, l)); n != 50 {
				t.Fatalf("%d records after recovery, want 50", n)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if i := bytes.IndexFunc(raw[end:], func(r rune) bool { return r != 0 }); i >= 0 {
				t.Fatalf("non-zero byte at %d after the recovered end %d (planted at %v)", end+int64(i), end, planted)
			}
		})
	}
}

// TestZeroTailReadsOnlyData: zeroTail zeroes a 1 GiB sparse segment with
// a few KiB written after pos without reading the rest: with
// FALLOC_FL_ZERO_RANGE (vfs.ZeroRange) and, where the file cannot, reading
// only what vfs.DataRegion reports as data (checked through a file that
// counts its reads). The segment is mapped, as in the broker: the mapping
// must see the zeros too.
func TestZeroTailReadsOnlyData(t *testing.T) {
	for _, zeroRange := range []bool{true, false} {
		t.Run(map[bool]string{true: "zero-range", false: "data-regions"}[zeroRange], func(t *testing.T) {
			t.Parallel()
			const size = 1 << 30
			f, err := vfs.OS().Create(filepath.Join(t.TempDir(), segmentName(0)))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(size); err != nil {
				t.Fatal(err)
			}
			for _, at := range []int64{1000, 300 << 20, size - 5} {
				if _, err := f.WriteAt(bytes.Repeat([]byte{7}, 5), at); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.WriteAt(bytes.Repeat([]byte{7}, 10000), 1000); err != nil {
				t.Fatal(err)
			}
			cf := &countingFile{File: f, zeroRange: zeroRange}
			seg, err := newSegment(cf, filepath.Dir(f.Name()), 0, size, false, false, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			defer seg.release()
			m, err := f.(vfs.Mmapper).Mmap(size)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			mapped := m.Bytes()
			_ = mapped[300<<20] // fault the page in before zeroing
			l := &Log{}
			if err := l.zeroTail(seg, 5000); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 11000)
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[1000:5000], bytes.Repeat([]byte{7}, 4000)) || bytes.ContainsFunc(got[5000:], func(r rune) bool { return r != 0 }) {
				t.Fatal("zeroTail(5000) did not keep [1000,5000) and zero the rest")
			}
			for _, at := range []int64{300 << 20, size - 5} {
				b := make([]byte, 5)
				if _, err := f.ReadAt(b, at); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, make([]byte, 5)) || !bytes.Equal(mapped[at:at+5], make([]byte, 5)) {
					t.Fatalf("bytes at %d not zeroed (file %v, mapping %v)", at, b, mapped[at:at+5])
				}
			}
			if cf.read > 4<<20 {
				t.Fatalf("zeroTail read %d bytes of a 1 GiB sparse segment holding 10 KB", cf.read)
			}
		})
	}
}

// countingFile counts the bytes read through ReadAt and keeps DataRegion
// and, when zeroRange, ZeroRange.
type countingFile struct {
	vfs.File
	zeroRange bool
	read      int64
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	c.read += int64(len(p))
	return c.File.ReadAt(p, off)
}

func (c *countingFile) DataRegion(off, size int64) (int64, int64, error) {
	return vfs.DataRegion(c.File, off, size)
}

func (c *countingFile) ZeroRange(off, n int64) (bool, error) {
	if !c.zeroRange {
		return false, nil
	}
	return vfs.ZeroRange(c.File, off, n)
}

// TestParallelScanStopsAtFirstBadSegment: without a checkpoint every
// segment is verified, in parallel; a corrupt record in an early segment
// still ends the log there (later, valid segments are deleted) and the last
// timestamp is that of the record before it, as a sequential scan finds.
func TestParallelScanStopsAtFirstBadSegment(t *testing.T) {
	for _, victimSeg := range []int{0, 1, 3, 6} {
		t.Run(strconv.Itoa(victimSeg), func(t *testing.T) {
			t.Parallel()
			l, mem, cfg := smallMemLog(t, 8192)
			offs := appendRecords(t, l, "X", 120, func(i int) int { return 200 + i%7*50 })
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			bases := l.SegmentBases()
			if len(bases) < 8 {
				t.Fatalf("%d segments, want at least 8", len(bases))
			}
			// The second record of the victim segment gets a flipped body byte.
			var inSeg []int64
			for _, o := range offs {
				if o >= bases[victimSeg] && o < bases[victimSeg]+cfg.FileSize {
					inSeg = append(inSeg, o)
				}
			}
			victim := inSeg[1]
			var wantTS int64
			for _, r := range readAll(t, l) {
				if r.Offset < victim {
					wantTS = r.View.StoreTimestamp()
				}
			}
			l.abandon()
			if err := mem.Remove(cfg.withDefaults().CheckpointPath); err != nil {
				t.Fatal(err)
			}
			file := cfg.Dir + "/" + segmentName(bases[victimSeg])
			if err := mem.Corrupt(file, victim-bases[victimSeg]+150, []byte{0xFF}); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, cfg)
			defer l.Close()
			r := l.Recovery()
			if r.ScanFrom != 0 || r.End != victim || !r.Truncated || l.MaxOffset() != victim {
				t.Fatalf("recovery %+v (max %d), want a scan from 0 ending at the corrupt record %d", r, l.MaxOffset(), victim)
			}
			if got := len(l.SegmentBases()); got > victimSeg+2 { // + the segment made ahead
				t.Fatalf("%d segments left after the cut in segment %d", got, victimSeg)
			}
			if got := l.lastTS.Load(); got != wantTS {
				t.Fatalf("last store timestamp %d, want %d (the record before the cut)", got, wantTS)
			}
			if n := len(readAll(t, l)); n != indexOf(offs, victim) {
				t.Fatalf("%d records after recovery, want %d", n, indexOf(offs, victim))
			}
		})
	}
}

func indexOf(xs []int64, x int64) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
