package filter

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// kind is the Java class of a runtime value: literals are Integer (when
// they fit), Long or Double; TRUE/FALSE and comparison results are Boolean;
// message properties are always String.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt    // java.lang.Integer
	kLong   // java.lang.Long
	kDouble // java.lang.Double
	kString
)

func (k kind) String() string {
	return [...]string{"null", "Boolean", "Integer", "Long", "Double", "String"}[k]
}

type value struct {
	k kind
	b bool
	n int64 // kInt, kLong
	f float64
	s string
}

// Constant values. (Constants rather than package variables: Go has no
// struct constants, so these are tiny functions the compiler inlines.)
func nullVal() value  { return value{} }
func trueVal() value  { return value{k: kBool, b: true} }
func falseVal() value { return value{k: kBool} }

func boolVal(b bool) value { return value{k: kBool, b: b} }

func (v value) isNumber() bool { return v.k == kInt || v.k == kLong || v.k == kDouble }

// String renders the value as a selector literal (for messages and String).
func (v value) String() string {
	switch v.k {
	case kNull:
		return "NULL"
	case kBool:
		if v.b {
			return "TRUE"
		}
		return "FALSE"
	case kInt, kLong:
		return strconv.FormatInt(v.n, 10)
	case kDouble:
		// Always with a point or an exponent, so that it reads back as a
		// Double and not an Integer.
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEIN") {
			s += ".0"
		}
		return s
	}
	return "'" + strings.ReplaceAll(v.s, "'", "''") + "'"
}

// errEval is wrapped by every evaluation error: Java throws (a
// NumberFormatException, a ClassCastException or "It's illegal to compare
// string"), and the broker's filter then treats the message as not matched.
var errEval = errors.New("selector evaluation error")

// javaEquals is Object.equals between two non-null values of Java's boxed
// types: same class and same value (Double by bit pattern, so NaN equals
// NaN and 0.0 does not equal -0.0).
func javaEquals(l, r value) bool {
	if l.k != r.k {
		return false
	}
	switch l.k {
	case kBool:
		return l.b == r.b
	case kInt, kLong:
		return l.n == r.n
	case kDouble:
		return doubleBits(l.f) == doubleBits(r.f)
	case kString:
		return l.s == r.s
	}
	return true
}

// doubleBits is Double.doubleToLongBits (every NaN collapses to one).
func doubleBits(f float64) uint64 {
	if math.IsNaN(f) {
		return 0x7ff8000000000000
	}
	return math.Float64bits(f)
}

// compareDouble is Double.compare: numeric order, then -0.0 < 0.0, and NaN
// above everything (and equal to itself).
func compareDouble(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return cmp.Compare(int64(doubleBits(a)), int64(doubleBits(b)))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func (v value) asDouble() float64 {
	if v.k == kDouble {
		return v.f
	}
	return float64(v.n)
}

// javaCompare is ComparisonExpression.__compare with string conversion on
// (the parser always turns it on): values of different classes are
// converted towards the right-hand one (numbers widen, strings are parsed
// with Integer/Long/Double/Boolean.valueOf); pairs it cannot convert compare
// as -1. Both values are non-null.
func javaCompare(l, r value) (int, error) {
	if l.k == r.k {
		switch l.k {
		case kBool:
			return compareBool(l.b, r.b), nil
		case kInt, kLong:
			return cmp.Compare(l.n, r.n), nil
		case kDouble:
			return compareDouble(l.f, r.f), nil
		case kString:
			return strings.Compare(l.s, r.s), nil
		}
		return 0, nil
	}
	switch l.k {
	case kBool:
		if r.k == kString {
			// Java casts the Boolean to String here: ClassCastException.
			return 0, fmt.Errorf("%w: cannot compare Boolean %s with String %s", errEval, l, r)
		}
		return -1, nil
	case kInt, kLong:
		switch r.k {
		case kInt, kLong: // the other one of the two
			return cmp.Compare(l.n, r.n), nil
		case kDouble:
			return compareDouble(float64(l.n), r.f), nil
		case kString:
			n, err := javaParseIntegral(l.k, r.s)
			if err != nil {
				return 0, err
			}
			return cmp.Compare(l.n, n), nil
		}
		return -1, nil
	case kDouble:
		switch r.k {
		case kInt, kLong:
			return compareDouble(l.f, float64(r.n)), nil
		case kString:
			f, err := javaParseDouble(r.s)
			if err != nil {
				return 0, err
			}
			return compareDouble(l.f, f), nil
		}
		return -1, nil
	case kString:
		switch r.k {
		case kBool:
			return compareBool(strings.EqualFold(l.s, "true"), r.b), nil
		case kInt, kLong:
			n, err := javaParseIntegral(r.k, l.s)
			if err != nil {
				return 0, err
			}
			return cmp.Compare(n, r.n), nil
		case kDouble:
			f, err := javaParseDouble(l.s)
			if err != nil {
				return 0, err
			}
			return compareDouble(f, r.f), nil
		}
		return -1, nil
	}
	return -1, nil
}

func numberFormat(s, what string) error {
	return fmt.Errorf("%w: NumberFormatException: For input string: %q (%s)", errEval, s, what)
}

// javaParseLong is Long.valueOf(String): an optional sign and ASCII
// digits, no spaces, within the long range. (Java also accepts non-ASCII
// Unicode digits; we do not.)
func javaParseLong(s string) (int64, error) {
	digits := s
	if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
		digits = digits[1:]
	}
	if digits == "" {
		return 0, numberFormat(s, "Long")
	}
	for i := 0; i < len(digits); i++ {
		if !isDigit(digits[i]) {
			return 0, numberFormat(s, "Long")
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, numberFormat(s, "Long")
	}
	return n, nil
}

// javaParseInt is Integer.valueOf(String): as javaParseLong within the int
// range.
func javaParseInt(s string) (int64, error) {
	n, err := javaParseLong(s)
	if err != nil || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, numberFormat(s, "Integer")
	}
	return n, nil
}

// javaParseIntegral parses s as Integer.valueOf (k is kInt) or Long.valueOf
// (kLong) does: as the class of the number it is compared with.
func javaParseIntegral(k kind, s string) (int64, error) {
	if k == kInt {
		return javaParseInt(s)
	}
	return javaParseLong(s)
}

// javaParseDouble is Double.valueOf(String) (FloatingDecimal's grammar):
// surrounding characters ≤ ' ' are trimmed; then an optional sign and
// "NaN", "Infinity", a decimal number (digits with an optional point and
// exponent, at least one digit) or a hexadecimal one (0x…p…), optionally
// followed by one of f, F, d, D.
func javaParseDouble(s string) (float64, error) {
	t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	body := t
	neg := false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	if n := len(body); n > 0 {
		switch body[n-1] {
		case 'f', 'F', 'd', 'D':
			body = body[:n-1]
		}
	}
	if !validJavaFloat(body) {
		return 0, numberFormat(s, "Double")
	}
	f, err := strconv.ParseFloat(body, 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0, numberFormat(s, "Double")
		}
		// Out of range: ParseFloat already gives ±Inf or 0, as Java does.
	}
	if neg {
		f = -f
	}
	return f, nil
}

// validJavaFloat checks an unsigned decimal or hexadecimal floating-point
// string (without suffix) before strconv, which accepts more (underscores,
// "inf").
func validJavaFloat(s string) bool {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		i, hexDigits := scanMantissa(s, 2, isHex)
		if hexDigits == 0 || i >= len(s) || (s[i] != 'p' && s[i] != 'P') {
			return false
		}
		return validExponentDigits(s[i+1:])
	}
	i, digits := scanMantissa(s, 0, isDigit)
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != 'e' && s[i] != 'E' {
		return false
	}
	return validExponentDigits(s[i+1:])
}

// scanMantissa reads digits, an optional point and more digits from s[i:]
// (digit tells what a digit is) and returns where it stopped and how many
// digits it read.
func scanMantissa(s string, i int, digit func(byte) bool) (end, digits int) {
	for i < len(s) && digit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && digit(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	return i, digits
}

func validExponentDigits(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
