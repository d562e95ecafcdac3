package commitlog

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// segment is one CommitLog file covering [base, base+size). It is
// reference counted: the log holds one reference while the segment is live,
// readers take more, and the file is closed (and unmapped) when the last
// reference goes, so deleting a segment never pulls bytes from under a
// reader.
type segment struct {
	base    int64
	size    int64
	path    string
	f       vfs.File
	mapping vfs.Mapping // nil when reads go through ReadAt
	data    []byte      // mapping.Bytes()

	refs    atomic.Int64
	modTime atomic.Int64 // unix ns of the last write, for retention
}

// segmentName is the 20-digit, zero-padded start offset.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// parseSegmentName accepts only names segmentName produces.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

func newSegment(f vfs.File, dir string, base, size int64, mmap, random bool, modTime time.Time) (*segment, error) {
	s := &segment{base: base, size: size, path: filepath.Join(dir, segmentName(base)), f: f}
	s.refs.Store(1)
	s.modTime.Store(modTime.UnixNano())
	if m, ok := f.(vfs.Mmapper); ok && mmap {
		mp, err := m.Mmap(int(size))
		if err != nil {
			return nil, fmt.Errorf("map %s: %w", s.path, err)
		}
		s.mapping, s.data = mp, mp.Bytes()
		if random {
			_ = s.adviseRandom(true) // an advice; reads work either way
		}
	}
	return s, nil
}

// adviseRandom sets the kernel's read-ahead on the segment's mapping
// (nothing to do when reads go through ReadAt).
func (s *segment) adviseRandom(random bool) error {
	if a, ok := s.mapping.(vfs.ReadAdviser); ok {
		return a.AdviseRandom(random)
	}
	return nil
}

func (s *segment) end() int64 { return s.base + s.size }

// acquire takes a reference unless the segment is already gone.
func (s *segment) acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the file.
func (s *segment) release() error {
	if s.refs.Add(-1) != 0 {
		return nil
	}
	var err error
	if s.mapping != nil {
		err = s.mapping.Close()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readAt copies bytes at a position relative to base.
func (s *segment) readAt(p []byte, pos int64) error {
	if s.data != nil {
		copy(p, s.data[pos:pos+int64(len(p))])
		return nil
	}
	if _, err := s.f.ReadAt(p, pos); err != nil {
		return fmt.Errorf("read %s at %d: %w", s.path, pos, err)
	}
	return nil
}

// readFile reads bytes at a position relative to base with ReadAt, mapped
// or not (see IteratorOptions.ReadBuffer).
func (s *segment) readFile(p []byte, pos int64) error {
	if _, err := s.f.ReadAt(p, pos); err != nil {
		return fmt.Errorf("read %s at %d: %w", s.path, pos, err)
	}
	return nil
}

// slice returns mapped bytes without copying, or nil when unmapped.
func (s *segment) slice(pos, n int64) []byte {
	if s.data == nil {
		return nil
	}
	return s.data[pos : pos+n : pos+n]
}

func (s *segment) touch(t time.Time) { s.modTime.Store(t.UnixNano()) }
