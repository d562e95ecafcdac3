// Package kvfault injects disk faults into the broker's Pebble database for
// tests: an errorfs (github.com/cockroachdb/pebble/v2/vfs/errorfs) file
// system whose faults name what Pebble was doing — writing a flushed or a
// compacted table, its MANIFEST, its WAL — and fail with the errno a real
// disk returns (ENOSPC, EIO).
package kvfault

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/rmqgo/rmq/internal/testutil"
)

// Target is a kind of file operation a fault hits. They come in threes
// (create, write, sync) per kind of file: matches relies on the order.
type Target int

const (
	FlushTableCreate Target = iota // creating a table a memtable flush writes
	FlushTableWrite                // writing it
	FlushTableSync                 // syncing it
	CompactionTableCreate
	CompactionTableWrite
	CompactionTableSync
	ManifestCreate // creating a MANIFEST (at open, and when Pebble rotates it)
	ManifestWrite
	ManifestSync
	WALCreate
	WALWrite
	WALSync
)

func (t Target) String() string {
	return [...]string{"flush table create", "flush table write", "flush table sync",
		"compaction table create", "compaction table write", "compaction table sync",
		"MANIFEST create", "MANIFEST write", "MANIFEST sync",
		"WAL create", "WAL write", "WAL sync"}[t]
}

// Injector fails the operations of one target with one errno while armed.
// Safe for concurrent use; it may be armed and cleared while Pebble runs.
type Injector struct {
	fs *errorfs.FS

	mu     sync.Mutex
	cats   map[string]vfs.DiskWriteCategory // table path → category it was created with
	armed  bool
	target Target
	errno  syscall.Errno
	hits   int
}

// New wraps base.
func New(base vfs.FS) *Injector {
	in := &Injector{cats: map[string]vfs.DiskWriteCategory{}}
	in.fs = errorfs.Wrap(base, in)
	return in
}

// FS is the file system to open Pebble on (kv.Config.FS).
func (in *Injector) FS() vfs.FS { return categoryFS{in.fs, in} }

// Arm makes every operation of target fail with errno (wrapped in an
// *os.PathError, as the OS reports it) until Clear.
func (in *Injector) Arm(target Target, errno syscall.Errno) {
	in.mu.Lock()
	in.armed, in.target, in.errno = true, target, errno
	in.mu.Unlock()
}

// Clear stops injecting.
func (in *Injector) Clear() {
	in.mu.Lock()
	in.armed = false
	in.mu.Unlock()
}

// Hits is the number of operations failed so far.
func (in *Injector) Hits() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hits
}

// String implements errorfs.Injector.
func (in *Injector) String() string { return "kvfault" }

// MaybeError implements errorfs.Injector.
func (in *Injector) MaybeError(op errorfs.Op) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.armed || !in.matches(op) {
		return nil
	}
	in.hits++
	return &os.PathError{Op: opName(op.Kind), Path: op.Path, Err: in.errno}
}

// matches reports whether op belongs to the armed target; in.mu is held.
func (in *Injector) matches(op errorfs.Op) bool {
	var class, kind string
	base := op.Path[strings.LastIndexByte(op.Path, '/')+1:]
	switch {
	case strings.HasSuffix(base, ".sst"):
		switch in.cats[op.Path] {
		case "pebble-memtable-flush":
			class = "flush"
		case "pebble-compaction":
			class = "compaction"
		default:
			return false
		}
	case strings.HasPrefix(base, "MANIFEST-"):
		class = "manifest"
	case strings.HasSuffix(base, ".log"):
		class = "wal"
	default:
		return false
	}
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpReuseForWrite:
		kind = "create"
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate:
		kind = "write"
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		kind = "sync"
	default:
		return false
	}
	wantClass := [...]string{"flush", "compaction", "manifest", "wal"}[in.target/3]
	wantKind := [...]string{"create", "write", "sync"}[in.target%3]
	return class == wantClass && kind == wantKind
}

func opName(k errorfs.OpKind) string {
	switch k {
	case errorfs.OpCreate, errorfs.OpReuseForWrite:
		return "open"
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		return "sync"
	case errorfs.OpFilePreallocate:
		return "fallocate"
	}
	return "write"
}

// categoryFS records the write category of each table as it is created,
// before errorfs sees the creation (its operations carry no category).
type categoryFS struct {
	*errorfs.FS
	in *Injector
}

func (fs categoryFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") {
		fs.in.mu.Lock()
		fs.in.cats[name] = category
		fs.in.mu.Unlock()
	}
	return fs.FS.Create(name, category)
}

// Unwrap lets Pebble see the file system underneath (vfs.Root).
func (fs categoryFS) Unwrap() vfs.FS { return fs.FS }

// RunChild runs the test binary again, running no tests, with env (a
// NAME=value its TestMain looks for) added: a scenario whose fatal error
// must stop the process runs there. It returns the child's output and
// exit error, and fails t when the child is still running after timeout.
func RunChild(t testing.TB, env string, timeout time.Duration) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("child did not stop within %v:\n%s", timeout, out.String())
		return "", nil
	}
}

// Main is a test binary's TestMain: with env set (by RunChild) it runs
// child with env's value and exits with its code, otherwise the tests,
// checked for leaked goroutines (testutil.VerifyNoLeaks).
func Main(m *testing.M, env string, child func(spec string) int) {
	if spec := os.Getenv(env); spec != "" {
		os.Exit(child(spec))
	}
	testutil.VerifyNoLeaks(m)
}
