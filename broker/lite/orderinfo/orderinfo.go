// Package orderinfo keeps the FIFO state of lite consumption (docs/lite-topics.md
// §6.4): per (lmq, group) the messages of the last pop, which of them are
// acked, when each becomes visible again and how often each was delivered.
// While a popped message is un-acked and invisible, the lmq is blocked for
// that group, so a lite topic is consumed strictly in order. The state is
// memory-only: a restart forgets it, which only allows an earlier
// redelivery.
//
// It also holds the (group, lmq) try-locks that serialise pops, acks and
// invisibility changes of one lmq.
package orderinfo

import (
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
)

// Key names one order state.
type Key struct {
	LMQ   string
	Group string
}

// Commit results of CommitAndNext besides a next offset (≥ 0).
const (
	// Illegal: the offset is not one of the popped offsets (Java's -1).
	Illegal int64 = -1
	// Stale: the ack carries another pop's popTime (Java's -2); ignored.
	Stale int64 = -2
)

type info struct {
	attemptID     string
	popTime       int64
	invisibleTime int64
	offsets       []int64
	acked         uint64          // bit i: offsets[i] acked (a pop returns at most 32)
	nextVisible   map[int64]int64 // per-offset override (change invisible time)
	counts        map[int64]int32 // per-offset delivery count beyond the first
	timer         *time.Timer     // fires when the block may have ended
	due           int64           // when timer fires (ms)
}

func (in *info) allAcked() bool {
	return in.acked == (uint64(1)<<uint(len(in.offsets)))-1
}

func (in *info) visibleAt(i int) int64 {
	if t, ok := in.nextVisible[in.offsets[i]]; ok {
		return t
	}
	return in.popTime + in.invisibleTime
}

// blockEnd is the latest visibility time among un-acked offsets (0 when
// all are acked).
func (in *info) blockEnd() int64 {
	var end int64
	for i := range in.offsets {
		if in.acked&(1<<uint(i)) == 0 {
			end = max(end, in.visibleAt(i))
		}
	}
	return end
}

const shardCount = 64

type shard struct {
	mu sync.Mutex
	m  map[Key]*info
}

// Options configure a Manager.
type Options struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnRelease is called (on a timer goroutine) when the invisible time
	// of a blocked (lmq, group) ran out without an ack: the dispatcher
	// re-announces the lmq so the message is redelivered
	// (enableNotifyAfterPopOrderLockRelease). Nil: nothing is called.
	OnRelease func(k Key)
}

// Manager is the order-state table; safe for concurrent use.
type Manager struct {
	opts   Options
	shards [shardCount]shard
}

// New returns an empty table.
func New(opts Options) *Manager {
	defaults.Clock(&opts.Now)
	m := &Manager{opts: opts}
	for i := range m.shards {
		m.shards[i].m = map[Key]*info{}
	}
	return m
}

func (m *Manager) shard(k Key) *shard {
	h := uint32(2166136261)
	for i := 0; i < len(k.LMQ); i++ {
		h = (h ^ uint32(k.LMQ[i])) * 16777619
	}
	return &m.shards[h%shardCount]
}

func (m *Manager) now() int64 { return m.opts.Now().UnixMilli() }

// Blocked reports whether a pop with attemptID must skip (lmq, group): some
// popped offset is un-acked and still invisible, and attemptID is not the
// attempt that popped it (a retry of the same attempt is not blocked).
func (m *Manager) Blocked(k Key, attemptID string) bool {
	sh := m.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	in := sh.m[k]
	if in == nil || len(in.offsets) == 0 {
		return false
	}
	if in.attemptID != "" && in.attemptID == attemptID {
		return false
	}
	now := m.now()
	for i := range in.offsets {
		if in.acked&(1<<uint(i)) == 0 && now < in.visibleAt(i) {
			return true
		}
	}
	return false
}

// Update records a pop of offsets (queue order) and returns each offset's
// delivery count before this pop (0 for a first delivery). Offsets popped by
// the previous pop count one more delivery, unless this pop retries the
// same attempt.
func (m *Manager) Update(k Key, attemptID string, popTime, invisibleTime int64, offsets []int64) []int32 {
	if len(offsets) > 64 {
		offsets = offsets[:64]
	}
	in := &info{attemptID: attemptID, popTime: popTime, invisibleTime: invisibleTime, offsets: append([]int64(nil), offsets...)}
	sh := m.shard(k)
	sh.mu.Lock()
	old := sh.m[k]
	if old != nil {
		stopTimer(old)
		sameAttempt := old.attemptID != "" && old.attemptID == attemptID
		prev := make(map[int64]bool, len(old.offsets))
		for _, o := range old.offsets {
			prev[o] = true
		}
		for _, o := range in.offsets {
			if !prev[o] {
				continue
			}
			c := old.counts[o]
			if !sameAttempt {
				c++
			}
			if c > 0 {
				if in.counts == nil {
					in.counts = map[int64]int32{}
				}
				in.counts[o] = c
			}
		}
	}
	sh.m[k] = in
	m.armLocked(k, in)
	counts := make([]int32, len(in.offsets))
	for i, o := range in.offsets {
		counts[i] = in.counts[o]
	}
	sh.mu.Unlock()
	return counts
}

// armLocked (re)starts the release timer of in at its block end.
func (m *Manager) armLocked(k Key, in *info) {
	if m.opts.OnRelease == nil {
		return
	}
	end := in.blockEnd()
	if end == 0 {
		stopTimer(in)
		return
	}
	if in.timer != nil && in.due == end {
		return
	}
	stopTimer(in)
	in.due = end
	d := time.Duration(end-m.now())*time.Millisecond + time.Millisecond
	in.timer = time.AfterFunc(max(d, 0), func() { m.release(k, in) })
}

func stopTimer(in *info) {
	if in.timer != nil {
		in.timer.Stop()
		in.timer = nil
	}
}

// release fires OnRelease if in is still the state of k and still holds an
// un-acked offset whose invisibility ran out.
func (m *Manager) release(k Key, in *info) {
	sh := m.shard(k)
	sh.mu.Lock()
	cur := sh.m[k]
	fire := cur == in && !in.allAcked()
	if cur == in {
		in.timer = nil
	}
	sh.mu.Unlock()
	if fire {
		m.opts.OnRelease(k)
	}
}

// CommitAndNext marks offset acked by the pop of popTime and returns the
// offset to commit: the lowest un-acked popped offset, or the last popped
// offset + 1 when all are acked (the state is then dropped). Without state
// it returns offset+1. Illegal: offset was not popped; Stale: popTime is
// another pop's.
func (m *Manager) CommitAndNext(k Key, offset, popTime int64) int64 {
	sh := m.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	in := sh.m[k]
	if in == nil {
		return offset + 1
	}
	if len(in.offsets) == 0 {
		return Illegal
	}
	if in.popTime != popTime {
		return Stale
	}
	idx := -1
	for i, o := range in.offsets {
		if o == offset {
			idx = i
			break
		}
	}
	if idx < 0 {
		return Illegal
	}
	in.acked |= 1 << uint(idx)
	if in.allAcked() {
		stopTimer(in)
		delete(sh.m, k)
		return in.offsets[len(in.offsets)-1] + 1
	}
	for i, o := range in.offsets {
		if in.acked&(1<<uint(i)) == 0 {
			m.armLocked(k, in)
			return o
		}
	}
	return in.offsets[len(in.offsets)-1] + 1
}

// UpdateNextVisible sets when offset of the pop of popTime becomes visible
// again (CHANGE_MESSAGE_INVISIBLETIME); it reports false when there is no
// such pop or offset.
func (m *Manager) UpdateNextVisible(k Key, offset, popTime, nextVisible int64) bool {
	sh := m.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	in := sh.m[k]
	if in == nil || in.popTime != popTime {
		return false
	}
	for i, o := range in.offsets {
		if o == offset {
			if in.acked&(1<<uint(i)) != 0 {
				return false
			}
			if in.nextVisible == nil {
				in.nextVisible = map[int64]int64{}
			}
			in.nextVisible[o] = nextVisible
			m.armLocked(k, in)
			return true
		}
	}
	return false
}

// Delivered reports how often offset of the last pop of k was delivered
// before that pop (the count the pop returned for it) and that pop's
// popTime; ok is false when the last pop did not return offset.
func (m *Manager) Delivered(k Key, offset int64) (count int32, popTime int64, ok bool) {
	sh := m.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	in := sh.m[k]
	if in == nil {
		return 0, 0, false
	}
	for _, o := range in.offsets {
		if o == offset {
			return in.counts[o], in.popTime, true
		}
	}
	return 0, 0, false
}

// Clear drops the state of k (offset reset, lmq deleted).
func (m *Manager) Clear(k Key) {
	sh := m.shard(k)
	sh.mu.Lock()
	if in := sh.m[k]; in != nil {
		stopTimer(in)
		delete(sh.m, k)
	}
	sh.mu.Unlock()
}

// ClearLMQ drops the states of lmq for the given groups.
func (m *Manager) ClearLMQ(lmq string, groups []string) {
	for _, g := range groups {
		m.Clear(Key{lmq, g})
	}
}

// ClearLMQs is ClearLMQ for many names (a sweep's batch); with no state
// held at all it costs one look per shard.
func (m *Manager) ClearLMQs(lmqs, groups []string) {
	if len(groups) == 0 || m.Count() == 0 {
		return
	}
	for _, l := range lmqs {
		m.ClearLMQ(l, groups)
	}
}

// EachLMQ calls f with the lmq of every state held (names may repeat),
// one shard at a time, calling yield (if not nil) after each. f must not
// call back into m.
func (m *Manager) EachLMQ(f func(lmq string), yield func()) {
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for k := range sh.m {
			f(k.LMQ)
		}
		sh.mu.Unlock()
		if yield != nil {
			yield()
		}
	}
}

// Count is the number of states held.
func (m *Manager) Count() int {
	n := 0
	for i := range m.shards {
		m.shards[i].mu.Lock()
		n += len(m.shards[i].m)
		m.shards[i].mu.Unlock()
	}
	return n
}

// Close stops every release timer.
func (m *Manager) Close() {
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		for _, in := range sh.m {
			stopTimer(in)
		}
		sh.mu.Unlock()
	}
}
