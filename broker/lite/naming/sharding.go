package naming

import "github.com/rmqgo/rmq/pkg/protocol"

// JavaStringHash is Java's String.hashCode over the UTF-16 code units of s
// (h = 31*h + c with int32 wrap-around), sign-extended.
func JavaStringHash(s string) int64 { return protocol.JavaStringHash(s) }

// JumpConsistentHash is Guava's Hashing.consistentHash(long, buckets): the
// bucket in [0, buckets) of input. buckets ≤ 0 returns 0.
func JumpConsistentHash(input int64, buckets int) int {
	return protocol.JumpConsistentHash(input, buckets)
}

// HomeBucket is the write-queue index (in route order) that is the home of
// lite within nWriteQueues queues (docs/lite-topics.md §4.6 step 2); producers use the same
// function (protocol.LiteHomeBucket).
func HomeBucket(lite string, nWriteQueues int) int {
	return protocol.LiteHomeBucket(lite, nWriteQueues)
}
