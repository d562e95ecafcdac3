package protocol

import "testing"

// TestOptBool: booleans read as Java's Boolean.parseBoolean reads them;
// the C++ client's "1" and "0" are false and not an error.
func TestOptBool(t *testing.T) {
	for _, tc := range []struct {
		v    string
		set  bool
		def  bool
		want bool
	}{
		{"true", true, false, true},
		{"TRUE", true, false, true},
		{"True", true, false, true},
		{"false", true, true, false},
		{"1", true, false, false},
		{"0", true, true, false},
		{"yes", true, true, false},
		{"", true, true, true},
		{"", false, true, true},
		{"", false, false, false},
	} {
		m := map[string]string{}
		if tc.set {
			m["b"] = tc.v
		}
		f := FieldsOf(m)
		if got := f.OptBool("b", tc.def); got != tc.want || f.Err() != nil {
			t.Errorf("OptBool(%q set=%v, def %v) = %v, err %v; want %v", tc.v, tc.set, tc.def, got, f.Err(), tc.want)
		}
	}
}
