//go:build linux || darwin || freebsd || netbsd || openbsd

package vfs

import (
	"math"
	"testing"
)

// TestStatfsUsage: the used ratio is df's Use% and Apache's
// UtilAll.getDiskPartitionSpaceUsedPercent, used / (used + available):
// blocks reserved for root count neither as used nor as available.
func TestStatfsUsage(t *testing.T) {
	for _, c := range []struct {
		name                  string
		blocks, bfree, bavail uint64
		want                  float64
	}{
		// A file system seen on the shared test machine: df says 69%;
		// blocks - available would say 88.5%, over the forced-cleaning
		// ratio (85%), and CommitLog files were deleted unconsumed.
		{"large reserve", 66053021, 49741360, 7563655, 0.6832},
		{"no reserve", 1000, 400, 400, 0.60},
		{"5% reserve", 1000, 450, 400, 0.5789},
		{"empty", 1000, 1000, 950, 0},
		{"full to the reserve", 1000, 50, 0, 1},
		{"nothing", 0, 0, 0, 0},
	} {
		u := statfsUsage(c.blocks, c.bfree, c.bavail, 4096)
		if got := u.UsedRatio(); math.Abs(got-c.want) > 0.0001 {
			t.Errorf("%s: UsedRatio %.4f, want %.4f (%+v)", c.name, got, c.want, u)
		}
		if u.Free != c.bavail*4096 {
			t.Errorf("%s: Free %d, want the available bytes %d", c.name, u.Free, c.bavail*4096)
		}
	}
}
