package filter

import (
	"fmt"
	"strings"
)

// env is what an expression is evaluated against: the values of the
// properties the expression names, by slot (see Expression.props).
type env struct {
	vals []string
	set  []bool
}

// node is a compiled expression. Evaluation follows Apache RocketMQ's
// org.apache.rocketmq.filter.expression classes: the result is a Java value
// or null ("unknown"), and errors propagate to the top (the message is then
// not matched).
type node interface {
	eval(e *env) (value, error)
	String() string
}

// constNode is a literal (ConstantExpression); TRUE, FALSE and NULL are
// also boolean expressions (BooleanConstantExpression).
type constNode struct {
	v         value
	boolConst bool
}

func (n *constNode) eval(*env) (value, error) { return n.v, nil }
func (n *constNode) String() string           { return n.v.String() }

// propNode is a message property (PropertyExpression); its value is a
// String, or null when the message lacks it.
type propNode struct {
	name string
	slot int
}

func (n *propNode) eval(e *env) (value, error) {
	if e == nil || !e.set[n.slot] {
		return nullVal(), nil
	}
	return value{k: kString, s: e.vals[n.slot]}, nil
}
func (n *propNode) String() string { return n.name }

// negNode is unary minus: numbers are negated (Integer and Long wrap as in
// Java), anything else is null.
type negNode struct{ x node }

func (n *negNode) eval(e *env) (value, error) {
	v, err := n.x.eval(e)
	if err != nil {
		return nullVal(), err
	}
	switch v.k {
	case kInt:
		return value{k: kInt, n: int64(-int32(v.n))}, nil
	case kLong:
		return value{k: kLong, n: -v.n}, nil
	case kDouble:
		return value{k: kDouble, f: -v.f}, nil
	}
	return nullVal(), nil
}
func (n *negNode) String() string { return "(- " + n.x.String() + ")" }

// castNode turns a bare property into a boolean (createBooleanCast): only
// a Boolean value is true or false; a String (every property) is FALSE.
type castNode struct{ x node }

func (n *castNode) eval(e *env) (value, error) {
	v, err := n.x.eval(e)
	if err != nil || v.k == kNull {
		return nullVal(), err
	}
	if v.k != kBool {
		return falseVal(), nil
	}
	return v, nil
}
func (n *castNode) String() string { return n.x.String() }

// notNode is three-valued NOT: NOT null is null.
type notNode struct{ x node }

func (n *notNode) eval(e *env) (value, error) {
	v, err := n.x.eval(e)
	if err != nil {
		return nullVal(), err
	}
	switch v.k {
	case kNull:
		return nullVal(), nil
	case kBool:
		return boolVal(!v.b), nil
	}
	return nullVal(), fmt.Errorf("%w: NOT of non-boolean %s", errEval, v)
}
func (n *notNode) String() string { return "(NOT " + n.x.String() + ")" }

// andNode / orNode are Java's LogicExpression: left first, short-circuit
// on FALSE (AND) or TRUE (OR), null when the outcome is unknown.
type andNode struct{ l, r node }

func (n *andNode) eval(e *env) (value, error) {
	lv, err := n.l.eval(e)
	if err != nil {
		return nullVal(), err
	}
	if lv.k == kBool && !lv.b {
		return falseVal(), nil
	}
	rv, err := n.r.eval(e)
	if err != nil {
		return nullVal(), err
	}
	if rv.k == kBool && !rv.b {
		return falseVal(), nil
	}
	if lv.k == kNull || rv.k == kNull {
		return nullVal(), nil
	}
	return trueVal(), nil
}
func (n *andNode) String() string { return "(" + n.l.String() + " AND " + n.r.String() + ")" }

type orNode struct{ l, r node }

func (n *orNode) eval(e *env) (value, error) {
	lv, err := n.l.eval(e)
	if err != nil {
		return nullVal(), err
	}
	if lv.k == kBool && lv.b {
		return trueVal(), nil
	}
	rv, err := n.r.eval(e)
	if err != nil {
		return nullVal(), err
	}
	if rv.k == kBool && rv.b {
		return trueVal(), nil
	}
	if lv.k == kNull || rv.k == kNull {
		return nullVal(), nil
	}
	return falseVal(), nil
}
func (n *orNode) String() string { return "(" + n.l.String() + " OR " + n.r.String() + ")" }

type cmpOp uint8

const (
	opEq cmpOp = iota
	opGt
	opGe
	opLt
	opLe
)

func (o cmpOp) String() string { return [...]string{"=", ">", ">=", "<", "<="}[o] }

// cmpNode is a ComparisonExpression.
type cmpNode struct {
	op   cmpOp
	l, r node
}

func (n *cmpNode) String() string {
	if c, ok := n.r.(*constNode); ok && c.v.k == kNull && n.op == opEq {
		return "(" + n.l.String() + " IS NULL)"
	}
	return "(" + n.l.String() + " " + n.op.String() + " " + n.r.String() + ")"
}

func (n *cmpNode) eval(e *env) (value, error) {
	if n.op == opEq {
		return n.evalEqual(e)
	}
	lv, err := n.l.eval(e)
	if err != nil || lv.k == kNull {
		return nullVal(), err
	}
	rv, err := n.r.eval(e)
	if err != nil || rv.k == kNull {
		return nullVal(), err
	}
	var c int
	if lv.k == kString && rv.k == kString {
		// Strings are ordered only as numbers.
		lf, err := javaParseDouble(lv.s)
		if err != nil {
			return nullVal(), fmt.Errorf("%w: it's illegal to compare string by '%s': lv=%s, rv=%s", errEval, n.op, lv.s, rv.s)
		}
		rf, err := javaParseDouble(rv.s)
		if err != nil {
			return nullVal(), fmt.Errorf("%w: it's illegal to compare string by '%s': lv=%s, rv=%s", errEval, n.op, lv.s, rv.s)
		}
		c = compareDouble(lf, rf)
	} else if c, err = javaCompare(lv, rv); err != nil {
		return nullVal(), err
	}
	switch n.op {
	case opGt:
		return boolVal(c > 0), nil
	case opGe:
		return boolVal(c >= 0), nil
	case opLt:
		return boolVal(c < 0), nil
	}
	return boolVal(c <= 0), nil
}

// evalEqual is createEqual's evaluate: null = null is TRUE, null on the
// left alone is null, null on the right alone is FALSE; equal objects are
// TRUE; otherwise the values are compared with conversion.
func (n *cmpNode) evalEqual(e *env) (value, error) {
	lv, err := n.l.eval(e)
	if err != nil {
		return nullVal(), err
	}
	rv, err := n.r.eval(e)
	if err != nil {
		return nullVal(), err
	}
	switch {
	case lv.k == kNull && rv.k == kNull:
		return trueVal(), nil
	case lv.k == kNull:
		return nullVal(), nil
	case rv.k == kNull:
		return falseVal(), nil
	case javaEquals(lv, rv):
		return trueVal(), nil
	}
	c, err := javaCompare(lv, rv)
	if err != nil {
		return nullVal(), err
	}
	return boolVal(c == 0), nil
}

// inNode is [NOT] IN ('a', 'b', ...) on a property.
type inNode struct {
	prop   *propNode
	list   []string
	set    map[string]struct{} // for 5 or more values
	negate bool
}

func (n *inNode) eval(e *env) (value, error) {
	v, err := n.prop.eval(e)
	if err != nil || v.k != kString {
		return nullVal(), err
	}
	var found bool
	if n.set != nil {
		_, found = n.set[v.s]
	} else {
		for _, s := range n.list {
			if s == v.s {
				found = true
				break
			}
		}
	}
	return boolVal(found != n.negate), nil
}

func (n *inNode) String() string {
	op := " IN ("
	if n.negate {
		op = " NOT IN ("
	}
	quoted := make([]string, len(n.list))
	for i, s := range n.list {
		quoted[i] = value{k: kString, s: s}.String()
	}
	return "(" + n.prop.String() + op + strings.Join(quoted, ", ") + "))"
}

type strOp uint8

const (
	opContains strOp = iota
	opStartsWith
	opEndsWith
)

func (o strOp) String() string { return [...]string{"CONTAINS", "STARTSWITH", "ENDSWITH"}[o] }

// strNode is [NOT] CONTAINS / STARTSWITH / ENDSWITH 'text': FALSE (never
// null) for an empty search text, a missing or non-string value; NOT only
// flips the answer for a string value.
type strNode struct {
	op     strOp
	negate bool
	x      node
	search string
}

func (n *strNode) eval(e *env) (value, error) {
	if n.search == "" {
		return falseVal(), nil
	}
	v, err := n.x.eval(e)
	if err != nil {
		return nullVal(), err
	}
	if v.k != kString {
		return falseVal(), nil
	}
	var hit bool
	switch n.op {
	case opContains:
		hit = strings.Contains(v.s, n.search)
	case opStartsWith:
		hit = strings.HasPrefix(v.s, n.search)
	default:
		hit = strings.HasSuffix(v.s, n.search)
	}
	return boolVal(hit != n.negate), nil
}

func (n *strNode) String() string {
	op := n.op.String()
	if n.negate {
		op = "NOT " + op
	}
	return "(" + n.x.String() + " " + op + " " + value{k: kString, s: n.search}.String() + ")"
}

// isBoolean reports whether Java would consider n a BooleanExpression.
func isBoolean(n node) bool {
	switch x := n.(type) {
	case *constNode:
		return x.boolConst
	case *castNode, *notNode, *andNode, *orNode, *cmpNode, *inNode, *strNode:
		return true
	}
	return false
}
