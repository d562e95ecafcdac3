package filter

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseError is a selector that does not compile: a lexical or syntax
// error, or one of the semantic checks Java's parser makes (comparing a
// string literal with '>', NULL with '=', BETWEEN bounds out of order, ...).
type ParseError struct {
	Pos int // byte offset of the offending token
	Msg string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("Invalid MessageSelector. %s (at offset %d)", e.Msg, e.Pos)
}

// maxDepth bounds nesting (parentheses, NOT, unary signs) so that a
// hostile expression cannot exhaust the stack.
const maxDepth = 256

// MaxExpressionLength bounds the selector text Parse accepts.
const MaxExpressionLength = 64 << 10

// Expression is a compiled SQL92 selector (Apache RocketMQ's
// SelectorParser grammar, see doc.go). It is immutable and safe for
// concurrent use.
type Expression struct {
	src   string
	root  node
	props []string // property names, by slot
}

// Parse compiles a selector.
func Parse(sql string) (*Expression, error) {
	if len(sql) > MaxExpressionLength {
		return nil, &ParseError{Pos: MaxExpressionLength, Msg: fmt.Sprintf("expression longer than %d bytes", MaxExpressionLength)}
	}
	p := &parser{lex: lexer{src: sql}, slots: map[string]int{}}
	root, err := p.selector()
	if err != nil {
		return nil, err
	}
	return &Expression{src: sql, root: root, props: p.names}, nil
}

// Source is the text the expression was compiled from.
func (x *Expression) Source() string { return x.src }

// String renders the compiled tree, fully parenthesised.
func (x *Expression) String() string { return x.root.String() }

// Properties lists the property names the expression reads.
func (x *Expression) Properties() []string { return append([]string(nil), x.props...) }

type parser struct {
	lex   lexer
	la    []token // lookahead buffer
	depth int
	slots map[string]int
	names []string
}

func (p *parser) fill(n int) error {
	for len(p.la) < n {
		t, err := p.lex.next()
		if err != nil {
			return err
		}
		p.la = append(p.la, t)
	}
	return nil
}

// peek returns the i-th token ahead (0 = next).
func (p *parser) peek(i int) (token, error) {
	if err := p.fill(i + 1); err != nil {
		return token{}, err
	}
	return p.la[i], nil
}

func (p *parser) advance() token {
	t := p.la[0]
	p.la = p.la[1:]
	return t
}

// expect consumes a token of kind k.
func (p *parser) expect(k tokKind) (token, error) {
	t, err := p.peek(0)
	if err != nil {
		return t, err
	}
	if t.kind != k {
		return t, p.unexpected(t, k.String())
	}
	return p.advance(), nil
}

func (p *parser) unexpected(t token, want string) error {
	got := t.kind.String()
	if t.kind != tokEOF {
		got = fmt.Sprintf("%q", t.text)
		if t.kind == tokString {
			got = value{k: kString, s: t.text}.String()
		}
		got = clip(got)
	}
	return &ParseError{Pos: t.pos, Msg: fmt.Sprintf("encountered %s, expecting %s", got, want)}
}

// short renders a node for an error message, at most about 100 bytes.
func short(n node) string { return clip(n.String()) }

// clip shortens text quoted in an error message to about 100 bytes.
func clip(s string) string {
	if len(s) > 100 {
		s = strings.ToValidUTF8(s[:97], "") + "..."
	}
	return s
}

func semantic(pos int, format string, args ...any) error {
	return &ParseError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) enter(pos int) error {
	p.depth++
	if p.depth > maxDepth {
		return semantic(pos, "expression nested deeper than %d", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// selector is JmsSelector: orExpression as a boolean. Like Java's grammar it
// does not require the end of input.
func (p *parser) selector() (node, error) {
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	t, _ := p.peek(0) // position for the message only
	return asBoolean(n, t.pos)
}

// asBoolean is asBooleanExpression: boolean expressions pass, a bare
// property becomes a boolean cast, anything else is an error.
func asBoolean(n node, pos int) (node, error) {
	if isBoolean(n) {
		return n, nil
	}
	if _, ok := n.(*propNode); ok {
		return &castNode{x: n}, nil
	}
	return nil, semantic(pos, "expression will not result in a boolean value: %s", short(n))
}

func (p *parser) or() (node, error) {
	return p.logical(tokOr, p.and, func(l, r node) node { return &orNode{l: l, r: r} })
}

func (p *parser) and() (node, error) {
	return p.logical(tokAnd, p.equality, func(l, r node) node { return &andNode{l: l, r: r} })
}

// chain parses a left-associative chain: an operand, then, for as long as
// step takes the next token t for one of its operators, what step makes
// of the chain so far and that operator. step reports false, consuming
// nothing, at a token that ends the chain.
func (p *parser) chain(operand func() (node, error), step func(left node, t token) (node, bool, error)) (node, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t, err := p.peek(0)
		if err != nil {
			return nil, err
		}
		next, ok, err := step(left, t)
		if err != nil {
			return nil, err
		}
		if !ok {
			return left, nil
		}
		left = next
	}
}

// logical parses a left-associative chain of operands joined by the
// keyword op (OR, AND); both sides of each join must be boolean.
func (p *parser) logical(op tokKind, operand func() (node, error), join func(l, r node) node) (node, error) {
	return p.chain(operand, func(left node, t token) (node, bool, error) {
		if t.kind != op {
			return nil, false, nil
		}
		p.advance()
		right, err := operand()
		if err != nil {
			return nil, false, err
		}
		l, err := asBoolean(left, t.pos)
		if err != nil {
			return nil, false, err
		}
		r, err := asBoolean(right, t.pos)
		if err != nil {
			return nil, false, err
		}
		return join(l, r), true, nil
	})
}

// equality handles =, <>, IS NULL and IS NOT NULL (left-associative).
func (p *parser) equality() (node, error) {
	return p.chain(p.comparison, p.equalityStep)
}

// equalityStep applies one =, <>, IS NULL or IS NOT NULL to left.
func (p *parser) equalityStep(left node, t token) (node, bool, error) {
	switch t.kind {
	case tokEq, tokNe:
		p.advance()
		right, err := p.comparison()
		if err != nil {
			return nil, false, err
		}
		eq, err := createEqual(left, right, t.pos)
		if err != nil {
			return nil, false, err
		}
		if t.kind == tokNe {
			return &notNode{x: eq}, true, nil
		}
		return eq, true, nil
	case tokIs:
		p.advance()
		n, err := p.peek(0)
		if err != nil {
			return nil, false, err
		}
		isNull := &cmpNode{op: opEq, l: left, r: &constNode{v: nullVal(), boolConst: true}}
		switch n.kind {
		case tokNull:
			p.advance()
			return isNull, true, nil
		case tokNot:
			p.advance()
			if _, err := p.expect(tokNull); err != nil {
				return nil, false, err
			}
			return &notNode{x: isNull}, true, nil
		default:
			return nil, false, p.unexpected(n, "NULL or NOT NULL")
		}
	}
	return nil, false, nil
}

// comparison handles >, >=, <, <=, [NOT] BETWEEN, [NOT] IN and
// [NOT] CONTAINS / STARTSWITH / ENDSWITH (left-associative).
func (p *parser) comparison() (node, error) {
	return p.chain(p.unary, p.comparisonStep)
}

// comparisonStep applies one comparison operator to left.
func (p *parser) comparisonStep(left node, t token) (node, bool, error) {
	negate := false
	op := t
	switch t.kind {
	case tokGt, tokGe, tokLt, tokLe:
		p.advance()
		right, err := p.unary()
		if err != nil {
			return nil, false, err
		}
		n, err := createOrdering(t.kind, left, right, t.pos)
		if err != nil {
			return nil, false, err
		}
		return n, true, nil
	case tokNot:
		// Java's LOOKAHEAD(2): NOT must start one of the negated forms.
		nx, err := p.peek(1)
		if err != nil {
			return nil, false, err
		}
		switch nx.kind {
		case tokContains, tokStartsWith, tokEndsWith, tokBetween, tokIn:
		default:
			return nil, false, p.unexpected(nx, "CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT")
		}
		p.advance()
		negate, op = true, nx
	case tokContains, tokStartsWith, tokEndsWith, tokBetween, tokIn:
	default:
		return nil, false, nil
	}
	p.advance() // the operator keyword
	switch op.kind {
	case tokContains, tokStartsWith, tokEndsWith:
		s, err := p.expect(tokString)
		if err != nil {
			return nil, false, err
		}
		so := opContains
		switch op.kind {
		case tokStartsWith:
			so = opStartsWith
		case tokEndsWith:
			so = opEndsWith
		}
		return &strNode{op: so, negate: negate, x: left, search: s.text}, true, nil
	case tokBetween:
		low, err := p.unary()
		if err != nil {
			return nil, false, err
		}
		if _, err := p.expect(tokAnd); err != nil {
			return nil, false, err
		}
		high, err := p.unary()
		if err != nil {
			return nil, false, err
		}
		n, err := createBetween(left, low, high, negate, op.pos)
		if err != nil {
			return nil, false, err
		}
		return n, true, nil
	}
	// tokIn
	if _, err := p.expect(tokLParen); err != nil {
		return nil, false, err
	}
	var list []string
	for {
		s, err := p.expect(tokString)
		if err != nil {
			return nil, false, err
		}
		list = append(list, s.text)
		c, err := p.peek(0)
		if err != nil {
			return nil, false, err
		}
		if c.kind != tokComma {
			break
		}
		p.advance()
	}
	if _, err := p.expect(tokRParen); err != nil {
		return nil, false, err
	}
	prop, ok := left.(*propNode)
	if !ok {
		return nil, false, semantic(op.pos, "expected a property for In expression, got: %s", short(left))
	}
	in := &inNode{prop: prop, list: list, negate: negate}
	if len(list) >= 5 {
		in.set = make(map[string]struct{}, len(list))
		for _, s := range list {
			in.set[s] = struct{}{}
		}
	}
	return in, true, nil
}

// unary handles + (ignored), - (negation) and NOT.
func (p *parser) unary() (node, error) {
	t, err := p.peek(0)
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tokPlus, tokMinus, tokNot:
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		p.advance()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		switch t.kind {
		case tokMinus:
			return &negNode{x: x}, nil
		case tokNot:
			b, err := asBoolean(x, t.pos)
			if err != nil {
				return nil, err
			}
			return &notNode{x: b}, nil
		}
		return x, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t, err := p.peek(0)
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case tokString:
		p.advance()
		return &constNode{v: value{k: kString, s: t.text}}, nil
	case tokDecimal:
		p.advance()
		return decimalLiteral(t)
	case tokFloat:
		p.advance()
		return floatLiteral(t)
	case tokTrue:
		p.advance()
		return &constNode{v: trueVal(), boolConst: true}, nil
	case tokFalse:
		p.advance()
		return &constNode{v: falseVal(), boolConst: true}, nil
	case tokNull:
		p.advance()
		return &constNode{v: nullVal(), boolConst: true}, nil
	case tokID:
		p.advance()
		slot, ok := p.slots[t.text]
		if !ok {
			slot = len(p.names)
			p.slots[t.text] = slot
			p.names = append(p.names, t.text)
		}
		return &propNode{name: t.text, slot: slot}, nil
	case tokLParen:
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		defer p.leave()
		p.advance()
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tokRParen); err != nil {
			return nil, err
		}
		return x, nil
	}
	return nil, p.unexpected(t, "a literal, a property or '('")
}

// decimalLiteral is ConstantExpression.createFromDecimal: a long (the L
// suffix dropped), an Integer when it fits.
func decimalLiteral(t token) (node, error) {
	text := strings.TrimRight(t.text, "lL")
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, semantic(t.pos, "number %s is out of the long range", clip(t.text))
	}
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return &constNode{v: value{k: kInt, n: n}}, nil
	}
	return &constNode{v: value{k: kLong, n: n}}, nil
}

// floatLiteral is ConstantExpression.createFloat: a double that must be
// finite and at least Double.MIN_VALUE — so, as in Java, a literal that is
// zero (0.0, .0, 0e5) or underflows is refused.
func floatLiteral(t token) (node, error) {
	f, err := strconv.ParseFloat(t.text, 64)
	var ne *strconv.NumError
	if err != nil && (!errors.As(err, &ne) || ne.Err != strconv.ErrRange) {
		return nil, semantic(t.pos, "bad floating point literal %s", clip(t.text))
	}
	if math.IsInf(f, 1) || f > math.MaxFloat64 {
		return nil, semantic(t.pos, "%s is greater than %v", clip(t.text), math.MaxFloat64)
	}
	if f < math.SmallestNonzeroFloat64 {
		return nil, semantic(t.pos, "%s is less than %v", clip(t.text), math.SmallestNonzeroFloat64)
	}
	return &constNode{v: value{k: kDouble, f: f}}, nil
}

// checkLessThanOperand: only numbers (or what may evaluate to one) can be
// ordered; string, boolean and NULL literals and boolean expressions cannot.
func checkLessThanOperand(n node, pos int) error {
	if c, ok := n.(*constNode); ok {
		if c.v.isNumber() {
			return nil
		}
		return semantic(pos, "value '%s' cannot be compared", short(n))
	}
	if isBoolean(n) {
		return semantic(pos, "value '%s' cannot be compared", short(n))
	}
	return nil
}

func createOrdering(k tokKind, l, r node, pos int) (node, error) {
	if err := checkLessThanOperand(l, pos); err != nil {
		return nil, err
	}
	if err := checkLessThanOperand(r, pos); err != nil {
		return nil, err
	}
	op := opLe
	switch k {
	case tokGt:
		op = opGt
	case tokGe:
		op = opGe
	case tokLt:
		op = opLt
	}
	return &cmpNode{op: op, l: l, r: r}, nil
}

// createEqual: NULL cannot be compared with '=' or '<>', and two literals
// may not compare a boolean on the left with a non-boolean on the right.
func createEqual(l, r node, pos int) (node, error) {
	for _, x := range []node{l, r} {
		if c, ok := x.(*constNode); ok && c.v.k == kNull {
			return nil, semantic(pos, "'%s' cannot be compared", short(x))
		}
	}
	lc, lok := l.(*constNode)
	rc, rok := r.(*constNode)
	if lok && rok && lc.boolConst && !rc.boolConst {
		return nil, semantic(pos, "'%s' cannot be compared with '%s'", short(l), short(r))
	}
	return &cmpNode{op: opEq, l: l, r: r}, nil
}

// createBetween: x BETWEEN a AND b is x >= a AND x <= b; with two literal
// bounds they must be non-null and in order. NOT BETWEEN is x < a OR x > b
// (no bound checks beyond the operands').
func createBetween(x, low, high node, negate bool, pos int) (node, error) {
	lowOp, highOp := tokGe, tokLe
	if negate {
		lowOp, highOp = tokLt, tokGt
	} else if lc, lok := low.(*constNode); lok {
		if hc, hok := high.(*constNode); hok {
			if lc.v.k == kNull || hc.v.k == kNull {
				return nil, semantic(pos, "illegal values of between, values can not be null")
			}
			c, err := javaCompare(hc.v, lc.v)
			if err != nil {
				return nil, semantic(pos, "illegal values of between: %v", err)
			}
			if c < 0 {
				return nil, semantic(pos, "illegal values of between, left value(%s) must less than or equal to right value(%s)", lc.v, hc.v)
			}
		}
	}
	l, err := createOrdering(lowOp, x, low, pos)
	if err != nil {
		return nil, err
	}
	h, err := createOrdering(highOp, x, high, pos)
	if err != nil {
		return nil, err
	}
	if negate {
		return &orNode{l: l, r: h}, nil
	}
	return &andNode{l: l, r: h}, nil
}
