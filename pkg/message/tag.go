package message

import "unicode/utf16"

// TagHashCode is Java's String.hashCode of tag: h = 31·h + c over UTF-16 code
// units, wrapping at 32 bits. The broker stores it (sign-extended to int64)
// as the consume-queue tag code, and consumers filter on it, so it must match
// Java exactly: runes above U+FFFF count as two surrogate units. Invalid
// UTF-8 bytes count as U+FFFD each, which is what Java's decoder produces for
// single stray bytes.
func TagHashCode(tag string) int32 {
	var h int32
	for _, r := range tag {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}
