package naming

import "unicode/utf16"

// JavaStringHash is Java's String.hashCode over the UTF-16 code units of s
// (h = 31*h + c with int32 wrap-around), sign-extended.
func JavaStringHash(s string) int64 {
	var h int32
	for _, r := range s {
		if r < 0x10000 {
			h = 31*h + int32(r)
			continue
		}
		a, b := utf16.EncodeRune(r)
		h = 31*h + int32(a)
		h = 31*h + int32(b)
	}
	return int64(h)
}

// JumpConsistentHash is Guava's Hashing.consistentHash(long, buckets): the
// bucket in [0, buckets) of input. buckets ≤ 0 returns 0.
func JumpConsistentHash(input int64, buckets int) int {
	if buckets <= 0 {
		return 0
	}
	state := uint64(input)
	candidate := 0
	for {
		state = state*2862933555777941757 + 1
		// Guava: (double) ((int) (state >>> 33) + 1) / 0x1.0p31
		next := float64(int32(state>>33)+1) / float64(1<<31)
		f := float64(candidate+1) / next
		// Java's (int) cast of a double saturates; Go's is undefined out
		// of range.
		var n int
		switch {
		case f != f: // NaN
			n = 0
		case f >= 2147483647:
			n = 2147483647
		case f <= -2147483648:
			n = -2147483648
		default:
			n = int(int32(f))
		}
		if n >= 0 && n < buckets {
			candidate = n
			continue
		}
		return candidate
	}
}

// HomeBucket is the write-queue index (in route order) that is the home of
// lite within nWriteQueues queues (§4.6 step 2).
func HomeBucket(lite string, nWriteQueues int) int {
	return JumpConsistentHash(JavaStringHash(lite), nWriteQueues)
}
