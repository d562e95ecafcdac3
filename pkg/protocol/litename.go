package protocol

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// Lite-topic name rules (docs/lite-topics.md §1.4) shared by brokers and clients.

// DefaultMaxLiteTopicSize is the default byte limit of a lite topic name
// (the proxy's maxLiteTopicSize).
const DefaultMaxLiteTopicSize = 64

// Errors of ValidateLiteTopic; the returned error wraps one of them.
var (
	ErrLiteTopicBlank    = errors.New("lite topic is blank")
	ErrLiteTopicTooLong  = errors.New("lite topic is too long")
	ErrLiteTopicBadChars = errors.New("lite topic contains an illegal character")
)

// ValidateLiteTopic checks a lite topic name: not blank, at most maxSize
// bytes (≤ 0: DefaultMaxLiteTopicSize), only ASCII letters, digits, '_'
// and '-' (so '$' and ',' never reach LMQ names or multi-dispatch lists).
func ValidateLiteTopic(lite string, maxSize int) error {
	if maxSize <= 0 {
		maxSize = DefaultMaxLiteTopicSize
	}
	if strings.TrimSpace(lite) == "" {
		return ErrLiteTopicBlank
	}
	if len(lite) > maxSize {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrLiteTopicTooLong, len(lite), maxSize)
	}
	for i := 0; i < len(lite); i++ {
		if c := lite[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w %q at byte %d (allowed: letters, digits, '_', '-')", ErrLiteTopicBadChars, c, i)
		}
	}
	return nil
}

// LiteHomeBucket is the index, among n write queues in route order, of the
// queue whose broker is lite's home (docs/lite-topics.md §4.6):
// Guava's consistentHash of Java's String.hashCode. Producers that send
// every message of a lite topic to this queue keep it on one broker, which
// FIFO consumption per lite topic needs.
func LiteHomeBucket(lite string, n int) int {
	return JumpConsistentHash(JavaStringHash(lite), n)
}

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
