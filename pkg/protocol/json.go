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
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	if _, ok := err.(*json.SyntaxError); !ok {
		return err
	}
	fixed, changed := QuoteBareKeys(data)
	if !changed {
		return err
	}
	return json.Unmarshal(fixed, v)
}

// QuoteBareKeys rewrites bare numeric object keys (-?[0-9]+ followed by ':'
// in key position, outside string literals) into quoted ones. It tokenizes
// rather than pattern-matches so that string contents are never touched.
func QuoteBareKeys(data []byte) ([]byte, bool) {
	out := make([]byte, 0, len(data)+16)
	changed := false
	// expectKey is true right after '{' or after ',' inside an object.
	type frame struct{ object bool }
	var stack []frame
	expectKey := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(data) {
				if data[j] == '\\' {
					j += 2
					continue
				}
				if data[j] == '"' {
					break
				}
				j++
			}
			if j >= len(data) {
				out = append(out, data[i:]...)
				return out, changed
			}
			out = append(out, data[i:j+1]...)
			i = j
			expectKey = false
		case c == '{':
			stack = append(stack, frame{object: true})
			expectKey = true
			out = append(out, c)
		case c == '[':
			stack = append(stack, frame{object: false})
			expectKey = false
			out = append(out, c)
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
			out = append(out, c)
		case c == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
			out = append(out, c)
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out = append(out, c)
		case expectKey && (c == '-' || (c >= '0' && c <= '9')):
			j := i + 1
			for j < len(data) && data[j] >= '0' && data[j] <= '9' {
				j++
			}
			k := j
			for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r') {
				k++
			}
			if k < len(data) && data[k] == ':' {
				out = append(out, '"')
				out = append(out, data[i:j]...)
				out = append(out, '"')
				changed = true
			} else {
				out = append(out, data[i:j]...)
			}
			i = j - 1
			expectKey = false
		default:
			out = append(out, c)
			expectKey = false
		}
	}
	return out, changed
}
