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
