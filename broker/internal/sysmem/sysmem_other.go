//go:build !linux

// Package sysmem reports the machine's RAM, which Java's
// accessMessageInMemoryMaxRatio is a share of (StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE).
package sysmem

// Total is unknown off Linux: callers fall back to a default.
func Total() uint64 { return 0 }
