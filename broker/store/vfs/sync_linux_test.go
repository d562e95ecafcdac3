//go:build linux

package vfs

import (
	"path/filepath"
	"testing"
)

// TestDataRegion: on a sparse file, DataRegion never skips a written byte
// (file systems may report more as data, never less) and reports nothing
// after the last data.
func TestDataRegion(t *testing.T) {
	const size = 64 << 20
	f, err := OS().Create(filepath.Join(t.TempDir(), "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	writes := []int64{0, 5 << 20, 40<<20 + 123}
	for _, off := range writes {
		if _, err := f.WriteAt([]byte("data"), off); err != nil {
			t.Fatal(err)
		}
	}
	// Walk the regions as zeroTail does; every write must be inside one.
	covered := map[int64]bool{}
	var regions [][2]int64
	for p := int64(0); p < size; {
		start, end, err := DataRegion(f, p, size)
		if err != nil {
			t.Fatal(err)
		}
		if start < p || end > size || start > end {
			t.Fatalf("DataRegion(%d) = [%d, %d)", p, start, end)
		}
		if start == end {
			if start != size {
				t.Fatalf("DataRegion(%d) = empty at %d, want %d", p, start, size)
			}
			break
		}
		regions = append(regions, [2]int64{start, end})
		for _, w := range writes {
			if w >= start && w+4 <= end {
				covered[w] = true
			}
		}
		p = end
	}
	for _, w := range writes {
		if !covered[w] {
			t.Errorf("write at %d outside every region %v", w, regions)
		}
	}
	t.Logf("regions: %v", regions)
	// Past the end: nothing; a file without the interface: all of it.
	if s, e, err := DataRegion(f, size, size); err != nil || s != size || e != size {
		t.Errorf("DataRegion(size) = %d, %d, %v", s, e, err)
	}
	mem := NewMem()
	mf, err := mem.Create("m")
	if err != nil {
		t.Fatal(err)
	}
	if s, e, err := DataRegion(mf, 10, 100); err != nil || s != 10 || e != 100 {
		t.Errorf("MemFS DataRegion = %d, %d, %v; want the whole rest", s, e, err)
	}
}

// TestWriteBack: an OS file writes a range back (sync_file_range with
// waits accepts the flags), through FaultFS too, and the data stays.
func TestWriteBack(t *testing.T) {
	for _, name := range []string{"os", "fault"} {
		t.Run(name, func(t *testing.T) {
			var fsys FS = OS()
			if name == "fault" {
				fsys = NewFaultFS(OS())
			}
			f, err := fsys.Create(filepath.Join(t.TempDir(), "wb"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, ok := f.(WriteBacker); !ok {
				t.Fatalf("%T is not a WriteBacker", f)
			}
			data := make([]byte, 1<<20)
			for i := range data {
				data[i] = byte(i)
			}
			if _, err := f.WriteAt(data, 4096); err != nil {
				t.Fatal(err)
			}
			for _, r := range [][2]int64{{4096, 1 << 20}, {0, 0}, {0, 8 << 20}} {
				if err := WriteBack(f, r[0], r[1]); err != nil {
					t.Fatalf("WriteBack(%d, %d): %v", r[0], r[1], err)
				}
			}
			got := make([]byte, len(data))
			if _, err := f.ReadAt(got, 4096); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i] != data[i] {
					t.Fatalf("byte %d changed", i)
				}
			}
		})
	}
}
