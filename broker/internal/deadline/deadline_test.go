package deadline

import (
	"container/heap"
	"testing"
	"time"
)

type item struct {
	at  time.Time
	pos int
}

func (it *item) Deadline() time.Time { return it.at }
func (it *item) SetIndex(i int)      { it.pos = i }

func TestHeapOrdersByDeadlineAndTracksIndexes(t *testing.T) {
	base := time.Unix(1000, 0)
	var h Heap[*item]
	items := make([]*item, 0, 5)
	for _, s := range []int{5, 1, 4, 2, 3} {
		it := &item{at: base.Add(time.Duration(s) * time.Second)}
		items = append(items, it)
		heap.Push(&h, it)
	}
	for i, it := range h {
		if it.pos != i {
			t.Fatalf("entry at %d believes it is at %d", i, it.pos)
		}
	}
	removed := items[2] // deadline +4s
	heap.Remove(&h, removed.pos)
	if removed.pos != -1 {
		t.Fatalf("removed entry's index = %d, want -1", removed.pos)
	}
	var got []int64
	for h.Len() > 0 {
		got = append(got, heap.Pop(&h).(*item).at.Unix()-1000)
	}
	want := []int64{1, 2, 3, 5}
	if len(got) != len(want) {
		t.Fatalf("popped %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("popped %v, want %v", got, want)
		}
	}
}
