package store

import (
	"runtime"
	"slices"
)

// nameSorter collects LMQ names and sorts them for the sweep's range
// deletes. A million names scattered over the heap share a long prefix
// ("%LMQ%$<parent>$" and often the start of the lite names), so a string
// sort spends its time on cache misses comparing that prefix. Instead,
// while a name is at hand (the caller just read it), add records 16 bytes
// of it near the prefix common to the names so far; once all are in, each
// name's 8 bytes just after the final common prefix, big endian and
// zero-padded, are its radix key. Keys order names as the strings do;
// equal keys leave it to the strings.
type nameSorter struct {
	first string
	lcp   int
	n     int
	// chunks of sortChunk entries: a million entries grow without copying
	// 40 MB slices over and over.
	chunks [][]sortEntry
}

const sortChunk = 1 << 14

type sortEntry struct {
	name   string
	hi, lo uint64 // name's bytes [at, at+16), zero-padded
	at     int
}

// windowSlack is how far the common prefix may still shrink after a name
// was added for the recorded window to hold its key.
const windowSlack = 4

func newNameSorter() *nameSorter { return &nameSorter{} }

func (s *nameSorter) add(n string) {
	if s.n == 0 {
		s.first, s.lcp = n, len(n)
	} else {
		l := min(s.lcp, len(n))
		i := 0
		for i < l && n[i] == s.first[i] {
			i++
		}
		s.lcp = i
	}
	at := max(0, s.lcp-windowSlack)
	if len(s.chunks) == 0 || len(s.chunks[len(s.chunks)-1]) == sortChunk {
		s.chunks = append(s.chunks, make([]sortEntry, 0, sortChunk))
	}
	c := &s.chunks[len(s.chunks)-1]
	*c = append(*c, sortEntry{name: n, hi: bytesAt(n, at), lo: bytesAt(n, at+8), at: at})
	s.n++
}

func (s *nameSorter) len() int { return s.n }

// names returns the names in the order added.
func (s *nameSorter) names() []string {
	out := make([]string, 0, s.n)
	for _, c := range s.chunks {
		for i := range c {
			out = append(out, c[i].name)
		}
	}
	return out
}

// filter keeps the names for which keep returns true.
func (s *nameSorter) filter(keep func(string) bool) {
	var kept nameSorter
	for _, c := range s.chunks {
		for i := range c {
			if keep(c[i].name) {
				kept.add(c[i].name)
			}
		}
	}
	*s = kept
}

func (s *nameSorter) entry(i int) *sortEntry { return &s.chunks[i/sortChunk][i%sortChunk] }

// bytesAt is n's bytes [p, p+8) as a big-endian number, zero-padded.
func bytesAt(n string, p int) uint64 {
	var k uint64
	for j := 0; j < 8; j++ {
		k <<= 8
		if p+j < len(n) {
			k |= uint64(n[p+j])
		}
	}
	return k
}

// sortYieldEvery is how many names a loop of sorted handles between
// yield calls (well under a millisecond).
const sortYieldEvery = 4096

// sorted returns the distinct names in string order, calling yield every
// sortYieldEvery names of each pass.
func (s *nameSorter) sorted(yield func()) []string {
	if yield == nil {
		yield = runtime.Gosched
	}
	out := make([]string, s.n)
	if s.n < 64 {
		copy(out, s.names())
		slices.Sort(out)
		return slices.Compact(out)
	}
	type keyed struct {
		key uint64
		i   int32
	}
	L := s.lcp
	ks := make([]keyed, s.n)
	for i := range ks {
		if i%sortYieldEvery == sortYieldEvery-1 {
			yield()
		}
		e := s.entry(i)
		var k uint64
		switch d := L - e.at; {
		case d == 0:
			k = e.hi
		case d > 0 && d < 8:
			k = e.hi<<(8*d) | e.lo>>(64-8*d)
		case d == 8:
			k = e.lo
		default: // the window missed: read the name again
			k = bytesAt(e.name, L)
		}
		ks[i] = keyed{k, int32(i)}
	}
	// LSD radix sort, a byte a pass; passes where every key has the same
	// byte are skipped.
	tmp := make([]keyed, len(ks))
	for shift := uint(0); shift < 64; shift += 8 {
		var count [256]int
		for i := range ks {
			count[byte(ks[i].key>>shift)]++
			if i%sortYieldEvery == sortYieldEvery-1 {
				yield()
			}
		}
		if count[byte(ks[0].key>>shift)] == len(ks) {
			continue
		}
		pos := 0
		for d := range count {
			c := count[d]
			count[d] = pos
			pos += c
		}
		for i := range ks {
			d := byte(ks[i].key >> shift)
			tmp[count[d]] = ks[i]
			count[d]++
			if i%sortYieldEvery == sortYieldEvery-1 {
				yield()
			}
		}
		ks, tmp = tmp, ks
	}
	// Names in key order; equal keys leave it to the strings, and equal
	// names (always equal keys) are dropped there.
	w := 0
	for i := 0; i < len(ks); {
		j := i + 1
		for j < len(ks) && ks[j].key == ks[i].key {
			j++
		}
		grp := out[w : w+j-i]
		for k := range grp {
			grp[k] = s.entry(int(ks[i+k].i)).name
		}
		if len(grp) > 1 {
			slices.Sort(grp)
			grp = slices.Compact(grp)
		}
		w += len(grp)
		if i/sortYieldEvery != j/sortYieldEvery {
			yield() // a cache miss a name
		}
		i = j
	}
	clear(out[w:])
	return out[:w]
}
