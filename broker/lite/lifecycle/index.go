package lifecycle

import (
	"sort"
	"strings"

	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
)

// Index answers which lite topics a parent has (docs/lite-topics.md §4.1 [our choice]) for
// wildcard full dispatch, admin listings and parent cleanup. It reads the
// store's in-memory queue table and keeps no copy of the names: a copy in
// Go maps cost 60 B per lite topic and most of the GC's marking work (a GC
// cycle with a million lite topics took 83 ms with it, 33 ms without,
// `-bench LiteTopics`, gcMs), and a GC cycle of the broker is what stalls
// requests. Each call costs one pass over the table (about 0.1 s with a
// million lite topics), which these rare callers can afford.
type Index struct {
	rng func(f func(id consumequeue.QueueID, st consumequeue.QueueState) bool)
}

// NewIndex returns an index over the queue table that rng iterates.
func NewIndex(rng func(f func(id consumequeue.QueueID, st consumequeue.QueueState) bool)) *Index {
	return &Index{rng: rng}
}

// each calls f with the LMQ and lite name of every lite topic of parent
// ("" = of every parent) until f returns false.
func (x *Index) each(parent string, f func(lmq, lite string) bool) {
	prefix := naming.ParentPrefix(parent)
	if parent == "" {
		prefix = naming.LitePrefix
	}
	x.rng(func(id consumequeue.QueueID, st consumequeue.QueueState) bool {
		if id.QueueID != naming.QueueID || st.Max <= 0 || !strings.HasPrefix(id.Topic, prefix) {
			return true
		}
		p, lite, ok := naming.Parse(id.Topic)
		if !ok || parent != "" && p != parent {
			return true
		}
		return f(id.Topic, lite)
	})
}

// Count is the number of lite topics of parent ("" = all parents).
func (x *Index) Count(parent string) int {
	n := 0
	x.each(parent, func(string, string) bool { n++; return true })
	return n
}

// LMQs returns the LMQ names of parent.
func (x *Index) LMQs(parent string) []string {
	var out []string
	x.each(parent, func(lmq, _ string) bool { out = append(out, lmq); return true })
	return out
}

// Page returns up to limit lite names of parent greater than after, in
// byte order, and whether more follow. It costs one pass over the table
// (no sorted copy of the names is kept).
func (x *Index) Page(parent, after string, limit int) ([]string, bool) {
	if limit <= 0 {
		return nil, false
	}
	// Keep the limit+1 smallest names > after, sorted: binary insertion
	// is enough for admin page sizes.
	best := make([]string, 0, limit+1)
	x.each(parent, func(_, l string) bool {
		if l <= after || len(best) == limit+1 && l >= best[limit] {
			return true
		}
		i := sort.SearchStrings(best, l)
		if len(best) < limit+1 {
			best = append(best, "")
		}
		copy(best[i+1:], best[i:len(best)-1])
		best[i] = l
		return true
	})
	if len(best) > limit {
		return best[:limit], true
	}
	return best, false
}
