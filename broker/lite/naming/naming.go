// Package naming holds the lite-topic name rules (docs/lite-topics.md §1): how a
// light message queue (LMQ) name is built from a parent topic and a lite
// topic, how it is parsed back, which lite names are legal, and which broker
// is a lite topic's home (§4.6).
//
// Every lite LMQ is named "%LMQ%$<parent>$<lite>". The parent follows the
// ordinary topic rules (its charset excludes '$' and ','), and a lite name is
// limited to ASCII letters, digits, '_' and '-', so the name parses back
// unambiguously and never breaks the comma-separated multi-dispatch
// properties.
package naming

import (
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Name constants.
const (
	// LMQPrefix starts every light message queue name.
	LMQPrefix = "%LMQ%"
	// Separator separates prefix, parent and lite.
	Separator = "$"
	// LitePrefix starts every lite LMQ name.
	LitePrefix = LMQPrefix + Separator
	// QueueID is the only queue of an LMQ.
	QueueID int32 = 0
	// DefaultMaxLiteTopicSize is the default byte limit of a lite name
	// (maxLiteTopicSize).
	DefaultMaxLiteTopicSize = protocol.DefaultMaxLiteTopicSize
)

// LMQName returns the LMQ of (parent, lite); ok is false when either part
// is empty (the caller must reject or ignore the request).
func LMQName(parent, lite string) (name string, ok bool) {
	if parent == "" || lite == "" {
		return "", false
	}
	return LitePrefix + parent + Separator + lite, true
}

// IsLite reports whether name carries the lite LMQ prefix. It does not
// check that the rest parses (see Parse).
func IsLite(name string) bool { return strings.HasPrefix(name, LitePrefix) }

// Parse splits a lite LMQ name into its parent and lite parts. ok is false
// for a name without the lite prefix, with an empty parent or lite, or with
// a second '$' after the parent (a lite name cannot contain '$'). Generic
// LMQ names ("%LMQ%xyz") do not parse: lite code ignores them.
func Parse(name string) (parent, lite string, ok bool) {
	if !IsLite(name) {
		return "", "", false
	}
	rest := name[len(LitePrefix):]
	i := strings.IndexByte(rest, '$')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	lite = rest[i+1:]
	if strings.IndexByte(lite, '$') >= 0 {
		return "", "", false
	}
	return rest[:i], lite, true
}

// ParentOf returns the parent of a lite LMQ name ("" when it does not parse).
func ParentOf(name string) string {
	p, _, _ := Parse(name)
	return p
}

// LiteOf returns the lite part of a lite LMQ name ("" when it does not parse).
func LiteOf(name string) string {
	_, l, _ := Parse(name)
	return l
}

// ParentPrefix is the prefix shared by every LMQ of parent.
func ParentPrefix(parent string) string { return LitePrefix + parent + Separator }

// BelongsTo reports whether name is an LMQ of parent.
func BelongsTo(name, parent string) bool {
	return len(name) > len(LitePrefix)+len(parent)+1 &&
		strings.HasPrefix(name, LitePrefix) &&
		strings.HasPrefix(name[len(LitePrefix):], parent) &&
		name[len(LitePrefix)+len(parent)] == '$'
}

// Validation errors of ValidateLite (the shared rules of pkg/protocol).
var (
	ErrBlank    = protocol.ErrLiteTopicBlank
	ErrTooLong  = protocol.ErrLiteTopicTooLong
	ErrBadChars = protocol.ErrLiteTopicBadChars
)

// ValidateLite checks a lite name (§1.4): not blank, at most maxSize bytes
// (≤ 0: DefaultMaxLiteTopicSize), only ASCII letters, digits, '_' and '-'.
// The error says which rule failed and wraps ErrBlank, ErrTooLong or
// ErrBadChars.
func ValidateLite(lite string, maxSize int) error {
	return protocol.ValidateLiteTopic(lite, maxSize)
}
