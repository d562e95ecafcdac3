package filter

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// Expressions Apache RocketMQ's ParserTest and ExpressionTest parse.
var javaValid = []string{
	"a=3 and b<>4 And c>5 AND d<=4",
	"a=3  and    b<>4 And c>5 AND d<=4",
	"a=3 or b<>4 Or c>5 OR d<=4",
	"a in ('3', '4', '5')",
	"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
	"(a between 2 and 10) AND (b not between 6 and 9)",
	"a is null",
	"a is not null",
	"a <= now", // now is just a property name
	"a=3 and b contains 'xxx' and c not contains 'xxx'",
	"a not in ('3', '4', '5')",
	"a between 2 and 10",
	"a not between 2 and 10",
	"a is not null and a='hello'",
	"a=TRUE OR b=FALSE",
	"a is null OR a='hello'",
	"TAGS is not null and TAGS='''''tag'''''",
	"value startswith 'ax'",
	"value not endswith 'xb'",
	"'axb' contains 'x'",
	"' ' not startswith ' '",
	"'s' contains '\\'",
	"a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'",
	"a between up and low",
	"a > 3.1E10",
	"a > 3.14",
	"a > b",
}

func TestParseJavaValid(t *testing.T) {
	for _, sql := range javaValid {
		if _, err := Parse(sql); err != nil {
			t.Errorf("Parse(%q): %v", sql, err)
		}
	}
}

// Expressions Java's parser refuses (its tests' and the grammar's checks).
func TestParseInvalid(t *testing.T) {
	hugeFloat := "1" + strings.Repeat("111111111111111111111111111111111111111111111111111", 200) + "." +
		strings.Repeat("111111111111111111111111111111111111111111111111111", 200)
	for _, sql := range []string{
		// Java's tests.
		"a and between 2 and 10",
		"a > 100000000000000000000000",
		"a > " + hugeFloat,
		" a between 10 and 0",
		"value contains x",
		"value not contains x",
		"value contains 123",
		"value not contains 123",
		"'axb' contains ",
		"'axb' not contains ",
		// Syntax.
		"",
		"   ",
		"a =",
		"a = = 1",
		"(a = 1",
		"a IN ()",
		"a IN ('x'",
		"a IN ('x',)",
		"a IN (1, 2)",
		"a BETWEEN 1",
		"a BETWEEN 1 OR 2",
		"a > 5 NOT x",
		"a > 5 NOT",
		"a IS",
		"a IS NOT",
		"a IS 5",
		"a IS NOT 5",
		// Lexical errors the parser reaches.
		"a = 'unterminated",
		"a = 1 /* unterminated",
		"a = #",
		"a.b = 1",
		"ä = 1",
		"a = 1 NOT \x00",
		". = 1",
		// Not boolean.
		"5",
		"'x'",
		"-a",
		"1.5",
		"a AND 5",
		"5 OR a",
		"NOT 5",
		"NOT 'x'",
		// NOT binds tighter than comparisons.
		"NOT a > 1",
		// Ordering needs numbers.
		"a > 'x'",
		"'x' > a",
		"a > TRUE",
		"a > NULL",
		"(a > 1) > 2",
		"a > b > c",
		"a >= FALSE",
		"a BETWEEN 'a' AND 'b'",
		"a BETWEEN 1 AND 'b'",
		"a BETWEEN NULL AND 1",
		"a BETWEEN 1 AND NULL",
		"a BETWEEN TRUE AND FALSE",
		"a BETWEEN FALSE AND TRUE",
		"a BETWEEN 2 AND 1",
		"a BETWEEN 1.5 AND 1",
		"a NOT BETWEEN 'a' AND 5",
		"'5' BETWEEN 1 AND 10",
		// Equality.
		"a = NULL",
		"NULL = a",
		"a <> NULL",
		"TRUE = 1",
		"FALSE = 'x'",
		// IN needs a property.
		"5 IN ('a')",
		"-a IN ('a')",
		"'a' IN ('a')",
		// Literals.
		"a > 0.0",
		"a > .0",
		"a > 0e5",
		"a > 1e400",
		"a > 1e-400",
		"a > 9223372036854775808",
		"a > -9223372036854775808",
		// Nesting bound.
		strings.Repeat("(", maxDepth+1) + "a = 1" + strings.Repeat(")", maxDepth+1),
		strings.Repeat("NOT ", maxDepth+1) + "a",
		// Length bound.
		"a = '" + strings.Repeat("x", MaxExpressionLength) + "'",
		// Long operands (the error message stays short).
		"a > '" + strings.Repeat("x", 10000) + "'",
		"a = 1 AND " + strings.Repeat("b = 1 AND ", 1000) + "'" + strings.Repeat("y", 5000) + "' > 1",
	} {
		x, err := Parse(sql)
		if err == nil {
			t.Errorf("Parse(%.60q) = %s, want an error", sql, x)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "Invalid MessageSelector.") {
			t.Errorf("Parse(%.60q): error %v is not a ParseError", sql, err)
		}
		if len(err.Error()) > 300 {
			t.Errorf("Parse(%.60q): error message of %d bytes", sql, len(err.Error()))
		}
	}
}

// TestParseTree pins precedence, associativity and Java's quirks through
// the fully parenthesised rendering.
func TestParseTree(t *testing.T) {
	for _, tc := range []struct{ sql, want string }{
		{"a > 5 AND b = 'x'", "((a > 5) AND (b = 'x'))"},
		{"a = 1 OR b = 2 AND c = 3", "((a = 1) OR ((b = 2) AND (c = 3)))"},
		{"(a = 1 OR b = 2) AND c = 3", "(((a = 1) OR (b = 2)) AND (c = 3))"},
		{"a = 1 AND b = 2 AND c = 3", "(((a = 1) AND (b = 2)) AND (c = 3))"},
		{"NOT a = 1", "((NOT a) = 1)"},
		{"NOT (a = 1)", "(NOT (a = 1))"},
		{"a <> 'x'", "(NOT (a = 'x'))"},
		{"a IS NULL", "(a IS NULL)"},
		{"a IS NOT NULL", "(NOT (a IS NULL))"},
		{"a BETWEEN 1 AND 5", "((a >= 1) AND (a <= 5))"},
		{"a NOT BETWEEN 1 AND 5", "((a < 1) OR (a > 5))"},
		{"a NOT BETWEEN 5 AND 1", "((a < 5) OR (a > 1))"},
		{"a BETWEEN 5 AND -5", "((a >= 5) AND (a <= (- 5)))"}, // a negation is not a literal: no order check
		{"a BETWEEN 1 AND 1", "((a >= 1) AND (a <= 1))"},
		{"a BETWEEN 1 AND 2.5", "((a >= 1) AND (a <= 2.5))"},
		{"a in ('x', 'y')", "(a IN ('x', 'y'))"},
		{"a NOT IN ('x')", "(a NOT IN ('x'))"},
		{"(a) IN ('x')", "(a IN ('x'))"},
		{"a NOT CONTAINS 'x'", "(a NOT CONTAINS 'x')"},
		{"a startsWith 'x' AND b EndsWith 'y'", "((a STARTSWITH 'x') AND (b ENDSWITH 'y'))"},
		{"a", "a"},
		{"a AND b", "(a AND b)"},
		{"TRUE", "TRUE"},
		{"null", "NULL"},
		{"1 = TRUE", "(1 = TRUE)"},
		{"a = b = c", "((a = b) = c)"},
		{"a > -5", "(a > (- 5))"},
		{"a > +5", "(a > 5)"},
		{"a > - - 5", "(a > (- (- 5)))"},
		{"a > 2147483647", "(a > 2147483647)"},
		{"a > 2147483648", "(a > 2147483648)"},
		{"a > 9223372036854775807L", "(a > 9223372036854775807)"},
		{"a > 5.", "(a > 5.0)"},
		{"a > .5", "(a > 0.5)"},
		{"a > 5e3", "(a > 5000.0)"},
		{"a > 1E-7", "(a > 1e-07)"},
		{"a = 'it''s'", "(a = 'it''s')"},
		{"a = ''", "(a = '')"},
		{"a = 'ünï'", "(a = 'ünï')"},
		{"a=1 and B_2$ = 2 oR c is NoT null", "(((a = 1) AND (B_2$ = 2)) OR (NOT (c IS NULL)))"},
		{"$x = 1", "($x = 1)"},
		{"_x = 1", "(_x = 1)"},
		{"notx = 1", "(notx = 1)"},
		{"a = 1 -- comment\nAND b = 2", "((a = 1) AND (b = 2))"},
		{"/* c */ a /* d\n e */ = /**/ 1", "(a = 1)"},
		{"a\t=\r\n1\f", "(a = 1)"},
		// The grammar has no <EOF>: input that cannot continue the
		// expression is ignored, as in Java.
		{"a > 5 garbage", "(a > 5)"},
		{"a > 5 )", "(a > 5)"},
		{"a > 5 5", "(a > 5)"},
		{"a > 5 'x' #", "(a > 5)"},
		{"a > 007", "(a > 0)"}, // 0 0 7
		{"a > 0L", "(a > 0)"},  // 0 L
		{"a = 1 -- no line end", "(a = 1)"},
		{"a = 1 b = 2", "(a = 1)"},
		// No LIKE in RocketMQ: LIKE is an identifier, so this is the bare
		// property a (which never matches) followed by ignored input.
		{"a LIKE 'x%'", "a"},
	} {
		x, err := Parse(tc.sql)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.sql, err)
			continue
		}
		if got := x.String(); got != tc.want {
			t.Errorf("Parse(%q) = %s, want %s", tc.sql, got, tc.want)
		}
	}
}

func TestParseProperties(t *testing.T) {
	x, err := Parse("a > 5 AND b = 'x' OR a < 2 AND TAGS IN ('t')")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(x.Properties(), ","); got != "a,b,TAGS" {
		t.Fatalf("Properties = %s", got)
	}
	if x.Source() != "a > 5 AND b = 'x' OR a < 2 AND TAGS IN ('t')" {
		t.Fatalf("Source = %q", x.Source())
	}
}

func TestParseErrorPosition(t *testing.T) {
	_, err := Parse("a = 1 AND b > 'x'")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Pos != 12 || !strings.Contains(pe.Msg, "cannot be compared") {
		t.Fatalf("error %v", err)
	}
	_, err = Parse("a = 1 AND (b = 2")
	if !errors.As(err, &pe) || pe.Pos != 16 || !strings.Contains(pe.Msg, "expecting )") {
		t.Fatalf("error %v", err)
	}
}

func TestLexerNumbers(t *testing.T) {
	for _, tc := range []struct {
		src   string
		kinds []tokKind
		texts []string
	}{
		{"0", []tokKind{tokDecimal}, []string{"0"}},
		{"007", []tokKind{tokDecimal, tokDecimal, tokDecimal}, []string{"0", "0", "7"}},
		{"12L", []tokKind{tokDecimal}, []string{"12L"}},
		{"12l3", []tokKind{tokDecimal, tokDecimal}, []string{"12l", "3"}},
		{"0L", []tokKind{tokDecimal, tokID}, []string{"0", "L"}},
		{"1.", []tokKind{tokFloat}, []string{"1."}},
		{"1.5e", []tokKind{tokFloat, tokID}, []string{"1.5", "e"}},
		{"1e", []tokKind{tokDecimal, tokID}, []string{"1", "e"}},
		{"1e+", []tokKind{tokDecimal, tokID, tokPlus}, []string{"1", "e", "+"}},
		{"1e+5", []tokKind{tokFloat}, []string{"1e+5"}},
		{"01.5", []tokKind{tokFloat}, []string{"01.5"}},
		{"01e5", []tokKind{tokFloat}, []string{"01e5"}},
		{".5E-3", []tokKind{tokFloat}, []string{".5E-3"}},
		{"5.5L", []tokKind{tokFloat, tokID}, []string{"5.5", "L"}},
		{"<><=>=<>", []tokKind{tokNe, tokLe, tokGe, tokNe}, []string{"<>", "<=", ">=", "<>"}},
		{"a--b", []tokKind{tokID, tokMinus, tokMinus, tokID}, []string{"a", "-", "-", "b"}},
		{"a--b\nc", []tokKind{tokID, tokID}, []string{"a", "c"}},
	} {
		l := lexer{src: tc.src}
		var kinds []tokKind
		var texts []string
		for {
			tok, err := l.next()
			if err != nil {
				t.Fatalf("%q: %v", tc.src, err)
			}
			if tok.kind == tokEOF {
				break
			}
			kinds, texts = append(kinds, tok.kind), append(texts, tok.text)
		}
		if len(kinds) != len(tc.kinds) {
			t.Errorf("%q: tokens %v %q, want %v %q", tc.src, kinds, texts, tc.kinds, tc.texts)
			continue
		}
		for i := range kinds {
			if kinds[i] != tc.kinds[i] || texts[i] != tc.texts[i] {
				t.Errorf("%q: tokens %v %q, want %v %q", tc.src, kinds, texts, tc.kinds, tc.texts)
				break
			}
		}
	}
}

func TestCache(t *testing.T) {
	c := NewCache(4)
	x1, err := c.Compile("a = 1")
	if err != nil {
		t.Fatal(err)
	}
	if x2, _ := c.Compile("a = 1"); x2 != x1 {
		t.Fatal("second compile did not hit the cache")
	}
	_, err1 := c.Compile("a = ")
	_, err2 := c.Compile("a = ")
	if err1 == nil || err2 == nil || err1 != err2 {
		t.Fatalf("parse errors are cached too: %v, %v", err1, err2)
	}
	for i := range 50 {
		if _, err := c.Compile("a = " + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if n := c.Len(); n > 4 {
			t.Fatalf("cache holds %d entries, bound 4", n)
		}
	}
	// An old-generation hit moves forward.
	c.Compile("b = 1")
	c.Compile("b = 2")
	c.Compile("b = 3") // b = 1 and b = 2 now old
	x, _ := c.Compile("b = 1")
	c.Compile("b = 4") // rotates: b = 3, b = 1 old
	if y, _ := c.Compile("b = 1"); y != x {
		t.Fatal("promoted entry lost")
	}
}
