// Package deadline is the heap of parked requests ordered by deadline that
// the long-polling services (pull, pop) answer from.
package deadline

import "time"

// Entry is what a Heap holds: it knows its deadline and is told its index
// in the heap, -1 once popped, so that it can be removed (heap.Remove) in
// O(log n).
type Entry interface {
	Deadline() time.Time
	SetIndex(i int)
}

// Heap implements container/heap.Interface, earliest deadline first; use
// it through container/heap.
type Heap[E Entry] []E

func (h Heap[E]) Len() int           { return len(h) }
func (h Heap[E]) Less(i, j int) bool { return h[i].Deadline().Before(h[j].Deadline()) }
func (h Heap[E]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].SetIndex(i)
	h[j].SetIndex(j)
}

// Push is for container/heap.
func (h *Heap[E]) Push(x any) {
	e := x.(E)
	e.SetIndex(len(*h))
	*h = append(*h, e)
}

// Pop is for container/heap.
func (h *Heap[E]) Pop() any {
	old := *h
	var zero E
	e := old[len(old)-1]
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	e.SetIndex(-1)
	return e
}
