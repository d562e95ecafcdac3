package commitlog

import (
	"bytes"
	"io"
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// TestIteratorReadBuffer: an iterator given a ReadBuffer reads a mapped
// log (the default FS maps segments) with ReadAt into that buffer, record
// for record what an iterator over the mapping reads, across segment ends
// and records that straddle the read-ahead, and a second iterator finds
// the buffer where the first left it.
func TestIteratorReadBuffer(t *testing.T) {
	cfg := testConfig(vfs.OS(), t.TempDir())
	smallSegments(&cfg, 8<<10)
	l := mustOpen(t, cfg)
	defer l.Close()
	offs := appendRecords(t, l, "T", 60, func(i int) int { return 100 + 37*i%1500 })
	want := readAll(t, l)
	if len(want) != len(offs) {
		t.Fatalf("read %d records, appended %d", len(want), len(offs))
	}

	var buf []byte
	for _, from := range []int{0, len(want) / 2} {
		it := l.NewIterator(want[from].Offset, IteratorOptions{ReadBuffer: &buf})
		for i := from; ; i++ {
			r, err := it.Next()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("from %d: EOF after %d records, want %d", from, i, len(want))
				}
				break
			}
			if err != nil {
				t.Fatalf("from %d: record %d: %v", from, i, err)
			}
			if r.Offset != want[i].Offset || !bytes.Equal(r.View.Bytes(), want[i].View.Bytes()) {
				t.Fatalf("from %d: record %d at %d differs from the mapped read", from, i, r.Offset)
			}
			if seg := it.r.seg; seg.data != nil && len(seg.data) > 0 && &r.View.Bytes()[0] == &seg.data[r.Offset-seg.base] {
				t.Fatalf("record %d was read through the mapping", i)
			}
		}
		it.Close()
		if cap(buf) == 0 {
			t.Fatal("the iterator left no buffer behind")
		}
	}
}
