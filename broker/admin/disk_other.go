//go:build !unix

package admin

// diskSpace has no statfs to call on non-unix platforms; ratios report -1 as Java
// does when it cannot measure.
func diskSpace(string) (total, free, usable uint64, ok bool) { return 0, 0, 0, false }
