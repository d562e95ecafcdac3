package statictopic

import (
	"maps"
	"slices"
	"sort"
)

// Allocator spreads logic queues over brokers (docs/static-topics.md §8.1): round after round it
// gives one queue to each of the least loaded brokers, so that counts
// differ by at most one.
//
// Within a round, with Before set (remapping) brokers that led more queues
// before go first, so that remapping onto the same brokers moves nothing
// (a stable variant of Java's order, which can move a queue needlessly when
// two brokers had an extra one). Without Before, Shuffle orders the round
// (Java shuffles so that many small topics do not all start on one broker);
// a nil Shuffle keeps broker-name order.
type Allocator struct {
	Count      map[string]int // broker → logic queues it leads (targets start at 0)
	IDToBroker map[int]string
	Before     map[string]int
	Shuffle    func([]string)

	round []string
}

// NewAllocator copies its inputs.
func NewAllocator(idToBroker map[int]string, count, before map[string]int, shuffle func([]string)) *Allocator {
	a := &Allocator{Count: maps.Clone(count), IDToBroker: maps.Clone(idToBroker), Before: before, Shuffle: shuffle}
	if a.Count == nil {
		a.Count = map[string]int{}
	}
	if a.IDToBroker == nil {
		a.IDToBroker = map[int]string{}
	}
	return a
}

func (a *Allocator) refresh() {
	least := []string{}
	minN := -1
	for _, b := range slices.Sorted(maps.Keys(a.Count)) {
		switch n := a.Count[b]; {
		case minN == -1 || n < minN:
			least, minN = []string{b}, n
		case n == minN:
			least = append(least, b)
		}
	}
	switch {
	case len(a.Before) > 0:
		sort.SliceStable(least, func(i, j int) bool { return a.Before[least[i]] > a.Before[least[j]] })
	case a.Shuffle != nil:
		a.Shuffle(least)
	}
	a.round = least
}

func (a *Allocator) next() string {
	if len(a.round) == 0 {
		a.refresh()
	}
	b := a.round[0]
	a.round = a.round[1:]
	return b
}

// UpTo assigns every id of 0..n-1 that has no broker yet, in ascending
// order. It needs at least one broker in Count.
func (a *Allocator) UpTo(n int) {
	if len(a.Count) == 0 {
		return
	}
	for i := 0; i < n; i++ {
		if _, ok := a.IDToBroker[i]; ok {
			continue
		}
		b := a.next()
		a.Count[b]++
		a.IDToBroker[i] = b
	}
}
