//go:build !linux

package pop

// totalMemory is unknown off Linux: callers fall back to 1 GiB.
func totalMemory() uint64 { return 0 }
