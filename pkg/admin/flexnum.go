package admin

import (
	"fmt"
	"math"
	"strconv"
)

// numberText is the text of a JSON number, or of a string holding one
// ("" for null and the empty string).
func numberText(b []byte) (string, error) {
	s := string(b)
	if s == "null" {
		return "", nil
	}
	if len(s) >= 2 && s[0] == '"' {
		u, err := strconv.Unquote(s)
		if err != nil {
			return "", fmt.Errorf("number %s: %w", b, err)
		}
		return u, nil
	}
	return s, nil
}

// flexInt64 decodes a JSON integer the way fastjson reads one into a
// long: a number, or a string holding one. The C++ client
// (rocketmq-client-cpp) writes its running info's 64-bit fields as
// strings, and a -1 as the unsigned 18446744073709551615: read back as -1.
type flexInt64 int64

func (f *flexInt64) UnmarshalJSON(b []byte) error {
	s, err := numberText(b)
	if err != nil || s == "" {
		return err
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*f = flexInt64(n)
		return nil
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		*f = flexInt64(int64(n))
		return nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && math.Abs(x) < math.MaxInt64 {
		*f = flexInt64(int64(x))
		return nil
	}
	return fmt.Errorf("not an integer: %s", b)
}

// flexFloat is flexInt64 for a double.
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	s, err := numberText(b)
	if err != nil || s == "" {
		return err
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		// JSON has no NaN or infinity: a body holding one could not be
		// written again.
		return fmt.Errorf("not a number: %s", b)
	}
	*f = flexFloat(x)
	return nil
}
