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
	return statfsUsage(uint64(st.Blocks), uint64(st.Bfree), uint64(st.Bavail), uint64(st.Bsize)), nil
}

// statfsUsage is the usage as df and Apache RocketMQ's
// UtilAll.getDiskPartitionSpaceUsedPercent see it: used (blocks - free)
// out of used + available to unprivileged processes. Blocks reserved for
// root are in neither, so a file system with a large reserve is not taken
// for fuller than it is (blocks - available would count the reserve as
// used, and retention would delete CommitLog files Apache keeps).
func statfsUsage(blocks, bfree, bavail, bsize uint64) DiskUsage {
	used := blocks - min(bfree, blocks)
	return DiskUsage{Total: (used + bavail) * bsize, Free: bavail * bsize}
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

// AdviseRandom turns the kernel's read-ahead on the mapping off (random)
// or back to normal.
func (m *osMapping) AdviseRandom(random bool) error {
	if m.b == nil {
		return nil
	}
	advice := syscall.MADV_NORMAL
	if random {
		advice = syscall.MADV_RANDOM
	}
	return syscall.Madvise(m.b, advice)
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
