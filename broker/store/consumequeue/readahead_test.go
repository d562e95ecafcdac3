package consumequeue

import "testing"

// Reads of 32 along a queue are served from the entries read ahead, and
// what a truncation or a deletion changed is read again, not served from
// a window read before it.
func TestReadAheadFollowsTruncationAndDeletion(t *testing.T) {
	s := openTest(t, t.TempDir())
	put(t, s, "T", 0, 0, 1000, 0)
	read := func(off int64, n int) []Entry {
		t.Helper()
		es, err := s.Entries("T", 0, off, n)
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	expect := func(es []Entry, from int64, base int64, n int) {
		t.Helper()
		if len(es) != n {
			t.Fatalf("%d entries from %d, want %d", len(es), from, n)
		}
		for i, e := range es {
			off := from + int64(i)
			if e.Offset != off || e.CommitLogOffset != base+off*100 {
				t.Fatalf("entry %d: %+v, want offset %d at %d", i, e, off, base+off*100)
			}
		}
	}
	for off := int64(0); off < 1000; off += 32 {
		expect(read(off, 32), off, 0, int(min(32, 1000-off)))
	}
	if len(s.ahead.windows) != 1 {
		t.Fatalf("%d windows kept", len(s.ahead.windows))
	}
	// A window [0, 256) is kept; the queue is cut at 100 and 100.. are
	// written again elsewhere in the CommitLog.
	expect(read(0, 32), 0, 0, 32)
	if err := s.TruncateAbove(100 * 100); err != nil {
		t.Fatal(err)
	}
	put(t, s, "T", 0, 100, 200, 1_000_000)
	expect(read(96, 4), 96, 0, 4)
	expect(read(100, 32), 100, 1_000_000, 32)
	// Deleted and recreated: the new entries.
	expect(read(0, 32), 0, 0, 32)
	if err := s.DeleteTopic("T"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "T", 0, 0, 50, 2_000_000)
	expect(read(0, 32), 0, 2_000_000, 32)
	expect(read(32, 32), 32, 2_000_000, 18)
}
