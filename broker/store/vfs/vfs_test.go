package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// testFS runs the same behaviour checks against every implementation.
func testFS(t *testing.T, fsys FS, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(fsys.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	name := filepath.Join(dir, "b")
	f, err := fsys.Create(name)
	must(err)
	must(f.Truncate(8192))
	if _, err := f.WriteAt([]byte("hello"), 4096); err != nil {
		t.Fatal(err)
	}
	must(f.Sync())
	if sz, _ := f.Size(); sz != 8192 {
		t.Fatalf("size %d", sz)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 4096); err != nil || string(buf) != "hello" {
		t.Fatalf("read %q %v", buf, err)
	}
	if n, err := f.ReadAt(buf, 8190); n != 2 || err != io.EOF {
		t.Fatalf("read at end: %d %v", n, err)
	}
	if m, ok := f.(Mmapper); ok {
		mp, err := m.Mmap(8192)
		must(err)
		if _, err := f.WriteAt([]byte("later"), 100); err != nil {
			t.Fatal(err)
		}
		if string(mp.Bytes()[100:105]) != "later" || string(mp.Bytes()[4096:4101]) != "hello" {
			t.Fatal("mapping does not see writes")
		}
		if a, ok := mp.(ReadAdviser); ok { // read-ahead off and on: the bytes stay
			must(a.AdviseRandom(true))
			must(a.AdviseRandom(false))
			if string(mp.Bytes()[4096:4101]) != "hello" {
				t.Fatal("advice changed the bytes")
			}
		}
		must(mp.Close())
	}
	must(f.Close())
	if _, err := f.ReadAt(buf, 0); err == nil {
		t.Fatal("read after close")
	}
	g, err := fsys.Create(filepath.Join(dir, "a"))
	must(err)
	must(g.Close())
	names, err := fsys.List(dir)
	must(err)
	if !slices.Equal(names, []string{"a", "b", "sub"}) {
		t.Fatalf("list %v", names)
	}
	must(fsys.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "c")))
	must(fsys.Remove(filepath.Join(dir, "c")))
	if _, err := fsys.Stat(filepath.Join(dir, "c")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat removed: %v", err)
	}
	must(fsys.SyncDir(dir))
	r, err := fsys.Open(name)
	must(err)
	if _, err := r.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("write to read-only file")
	}
	must(r.Close())
	if _, err := fsys.OpenReadWrite(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open missing: %v", err)
	}
	u, err := fsys.DiskUsage(dir)
	must(err)
	if u.Total == 0 || u.UsedRatio() < 0 || u.UsedRatio() > 1 {
		t.Fatalf("usage %+v", u)
	}
}

func TestOS(t *testing.T)  { testFS(t, OS(), t.TempDir()) }
func TestMem(t *testing.T) { testFS(t, NewMem(), "/data") }
func TestFaultPassThrough(t *testing.T) {
	testFS(t, NewFaultFS(OS()), t.TempDir())
	testFS(t, NewFaultFS(NewMem()), "/data")
}

func TestMemCrashDropsUnsynced(t *testing.T) {
	m := NewMem()
	_ = m.MkdirAll("/d", 0o755)
	f, _ := m.Create("/d/f")
	_, _ = f.WriteAt([]byte("synced"), 0)
	_ = f.Sync()
	_ = m.SyncDir("/d")
	_, _ = f.WriteAt([]byte("LOST"), 0)
	_, _ = f.WriteAt([]byte("tail"), 6)
	g, _ := m.Create("/d/unsynced-entry") // never SyncDir'd
	_, _ = g.WriteAt([]byte("x"), 0)
	_ = g.Sync()
	_ = m.Remove("/d/f") // removal not durable either
	m.Crash(CrashOptions{})

	names, _ := m.List("/d")
	if !slices.Equal(names, []string{"f"}) {
		t.Fatalf("names after crash %v", names)
	}
	r, _ := m.Open("/d/f")
	buf := make([]byte, 16)
	n, _ := r.ReadAt(buf, 0)
	if string(buf[:n]) != "synced" {
		t.Fatalf("content %q", buf[:n])
	}
}

func TestMemCrashTornPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		m := NewMem()
		_ = m.MkdirAll("/d", 0o755)
		f, _ := m.Create("/d/f")
		_ = m.SyncDir("/d")
		var want []byte
		for i := range 5 {
			chunk := bytes.Repeat([]byte{byte('a' + i)}, 10)
			_, _ = f.WriteAt(chunk, int64(len(want)))
			want = append(want, chunk...)
		}
		m.Crash(CrashOptions{Rand: rng})
		r, _ := m.Open("/d/f")
		got := make([]byte, 100)
		n, _ := r.ReadAt(got, 0)
		// What survives is a prefix of what was written, in order.
		if !bytes.Equal(got[:n], want[:n]) {
			t.Fatalf("survivor %q is not a prefix of %q", got[:n], want)
		}
	}
}

func TestFaultInjection(t *testing.T) {
	ffs := NewFaultFS(NewMem())
	_ = ffs.MkdirAll("/d", 0o755)
	f, _ := ffs.Create("/d/f")

	ffs.ShortWriteOnce(3)
	n, err := f.WriteAt([]byte("abcdef"), 0)
	if n != 3 || !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("short write: %d %v", n, err)
	}
	if n, err := f.WriteAt([]byte("abcdef"), 0); n != 6 || err != nil {
		t.Fatalf("one-shot: %d %v", n, err)
	}

	ffs.FailWrites(syscall.EIO)
	if n, err := f.WriteAt([]byte("x"), 0); n != 0 || !errors.Is(err, syscall.EIO) {
		t.Fatalf("write err: %d %v", n, err)
	}
	ffs.FailWrites(nil)

	ffs.FailSyncs(syscall.EIO)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync err: %v", err)
	}
	if err := ffs.SyncDir("/d"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("syncdir err: %v", err)
	}
	ffs.FailSyncs(nil)

	ffs.DiskFullAfter(10)
	if _, err := f.WriteAt(make([]byte, 8), 0); err != nil {
		t.Fatal(err)
	}
	n, err = f.WriteAt(make([]byte, 8), 8)
	if n != 2 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("enospc: %d %v", n, err)
	}
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("still full: %v", err)
	}
	ffs.Reset()

	ffs.SetHook(func(op Op) error {
		if op.Kind == OpCreate {
			return ErrInjected
		}
		return nil
	})
	if _, err := ffs.Create("/d/g"); !errors.Is(err, ErrInjected) {
		t.Fatalf("hook: %v", err)
	}
	ffs.SetDiskUsage(&DiskUsage{Total: 100, Free: 10})
	if u, _ := ffs.DiskUsage("/d"); u.UsedRatio() != 0.9 {
		t.Fatalf("usage %v", u.UsedRatio())
	}
	if w, s, b := ffs.Stats(); w == 0 || s == 0 || b == 0 {
		t.Fatalf("stats %d %d %d", w, s, b)
	}
}

func TestFaultKeepsMmap(t *testing.T) {
	ffs := NewFaultFS(OS())
	f, err := ffs.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.(Mmapper); !ok {
		t.Fatal("OS file behind FaultFS should stay mappable")
	}
	g, _ := NewFaultFS(NewMem()).Create("/f")
	if _, ok := g.(Mmapper); ok {
		t.Fatal("MemFS file should not claim to be mappable")
	}
}
