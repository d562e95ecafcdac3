package filter

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
)

// errTruth marks an expected evaluation error (Java throws; no match).
const errTruth Truth = -1

func kv(pairs ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return m
}

func evalBoth(t *testing.T, sql string, props map[string]string) Truth {
	t.Helper()
	x, err := Parse(sql)
	if err != nil {
		t.Fatalf("Parse(%q): %v", sql, err)
	}
	got, err := x.EvalMap(props)
	if err != nil {
		if !errors.Is(err, errEval) {
			t.Fatalf("%q %v: error %v does not wrap errEval", sql, props, err)
		}
		got = errTruth
	}
	// The stored-properties path must agree with the map path.
	var raw []byte
	if len(props) > 0 {
		raw, err = message.EncodeProperties(props)
		if err != nil {
			t.Fatal(err)
		}
	}
	viaBytes, err := x.Eval(raw)
	if err != nil {
		viaBytes = errTruth
	}
	if viaBytes != got {
		t.Fatalf("%q %v: Eval(bytes) = %v, EvalMap = %v", sql, props, viaBytes, got)
	}
	if x.Match(raw) != (got == True) {
		t.Fatalf("%q %v: Match disagrees with %v", sql, props, got)
	}
	return got
}

type evalCase struct {
	sql   string
	props map[string]string
	want  Truth
}

func runEval(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		if got := evalBoth(t, tc.sql, tc.props); got != tc.want {
			t.Errorf("%q with %v = %v, want %v", tc.sql, tc.props, got, tc.want)
		}
	}
}

// TestEvalJavaCases ports the facts of Apache RocketMQ's ExpressionTest.
// Message properties are always strings, so Java's non-string context
// values (3, 1.23, TRUE) appear here as their strings; where that changes
// Java's answer the case says so. Java's "false or null" outcomes are
// FALSE or UNKNOWN here, which match the same (not at all).
func TestEvalJavaCases(t *testing.T) {
	const (
		and = "a=3 and b<>4 And c>5 AND d<=4"
		or  = "a=3 or b<>4 Or c>5 OR d<=4"
	)
	runEval(t, []evalCase{
		// CONTAINS / STARTSWITH / ENDSWITH.
		{"value contains 'x'", kv("value", "axb"), True},
		{"value startswith 'ax'", kv("value", "axb"), True},
		{"value endswith 'xb'", kv("value", "axb"), True},
		{"value not contains 'x'", kv("value", "axb"), False},
		{"value not startswith 'ax'", kv("value", "axb"), False},
		{"value not endswith 'xb'", kv("value", "axb"), False},
		{"value contains 'x'", kv("value", "abb"), False},
		{"value startswith 'x'", kv("value", "abb"), False},
		{"value endswith 'x'", kv("value", "abb"), False},
		{"value not contains 'x'", kv("value", "abb"), True},
		{"value not startswith 'x'", kv("value", "abb"), True},
		{"value not endswith 'x'", kv("value", "abb"), True},
		{"value contains ''", kv("value", "axb"), False},
		{"value startswith ''", kv("value", "axb"), False},
		{"value endswith ''", kv("value", "axb"), False},
		{"value not contains ''", kv("value", "axb"), False},
		{"value not startswith ''", kv("value", "axb"), False},
		{"value not endswith ''", kv("value", "axb"), False},
		{"value contains 'x'", nil, False},
		{"value startswith 'x'", nil, False},
		{"value endswith 'x'", nil, False},
		{"value not contains 'x'", nil, False},
		{"value not startswith 'x'", nil, False},
		{"value not endswith 'x'", nil, False},
		{"'axb' contains 'x'", nil, True},
		{"'axb' startswith 'ax'", nil, True},
		{"'axb' endswith 'xb'", nil, True},
		{"'axb' not contains 'x'", nil, False},
		{"'axb' not startswith 'ax'", nil, False},
		{"'axb' not endswith 'xb'", nil, False},
		{"'axb' contains 'u'", nil, False},
		{"'axb' not endswith 'u'", nil, True},
		{"'axb' contains ''", nil, False},
		{"'axb' not contains ''", nil, False},
		{"' ' contains ' '", nil, True},
		{"' ' startswith ' '", nil, True},
		{"' ' endswith ' '", nil, True},
		{"' ' not contains ' '", nil, False},
		{"'axb' contains '.'", nil, False},
		{"'axb' not contains '.'", nil, True},
		{"'s' contains '\\'", nil, False},
		// Java's context value 1.23 (a Double) gives FALSE for NOT CONTAINS;
		// a property is the string "1.23", which does not contain 'x'.
		{"value contains 'x'", kv("value", "1.23"), False},
		{"value not contains 'x'", kv("value", "1.23"), True},
		{"5 contains 'x'", nil, False},
		{"5 not contains 'x'", nil, False},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'", kv("a", "3", "b", "3", "c", "axbdc"), True},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not startswith 'axbc'", kv("a", "3", "b", "3", "c", "axbdc"), True},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not endswith 'axbc'", kv("a", "3", "b", "3", "c", "axbdc"), True},
		// Strings and quotes.
		{"TAGS is not null and TAGS='''''tag'''''", kv("TAGS", "''tag''"), True},
		// Numbers in strings.
		{"a > 3.1E10", kv("a", "3.1415E10"), True},
		{"a > 3.14", kv("a", "3.1415"), True},
		{"a > b", kv("a", "10", "b", "20"), False},
		{"a > b", kv("a", "20", "b", "10"), True},
		// testEvaluate_stringCompare.
		{"a between up and low", kv("a", "3.14"), Unknown},
		{"a between up and low", kv("a", "3.14", "up", "up", "low", "low"), errTruth},
		{"key is not null and key between 0 and 100", kv("key", "con"), errTruth},
		{"a between 0 and 100", kv("a", "abc"), errTruth},
		{"a=b", kv("a", "3.14", "b", "3.14"), True},
		{"a<>b", kv("a", "3.14", "b", "3.14"), False},
		{"a<>b", kv("a", "3.14", "b", "3.141"), True},
		// NULL and OR.
		{"a is null OR a='hello'", nil, True},
		{"a is null OR a='hello'", kv("a", "hello"), True},
		{"a is null OR a='hello'", kv("a", "abc"), False},
		// Booleans.
		{"a=TRUE OR b=FALSE", kv("a", "true", "b", "false"), True},
		{"a=TRUE OR b=FALSE", kv("a", "false", "b", "true"), False},
		{"a is not null and a='hello'", kv("a", "hello"), True},
		{"a is not null and a='hello'", nil, False},
		// AND / OR.
		{and, kv("a", "3", "b", "5", "c", "6", "d", "1"), True},
		{and, kv("a", "4", "b", "5", "c", "6", "d", "1"), False},
		{or, kv("a", "3"), True},
		{or, kv("a", "4", "b", "5"), True},
		{or, kv("a", "4", "b", "4", "c", "6"), True},
		{or, kv("a", "4", "b", "4", "c", "3", "d", "2"), True},
		{or, kv("a", "4", "b", "4", "c", "3", "d", "10"), False},
		// IN.
		{"a in ('3', '4', '5')", kv("a", "3"), True},
		{"a in ('3', '4', '5')", kv("a", "4"), True},
		{"a in ('3', '4', '5')", kv("a", "5"), True},
		{"a in ('3', '4', '5')", kv("a", "8"), False},
		{"a not in ('3', '4', '5')", kv("a", "8"), True},
		{"a not in ('3', '4', '5')", kv("a", "3"), False},
		{"a not in ('3', '4', '5')", kv("a", "5"), False},
		// BETWEEN.
		{"a between 2 and 10", kv("a", "2"), True},
		{"a between 2 and 10", kv("a", "10"), True},
		{"a between 2 and 10", kv("a", "3"), True},
		{"a between 2 and 10", kv("a", "1"), False},
		{"a between 2 and 10", kv("a", "11"), False},
		{"a not between 2 and 10", kv("a", "1"), True},
		{"a not between 2 and 10", kv("a", "11"), True},
		{"a not between 2 and 10", kv("a", "2"), False},
		{"a not between 2 and 10", kv("a", "10"), False},
		{"a not between 2 and 10", kv("a", "3"), False},
		// IS [NOT] NULL.
		{"a is null", kv("abc", "2"), True},
		{"a is null", kv("a", "2"), False},
		{"a is not null", kv("a", "2"), True},
		{"a is not null", kv("abc", "2"), False},
	})
}

// TestEvalSemantics covers three-valued logic and Java's conversions
// beyond Java's own tests.
func TestEvalSemantics(t *testing.T) {
	runEval(t, []evalCase{
		// The example.
		{"a > 5 AND b = 'x'", kv("a", "6", "b", "x"), True},
		{"a > 5 AND b = 'x'", kv("a", "5", "b", "x"), False},
		{"a > 5 AND b = 'x'", kv("a", "10", "b", "y"), False},
		{"a > 5 AND b = 'x'", kv("b", "x"), Unknown},
		{"a > 5 AND b = 'x'", kv("a", "1"), False}, // FALSE AND … short-circuits
		{"a > 5 AND b = 'x'", kv("a", "7"), Unknown},
		// Three-valued logic.
		{"a > 5", nil, Unknown},
		{"NOT (a > 5)", nil, Unknown},
		{"a > 5 OR TRUE", nil, True},
		{"TRUE OR a > 5", nil, True},
		{"a > 5 OR FALSE", nil, Unknown},
		{"a > 5 AND FALSE", nil, False},
		{"a > 5 AND TRUE", nil, Unknown},
		{"NULL", nil, Unknown},
		{"NOT NULL", nil, Unknown},
		{"TRUE", nil, True},
		{"FALSE", nil, False},
		{"NULL AND FALSE", nil, False},
		{"NULL OR TRUE", nil, True},
		{"a = b", nil, True}, // null = null is TRUE in Java's createEqual
		{"a = b", kv("a", "x"), False},
		{"a = b", kv("b", "x"), Unknown},
		{"a <> b", kv("b", "x"), Unknown},
		{"a IN ('x')", nil, Unknown},
		{"a NOT IN ('x')", nil, Unknown},
		{"NOT (a CONTAINS 'x')", nil, True},
		{"5 IS NULL", nil, False},
		{"5 IS NOT NULL", nil, True},
		{"(a > 1) IS NULL", nil, True},
		// Conversions: the property is parsed as the literal's type.
		{"a = 5", kv("a", "5"), True},
		{"a = 5", kv("a", "+5"), True},
		{"a = -5", kv("a", "-5"), True},
		{"a = 5", kv("a", "abc"), errTruth},
		{"a = 5", kv("a", "5.0"), errTruth},
		{"a = 5", kv("a", " 5"), errTruth},
		{"a > 5", kv("a", "5.5"), errTruth},
		{"a > 5", kv("a", "3000000000"), errTruth}, // beyond Integer
		{"a > 5000000000", kv("a", "6000000000"), True},
		{"a > 5000000000", kv("a", "6e9"), errTruth},
		{"a > 5.0", kv("a", " 5.5 "), True},
		{"a > 5.0", kv("a", "5.5f"), True},
		{"a > 5.0", kv("a", "6e0"), True},
		{"a > 5.0", kv("a", "0x1.8p3"), True},
		{"a > 5.0", kv("a", "Infinity"), True},
		{"a < 5.0", kv("a", "-Infinity"), True},
		{"a > 5.0", kv("a", "NaN"), True}, // Double.compare puts NaN above all
		{"a < 5.0", kv("a", "NaN"), False},
		{"a > 5.0", kv("a", "inf"), errTruth},
		{"a > 5.0", kv("a", "1_0"), errTruth},
		{"a > 5.0", kv("a", "."), errTruth},
		{"a = 1.0", kv("a", "1"), True},
		{"a = 1", kv("a", "1.0"), errTruth},
		{"a > -2147483648", kv("a", "0"), True},
		{"a BETWEEN -5 AND 5", kv("a", "0"), True},
		{"a BETWEEN 5 AND -5", kv("a", "0"), False},
		{"a > b", kv("a", "1e3", "b", "999.5"), True},
		{"a > b", kv("a", "x", "b", "1"), errTruth},
		{"a = b", kv("a", "1", "b", "1.0"), False}, // string equality
		// Booleans.
		{"a = TRUE", kv("a", "TRUE"), True},
		{"a = TRUE", kv("a", "yes"), False},
		{"a = FALSE", kv("a", "yes"), True},
		{"TRUE = a", kv("a", "true"), errTruth}, // Java's ClassCastException
		{"1 = TRUE", nil, False},
		{"TRUE = TRUE", nil, True},
		{"(a = 1) = TRUE", kv("a", "1"), True},
		{"a", kv("a", "true"), False}, // a String is never a Boolean
		{"a", nil, Unknown},
		{"NOT a", kv("a", "true"), True},
		// Errors propagate, even through OR; short-circuit avoids them.
		{"a = 'x' OR a = 5", kv("a", "x"), True},
		{"a = 5 OR a = 'x'", kv("a", "x"), errTruth},
		{"FALSE AND a = 5", kv("a", "x"), False},
		{"NOT (a = 5)", kv("a", "x"), errTruth},
		// Negation of a non-number is null.
		{"-a = -5", kv("a", "5"), Unknown},
		{"-'x' = 1", nil, Unknown},
		{"a > -(-5)", kv("a", "6"), True},
		{"5 BETWEEN 1 AND 10", nil, True},
		{"-2147483648 = a", kv("a", "-2147483648"), True}, // a Long literal negated
		// IN with many values uses a set.
		{"a IN ('1', '2', '3', '4', '5', '6')", kv("a", "6"), True},
		{"a IN ('1', '2', '3', '4', '5', '6')", kv("a", "7"), False},
		{"a NOT IN ('1', '2', '3', '4', '5', '6')", kv("a", "7"), True},
		// System properties are properties too.
		{"TAGS = 'A' AND KEYS IS NOT NULL", kv("TAGS", "A", "KEYS", "k1"), True},
		{"a = 'ü'", kv("a", "ü"), True},
	})
}

// TestEvalStoredProperties: the one-pass decoder follows Java's rules for
// the properties string.
func TestEvalStoredProperties(t *testing.T) {
	x, err := Parse("a = '7' AND b IS NULL AND c IS NULL AND d = 'x\x01y'")
	if err != nil {
		t.Fatal(err)
	}
	// a appears twice (last wins), b has an empty value (dropped), c an
	// item without 0x01 (dropped), d a value containing 0x01 (kept).
	raw := []byte("a\x011\x02b\x01\x02c\x02\x01z\x02d\x01x\x01y\x02a\x017\x02")
	if got, err := x.Eval(raw); err != nil || got != True {
		t.Fatalf("Eval = %v, %v; want TRUE", got, err)
	}
	if got := x.Match(nil); got {
		t.Fatal("matched empty properties")
	}
	// Many properties (beyond the stack slots).
	var names []string
	props := map[string]string{}
	for i := range 12 {
		n := fmt.Sprintf("p%d", i)
		names = append(names, n+" = '"+n+"'")
		props[n] = n
	}
	runEval(t, []evalCase{{strings.Join(names, " AND "), props, True}})
	delete(props, "p11")
	runEval(t, []evalCase{{strings.Join(names, " AND "), props, Unknown}})
}

func TestEvalDoubleOrder(t *testing.T) {
	vals := []string{"-Infinity", "-1e300", "-1", "-0.0", "0.0", "1e-300", "1", "Infinity", "NaN"}
	for i, a := range vals {
		for j, b := range vals {
			want := False
			if i > j {
				want = True
			}
			if got := evalBoth(t, "a > b", kv("a", a, "b", b)); got != want {
				t.Errorf("%s > %s = %v, want %v", a, b, got, want)
			}
		}
	}
}

func TestJavaParseNumbers(t *testing.T) {
	for _, s := range []string{"0", "-0", "+7", "2147483647", "-2147483648"} {
		if _, err := javaParseInt(s); err != nil {
			t.Errorf("Integer.valueOf(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "+", "-", "2147483648", "1.0", " 1", "1 ", "0x1", "1_000", "١"} {
		if _, err := javaParseInt(s); err == nil {
			t.Errorf("Integer.valueOf(%q) accepted", s)
		}
	}
	for _, s := range []string{"9223372036854775807", "-9223372036854775808"} {
		if _, err := javaParseLong(s); err != nil {
			t.Errorf("Long.valueOf(%q): %v", s, err)
		}
	}
	if _, err := javaParseLong("9223372036854775808"); err == nil {
		t.Error("Long.valueOf overflow accepted")
	}
	for s, want := range map[string]float64{
		"1": 1, "1.": 1, ".5": .5, "-2.5e1": -25, "+1E+2": 100, " \t7\n": 7, "7d": 7, "7F": 7,
		"0x10p0": 16, "0X.8P1": 1, "1e999": 0, "-1e999": 0, "1e-999": 0,
	} {
		got, err := javaParseDouble(s)
		if err != nil {
			t.Errorf("Double.valueOf(%q): %v", s, err)
			continue
		}
		if want != 0 && got != want {
			t.Errorf("Double.valueOf(%q) = %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{"", ".", "e5", "1e", "1e+", "--1", "0x", "0x1", "0xp1", "1.2.3", "Inf", "nan", "infinity", "1 2", "1_0", "1ff"} {
		if f, err := javaParseDouble(s); err == nil {
			t.Errorf("Double.valueOf(%q) = %v, want an error", s, f)
		}
	}
}

// TestParseRoundTrip: the rendering of a compiled expression parses back
// to the same tree (the fuzz target checks this on arbitrary input).
func TestParseRoundTrip(t *testing.T) {
	for _, sql := range append(slices.Clone(javaValid), "a > 5.0 AND -b < 1e-7", "1 = TRUE", "a IS NOT NULL OR NOT b") {
		checkRoundTrip(t, sql)
	}
}

func checkRoundTrip(t *testing.T, sql string) {
	t.Helper()
	x, err := Parse(sql)
	if err != nil {
		return
	}
	y, err := Parse(x.String())
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) && strings.Contains(pe.Msg, "nested deeper") {
			return // the rendering adds parentheses
		}
		t.Fatalf("%q renders as %q, which does not parse: %v", sql, x.String(), err)
	}
	if y.String() != x.String() {
		t.Fatalf("%q renders as %q, which parses to %q", sql, x.String(), y.String())
	}
	// Same answers on a few property sets.
	for _, props := range []map[string]string{
		nil, kv("a", "1"), kv("a", "6", "b", "x"), kv("a", "x", "b", "1.5"), kv("a", "true", "b", "false"),
	} {
		p := maps.Clone(props)
		for _, n := range x.props {
			if _, ok := p[n]; !ok && len(p)%2 == 1 {
				p[n] = "7"
			}
		}
		t1, e1 := x.EvalMap(p)
		t2, e2 := y.EvalMap(p)
		if t1 != t2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("%q and its rendering %q disagree on %v: %v/%v vs %v/%v", sql, x.String(), p, t1, e1, t2, e2)
		}
	}
}
