package kv

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// The span policy ends a table at the end of its first key's key space,
// or earlier at the next edge of a hot range; the end is always past the
// start (Pebble would write an empty table otherwise).
func TestSpanPolicyEnds(t *testing.T) {
	s := &spans{}
	d := &DB{spans: s}
	d.SetHotRanges([][]byte{[]byte("qB\x00"), []byte("qA\x00"), []byte("qA\x00")})
	for _, c := range []struct{ start, end string }{
		{"", "\x00"},
		{"i\x01", "j"},
		{"k", "l"},
		{"q", "qA\x00"},
		{"qA\x00", "qA\x01"},
		{"qA\x00\x00\x07", "qA\x01"},
		{"qA\x01", "qB\x00"},
		{"qAB", "qB\x00"},
		{"qB\x00\xff", "qB\x01"},
		{"qB\x01", "r"},
		{"\xff\x01", ""},
	} {
		_, end, err := s.policy([]byte(c.start))
		if err != nil || string(end) != c.end {
			t.Errorf("policy(%q) = %q, %v; want %q", c.start, end, err, c.end)
		}
		if len(end) > 0 && bytes.Compare(end, []byte(c.start)) <= 0 {
			t.Errorf("policy(%q) ends at %q, not past the start", c.start, end)
		}
	}
	d.SetHotRanges(nil)
	if _, end, _ := s.policy([]byte("qA\x00")); string(end) != "r" {
		t.Errorf("after clearing the hot ranges: end %q", end)
	}
}

// A flush of a memtable that holds several key spaces and hot ranges
// writes no table across their edges.
func TestFlushSplitsAtHotRanges(t *testing.T) {
	db, err := Open(DefaultConfig(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hot := [][]byte{[]byte("qT\x00\x00\x00\x00\x01"), []byte("qT\x00\x00\x00\x00\x02")}
	db.SetHotRanges(hot)
	b := db.NewBatch()
	for i := range 1000 {
		for _, k := range []string{
			fmt.Sprintf("i%08d", i),
			fmt.Sprintf("qT\x00\x00\x00\x00\x00%08d", i),
			fmt.Sprintf("qT\x00\x00\x00\x00\x01%08d", i),
			fmt.Sprintf("qT\x00\x00\x00\x00\x02%08d", i),
			fmt.Sprintf("qT\x00\x00\x00\x00\x03%08d", i),
		} {
			if err := b.Set([]byte(k), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	// The edges: key spaces 'i' and 'q', and the hot queues 1 and 2
	// (queues 0 and 3 are not hot).
	ranges := [][2]string{{"i", "j"}, {"q", "qT\x00\x00\x00\x00\x01"}, {"qT\x00\x00\x00\x00\x01", "qT\x00\x00\x00\x00\x02"}, {"qT\x00\x00\x00\x00\x02", "qT\x00\x00\x00\x00\x03"}, {"qT\x00\x00\x00\x00\x03", "r"}}
	n := 0
	for _, l := range levels {
		for _, tb := range l {
			n++
			lo, hi := string(tb.Smallest.UserKey), string(tb.Largest.UserKey)
			in := false
			for _, r := range ranges {
				if lo >= r[0] && hi < r[1] {
					in = true
				}
			}
			if !in {
				t.Errorf("table %s spans an edge: [%q, %q]", tb.FileNum, lo, hi)
			}
		}
	}
	if n != len(ranges) {
		t.Errorf("%d tables, want one per range (%d)", n, len(ranges))
	}
}
