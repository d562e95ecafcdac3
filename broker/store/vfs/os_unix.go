//go:build linux || darwin || freebsd || netbsd || openbsd

package vfs

import (
	"fmt"
	"os"
	"syscall"
)

func diskUsage(path string) (DiskUsage, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return DiskUsage{}, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	bs := uint64(st.Bsize)
	return DiskUsage{Total: uint64(st.Blocks) * bs, Free: uint64(st.Bavail) * bs}, nil
}

type osMapping struct{ b []byte }

func (m *osMapping) Bytes() []byte { return m.b }

func (m *osMapping) Close() error {
	if m.b == nil {
		return nil
	}
	err := syscall.Munmap(m.b)
	m.b = nil
	return err
}

// ReleasePages drops the resident pages of [off, off+n) from this process
// (whole pages only).
func (m *osMapping) ReleasePages(off, n int) error {
	if m.b == nil || n <= 0 {
		return nil
	}
	end := min(off+n, len(m.b))
	if off < 0 || off >= end {
		return nil
	}
	return syscall.Madvise(m.b[off:end], syscall.MADV_DONTNEED)
}

// Mmap maps the first size bytes read-only and shared, so bytes written
// with WriteAt are visible through the mapping (one page cache).
func (f osFile) Mmap(size int) (Mapping, error) {
	if size == 0 {
		return &osMapping{}, nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	return &osMapping{b: b}, nil
}
