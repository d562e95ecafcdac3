package filter

import (
	"fmt"
	"strings"
)

// tokKind is a token of RocketMQ's selector grammar (SelectorParser.jj).
type tokKind uint8

const (
	tokEOF tokKind = iota
	tokID
	tokString  // 'text', quotes doubled inside
	tokDecimal // 0 | [1-9][0-9]*[lL]?
	tokFloat   // 1.5, 1., .5, 1e5, 1.5E-3
	// Keywords (case-insensitive).
	tokNot
	tokAnd
	tokOr
	tokBetween
	tokIn
	tokTrue
	tokFalse
	tokNull
	tokIs
	tokContains
	tokStartsWith
	tokEndsWith
	// Punctuation.
	tokEq     // =
	tokNe     // <>
	tokGt     // >
	tokGe     // >=
	tokLt     // <
	tokLe     // <=
	tokLParen // (
	tokRParen // )
	tokComma  // ,
	tokPlus   // +
	tokMinus  // -
)

func (k tokKind) String() string {
	return [...]string{
		tokEOF: "end of input", tokID: "identifier", tokString: "string literal", tokDecimal: "integer literal",
		tokFloat: "floating point literal", tokNot: "NOT", tokAnd: "AND", tokOr: "OR", tokBetween: "BETWEEN",
		tokIn: "IN", tokTrue: "TRUE", tokFalse: "FALSE", tokNull: "NULL", tokIs: "IS", tokContains: "CONTAINS",
		tokStartsWith: "STARTSWITH", tokEndsWith: "ENDSWITH", tokEq: "=", tokNe: "<>", tokGt: ">", tokGe: ">=",
		tokLt: "<", tokLe: "<=", tokLParen: "(", tokRParen: ")", tokComma: ",", tokPlus: "+", tokMinus: "-",
	}[k]
}

// keyword returns the keyword token of an identifier-shaped word; the
// grammar declares keywords before ID, so a word of equal length is a
// keyword.
func keyword(w string) (tokKind, bool) {
	switch strings.ToUpper(w) {
	case "NOT":
		return tokNot, true
	case "AND":
		return tokAnd, true
	case "OR":
		return tokOr, true
	case "BETWEEN":
		return tokBetween, true
	case "IN":
		return tokIn, true
	case "TRUE":
		return tokTrue, true
	case "FALSE":
		return tokFalse, true
	case "NULL":
		return tokNull, true
	case "IS":
		return tokIs, true
	case "CONTAINS":
		return tokContains, true
	case "STARTSWITH":
		return tokStartsWith, true
	case "ENDSWITH":
		return tokEndsWith, true
	}
	return 0, false
}

type token struct {
	kind tokKind
	text string // source image (string literals: the decoded value)
	pos  int    // byte offset in the source
}

// lexer produces tokens on demand, like JavaCC's token manager: a lexical
// error in text the parser never looks at goes unnoticed, as in Java (the
// grammar has no <EOF> at the end, so trailing input that does not continue
// the expression is ignored).
type lexer struct {
	src string
	pos int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skip passes white space and comments. A "--" comment needs its line end
// (Java's LINE_COMMENT token includes it); without one the dashes are minus
// signs. An unterminated "/*" is left for next to reject.
func (l *lexer) skip() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "--"):
			nl := strings.IndexAny(l.src[l.pos:], "\r\n")
			if nl < 0 {
				return
			}
			l.pos += nl + 1
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return
			}
			l.pos += 2 + end + 2
		default:
			return
		}
	}
}

func (l *lexer) errorf(pos int, format string, args ...any) error {
	return &ParseError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// next returns the next token.
func (l *lexer) next() (token, error) {
	l.skip()
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[start]
	one := func(k tokKind) (token, error) {
		l.pos++
		return token{kind: k, text: l.src[start:l.pos], pos: start}, nil
	}
	two := func(k tokKind) (token, error) {
		l.pos += 2
		return token{kind: k, text: l.src[start:l.pos], pos: start}, nil
	}
	switch {
	case isIDStart(c):
		end := start + 1
		for end < len(l.src) && isIDPart(l.src[end]) {
			end++
		}
		l.pos = end
		w := l.src[start:end]
		if k, ok := keyword(w); ok {
			return token{kind: k, text: w, pos: start}, nil
		}
		return token{kind: tokID, text: w, pos: start}, nil
	case isDigit(c) || c == '.':
		return l.number()
	case c == '\'':
		return l.str()
	case c == '=':
		return one(tokEq)
	case c == '<':
		if start+1 < len(l.src) {
			switch l.src[start+1] {
			case '>':
				return two(tokNe)
			case '=':
				return two(tokLe)
			}
		}
		return one(tokLt)
	case c == '>':
		if start+1 < len(l.src) && l.src[start+1] == '=' {
			return two(tokGe)
		}
		return one(tokGt)
	case c == '(':
		return one(tokLParen)
	case c == ')':
		return one(tokRParen)
	case c == ',':
		return one(tokComma)
	case c == '+':
		return one(tokPlus)
	case c == '-':
		return one(tokMinus)
	}
	r := []rune(l.src[start:min(len(l.src), start+4)])
	return token{}, l.errorf(start, "lexical error: unexpected character %q", r[0])
}

// digits returns the end of a run of decimal digits starting at i.
func (l *lexer) digits(i int) int {
	for i < len(l.src) && isDigit(l.src[i]) {
		i++
	}
	return i
}

// exponent returns the end of an exponent ([eE][+-]?[0-9]+) at i, or i.
func (l *lexer) exponent(i int) int {
	if i >= len(l.src) || (l.src[i] != 'e' && l.src[i] != 'E') {
		return i
	}
	j := i + 1
	if j < len(l.src) && (l.src[j] == '+' || l.src[j] == '-') {
		j++
	}
	if e := l.digits(j); e > j {
		return e
	}
	return i
}

// number scans the longest DECIMAL_LITERAL or FLOATING_POINT_LITERAL at the
// current position (JavaCC picks the longest match).
func (l *lexer) number() (token, error) {
	start := l.pos
	floatEnd := -1
	intEnd := -1
	if l.src[start] == '.' {
		if d := l.digits(start + 1); d > start+1 {
			floatEnd = l.exponent(d)
		}
	} else {
		d := l.digits(start)
		if d < len(l.src) && l.src[d] == '.' {
			floatEnd = l.exponent(l.digits(d + 1))
		} else if e := l.exponent(d); e > d {
			floatEnd = e
		}
		if l.src[start] == '0' {
			intEnd = start + 1
		} else {
			intEnd = d
			if intEnd < len(l.src) && (l.src[intEnd] == 'l' || l.src[intEnd] == 'L') {
				intEnd++
			}
		}
	}
	switch {
	case floatEnd > intEnd:
		l.pos = floatEnd
		return token{kind: tokFloat, text: l.src[start:floatEnd], pos: start}, nil
	case intEnd > start:
		l.pos = intEnd
		return token{kind: tokDecimal, text: l.src[start:intEnd], pos: start}, nil
	}
	return token{}, l.errorf(start, "lexical error: unexpected character '.'")
}

// str scans a string literal; a doubled quote inside stands for one.
// Like JavaCC it takes the longest complete literal, so when the input
// ends inside a literal that could have been closed earlier (a doubled
// quote read as a closing quote and the start of the next token), the
// earlier end wins and the stray quote becomes the next, unterminated,
// token.
func (l *lexer) str() (token, error) {
	start := l.pos
	var b strings.Builder
	lastEnd, lastText := -1, ""
	i := start + 1
	for i < len(l.src) {
		c := l.src[i]
		if c == '\'' {
			// The literal may end here, or this quote starts a doubled one.
			lastEnd, lastText = i+1, b.String()
			if i+1 < len(l.src) && l.src[i+1] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			break
		}
		b.WriteByte(c)
		i++
	}
	if lastEnd < 0 {
		return token{}, l.errorf(start, "lexical error: unterminated string literal")
	}
	l.pos = lastEnd
	return token{kind: tokString, text: lastText, pos: start}, nil
}
