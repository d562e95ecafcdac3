package lifecycle

import (
	"sort"
	"sync"

	"github.com/rmqgo/rmq/broker/lite/naming"
)

// Index maps each parent to its lite topics (§4.1 [our choice]): wildcard
// full dispatch, admin listings and parent cleanup read it instead of
// scanning every queue. It is kept current by the store's LMQ created /
// deleted hooks.
type Index struct {
	mu      sync.RWMutex
	parents map[string]map[string]struct{} // parent → lite names
	n       int
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{parents: map[string]map[string]struct{}{}} }

// Add records lmq (ignored unless it parses as a lite name).
func (x *Index) Add(lmq string) {
	parent, lite, ok := naming.Parse(lmq)
	if !ok {
		return
	}
	x.mu.Lock()
	set := x.parents[parent]
	if set == nil {
		set = map[string]struct{}{}
		x.parents[parent] = set
	}
	if _, ok := set[lite]; !ok {
		set[lite] = struct{}{}
		x.n++
	}
	x.mu.Unlock()
}

// Remove forgets lmq.
func (x *Index) Remove(lmq string) {
	parent, lite, ok := naming.Parse(lmq)
	if !ok {
		return
	}
	x.mu.Lock()
	if set := x.parents[parent]; set != nil {
		if _, ok := set[lite]; ok {
			delete(set, lite)
			x.n--
		}
		if len(set) == 0 {
			delete(x.parents, parent)
		}
	}
	x.mu.Unlock()
}

// RemoveAll forgets lmqs (distinct LMQs that existed) under one lock.
func (x *Index) RemoveAll(lmqs []string) {
	perParent := map[string]int{}
	for _, lmq := range lmqs {
		if parent, _, ok := naming.Parse(lmq); ok {
			perParent[parent]++
		}
	}
	x.RemoveCounted(lmqs, perParent)
}

// RemoveCounted forgets lmqs (distinct LMQs that existed), perParent
// counting them by parent. A parent all of whose lite topics go (a mass
// expiry) is dropped whole; only the names of the other parents are read
// again.
func (x *Index) RemoveCounted(lmqs []string, perParent map[string]int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	partial := false
	for parent, n := range perParent {
		if set := x.parents[parent]; set != nil && n >= len(set) {
			x.n -= len(set)
			delete(x.parents, parent)
		} else if set != nil {
			partial = true
		}
	}
	if !partial {
		return
	}
	for _, lmq := range lmqs {
		parent, lite, ok := naming.Parse(lmq)
		if !ok {
			continue
		}
		set := x.parents[parent]
		if set == nil {
			continue
		}
		if _, ok := set[lite]; ok {
			delete(set, lite)
			x.n--
		}
		if len(set) == 0 {
			delete(x.parents, parent)
		}
	}
}

// Count is the number of lite topics of parent ("" = all parents).
func (x *Index) Count(parent string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if parent == "" {
		return x.n
	}
	return len(x.parents[parent])
}

// LMQs returns the LMQ names of parent.
func (x *Index) LMQs(parent string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	set := x.parents[parent]
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, naming.ParentPrefix(parent)+l)
	}
	return out
}

// Page returns up to limit lite names of parent greater than after, in
// byte order, and whether more follow. It costs one pass over the
// parent's names (no sorted copy of all of them is kept).
func (x *Index) Page(parent, after string, limit int) ([]string, bool) {
	if limit <= 0 {
		return nil, false
	}
	x.mu.RLock()
	// Keep the limit+1 smallest names > after in a max-heap by hand: a
	// sorted slice with binary insertion is enough for admin page sizes.
	best := make([]string, 0, limit+1)
	for l := range x.parents[parent] {
		if l <= after {
			continue
		}
		if len(best) == limit+1 && l >= best[limit] {
			continue
		}
		i := sort.SearchStrings(best, l)
		if len(best) < limit+1 {
			best = append(best, "")
		}
		copy(best[i+1:], best[i:len(best)-1])
		best[i] = l
	}
	x.mu.RUnlock()
	if len(best) > limit {
		return best[:limit], true
	}
	return best, false
}
