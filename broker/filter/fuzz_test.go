package filter

import (
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
)

// FuzzParse: no input makes Parse or evaluation panic; a compiled
// expression's rendering parses back to the same tree with the same
// answers; the one-pass property decoder agrees with
// message.DecodeProperties. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, sql := range javaValid {
		f.Add(sql, []byte("a\x013\x02b\x015\x02c\x016\x02d\x011\x02"))
	}
	f.Fuzz(func(t *testing.T, sql string, props []byte) {
		x, err := Parse(sql)
		if err != nil {
			if x != nil {
				t.Fatal("Parse returned an expression and an error")
			}
			return
		}
		checkRoundTrip(t, sql)
		t1, e1 := x.Eval(props)
		t2, e2 := x.EvalMap(message.DecodeProperties(props))
		if t1 != t2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("%q on %q: Eval = %v/%v, EvalMap = %v/%v", sql, props, t1, e1, t2, e2)
		}
		if x.Match(props) != (t1 == True && e1 == nil) {
			t.Fatal("Match disagrees with Eval")
		}
	})
}
