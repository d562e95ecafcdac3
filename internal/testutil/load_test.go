package testutil

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoadClosedLoop(t *testing.T) {
	var runs [3]atomic.Int64
	l := StartLoad(3, 0, func(w int) bool {
		runs[w].Add(1)
		time.Sleep(time.Millisecond)
		return true
	})
	time.Sleep(50 * time.Millisecond)
	samples := l.Stop()
	var total int64
	for w := range runs {
		if runs[w].Load() == 0 {
			t.Errorf("worker %d never ran", w)
		}
		total += runs[w].Load()
	}
	if int64(len(samples)) != total {
		t.Fatalf("%d samples for %d runs", len(samples), total)
	}
	for _, s := range samples {
		if s.Lat < time.Millisecond {
			t.Fatalf("sample %+v shorter than the operation", s)
		}
	}
}

func TestLoadOpenLoopIsPacedAndStopsOnFalse(t *testing.T) {
	var runs atomic.Int64
	start := time.Now()
	l := StartLoad(4, 100, func(int) bool { return runs.Add(1) < 10 })
	time.Sleep(300 * time.Millisecond)
	samples := l.Stop()
	// 100/s for 300 ms is about 30 due times; each worker stops on its
	// first false, so all four stop after 10+ runs.
	if n := runs.Load(); n < 10 || n > 13 {
		t.Fatalf("%d runs, want 10 to 13 (4 workers stopping from the 10th)", n)
	}
	if len(samples) != 9 {
		t.Fatalf("%d samples, want the 9 runs that returned true", len(samples))
	}
	for i, s := range samples {
		if s.At.Before(start) || s.At.After(start.Add(200*time.Millisecond)) {
			t.Fatalf("sample %d due at %v after the start", i, s.At.Sub(start))
		}
	}
}

func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"x": 3, "a/y": 5, "a/b/z": 7} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := DirSize(dir); got != 15 {
		t.Fatalf("DirSize = %d, want 15", got)
	}
}
