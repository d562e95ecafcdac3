package commitlog

import (
	"bytes"
	"os"
	"path/filepath"
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
