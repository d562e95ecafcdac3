package commitlog

import (
	"strings"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// segmentFiles lists the segment files in the log's directory.
func segmentFiles(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, ok := parseSegmentName(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// With PrepareNext a roll adopts the segment made ahead, a clean Close
// leaves no empty one behind, and a truncation across segments removes it
// first so that the directory never has a gap.
func TestPrepareNext(t *testing.T) {
	mem := vfs.NewMem()
	cfg := testConfig(mem, "/p")
	smallSegments(&cfg, 8192)
	cfg.PrepareNext = true
	l := mustOpen(t, cfg)
	var recs [][]byte
	for i := range 40 {
		rec := record(t, "P", 0, i, 700)
		recs = append(recs, rec)
		mustAppend(t, l, rec)
	}
	segs := len(l.segs)
	if segs < 3 {
		t.Fatalf("%d segments, want a few rolls", segs)
	}
	// The spare is made in the background: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for len(segmentFiles(t, mem, cfg.Dir)) != segs+1 {
		if time.Now().After(deadline) {
			t.Fatalf("files %v, want %d segments and the next one", segmentFiles(t, mem, cfg.Dir), segs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := readAll(t, l)
	if len(got) != len(recs) {
		t.Fatalf("read %d records, appended %d", len(got), len(recs))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if files := segmentFiles(t, mem, cfg.Dir); len(files) != segs {
		t.Fatalf("after Close: files %v, want %d (no spare)", files, segs)
	}

	l = mustOpen(t, cfg)
	if got := readAll(t, l); len(got) != len(recs) {
		t.Fatalf("after reopen: %d records, want %d", len(got), len(recs))
	}
	deadline = time.Now().Add(5 * time.Second)
	for len(segmentFiles(t, mem, cfg.Dir)) != segs+1 {
		if time.Now().After(deadline) {
			t.Fatalf("after reopen no spare: %v", segmentFiles(t, mem, cfg.Dir))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Truncate into the first segment: the later ones and the spare go.
	if err := l.Truncate(got[2].Offset); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, cfg)
	defer l.Close()
	if got := readAll(t, l); len(got) != 2 {
		t.Fatalf("after truncate and reopen: %d records, want 2", len(got))
	}
	// Appending again rolls into fresh segments.
	for i := range 20 {
		mustAppend(t, l, record(t, "P", 0, 100+i, 700))
	}
	if got := readAll(t, l); len(got) != 22 {
		t.Fatalf("after appending again: %d records, want 22", len(got))
	}
	for _, f := range segmentFiles(t, mem, cfg.Dir) {
		if strings.TrimLeft(f, "0123456789") != "" {
			t.Fatalf("unexpected file %q", f)
		}
	}
}
