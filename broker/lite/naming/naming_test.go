package naming

import (
	"errors"
	"github.com/rmqgo/rmq/pkg/protocol"
	"strings"
	"testing"
)

// TestLMQNameAndParse: a valid row round-trips (LMQName builds name, Parse
// splits it back); for an invalid one both refuse.
func TestLMQNameAndParse(t *testing.T) {
	for _, tc := range []struct {
		name, parent, lite string
		ok                 bool
	}{
		{"%LMQ%$chat$user-42", "chat", "user-42", true},
		{"%LMQ%$OrderTopic$user_10086", "OrderTopic", "user_10086", true},
		{"%LMQ%$p$l", "p", "l", true},
		{"%LMQ%$%RETRY%g$l", "%RETRY%g", "l", true},
		{"", "", "x", false},           // no parent to build from
		{"", "p", "", false},           // no lite to build from
		{"%LMQ%$p$", "", "", false},    // empty lite
		{"%LMQ%$$l", "", "", false},    // empty parent
		{"%LMQ%$pl", "", "", false},    // no separator
		{"%LMQ%$p$l$x", "", "", false}, // '$' inside lite
		{"%LMQ%$p$$", "", "", false},   // '$' inside lite
		{"%LMQ%xyz", "", "", false},    // generic LMQ
		{"%LMQ%$", "", "", false},      // prefix only
		{"chat", "", "", false},        // ordinary topic
		{"%lmq%$p$l", "", "", false},   // case matters
	} {
		wantName, wantParent, wantLite := "", "", ""
		if tc.ok {
			wantName, wantParent, wantLite = tc.name, tc.parent, tc.lite
		}
		if got, ok := LMQName(tc.parent, tc.lite); got != wantName || ok != tc.ok {
			t.Errorf("LMQName(%q, %q) = %q %v, want %q %v", tc.parent, tc.lite, got, ok, wantName, tc.ok)
		}
		if p, l, ok := Parse(tc.name); p != wantParent || l != wantLite || ok != tc.ok {
			t.Errorf("Parse(%q) = %q %q %v, want %q %q %v", tc.name, p, l, ok, wantParent, wantLite, tc.ok)
		}
		if ParentOf(tc.name) != wantParent || LiteOf(tc.name) != wantLite {
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

// TestDelegates: the name rules and the home bucket are pkg/protocol's
// (tested there), so producers and the broker agree.
func TestDelegates(t *testing.T) {
	if err := ValidateLite("a$b", 0); !errors.Is(err, ErrBadChars) {
		t.Errorf("ValidateLite: %v", err)
	}
	if err := ValidateLite(strings.Repeat("a", 65), 100); err != nil {
		t.Errorf("ValidateLite with maxLiteTopicSize 100: %v", err)
	}
	if HomeBucket("user_10086", 1000) != protocol.LiteHomeBucket("user_10086", 1000) || JavaStringHash("a") != 97 ||
		JumpConsistentHash(1, 7) != protocol.JumpConsistentHash(1, 7) {
		t.Error("sharding functions differ from pkg/protocol's")
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
