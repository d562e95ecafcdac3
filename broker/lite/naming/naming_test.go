package naming

import (
	"errors"
	"strings"
	"testing"
)

func TestLMQName(t *testing.T) {
	for _, tc := range []struct {
		parent, lite, want string
		ok                 bool
	}{
		{"chat", "user-42", "%LMQ%$chat$user-42", true},
		{"OrderTopic", "user_10086", "%LMQ%$OrderTopic$user_10086", true},
		{"", "x", "", false},
		{"p", "", "", false},
	} {
		got, ok := LMQName(tc.parent, tc.lite)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LMQName(%q, %q) = %q %v, want %q %v", tc.parent, tc.lite, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, parent, lite string
		ok                 bool
	}{
		{"%LMQ%$chat$user-42", "chat", "user-42", true},
		{"%LMQ%$p$l", "p", "l", true},
		{"%LMQ%$p$", "", "", false},    // empty lite
		{"%LMQ%$$l", "", "", false},    // empty parent
		{"%LMQ%$pl", "", "", false},    // no separator
		{"%LMQ%$p$l$x", "", "", false}, // '$' inside lite
		{"%LMQ%$p$$", "", "", false},   // '$' inside lite
		{"%LMQ%xyz", "", "", false},    // generic LMQ
		{"%LMQ%$", "", "", false},      // prefix only
		{"chat", "", "", false},        // ordinary topic
		{"%lmq%$p$l", "", "", false},   // case matters
		{"%LMQ%$%RETRY%g$l", "%RETRY%g", "l", true},
	} {
		p, l, ok := Parse(tc.name)
		if p != tc.parent || l != tc.lite || ok != tc.ok {
			t.Errorf("Parse(%q) = %q %q %v, want %q %q %v", tc.name, p, l, ok, tc.parent, tc.lite, tc.ok)
		}
		if ParentOf(tc.name) != tc.parent || LiteOf(tc.name) != tc.lite {
			t.Errorf("ParentOf/LiteOf(%q) = %q %q", tc.name, ParentOf(tc.name), LiteOf(tc.name))
		}
	}
	if !IsLite("%LMQ%$p$l") || IsLite("%LMQ%p") || IsLite("p") {
		t.Error("IsLite")
	}
}

func TestBelongsTo(t *testing.T) {
	for _, tc := range []struct {
		name, parent string
		want         bool
	}{
		{"%LMQ%$chat$a", "chat", true},
		{"%LMQ%$chat$a", "cha", false},   // prefix of the parent
		{"%LMQ%$chatx$a", "chat", false}, // parent is a prefix of another
		{"%LMQ%$chat$", "chat", false},
		{"%LMQ%$chat", "chat", false},
		{"chat$a", "chat", false},
	} {
		if got := BelongsTo(tc.name, tc.parent); got != tc.want {
			t.Errorf("BelongsTo(%q, %q) = %v", tc.name, tc.parent, got)
		}
	}
	if ParentPrefix("chat") != "%LMQ%$chat$" {
		t.Error("ParentPrefix")
	}
}

func TestValidateLite(t *testing.T) {
	for _, tc := range []struct {
		lite string
		max  int
		want error
	}{
		{"user_10086", 0, nil},
		{"A-z_09", 0, nil},
		{strings.Repeat("a", 64), 0, nil},
		{strings.Repeat("a", 65), 0, ErrTooLong},
		{strings.Repeat("a", 65), 100, nil},
		{"abc", 2, ErrTooLong},
		{"", 0, ErrBlank},
		{"   ", 0, ErrBlank},
		{"a$b", 0, ErrBadChars},
		{"a,b", 0, ErrBadChars},
		{"a.b", 0, ErrBadChars},
		{"a@b", 0, ErrBadChars},
		{"a%b", 0, ErrBadChars},
		{"a/b", 0, ErrBadChars},
		{"a b", 0, ErrBadChars},
		{"é", 0, ErrBadChars},
		{"a\x00", 0, ErrBadChars},
	} {
		err := ValidateLite(tc.lite, tc.max)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("ValidateLite(%q, %d) = %v, want %v", tc.lite, tc.max, err, tc.want)
		}
	}
}

// Golden values from Java (String.hashCode, Guava 32 Hashing.consistentHash).
func TestSharding(t *testing.T) {
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
			if got := HomeBucket(tc.name, b); got != tc.want[i] {
				t.Errorf("HomeBucket(%q, %d) = %d, want %d", tc.name, b, got, tc.want[i])
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

// FuzzParse checks that whatever parses rebuilds to the same name, and
// that a built name of legal parts parses back.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"%LMQ%$chat$user-42", "%LMQ%$p$", "%LMQ%$$l", "%LMQ%$p$l$x", "%LMQ%xyz", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, l, ok := Parse(name)
		if !ok {
			return
		}
		if p == "" || l == "" || strings.Contains(l, "$") {
			t.Fatalf("Parse(%q) = %q %q", name, p, l)
		}
		if got, _ := LMQName(p, l); got != name {
			t.Fatalf("LMQName(Parse(%q)) = %q", name, got)
		}
		if !BelongsTo(name, p) {
			t.Fatalf("BelongsTo(%q, %q) = false", name, p)
		}
	})
}
