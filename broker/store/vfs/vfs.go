// Package vfs is the file-system seam of the broker's store. The store talks
// only to FS and File, so tests can swap the OS for an in-memory file system
// that models crashes (MemFS) and wrap either with fault injection
// (FaultFS): short writes, write and fsync errors, a full disk.
//
// The shape follows cockroachdb/pebble's vfs: a small interface, a real
// implementation, and wrappers.
package vfs

import (
	"io"
	"os"
)

// File is an open file. Writes are positional: the store always knows where
// its bytes go, and positional I/O needs no shared file offset.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes the file's data (and the metadata needed to read it, such as
	// its size) durable.
	Sync() error
	// Truncate sets the file's size; growing leaves a hole of zeros.
	Truncate(size int64) error
	// Allocate reserves disk blocks for the first size bytes (growing the
	// file to size if shorter), so later writes there cannot hit ENOSPC and
	// skip block allocation. Where the platform cannot, it only grows the
	// file.
	Allocate(size int64) error
	// Size returns the current size.
	Size() (int64, error)
	// Name returns the path the file was opened with.
	Name() string
}

// Mapping is a read-only memory mapping of a file.
type Mapping interface {
	// Bytes is the mapped region. Reading past the file's end faults, so
	// callers map only what the file holds.
	Bytes() []byte
	// Close unmaps; Bytes must not be used afterwards.
	Close() error
}

// PageReleaser is implemented by mappings that can give resident pages
// back (madvise MADV_DONTNEED): the pages leave the process's RSS, the page
// cache keeps them, and a later read faults them in again with the same
// bytes (the mappings are read-only and shared).
type PageReleaser interface {
	ReleasePages(off, n int) error
}

// ReadAdviser is implemented by mappings whose read-ahead can be set
// (madvise MADV_RANDOM when random, MADV_NORMAL otherwise), as Apache's
// CommitLog.scanFileAndSetReadMode does.
type ReadAdviser interface {
	AdviseRandom(random bool) error
}

// Mmapper is implemented by files that can be mapped for reading. Callers
// fall back to ReadAt when a File does not implement it.
type Mmapper interface {
	Mmap(size int) (Mapping, error)
}

// DataFinder is implemented by files that can tell where their data is
// (lseek SEEK_DATA and SEEK_HOLE): every byte outside the regions it
// reports reads as zero, so a scan for non-zero bytes may skip the rest
// (the never-written part of a sparse or preallocated file).
type DataFinder interface {
	// DataRegion returns the first region at or after off that may hold
	// non-zero bytes, [start, end); start == end == size when none is left.
	DataRegion(off, size int64) (start, end int64, err error)
}

// DataRegion is f's DataRegion when f is a DataFinder; otherwise all of
// [off, size) may hold data.
func DataRegion(f File, off, size int64) (start, end int64, err error) {
	if d, ok := f.(DataFinder); ok {
		return d.DataRegion(off, size)
	}
	return off, size, nil
}

// RangeZeroer is implemented by files that can make a range read as zeros
// without writing it (fallocate FALLOC_FL_ZERO_RANGE: the blocks stay
// allocated, marked unwritten). ok is false where the file system cannot;
// the caller then writes zeros itself. Like a write, the change is durable
// after Sync.
type RangeZeroer interface {
	ZeroRange(off, n int64) (ok bool, err error)
}

// ZeroRange is f's ZeroRange when f is a RangeZeroer; otherwise false.
func ZeroRange(f File, off, n int64) (bool, error) {
	if z, ok := f.(RangeZeroer); ok {
		return z.ZeroRange(off, n)
	}
	return false, nil
}

// WriteBacker is implemented by files that can write a range's dirty
// pages to disk and wait for that I/O, without a device cache flush and
// without the file's metadata (sync_file_range WAIT_BEFORE | WRITE |
// WAIT_AFTER). It makes nothing durable; an I/O error it misses shows in
// the next Sync.
type WriteBacker interface {
	WriteBack(off, n int64) error
}

// WriteBack is f's WriteBack when f is a WriteBacker; otherwise it does
// nothing.
func WriteBack(f File, off, n int64) error {
	if w, ok := f.(WriteBacker); ok {
		return w.WriteBack(off, n)
	}
	return nil
}

// DiskUsage describes the file system holding a path.
type DiskUsage struct {
	Total uint64 // bytes: used plus Free (blocks reserved for root left out, as df does)
	Free  uint64 // bytes available to the process
}

// UsedRatio is the used fraction of the disk (0 when Total is 0).
func (d DiskUsage) UsedRatio() float64 {
	if d.Total == 0 {
		return 0
	}
	return float64(d.Total-d.Free) / float64(d.Total)
}

// FS is a file system.
type FS interface {
	// Create creates or truncates a file, opened read-write.
	Create(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file read-write.
	OpenReadWrite(name string) (File, error)
	Remove(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) in dir, sorted.
	List(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes creations, removals and renames in dir durable.
	SyncDir(dir string) error
	// DiskUsage reports the space of the file system holding path.
	DiskUsage(path string) (DiskUsage, error)
}
