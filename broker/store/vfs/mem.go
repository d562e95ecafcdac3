package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MemFS is an in-memory file system that remembers what is durable: file
// contents as of each file's last Sync and directory entries as of each
// directory's last SyncDir. Crash throws away everything else, optionally
// keeping a torn prefix of the unsynced writes, the way a power cut would.
// Safe for concurrent use.
type MemFS struct {
	mu       sync.Mutex
	files    map[string]*memNode // current namespace
	durable  map[string]*memNode // namespace as of the last SyncDir of each dir
	dirs     map[string]bool
	clock    func() time.Time
	capacity uint64
	// gen counts crashes; handles opened before a crash fail afterwards,
	// as a dead process's would, so nothing "succeeds" on lost state.
	gen atomic.Int64
}

// memNode is one file's contents. ops records writes and truncations since
// the last Sync; replaying them onto synced yields data.
type memNode struct {
	mu      sync.RWMutex
	data    []byte
	synced  []byte
	ops     []memOp
	modTime time.Time
}

type memOp struct {
	trunc bool  // a truncation to off; otherwise a write of data at off
	off   int64 // write position or new size
	data  []byte
}

// NewMem returns an empty MemFS with a 1 TiB capacity and time.Now clock.
func NewMem() *MemFS {
	return &MemFS{
		files:    map[string]*memNode{},
		durable:  map[string]*memNode{},
		dirs:     map[string]bool{"/": true, ".": true},
		clock:    time.Now,
		capacity: 1 << 40,
	}
}

// SetClock sets the clock that stamps modification times.
func (m *MemFS) SetClock(clock func() time.Time) {
	setLocked(&m.mu, &m.clock, clock)
}

// SetCapacity sets the total size DiskUsage reports.
func (m *MemFS) SetCapacity(n uint64) {
	setLocked(&m.mu, &m.capacity, n)
}

func clean(name string) string { return filepath.Clean(name) }

func (m *MemFS) now() time.Time { return m.clock() }

func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[filepath.Dir(name)] {
		return nil, &os.PathError{Op: "create", Path: name, Err: fs.ErrNotExist}
	}
	n, ok := m.files[name]
	if ok {
		// Re-creating truncates the same file (inode); unsynced like a write.
		n.mu.Lock()
		n.data = n.data[:0]
		n.ops = append(n.ops, memOp{trunc: true})
		n.modTime = m.now()
		n.mu.Unlock()
	} else {
		n = &memNode{modTime: m.now()}
		m.files[name] = n
	}
	return &memFile{fs: m, node: n, name: name, writable: true, gen: m.gen.Load()}, nil
}

func (m *MemFS) open(name string, writable bool) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{fs: m, node: n, name: name, writable: writable, gen: m.gen.Load()}, nil
}

func (m *MemFS) Open(name string) (File, error)          { return m.open(name, false) }
func (m *MemFS) OpenReadWrite(name string) (File, error) { return m.open(name, true) }

func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		for f := range m.files {
			if filepath.Dir(f) == name {
				return &os.PathError{Op: "remove", Path: name, Err: fmt.Errorf("directory not empty")}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return &os.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if !m.dirs[filepath.Dir(newname)] {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	delete(m.files, oldname)
	m.files[newname] = n
	return nil
}

// MkdirAll creates directories; they are durable at once (the store's
// directories exist before any crash that matters).
func (m *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; !m.dirs[d]; d = filepath.Dir(d) {
		if _, ok := m.files[d]; ok {
			return &os.PathError{Op: "mkdir", Path: d, Err: fs.ErrExist}
		}
		m.dirs[d] = true
	}
	return nil
}

func (m *MemFS) List(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, &os.PathError{Op: "open", Path: dir, Err: fs.ErrNotExist}
	}
	var names []string
	for f := range m.files {
		if filepath.Dir(f) == dir {
			names = append(names, filepath.Base(f))
		}
	}
	for d := range m.dirs {
		if d != dir && filepath.Dir(d) == dir {
			names = append(names, filepath.Base(d))
		}
	}
	slices.Sort(names)
	return names, nil
}

func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	n, ok := m.files[name]
	isDir := m.dirs[name]
	m.mu.Unlock()
	switch {
	case ok:
		n.mu.RLock()
		defer n.mu.RUnlock()
		return memInfo{name: filepath.Base(name), size: int64(len(n.data)), mod: n.modTime}, nil
	case isDir:
		return memInfo{name: filepath.Base(name), dir: true}, nil
	}
	return nil, &os.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for f := range m.durable {
		if filepath.Dir(f) == dir {
			delete(m.durable, f)
		}
	}
	for f, n := range m.files {
		if filepath.Dir(f) == dir {
			m.durable[f] = n
		}
	}
	return nil
}

func (m *MemFS) DiskUsage(string) (DiskUsage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var used uint64
	for _, n := range m.files {
		n.mu.RLock()
		used += uint64(len(n.data))
		n.mu.RUnlock()
	}
	free := uint64(0)
	if used < m.capacity {
		free = m.capacity - used
	}
	return DiskUsage{Total: m.capacity, Free: free}, nil
}

// CrashOptions shape what survives a Crash.
type CrashOptions struct {
	// Rand, when set, keeps a random prefix of each file's unsynced writes,
	// the last kept write possibly cut short (a torn write). Nil drops all
	// unsynced data.
	Rand *rand.Rand
}

// Crash simulates a power cut: every file reverts to its synced contents
// (plus, with opts.Rand, a torn prefix of later writes) and the namespace
// reverts to what SyncDir made durable. Open files must not be used
// afterwards.
func (m *MemFS) Crash(opts CrashOptions) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	files := make(map[string]*memNode, len(m.durable))
	seen := map[*memNode]*memNode{}
	for name, old := range m.durable {
		n, ok := seen[old]
		if !ok {
			old.mu.Lock()
			n = &memNode{synced: slices.Clone(old.synced), modTime: old.modTime}
			if opts.Rand != nil && len(old.ops) > 0 {
				keep := opts.Rand.IntN(len(old.ops) + 1)
				for i, op := range old.ops[:min(keep+1, len(old.ops))] {
					if i == keep {
						if op.trunc {
							continue
						}
						op.data = op.data[:opts.Rand.IntN(len(op.data)+1)]
					}
					n.synced = applyOp(n.synced, op)
				}
			}
			n.data = slices.Clone(n.synced)
			old.mu.Unlock()
			seen[old] = n
		}
		files[name] = n
	}
	m.files = files
	m.durable = make(map[string]*memNode, len(files))
	for k, v := range files {
		m.durable[k] = v
	}
}

// Corrupt overwrites bytes of a file in place, as durable (bit rot), for
// recovery tests.
func (m *MemFS) Corrupt(name string, off int64, data []byte) error {
	name = clean(name)
	m.mu.Lock()
	n, ok := m.files[name]
	m.mu.Unlock()
	if !ok {
		return &os.PathError{Op: "corrupt", Path: name, Err: fs.ErrNotExist}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.data = applyOp(n.data, memOp{off: off, data: data})
	n.synced = applyOp(n.synced, memOp{off: off, data: data})
	return nil
}

func applyOp(b []byte, op memOp) []byte {
	if op.trunc {
		if op.off <= int64(len(b)) {
			return b[:op.off]
		}
		return append(b, make([]byte, op.off-int64(len(b)))...)
	}
	end := op.off + int64(len(op.data))
	if end > int64(len(b)) {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	copy(b[op.off:], op.data)
	return b
}

type memFile struct {
	fs       *MemFS
	node     *memNode
	name     string
	writable bool
	gen      int64
	mu       sync.Mutex
	closed   bool
}

// errCrashed is returned by handles that outlived a Crash.
var errCrashed = errors.New("file system crashed")

// alive reports whether no crash happened since the file was opened. File
// operations call it while holding the node's lock, which Crash also takes,
// so an operation either completes before the crash or fails.
func (f *memFile) alive(op string) error {
	if f.fs.gen.Load() != f.gen {
		return &os.PathError{Op: op, Path: f.name, Err: errCrashed}
	}
	return nil
}

func (f *memFile) check(op string, write bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: op, Path: f.name, Err: fs.ErrClosed}
	}
	if write && !f.writable {
		return &os.PathError{Op: op, Path: f.name, Err: fs.ErrPermission}
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: fs.ErrInvalid}
	}
	now := f.fs.nowLocked()
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if err := f.alive("write"); err != nil {
		return 0, err
	}
	op := memOp{off: off, data: slices.Clone(p)}
	f.node.data = applyOp(f.node.data, op)
	f.node.ops = append(f.node.ops, op)
	f.node.modTime = now
	return len(p), nil
}

func (m *MemFS) nowLocked() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clock()
}

func (f *memFile) Sync() error {
	if err := f.check("sync", false); err != nil {
		return err
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if err := f.alive("sync"); err != nil {
		return err
	}
	for _, op := range f.node.ops {
		f.node.synced = applyOp(f.node.synced, op)
	}
	f.node.ops = nil
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: f.name, Err: fs.ErrInvalid}
	}
	now := f.fs.nowLocked()
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if err := f.alive("truncate"); err != nil {
		return err
	}
	op := memOp{trunc: true, off: size}
	f.node.data = applyOp(f.node.data, op)
	f.node.ops = append(f.node.ops, op)
	f.node.modTime = now
	return nil
}

// Allocate grows the file to size if shorter (memory needs no reservation).
func (f *memFile) Allocate(size int64) error {
	n, err := f.Size()
	if err != nil || n >= size {
		return err
	}
	return f.Truncate(size)
}

func (f *memFile) Size() (int64, error) {
	if err := f.check("stat", false); err != nil {
		return 0, err
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	return int64(len(f.node.data)), nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	f.closed = true
	return nil
}

type memInfo struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

// String helps debugging: the files and their sizes.
func (m *MemFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sb strings.Builder
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range m.files {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&sb, "%s (%d bytes)\n", name, len(m.files[name].data))
	}
	return sb.String()
}
