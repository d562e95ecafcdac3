package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateLiteTopic(t *testing.T) {
	for _, tc := range []struct {
		lite string
		max  int
		want error
	}{
		{"user_10086", 0, nil},
		{"A-z_09", 0, nil},
		{strings.Repeat("a", 64), 0, nil},
		{strings.Repeat("a", 65), 0, ErrLiteTopicTooLong},
		{strings.Repeat("a", 65), 100, nil},
		{"abc", 2, ErrLiteTopicTooLong},
		{"", 0, ErrLiteTopicBlank},
		{"   ", 0, ErrLiteTopicBlank},
		{"a$b", 0, ErrLiteTopicBadChars},
		{"a,b", 0, ErrLiteTopicBadChars},
		{"a.b", 0, ErrLiteTopicBadChars},
		{"a@b", 0, ErrLiteTopicBadChars},
		{"a%b", 0, ErrLiteTopicBadChars},
		{"a/b", 0, ErrLiteTopicBadChars},
		{"a b", 0, ErrLiteTopicBadChars},
		{"é", 0, ErrLiteTopicBadChars},
		{"a\x00", 0, ErrLiteTopicBadChars},
	} {
		err := ValidateLiteTopic(tc.lite, tc.max)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("ValidateLiteTopic(%q, %d) = %v, want %v", tc.lite, tc.max, err, tc.want)
		}
	}
}

// Golden values from Java (String.hashCode, Guava 32 Hashing.consistentHash),
// the same as the broker's (broker/lite/naming).
func TestLiteHomeBucket(t *testing.T) {
	buckets := []int{1, 2, 3, 8, 16, 100, 1000}
	for _, tc := range []struct {
		name string
		hash int64
		want []int
	}{
		{"user_10086", 1871779643, []int{0, 0, 2, 6, 10, 57, 410}},
		{"a", 97, []int{0, 0, 0, 0, 0, 29, 346}},
		{"", 0, []int{0, 0, 0, 0, 0, 0, 0}},
		{"session-42", 1661803797, []int{0, 1, 2, 2, 2, 35, 270}},
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", -863013888, []int{0, 0, 0, 5, 5, 97, 995}},
		{"中文", 646394, []int{0, 0, 0, 3, 3, 80, 401}},
		{"😀x", 54959989, []int{0, 1, 2, 5, 5, 27, 914}},
	} {
		if h := JavaStringHash(tc.name); h != tc.hash {
			t.Errorf("JavaStringHash(%q) = %d, want %d", tc.name, h, tc.hash)
		}
		for i, b := range buckets {
			if got := LiteHomeBucket(tc.name, b); got != tc.want[i] {
				t.Errorf("LiteHomeBucket(%q, %d) = %d, want %d", tc.name, b, got, tc.want[i])
			}
		}
	}
	keyBuckets := []int{1, 7, 64, 100000, 2147483647}
	for _, tc := range []struct {
		key  int64
		want []int
	}{
		{0, []int{0, 0, 0, 0, 0}},
		{1, []int{0, 6, 55, 94075, 262355607}},
		{-1, []int{0, 2, 10, 18311, 699554662}},
		{9223372036854775807, []int{0, 2, 51, 8550, 213047985}},
		{-9223372036854775808, []int{0, 5, 27, 74317, 1119800965}},
		{123456789012345, []int{0, 2, 16, 82449, 1194991740}},
	} {
		for i, b := range keyBuckets {
			if got := JumpConsistentHash(tc.key, b); got != tc.want[i] {
				t.Errorf("JumpConsistentHash(%d, %d) = %d, want %d", tc.key, b, got, tc.want[i])
			}
		}
	}
	if JumpConsistentHash(5, 0) != 0 || JumpConsistentHash(5, -3) != 0 {
		t.Error("non-positive bucket count")
	}
}
