package store

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func TestSortNames(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := map[string]func(i int) string{
		"lite-N":        func(i int) string { return "%LMQ%$Parent$lite-" + strconv.Itoa(r.IntN(1_000_000)) },
		"mixed parents": func(i int) string { return "%LMQ%$P" + strconv.Itoa(r.IntN(3)) + "$u" + strconv.Itoa(r.IntN(5000)) },
		"no prefix":     func(i int) string { return strconv.Itoa(r.IntN(1000)) },
		"prefix of another": func(i int) string {
			return "%LMQ%$P$" + []string{"a", "ab", "a\x00", "a\x00b", "", "abcdefghij", "abcdefghi", "abcdefghijk"}[r.IntN(8)]
		},
		"late divergence": func(i int) string {
			if r.IntN(500) == 0 {
				return "%LMQ%$P" + strconv.Itoa(r.IntN(10))
			}
			return "%LMQ%$Parent$lite-" + strconv.Itoa(r.IntN(1000))
		},
		"binary": func(i int) string {
			b := make([]byte, r.IntN(12))
			for j := range b {
				b[j] = byte(r.IntN(4)) * 85
			}
			return "%LMQ%$" + string(b)
		},
	}
	for name, g := range gen {
		t.Run(name, func(t *testing.T) {
			for _, n := range []int{0, 1, 63, 64, 1000, 20000} {
				a := make([]string, n)
				for i := range a {
					a[i] = g(i)
				}
				want := slices.Clone(a)
				slices.Sort(want)
				want = slices.Compact(want) // the generators repeat names
				ns := newNameSorter()
				for _, n := range a {
					ns.add(n)
				}
				if got := ns.sorted(nil); !slices.Equal(got, want) {
					t.Fatalf("n=%d: not the distinct names sorted like strings", n)
				}
			}
		})
	}
}

func BenchmarkSortNames(b *testing.B) {
	src := make([]string, 1_000_000)
	for i := range src {
		src[i] = "%LMQ%$Parent$lite-" + strconv.Itoa(i)
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	for _, c := range []struct {
		name string
		sort func([]string)
	}{{"strings", slices.Sort[[]string]}, {"keyed", func(a []string) {
		ns := newNameSorter()
		for _, n := range a {
			ns.add(n)
		}
		copy(a, ns.sorted(nil))
	}}} {
		b.Run(c.name, func(b *testing.B) {
			a := make([]string, len(src))
			for i := 0; i < b.N; i++ {
				copy(a, src)
				c.sort(a)
			}
		})
	}
}
