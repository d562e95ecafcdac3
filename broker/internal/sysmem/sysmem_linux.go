// Package sysmem reports the machine's RAM, which Java's
// accessMessageInMemoryMaxRatio is a share of (StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE).
package sysmem

import "syscall"

// Total is the machine's RAM in bytes (0 if unknown).
func Total() uint64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
