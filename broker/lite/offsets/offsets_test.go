package offsets

import (
	"fmt"
	"testing"

	"github.com/rmqgo/rmq/broker/store/offset"
)

type table map[offset.Key]int64

func (t table) Commit(k offset.Key, off int64) { t[k] = off }
func (t table) Get(k offset.Key) (int64, bool) { v, ok := t[k]; return v, ok }
func (t table) Delete(k offset.Key)            { delete(t, k) }
func (t table) DeleteQueues(groups, topics []string, qid int32) int {
	n := 0
	for _, g := range groups {
		for _, tp := range topics {
			k := offset.Key{Group: g, Topic: tp, QueueID: qid}
			if _, ok := t[k]; ok {
				delete(t, k)
				n++
			}
		}
	}
	return n
}
func (t table) Range(f func(offset.Key, int64) bool) {
	for k, v := range t {
		if !f(k, v) {
			return
		}
	}
}
func (t table) Len() int                            { return len(t) }
func (t table) has(group, lmq string) (int64, bool) { v, ok := t[okey(group, lmq)]; return v, ok }

const (
	lmqA = "%LMQ%$P$a"
	lmqB = "%LMQ%$P$b"
)

// TestCommitted: offsets live in the store's table under lmq@group, queue
// 0; no entry reads -1.
func TestCommitted(t *testing.T) {
	tb := table{}
	o := New(tb)
	tests := []struct {
		name   string
		do     func()
		group  string
		lmq    string
		want   int64
		stored bool
	}{
		{"none yet", func() {}, "g", lmqA, -1, false},
		{"committed", func() { o.Commit("g", lmqA, 7) }, "g", lmqA, 7, true},
		{"offset 0 is an offset", func() { o.Commit("g", lmqB, 0) }, "g", lmqB, 0, true},
		{"other group untouched", func() {}, "h", lmqA, -1, false},
		{"moved back", func() { o.Commit("g", lmqA, 3) }, "g", lmqA, 3, true},
	}
	for _, tt := range tests {
		tt.do()
		if got := o.Committed(tt.group, tt.lmq); got != tt.want {
			t.Errorf("%s: Committed = %d, want %d", tt.name, got, tt.want)
		}
		if v, ok := tb.has(tt.group, tt.lmq); ok != tt.stored || (ok && v != tt.want) {
			t.Errorf("%s: table entry %d %v", tt.name, v, ok)
		}
	}
}

// TestResets: a pending reset is per (group, lmq), taken once, and deleting
// the lmq drops it with the committed offset (#10550: no leak).
func TestResets(t *testing.T) {
	tb := table{}
	o := New(tb)
	o.Commit("g", lmqA, 9)
	o.SetReset("g", lmqA, 0)
	o.SetReset("g", lmqB, 4)
	o.SetReset("g", lmqB, 5) // the latest wins
	if !o.HasReset("g", lmqA) || o.HasReset("h", lmqA) || o.PendingResets() != 2 {
		t.Fatalf("HasReset/PendingResets: %v %v %d", o.HasReset("g", lmqA), o.HasReset("h", lmqA), o.PendingResets())
	}
	if v, ok := o.TakeReset("g", lmqB); !ok || v != 5 {
		t.Fatalf("TakeReset = %d %v, want 5", v, ok)
	}
	if _, ok := o.TakeReset("g", lmqB); ok {
		t.Fatal("a reset was taken twice")
	}
	if o.Committed("g", lmqA) != 9 {
		t.Fatal("a pending reset changed the committed offset before the pop took it")
	}
	o.Delete("g", lmqA)
	if o.HasReset("g", lmqA) || o.PendingResets() != 0 || o.Committed("g", lmqA) != -1 {
		t.Fatalf("after Delete: reset %v, %d pending, committed %d", o.HasReset("g", lmqA), o.PendingResets(), o.Committed("g", lmqA))
	}
	if _, ok := tb.has("g", lmqA); ok {
		t.Fatal("the table kept the deleted lmq's offset")
	}
}

// TestDeleteLMQs: the batch delete drops offsets and resets of every
// (group, lmq) pair given and nothing else.
func TestDeleteLMQs(t *testing.T) {
	tb := table{}
	o := New(tb)
	const lmqC = "%LMQ%$P$c"
	for _, g := range []string{"g", "h"} {
		for _, l := range []string{lmqA, lmqB, lmqC} {
			o.Commit(g, l, 1)
			o.SetReset(g, l, 0)
		}
	}
	o.DeleteLMQs([]string{"g", "h", "none"}, []string{lmqA, lmqB})
	for _, g := range []string{"g", "h"} {
		for _, l := range []string{lmqA, lmqB} {
			if o.Committed(g, l) != -1 || o.HasReset(g, l) {
				t.Errorf("%s %s kept: offset %d reset %v", g, l, o.Committed(g, l), o.HasReset(g, l))
			}
		}
		if o.Committed(g, lmqC) != 1 || !o.HasReset(g, lmqC) {
			t.Errorf("%s %s lost its offset or reset", g, lmqC)
		}
	}
}

// TestDeleteLMQsFewResets: with fewer pending resets than names, the
// resets are matched by name; only those of the given groups go.
func TestDeleteLMQsFewResets(t *testing.T) {
	o := New(table{})
	o.SetReset("g", lmqA, 0)
	o.SetReset("other", lmqA, 0)
	o.SetReset("g", "%LMQ%$P$kept", 0)
	var names []string
	for i := 0; i < 10; i++ {
		names = append(names, fmt.Sprintf("%%LMQ%%$P$n%d", i))
	}
	o.DeleteLMQs([]string{"g"}, append(names, lmqA))
	if o.HasReset("g", lmqA) || !o.HasReset("other", lmqA) || !o.HasReset("g", "%LMQ%$P$kept") || o.PendingResets() != 2 {
		t.Fatalf("resets after DeleteLMQs: g/a %v other/a %v g/kept %v, %d pending",
			o.HasReset("g", lmqA), o.HasReset("other", lmqA), o.HasReset("g", "%LMQ%$P$kept"), o.PendingResets())
	}
}
