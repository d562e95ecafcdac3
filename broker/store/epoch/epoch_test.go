package epoch

import (
	"errors"
	"math"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/internal/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }

const path = "/store/epochFileCheckpoint"

func open(t *testing.T, fsys vfs.FS, maxOffset int64) *Cache {
	t.Helper()
	if err := fsys.MkdirAll("/store", 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Open(fsys, path, maxOffset)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func entries(pairs ...int64) []Entry {
	var out []Entry
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Entry{Epoch: int32(pairs[i]), Start: pairs[i+1]})
	}
	return out
}

func TestEncodeDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Entry
	}{
		{"empty", nil},
		{"one", entries(1, 0)},
		{"several", entries(1, 0, 2, 300, 3, 500)},
		{"zero-length epoch", entries(1, 0, 2, 300, 3, 300)},
		{"large offsets", entries(7, 1<<40, 9, math.MaxInt64/2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(Encode(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.in) {
				t.Fatalf("round trip %v -> %v", tc.in, got)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good := string(Encode(entries(1, 0, 2, 300)))
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"no checksum line", "1\n"},
		{"count too high", "3" + good[1:]},
		{"bad count", "x" + good[1:]},
		{"checksum mismatch", "2\n12345\n1-0\n2-300\n"},
		{"bad entry", "1\n0\n1:0\n"},
		{"negative offset", "1\n0\n1--5\n"},
		{"epochs not increasing", "2\n0\n2-0\n2-300\n"},
		{"starts decreasing", "2\n0\n1-300\n2-0\n"},
		{"epoch out of int32", "1\n0\n4294967296-0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := Decode([]byte(tc.in)); err == nil {
				t.Fatalf("Decode(%q) = %v, want an error", tc.in, got)
			}
		})
	}
	// A stored checksum of 0 means "not checked", as Apache writes it.
	if got, err := Decode([]byte("1\n0\n4-4096\n")); err != nil || !slices.Equal(got, entries(4, 4096)) {
		t.Fatalf("unchecked file: %v, %v", got, err)
	}
}

func TestCacheOperations(t *testing.T) {
	type step struct {
		op      string // append, suffixOffset, suffixEpoch, prefixOffset
		a, b    int64
		wantErr bool
		want    []Entry
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"append grows", []step{
			{op: "append", a: 1, b: 0, want: entries(1, 0)},
			{op: "append", a: 2, b: 300, want: entries(1, 0, 2, 300)},
			{op: "append", a: 3, b: 300, want: entries(1, 0, 2, 300, 3, 300)}, // zero-length epoch 2 is kept
		}},
		{"append refuses stale", []step{
			{op: "append", a: 2, b: 100, want: entries(2, 100)},
			{op: "append", a: 2, b: 200, wantErr: true, want: entries(2, 100)},
			{op: "append", a: 1, b: 200, wantErr: true, want: entries(2, 100)},
			{op: "append", a: 3, b: 50, wantErr: true, want: entries(2, 100)},
		}},
		{"suffix by offset", []step{
			{op: "append", a: 1, b: 0}, {op: "append", a: 2, b: 300}, {op: "append", a: 3, b: 500},
			{op: "suffixOffset", a: 500, want: entries(1, 0, 2, 300)},
			{op: "suffixOffset", a: 301, want: entries(1, 0, 2, 300)},
			{op: "suffixOffset", a: 0, want: nil},
		}},
		{"suffix by epoch", []step{
			{op: "append", a: 1, b: 0}, {op: "append", a: 2, b: 300}, {op: "append", a: 5, b: 500},
			{op: "suffixEpoch", a: 3, want: entries(1, 0, 2, 300)},
			{op: "suffixEpoch", a: 1, want: nil},
		}},
		{"prefix by offset", []step{
			{op: "append", a: 1, b: 0}, {op: "append", a: 2, b: 300}, {op: "append", a: 3, b: 500},
			{op: "prefixOffset", a: 299, want: entries(1, 0, 2, 300, 3, 500)},
			{op: "prefixOffset", a: 300, want: entries(2, 300, 3, 500)},
			{op: "prefixOffset", a: 10000, want: entries(3, 500)}, // the last entry stays
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			c := open(t, fsys, math.MaxInt64)
			for i, s := range tc.steps {
				var err error
				switch s.op {
				case "append":
					err = c.Append(int32(s.a), s.b)
				case "suffixOffset":
					err = c.TruncateSuffixByOffset(s.a)
				case "suffixEpoch":
					err = c.TruncateSuffixByEpoch(int32(s.a))
				case "prefixOffset":
					err = c.TruncatePrefixByOffset(s.a)
				}
				if (err != nil) != s.wantErr {
					t.Fatalf("step %d %s(%d, %d): err %v, wantErr %v", i, s.op, s.a, s.b, err, s.wantErr)
				}
				if s.want == nil && s.op == "append" && !s.wantErr {
					continue
				}
				if got := c.Entries(); !slices.Equal(got, s.want) {
					t.Fatalf("step %d %s: entries %v, want %v", i, s.op, got, s.want)
				}
				// Every change is on disk before it is visible.
				if reread := open(t, fsys, math.MaxInt64).Entries(); !slices.Equal(reread, c.Entries()) {
					t.Fatalf("step %d: file holds %v, memory %v", i, reread, c.Entries())
				}
			}
		})
	}
}

func TestFind(t *testing.T) {
	c := open(t, vfs.NewMem(), math.MaxInt64)
	for _, e := range entries(1, 0, 2, 300, 3, 300, 4, 500) {
		if err := c.Append(e.Epoch, e.Start); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		off       int64
		wantEpoch int32
		ok        bool
	}{
		{0, 1, true}, {299, 1, true}, {300, 3, true}, // epoch 2 has no bytes
		{499, 3, true}, {500, 4, true}, {1 << 50, 4, true}, {-1, 0, false},
	} {
		r, ok := c.Find(tc.off)
		if ok != tc.ok || r.Epoch != tc.wantEpoch {
			t.Errorf("Find(%d) = %+v, %v; want epoch %d, %v", tc.off, r, ok, tc.wantEpoch, tc.ok)
		}
	}
	if got := c.Ranges(800); got[len(got)-1].End != 800 || got[0].End != 300 {
		t.Fatalf("Ranges: %+v", got)
	}
}

func TestOpenDropsEntriesBeyondLogEnd(t *testing.T) {
	fsys := vfs.NewMem()
	c := open(t, fsys, math.MaxInt64)
	for _, e := range entries(1, 0, 2, 300, 3, 500) {
		if err := c.Append(e.Epoch, e.Start); err != nil {
			t.Fatal(err)
		}
	}
	// The log was cut to 400 and the process died before the epoch file
	// followed: epoch 3 starts past the end.
	if got := open(t, fsys, 400).Entries(); !slices.Equal(got, entries(1, 0, 2, 300)) {
		t.Fatalf("after reopen at 400: %v", got)
	}
	if got := open(t, fsys, math.MaxInt64).Entries(); !slices.Equal(got, entries(1, 0, 2, 300)) {
		t.Fatalf("the drop was not persisted: %v", got)
	}
}

func TestBackupFile(t *testing.T) {
	fsys := vfs.NewMem()
	c := open(t, fsys, math.MaxInt64)
	if err := c.Append(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Append(2, 300); err != nil {
		t.Fatal(err)
	}
	// A torn main file: the reader falls back to .bak (the previous list).
	f, err := fsys.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("2\n99\n1-0\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := open(t, fsys, math.MaxInt64).Entries(); !slices.Equal(got, entries(1, 0)) {
		t.Fatalf("fallback to .bak: %v", got)
	}
	// Both unreadable: an error, never a guessed (empty) history.
	for _, p := range []string{path, path + ".bak"} {
		f, err := fsys.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("garbage"), 0)
		f.Close()
	}
	if _, err := Open(fsys, path, math.MaxInt64); err == nil {
		t.Fatal("Open of two unreadable files succeeded")
	}
	// Neither present: an empty list.
	fresh := vfs.NewMem()
	if got := open(t, fresh, 0).Entries(); len(got) != 0 {
		t.Fatalf("fresh list: %v", got)
	}
}

// TestDiskFaults: a failing write, sync, rename or directory sync leaves
// the list as it was, in memory and on disk, and the next attempt after the
// fault clears succeeds.
func TestDiskFaults(t *testing.T) {
	for _, kind := range []vfs.OpKind{vfs.OpCreate, vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpSyncDir} {
		for _, errno := range []error{syscall.EIO, syscall.ENOSPC} {
			t.Run(kind.String()+"/"+errno.Error(), func(t *testing.T) {
				mem := vfs.NewMem()
				fsys := vfs.NewFaultFS(mem)
				c := open(t, fsys, math.MaxInt64)
				if err := c.Append(1, 0); err != nil {
					t.Fatal(err)
				}
				fsys.SetHook(func(op vfs.Op) error {
					if op.Kind == kind {
						return &os.PathError{Op: kind.String(), Path: op.Path, Err: errno}
					}
					return nil
				})
				err := c.Append(2, 300)
				if !errors.Is(err, errno) {
					t.Fatalf("Append under %v fault: %v", kind, err)
				}
				if got := c.Entries(); !slices.Equal(got, entries(1, 0)) {
					t.Fatalf("memory changed by a failed append: %v", got)
				}
				fsys.Reset()
				onDisk := open(t, mem, math.MaxInt64).Entries()
				// A failed directory sync comes after the rename: the new
				// list may be on disk, which is fine (the caller retries
				// the same append, or a restart reads a list one step
				// ahead). Anything else keeps the old list.
				if kind != vfs.OpSyncDir && !slices.Equal(onDisk, entries(1, 0)) {
					t.Fatalf("disk holds %v after a failed %v", onDisk, kind)
				}
				if err := c.Append(2, 300); err != nil {
					t.Fatalf("append after the fault cleared: %v", err)
				}
				if got := open(t, mem, math.MaxInt64).Entries(); !slices.Equal(got, entries(1, 0, 2, 300)) {
					t.Fatalf("after recovery: %v", got)
				}
			})
		}
	}
}

func TestCommonPoint(t *testing.T) {
	for _, tc := range []struct {
		name          string
		local         []Entry
		localMax      int64
		master        []Entry
		masterMax     int64
		want          int64
		noCommonPoint bool
	}{
		{"slave behind in the same epoch", entries(1, 0, 2, 300, 3, 500), 700, entries(1, 0, 2, 300, 3, 500, 4, 800), 900, 700, false},
		{"slave ahead of the master's epoch end", entries(1, 0, 2, 300, 3, 500), 850, entries(1, 0, 2, 300, 3, 500, 4, 800), 900, 800, false},
		{"diverged start in the last epoch", entries(1, 0, 2, 300, 3, 450), 700, entries(1, 0, 2, 300, 3, 500), 900, 450, false},
		{"old master rejoins with an unacked tail", entries(1, 0, 2, 300), 1000, entries(1, 0, 2, 300, 3, 600), 1200, 600, false},
		{"identical", entries(1, 0, 5, 100), 400, entries(1, 0, 5, 100), 400, 400, false},
		{"new replica", nil, 0, entries(1, 0), 100, 0, false},
		{"zero-length epochs on both", entries(1, 0, 2, 300, 3, 300), 300, entries(1, 0, 2, 300, 3, 300, 4, 300), 500, 300, false},
		{"old master of an empty log rejoins", entries(1, 0), 0, entries(2, 0), 0, 0, false},
		{"old master of an empty log rejoins a written one", entries(1, 0), 0, entries(2, 0), 500, 0, false},
		{"empty epoch after data, unknown to the master", entries(1, 0, 5, 100), 100, entries(1, 0, 2, 50, 3, 100), 300, 50, false},
		{"empty last epoch of a master that wrote nothing", entries(1, 0, 2, 300), 300, entries(1, 0, 3, 300), 900, 300, false},
		{"nothing in common", entries(7, 0), 100, entries(1, 0, 2, 50), 200, 0, true},
		{"nothing in common behind an empty epoch", entries(7, 0, 8, 100), 100, entries(1, 0, 2, 50), 200, 0, true},
		{"same epoch different start everywhere", entries(1, 10), 100, entries(1, 0), 200, 0, true},
		{"beyond 2 GiB", entries(1, 0, 2, 3<<31), 4 << 31, entries(1, 0, 2, 3<<31, 3, 7<<30), 5 << 31, 7 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CommonPoint(tc.local, tc.localMax, tc.master, tc.masterMax)
			if tc.noCommonPoint {
				if !errors.Is(err, ErrNoCommonPoint) {
					t.Fatalf("got %d, %v; want ErrNoCommonPoint", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CommonPoint = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// FuzzDecode: the decoder never panics, and whatever it accepts encodes
// back to a list it accepts with the same entries.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(entries(1, 0, 2, 300)))
	f.Add([]byte("1\n0\n4-4096\n"))
	f.Add([]byte("2\n-123\n1-0\r\n2-5\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Decode(Encode(got))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("re-decode of %v: %v, %v", got, again, err)
		}
	})
}
