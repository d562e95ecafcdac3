package message

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Separators of the properties string (docs/protocol.md §5.4).
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)

// MaxPropertiesLength is the largest properties string a record can carry:
// its length is stored as a signed int16.
const MaxPropertiesLength = 32767

// ErrInvalidProperty reports a key or value that would not survive a round
// trip through the properties string.
var ErrInvalidProperty = errors.New("message: invalid property")

// EncodeProperties returns the properties string for m: k 0x01 v 0x02 per
// entry, keys sorted so the output is deterministic (Java emits HashMap
// order; no reader depends on order). Empty keys or values, keys containing
// 0x01 or 0x02 and values containing 0x02 are rejected because Java's decoder
// would drop or split them.
func EncodeProperties(m map[string]string) ([]byte, error) {
	return AppendProperties(nil, m)
}

// AppendProperties appends the properties string for m to dst.
func AppendProperties(dst []byte, m map[string]string) ([]byte, error) {
	if len(m) == 0 {
		return dst, nil
	}
	// A message has about ten properties: sort their keys in a stack
	// array (slices.Sorted grew a heap slice, eight allocations per
	// message on the gRPC send path).
	var small [32]string
	keys := small[:0]
	if len(m) > len(small) {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var err error
		if dst, err = AppendProperty(dst, k, m[k]); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// CheckProperties reports a property AppendProperties would reject, nil
// when it takes them all.
func CheckProperties(m map[string]string) error {
	for k, v := range m {
		if err := checkProperty(k, v); err != nil {
			return err
		}
	}
	return nil
}

// AppendProperty appends one "k 0x01 v 0x02" item to dst, e.g. to add
// CLUSTER or UNIQ_KEY to a properties string received from a producer
// without decoding it.
func AppendProperty(dst []byte, key, value string) ([]byte, error) {
	if err := checkProperty(key, value); err != nil {
		return dst, err
	}
	dst = append(dst, key...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator), nil
}

func checkProperty(key, value string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidProperty)
	case value == "":
		return fmt.Errorf("%w: empty value for key %q", ErrInvalidProperty, key)
	case strings.ContainsAny(key, "\x01\x02"):
		return fmt.Errorf("%w: key %q contains a separator", ErrInvalidProperty, key)
	case strings.IndexByte(value, PropertySeparator) >= 0:
		return fmt.Errorf("%w: value of %q contains 0x02", ErrInvalidProperty, key)
	}
	return nil
}

// DecodeProperties parses a properties string with Java's tolerance
// (MessageDecoder.string2messageProperties): items are split on 0x02; the
// first 0x01 in an item separates key and value (the value may contain more
// 0x01 bytes); items with an empty key or value, or without 0x01, are
// dropped; a later duplicate key wins. It never fails. Bytes are kept as they
// are (Java would replace invalid UTF-8 with U+FFFD).
func DecodeProperties(b []byte) map[string]string {
	if len(b) == 0 {
		return nil
	}
	m := make(map[string]string, bytes.Count(b, []byte{PropertySeparator})+1)
	walkProperties(b, func(k, v []byte) bool {
		m[internKey(k)] = internValue(v)
		return true
	})
	return m
}

// internKey returns the keys most messages carry as constants: a batch of
// Java messages (WAIT and UNIQ_KEY on every item) then allocates one string
// per item for its properties, not three.
func internKey(k []byte) string {
	switch string(k) {
	case PropertyUniqClientMessageIDKeyIdx:
		return PropertyUniqClientMessageIDKeyIdx
	case PropertyWaitStoreMsgOK:
		return PropertyWaitStoreMsgOK
	case PropertyTags:
		return PropertyTags
	case PropertyKeys:
		return PropertyKeys
	}
	return string(k)
}

func internValue(v []byte) string {
	switch string(v) {
	case "true":
		return "true"
	case "false":
		return "false"
	}
	return string(v)
}

// PropertyValue finds key in a properties string without building a map. As
// with DecodeProperties, the last occurrence wins.
func PropertyValue(b []byte, key string) (string, bool) {
	var val []byte
	found := false
	walkProperties(b, func(k, v []byte) bool {
		if string(k) == key {
			val, found = v, true
		}
		return true
	})
	if !found {
		return "", false
	}
	return string(val), true
}

// walkProperties calls fn for every item Java would keep, in order.
func walkProperties(b []byte, fn func(k, v []byte) bool) {
	for len(b) > 0 {
		item := b
		if i := bytes.IndexByte(b, PropertySeparator); i >= 0 {
			item, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		sep := bytes.IndexByte(item, NameValueSeparator)
		if sep <= 0 || sep >= len(item)-1 {
			continue
		}
		if !fn(item[:sep], item[sep+1:]) {
			return
		}
	}
}

// PropertyValues looks up several keys in one walk of a properties string:
// vals[i] is the value of keys[i] (nil when absent; the last occurrence
// wins, as with PropertyValue), aliasing b. The keys must be distinct and
// len(vals) must be len(keys).
func PropertyValues(b []byte, keys []string, vals [][]byte) {
	clear(vals)
	walkProperties(b, func(k, v []byte) bool {
		for i, key := range keys {
			if string(k) == key {
				vals[i] = v
				break
			}
		}
		return true
	})
}
