package vfs

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// OpKind names the operations FaultFS can fail.
type OpKind int

const (
	OpCreate OpKind = iota
	OpOpen
	OpWrite
	OpSync
	OpSyncDir
	OpTruncate
	OpRemove
	OpRename
	OpRead
	OpAllocate
	OpWriteBack
)

func (k OpKind) String() string {
	return [...]string{"create", "open", "write", "sync", "syncdir", "truncate", "remove", "rename", "read", "allocate", "writeback"}[k]
}

// Op describes one operation offered to a FaultFS hook.
type Op struct {
	Kind OpKind
	Path string
	Off  int64
	Len  int
}

// ErrInjected is the default error of injected faults.
var ErrInjected = errors.New("vfs: injected fault")

// FaultFS wraps an FS and fails operations on demand. The knobs model what
// storage really does: a write that lands only partly, a write or fsync that
// fails (EIO), a disk that fills up (ENOSPC after a byte budget). Errors are
// returned as *os.PathError wrapping the cause, like the OS does. Safe for
// concurrent use; knobs may change while the store runs.
type FaultFS struct {
	inner FS

	mu         sync.Mutex
	writeErr   error
	syncErr    error
	shortWrite int   // bytes the next write lands before failing; <0 off
	space      int64 // bytes left before ENOSPC; <0 unlimited
	hook       func(Op) error
	usage      *DiskUsage
	writes     int
	syncs      int
	written    int64
}

// NewFaultFS wraps inner with no faults enabled.
func NewFaultFS(inner FS) *FaultFS {
	return &FaultFS{inner: inner, shortWrite: -1, space: -1}
}

// setLocked sets *field to v under mu: the fault and clock setters run
// while other goroutines read the fields.
func setLocked[T any](mu sync.Locker, field *T, v T) {
	mu.Lock()
	*field = v
	mu.Unlock()
}

// FailWrites makes every write fail with err (nil clears) without writing.
func (f *FaultFS) FailWrites(err error) {
	setLocked(&f.mu, &f.writeErr, err)
}

// FailSyncs makes every file and directory sync fail with err (nil clears).
func (f *FaultFS) FailSyncs(err error) {
	setLocked(&f.mu, &f.syncErr, err)
}

// ShortWriteOnce makes the next write land only its first n bytes and then
// fail with io.ErrShortWrite.
func (f *FaultFS) ShortWriteOnce(n int) {
	setLocked(&f.mu, &f.shortWrite, n)
}

// DiskFullAfter lets n more bytes be written; the write that crosses the
// budget lands what fits and fails with ENOSPC, as do all later writes.
// A negative n removes the limit.
func (f *FaultFS) DiskFullAfter(n int64) {
	setLocked(&f.mu, &f.space, n)
}

// SetHook installs a function consulted before every operation; a non-nil
// result fails the operation (nothing reaches the inner FS).
func (f *FaultFS) SetHook(h func(Op) error) {
	setLocked(&f.mu, &f.hook, h)
}

// SetDiskUsage overrides what DiskUsage reports (nil restores the inner
// FS's answer).
func (f *FaultFS) SetDiskUsage(u *DiskUsage) {
	setLocked(&f.mu, &f.usage, u)
}

// Reset clears every fault.
func (f *FaultFS) Reset() {
	f.mu.Lock()
	f.writeErr, f.syncErr, f.shortWrite, f.space, f.hook, f.usage = nil, nil, -1, -1, nil, nil
	f.mu.Unlock()
}

// Stats returns the number of writes and syncs attempted and bytes written.
func (f *FaultFS) Stats() (writes, syncs int, written int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, f.syncs, f.written
}

func (f *FaultFS) check(op Op) error {
	f.mu.Lock()
	h := f.hook
	f.mu.Unlock()
	if h != nil {
		if err := h(op); err != nil {
			return &os.PathError{Op: op.Kind.String(), Path: op.Path, Err: err}
		}
	}
	return nil
}

// planWrite decides how many of n bytes a write lands and with what error.
func (f *FaultFS) planWrite(n int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	switch {
	case f.writeErr != nil:
		return 0, f.writeErr
	case f.shortWrite >= 0:
		k := min(f.shortWrite, n)
		f.shortWrite = -1
		return k, io.ErrShortWrite
	case f.space >= 0 && int64(n) > f.space:
		k := int(f.space)
		f.space = 0
		return k, syscall.ENOSPC
	}
	if f.space >= 0 {
		f.space -= int64(n)
	}
	return n, nil
}

func (f *FaultFS) wrap(file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	ff := &faultFile{File: file, fs: f}
	if m, ok := file.(Mmapper); ok {
		return &faultMmapFile{faultFile: ff, m: m}, nil
	}
	return ff, nil
}

func (f *FaultFS) Create(name string) (File, error) {
	if err := f.check(Op{Kind: OpCreate, Path: name}); err != nil {
		return nil, err
	}
	return f.wrap(f.inner.Create(name))
}

func (f *FaultFS) Open(name string) (File, error) {
	if err := f.check(Op{Kind: OpOpen, Path: name}); err != nil {
		return nil, err
	}
	return f.wrap(f.inner.Open(name))
}

func (f *FaultFS) OpenReadWrite(name string) (File, error) {
	if err := f.check(Op{Kind: OpOpen, Path: name}); err != nil {
		return nil, err
	}
	return f.wrap(f.inner.OpenReadWrite(name))
}

func (f *FaultFS) Remove(name string) error {
	if err := f.check(Op{Kind: OpRemove, Path: name}); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.check(Op{Kind: OpRename, Path: oldname}); err != nil {
		return err
	}
	return f.inner.Rename(oldname, newname)
}

func (f *FaultFS) MkdirAll(dir string, perm os.FileMode) error { return f.inner.MkdirAll(dir, perm) }
func (f *FaultFS) List(dir string) ([]string, error)           { return f.inner.List(dir) }
func (f *FaultFS) Stat(name string) (os.FileInfo, error)       { return f.inner.Stat(name) }

func (f *FaultFS) SyncDir(dir string) error {
	if err := f.check(Op{Kind: OpSyncDir, Path: dir}); err != nil {
		return err
	}
	f.mu.Lock()
	err := f.syncErr
	f.mu.Unlock()
	if err != nil {
		return &os.PathError{Op: "syncdir", Path: dir, Err: err}
	}
	return f.inner.SyncDir(dir)
}

func (f *FaultFS) DiskUsage(path string) (DiskUsage, error) {
	f.mu.Lock()
	u := f.usage
	f.mu.Unlock()
	if u != nil {
		return *u, nil
	}
	return f.inner.DiskUsage(path)
}

type faultFile struct {
	File
	fs *FaultFS
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(Op{Kind: OpWrite, Path: f.Name(), Off: off, Len: len(p)}); err != nil {
		return 0, err
	}
	n, ferr := f.fs.planWrite(len(p))
	if n > 0 {
		w, err := f.File.WriteAt(p[:n], off)
		f.fs.mu.Lock()
		f.fs.written += int64(w)
		f.fs.mu.Unlock()
		if err != nil {
			return w, err
		}
	}
	if ferr != nil {
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: ferr}
	}
	return n, nil
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(Op{Kind: OpRead, Path: f.Name(), Off: off, Len: len(p)}); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check(Op{Kind: OpSync, Path: f.Name()}); err != nil {
		return err
	}
	f.fs.mu.Lock()
	f.fs.syncs++
	err := f.fs.syncErr
	f.fs.mu.Unlock()
	if err != nil {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check(Op{Kind: OpTruncate, Path: f.Name(), Off: size}); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// Allocate counts against the DiskFullAfter budget only when the budget is
// already exhausted (reservations model a disk that is full).
func (f *faultFile) Allocate(size int64) error {
	if err := f.fs.check(Op{Kind: OpAllocate, Path: f.Name(), Off: size}); err != nil {
		return err
	}
	f.fs.mu.Lock()
	full := f.fs.space == 0
	f.fs.mu.Unlock()
	if full {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Allocate(size)
}

// faultMmapFile keeps the wrapped file's ability to be mapped visible.
type faultMmapFile struct {
	*faultFile
	m Mmapper
}

func (f *faultMmapFile) Mmap(size int) (Mapping, error) { return f.m.Mmap(size) }

// DataRegion is the wrapped file's (all data when it cannot tell).
func (f *faultFile) DataRegion(off, size int64) (int64, int64, error) {
	return DataRegion(f.File, off, size)
}

// WriteBack is the wrapped file's; it changes no bytes, so only the hook
// sees it (and may fail it).
func (f *faultFile) WriteBack(off, n int64) error {
	if err := f.fs.check(Op{Kind: OpWriteBack, Path: f.Name(), Off: off, Len: int(n)}); err != nil {
		return err
	}
	return WriteBack(f.File, off, n)
}

// ZeroRange is the wrapped file's (false when it cannot), refused like a
// write when the disk is full or writes fail.
func (f *faultFile) ZeroRange(off, n int64) (bool, error) {
	if err := f.fs.check(Op{Kind: OpWrite, Path: f.Name(), Off: off, Len: int(n)}); err != nil {
		return false, err
	}
	return ZeroRange(f.File, off, n)
}
