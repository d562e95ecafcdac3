// Package javaorder reproduces the iteration order of Java's hash
// collections, in which the Java tools and Apache's broker print and
// serialize many tables: matching their output means matching that order.
package javaorder

import (
	"sort"
	"unicode/utf16"
)

// StringHash is java.lang.String.hashCode (over UTF-16 code units).
func StringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// Java collection kinds whose iteration order HashOrder reproduces.
const (
	HashMapDefault = 16 // new HashMap<>() / new HashSet<>()
	HashMapCap4    = 4  // new HashMap<>(4)
)

// HashOrder returns keys (distinct, in insertion order) in the
// iteration order of a java.util.HashMap or HashSet created with the given
// initial capacity, or of a ConcurrentHashMap as java.util.Properties uses
// when concurrent is set. The Java tool prints many such collections, so
// this is what makes our line order match its output. Buckets are ordered
// by (h ^ h>>>16) & (n-1); keys sharing a bucket keep insertion order.
func HashOrder(keys []string, initialCap int, concurrent bool) []string {
	seen := make(map[string]bool, len(keys))
	uniq := make([]string, 0, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	n := 1
	for n < initialCap {
		n <<= 1
	}
	count := len(uniq)
	if concurrent {
		// new ConcurrentHashMap<>(8) sizes its table to 16 and doubles when
		// the count reaches 3/4 of it.
		n = 16
		for count >= n-n/4 {
			n <<= 1
		}
	} else {
		for count > n*3/4 {
			n <<= 1
		}
	}
	bucket := func(s string) uint32 {
		h := uint32(StringHash(s))
		return (h ^ h>>16) & uint32(n-1)
	}
	out := append([]string(nil), uniq...)
	sort.SliceStable(out, func(i, j int) bool { return bucket(out[i]) < bucket(out[j]) })
	return out
}
