//go:build unix

package admin

import "syscall"

// diskSpace returns the partition's total, free and usable (non-root) bytes.
func diskSpace(path string) (total, free, usable uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, 0, false
	}
	bs := uint64(st.Bsize) //nolint:unconvert // Bsize is int32/int64 depending on the OS
	return st.Blocks * bs, st.Bfree * bs, st.Bavail * bs, true
}
