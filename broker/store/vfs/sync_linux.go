//go:build linux

package vfs

import (
	"os"
	"syscall"
)

// syncData uses fdatasync: it skips timestamps but still persists the size
// and block allocations needed to read the data back.
func syncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// allocate uses fallocate(2); file systems without it get a plain size
// change (blocks are then allocated on write, as without this call).
func allocate(f *os.File, size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		switch err {
		case nil:
			return nil
		case syscall.EINTR:
			continue
		case syscall.EOPNOTSUPP, syscall.ENOSYS:
			return growTo(f, size)
		}
		return err
	}
}

// Whence values of lseek(2) for sparse files (Linux's values).
const (
	seekData = 3
	seekHole = 4
)

// DataRegion finds the next data region with lseek SEEK_DATA / SEEK_HOLE,
// bounded by size. File systems without them report the whole file as
// data (the kernel's generic fallback, or EINVAL here).
func (f osFile) DataRegion(off, size int64) (start, end int64, err error) {
	if off >= size {
		return size, size, nil
	}
	start, err = seekRetry(f.File, off, seekData)
	switch {
	case err == syscall.ENXIO: // no data at or after off
		return size, size, nil
	case err == syscall.EINVAL || err == syscall.EOPNOTSUPP:
		return off, size, nil
	case err != nil:
		return 0, 0, &os.PathError{Op: "lseek SEEK_DATA", Path: f.Name(), Err: err}
	}
	if start >= size {
		return size, size, nil
	}
	end, err = seekRetry(f.File, start, seekHole)
	if err != nil {
		return 0, 0, &os.PathError{Op: "lseek SEEK_HOLE", Path: f.Name(), Err: err}
	}
	return start, min(end, size), nil
}

func seekRetry(f *os.File, off int64, whence int) (int64, error) {
	for {
		n, err := syscall.Seek(int(f.Fd()), off, whence)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// fallocate(2) modes.
const (
	fallocKeepSize  = 0x01
	fallocZeroRange = 0x10
)

// ZeroRange zeroes [off, off+n) with FALLOC_FL_ZERO_RANGE, keeping the
// size; false where the file system does not support it.
func (f osFile) ZeroRange(off, n int64) (bool, error) {
	if n <= 0 {
		return true, nil
	}
	for {
		err := syscall.Fallocate(int(f.Fd()), fallocZeroRange|fallocKeepSize, off, n)
		switch err {
		case nil:
			return true, nil
		case syscall.EINTR:
			continue
		case syscall.EOPNOTSUPP, syscall.ENOSYS, syscall.EINVAL:
			return false, nil
		}
		return false, &os.PathError{Op: "fallocate ZERO_RANGE", Path: f.Name(), Err: err}
	}
}

// WriteBack writes [off, off+n)'s dirty pages and waits for them with
// sync_file_range (nothing made durable: no metadata, no cache flush).
func (f osFile) WriteBack(off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := syscall.SyncFileRange(int(f.Fd()), off, n, syncFileRangeWaitWrite)
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// syncFileRangeWaitWrite is SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER.
const syncFileRangeWaitWrite = 0x1 | 0x2 | 0x4
