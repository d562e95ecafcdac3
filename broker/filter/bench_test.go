package filter

import (
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
)

// BenchmarkMatch: one message's stored properties against the issue's
// selector (what a SQL92 pull does per examined message).
func BenchmarkMatch(b *testing.B) {
	x, err := Parse("a > 5 AND b = 'x'")
	if err != nil {
		b.Fatal(err)
	}
	props, _ := message.EncodeProperties(map[string]string{
		"a": "7", "b": "x", "TAGS": "A", "KEYS": "k1", "UNIQ_KEY": "7F0000010001000000000000000000000000", "CLUSTER": "DefaultCluster", "WAIT": "true",
	})
	b.ReportAllocs()
	for b.Loop() {
		if !x.Match(props) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkCacheHit(b *testing.B) {
	c := NewCache(0)
	const sql = "a > 5 AND b = 'x' OR c IN ('1', '2', '3')"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Compile(sql); err != nil {
			b.Fatal(err)
		}
	}
}
