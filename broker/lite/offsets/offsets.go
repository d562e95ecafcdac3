// Package offsets keeps the consumer offsets of lite topics (docs/lite-topics.md
// §6.9): a group's committed offset of an LMQ (key lmq@group, queue 0) in
// the store's persistent offset table, and the pending resets that
// subscribe options, exclusive eviction and unsubscribe register and the
// next pop consumes.
package offsets

import (
	"slices"
	"sync"

	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/store/offset"
)

// Table is the store's offset table (*offset.Store).
type Table interface {
	Commit(k offset.Key, off int64)
	Get(k offset.Key) (int64, bool)
	Delete(k offset.Key)
	DeleteQueues(groups, topics []string, qid int32) int
	Range(f func(offset.Key, int64) bool)
	Len() int
}

type key struct{ group, lmq string }

// Offsets is safe for concurrent use.
type Offsets struct {
	t Table

	mu     sync.Mutex
	resets map[key]int64
}

// New wraps the store's offset table.
func New(t Table) *Offsets { return &Offsets{t: t, resets: map[key]int64{}} }

func okey(group, lmq string) offset.Key {
	return offset.Key{Group: group, Topic: lmq, QueueID: naming.QueueID}
}

// Committed returns group's committed offset of lmq, -1 when none.
func (o *Offsets) Committed(group, lmq string) int64 {
	if v, ok := o.t.Get(okey(group, lmq)); ok {
		return v
	}
	return -1
}

// Commit records group's offset of lmq.
func (o *Offsets) Commit(group, lmq string, off int64) { o.t.Commit(okey(group, lmq), off) }

// SetReset registers a pending reset of (group, lmq) to off.
func (o *Offsets) SetReset(group, lmq string, off int64) {
	o.mu.Lock()
	o.resets[key{group, lmq}] = off
	o.mu.Unlock()
}

// HasReset reports a pending reset.
func (o *Offsets) HasReset(group, lmq string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.resets[key{group, lmq}]
	return ok
}

// TakeReset removes and returns a pending reset.
func (o *Offsets) TakeReset(group, lmq string) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := key{group, lmq}
	v, ok := o.resets[k]
	delete(o.resets, k)
	return v, ok
}

// Delete removes group's committed offset and pending reset of lmq (the
// lmq was deleted; #10550: the reset must not leak).
func (o *Offsets) Delete(group, lmq string) {
	o.t.Delete(okey(group, lmq))
	o.mu.Lock()
	delete(o.resets, key{group, lmq})
	o.mu.Unlock()
}

// DeleteLMQs is Delete for every group and lmq, in one pass under each
// lock (a sweep deletes a million LMQs, most without offsets).
func (o *Offsets) DeleteLMQs(groups, lmqs []string) {
	o.t.DeleteQueues(groups, lmqs, naming.QueueID)
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case len(o.resets) == 0:
	case len(o.resets) >= len(groups)*len(lmqs):
		for _, g := range groups {
			for _, l := range lmqs {
				delete(o.resets, key{g, l})
			}
		}
	default:
		// Few pending resets: look the names up among theirs.
		byLMQ := map[string][]key{}
		for k := range o.resets {
			if slices.Contains(groups, k.group) {
				byLMQ[k.lmq] = append(byLMQ[k.lmq], k)
			}
		}
		for _, l := range lmqs {
			for _, k := range byLMQ[l] {
				delete(o.resets, k)
			}
		}
	}
}

// Size is the number of offsets and pending resets held (of every group
// and topic): what EachLMQ walks.
func (o *Offsets) Size() int {
	o.mu.Lock()
	n := len(o.resets)
	o.mu.Unlock()
	return n + o.t.Len()
}

// EachLMQ calls f with every lmq that groups hold an offset or a pending
// reset of (names may repeat). f must not call back into o.
func (o *Offsets) EachLMQ(groups []string, f func(lmq string)) {
	o.t.Range(func(k offset.Key, _ int64) bool {
		if k.QueueID == naming.QueueID && slices.Contains(groups, k.Group) && naming.IsLite(k.Topic) {
			f(k.Topic)
		}
		return true
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.resets {
		if slices.Contains(groups, k.group) {
			f(k.lmq)
		}
	}
}

// PendingResets is the number of pending resets.
func (o *Offsets) PendingResets() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.resets)
}
