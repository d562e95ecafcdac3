package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Fields reads a request's extFields (the "custom header"). Required-field
// getters record the first problem; Err reports it. This mirrors Java's
// header decoding, which fails a request whose required field is missing or
// not a number.
type Fields struct {
	m   map[string]string
	err error
}

// FieldsOf wraps an extFields map (nil is fine).
func FieldsOf(m map[string]string) *Fields { return &Fields{m: m} }

// Err returns the first missing or malformed field, or nil.
func (f *Fields) Err() error { return f.err }

func (f *Fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf(format, args...)
	}
}

// Has reports whether the key is present and non-empty.
func (f *Fields) Has(key string) bool { return f.m[key] != "" }

// Str returns a required string.
func (f *Fields) Str(key string) string {
	v, ok := f.m[key]
	if !ok || v == "" {
		f.fail("the custom field <%s> is null", key)
	}
	return v
}

// OptStr returns an optional string.
func (f *Fields) OptStr(key, def string) string {
	if v, ok := f.m[key]; ok && v != "" {
		return v
	}
	return def
}

// Int64 returns a required integer.
func (f *Fields) Int64(key string) int64 {
	v, ok := f.m[key]
	if !ok || v == "" {
		f.fail("the custom field <%s> is null", key)
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		f.fail("the custom field <%s> is not a number: %q", key, v)
	}
	return n
}

// OptInt64 returns an optional integer; a present but malformed value is an error.
func (f *Fields) OptInt64(key string, def int64) int64 {
	v, ok := f.m[key]
	if !ok || v == "" {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		f.fail("the custom field <%s> is not a number: %q", key, v)
		return def
	}
	return n
}

// Int32 returns a required 32-bit integer.
func (f *Fields) Int32(key string) int32 {
	n := f.Int64(key)
	if n < -1<<31 || n > 1<<31-1 {
		f.fail("the custom field <%s> is out of range: %d", key, n)
		return 0
	}
	return int32(n)
}

// OptInt32 returns an optional 32-bit integer.
func (f *Fields) OptInt32(key string, def int32) int32 {
	n := f.OptInt64(key, int64(def))
	if n < -1<<31 || n > 1<<31-1 {
		f.fail("the custom field <%s> is out of range: %d", key, n)
		return def
	}
	return int32(n)
}

// OptBool returns an optional boolean as Java's header decoding reads one
// (Boolean.parseBoolean): "true" in any case is true, anything else false,
// never an error. The C++ client writes its booleans as "1" and "0"
// (END_TRANSACTION's fromTransactionCheck): Apache's broker takes both, as
// false.
func (f *Fields) OptBool(key string, def bool) bool {
	v, ok := f.m[key]
	if !ok || v == "" {
		return def
	}
	return strings.EqualFold(v, "true")
}
