package filter

import (
	"bytes"

	"github.com/rmqgo/rmq/pkg/message"
)

// Truth is the three-valued outcome of an expression.
type Truth int8

const (
	// Unknown is Java's null: a comparison with a missing property, NOT of
	// unknown, and so on. It does not match.
	Unknown Truth = iota
	False
	True
)

func (t Truth) String() string { return [...]string{"UNKNOWN", "FALSE", "TRUE"}[t] }

// maxStackSlots is how many property slots Evaluate keeps on the stack.
const maxStackSlots = 8

// EvalMap evaluates the expression against a property map. An error is an
// evaluation error Java would throw (e.g. a property compared with a number
// that is not a number); the broker treats it as no match.
func (x *Expression) EvalMap(props map[string]string) (Truth, error) {
	var vb [maxStackSlots]string
	var sb [maxStackSlots]bool
	e := x.newEnv(vb[:0], sb[:0])
	for i, name := range x.props {
		e.vals[i], e.set[i] = props[name], hasKey(props, name)
	}
	return x.run(e)
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// Eval evaluates the expression against a stored properties string
// (docs/protocol.md §5.4), decoded in one pass with Java's rules (items without
// a key or value are dropped; a later duplicate wins). Only the properties
// the expression names are kept.
func (x *Expression) Eval(props []byte) (Truth, error) {
	var vb [maxStackSlots]string
	var sb [maxStackSlots]bool
	e := x.newEnv(vb[:0], sb[:0])
	if len(x.props) > 0 {
		walkProperties(props, func(k, v []byte) {
			for i, name := range x.props {
				if string(k) == name {
					e.vals[i], e.set[i] = string(v), true
					return
				}
			}
		})
	}
	return x.run(e)
}

// Match reports whether a message with these stored properties is
// delivered: only TRUE matches; UNKNOWN, FALSE and evaluation errors do not
// (Java's ExpressionMessageFilter.isMatchedByCommitLog).
func (x *Expression) Match(props []byte) bool {
	t, err := x.Eval(props)
	return err == nil && t == True
}

func (x *Expression) newEnv(vb []string, sb []bool) *env {
	n := len(x.props)
	if n > cap(vb) {
		vb, sb = make([]string, 0, n), make([]bool, 0, n)
	}
	return &env{vals: vb[:n], set: sb[:n]}
}

func (x *Expression) run(e *env) (Truth, error) {
	v, err := x.root.eval(e)
	if err != nil {
		return Unknown, err
	}
	if v.k != kBool {
		return Unknown, nil
	}
	if v.b {
		return True, nil
	}
	return False, nil
}

// walkProperties calls fn for each item of a properties string that Java
// keeps (message.DecodeProperties without the map).
func walkProperties(b []byte, fn func(k, v []byte)) {
	for len(b) > 0 {
		item := b
		if i := bytes.IndexByte(b, message.PropertySeparator); i >= 0 {
			item, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		sep := bytes.IndexByte(item, message.NameValueSeparator)
		if sep <= 0 || sep >= len(item)-1 {
			continue
		}
		fn(item[:sep], item[sep+1:])
	}
}
