//go:build !unix

package admin

// diskSpace is not implemented on this platform; ratios report -1 as Java
// does when it cannot measure.
func diskSpace(string) (total, free, usable uint64, ok bool) { return 0, 0, 0, false }
