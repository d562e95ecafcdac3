package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Marshal encodes v compactly, without HTML escaping (fastjson does not
// escape <, > and &).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // drop Encoder's trailing newline
}

// MustMarshal is Marshal for values that cannot fail (plain structs, maps
// with string keys): a failure is a programming error.
func MustMarshal(v any) []byte {
	b, err := Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("protocol: marshal %T: %v", v, err))
	}
	return b
}

// Unmarshal decodes fastjson-dialect JSON: standard JSON, plus bare numeric
// object keys ({0:"a"}) as Java writes Map<Integer,V> and Map<Long,V>.
func Unmarshal(data []byte, v any) error {
	return unmarshalFixing(data, v, QuoteBareKeys)
}

// unmarshalFixing is json.Unmarshal; on a syntax error it decodes again
// what fix makes of data, if fix changed anything.
func unmarshalFixing(data []byte, v any, fix func([]byte) ([]byte, bool)) error {
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	if _, ok := err.(*json.SyntaxError); !ok {
		return err
	}
	fixed, changed := fix(data)
	if !changed {
		return err
	}
	return json.Unmarshal(fixed, v)
}

// QuoteBareKeys rewrites bare numeric object keys (-?[0-9]+ followed by ':'
// in key position, outside string literals) into quoted ones. It tokenizes
// rather than pattern-matches so that string contents are never touched.
func QuoteBareKeys(data []byte) ([]byte, bool) {
	changed := false
	out := rewriteKeys(data, len(data)+16, func(out []byte, i int) ([]byte, int, bool) {
		if c := data[i]; c != '-' && (c < '0' || c > '9') {
			return out, 0, false
		}
		j := i + 1
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		k := j
		for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r') {
			k++
		}
		if k < len(data) && data[k] == ':' {
			changed = true
			out = append(out, '"')
			out = append(out, data[i:j]...)
			return append(out, '"'), j, true
		}
		return append(out, data[i:j]...), j, true
	})
	return out, changed
}
