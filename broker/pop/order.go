package pop

import (
	"encoding/json"
	"maps"
	"slices"
)

// orderInfo is the state of one queue under orderly pop (Java's
// ConsumerOrderInfoManager.OrderInfo): the offsets of the last pop, which
// of them are acked, their next-visible times and how often each was
// handed out. While an un-acked offset is invisible the queue is blocked:
// no other pop of the group gets messages from it.
type orderInfo struct {
	PopTime       int64           `json:"pt"`
	InvisibleTime int64           `json:"i"`
	Offsets       []int64         `json:"o"` // absolute, ascending
	NextVisible   map[int64]int64 `json:"ot,omitempty"`
	Counts        map[int64]int   `json:"oc,omitempty"` // consume count of re-popped offsets
	LastConsume   int64           `json:"l"`
	CommitBits    uint64          `json:"cm"`
	AttemptID     string          `json:"a,omitempty"`
}

// Results of commitAndNext besides a next offset (≥ 0).
const (
	orderNotFound  = -1 // the offset is not one of the last pop's
	orderStalePop  = -2 // the receipt is from an earlier pop of the queue
	orderNoPopInfo = -3 // nothing popped orderly from the queue
)

func (o *orderInfo) acked(i int) bool { return o.CommitBits&(1<<uint(i)) != 0 }

// blocks reports whether the queue is blocked for a pop with attemptID at
// now (Java's needBlock): an un-acked offset is still invisible, and the
// pop is not a retry of the same attempt.
func (o *orderInfo) blocks(attemptID string, invisible, now int64) bool {
	if o == nil || len(o.Offsets) == 0 {
		return false
	}
	if o.AttemptID != "" && o.AttemptID == attemptID {
		return false
	}
	inv := o.InvisibleTime
	if inv <= 0 {
		inv = invisible
	}
	for i, off := range o.Offsets {
		if o.acked(i) {
			continue
		}
		next := o.PopTime + inv
		if t, ok := o.NextVisible[off]; ok {
			next = t
		}
		if now < next {
			return true
		}
	}
	return false
}

// freeAt is when the queue stops being blocked (0: not blocked at now).
func (o *orderInfo) freeAt(now int64) int64 {
	if o == nil {
		return 0
	}
	var latest int64
	for i, off := range o.Offsets {
		if o.acked(i) {
			continue
		}
		next := o.PopTime + o.InvisibleTime
		if t, ok := o.NextVisible[off]; ok {
			next = t
		}
		if next > now && next > latest {
			latest = next
		}
	}
	return latest
}

// nextOffset is the offset to commit: the first un-acked one, or past the
// last when all are acked.
func (o *orderInfo) nextOffset() int64 {
	for i, off := range o.Offsets {
		if !o.acked(i) {
			return off
		}
	}
	return o.Offsets[len(o.Offsets)-1] + 1
}

// commitAndNext marks offset acked (on a copy) and returns the new info
// and the offset to commit, or one of the order* results.
func (o *orderInfo) commitAndNext(offset, popTime int64) (*orderInfo, int64) {
	if o == nil || len(o.Offsets) == 0 {
		return o, orderNoPopInfo
	}
	if popTime != o.PopTime {
		return o, orderStalePop
	}
	i, ok := slices.BinarySearch(o.Offsets, offset)
	if !ok {
		return o, orderNotFound
	}
	n := o.clone()
	n.CommitBits |= 1 << uint(i)
	return n, n.nextOffset()
}

// withNextVisible sets one offset's next-visible time (on a copy).
func (o *orderInfo) withNextVisible(offset, popTime, at int64) (*orderInfo, bool) {
	if o == nil || popTime != o.PopTime {
		return o, false
	}
	i, ok := slices.BinarySearch(o.Offsets, offset)
	if !ok || o.acked(i) {
		return o, false
	}
	n := o.clone()
	if n.NextVisible == nil {
		n.NextVisible = map[int64]int64{}
	}
	n.NextVisible[offset] = at
	return n, true
}

// newOrderInfo is the info of a new pop, with the consume counts carried
// over from prev (Java's update + mergeOffsetConsumedCount): an offset
// popped again counts one more, unless the pop retries the same attempt.
func newOrderInfo(prev *orderInfo, attemptID string, popTime, invisible int64, offsets []int64, now int64) *orderInfo {
	n := &orderInfo{PopTime: popTime, InvisibleTime: invisible, Offsets: slices.Clone(offsets), LastConsume: now, AttemptID: attemptID}
	if prev == nil {
		return n
	}
	if prev.AttemptID != "" && prev.AttemptID == attemptID {
		n.Counts = maps.Clone(prev.Counts)
		return n
	}
	counts := map[int64]int{}
	for _, off := range n.Offsets {
		if _, seen := slices.BinarySearch(prev.Offsets, off); seen {
			counts[off] = prev.Counts[off] + 1
		}
	}
	if len(counts) > 0 {
		n.Counts = counts
	}
	return n
}

// countInfo appends the response's orderCountInfo entries for this pop:
// one per re-popped offset, then the queue's minimum count.
func (o *orderInfo) countInfo(info *offsetInfo, topic string, qid int32) {
	lowest := -1
	for _, off := range o.Offsets {
		c, ok := o.Counts[off]
		if !ok {
			lowest = 0
			continue
		}
		info.addOffsetCount(topic, qid, off, c)
		if lowest < 0 || c < lowest {
			lowest = c
		}
	}
	info.addQueueCount(topic, qid, max(lowest, 0))
}

func (o *orderInfo) clone() *orderInfo {
	n := *o
	n.Offsets = slices.Clone(o.Offsets)
	n.NextVisible = maps.Clone(o.NextVisible)
	n.Counts = maps.Clone(o.Counts)
	return &n
}

func encodeOrder(o *orderInfo) []byte {
	b, _ := json.Marshal(o) // maps of int64 keys and plain fields always encode
	return b
}

func decodeOrder(b []byte) (*orderInfo, error) {
	var o orderInfo
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, err
	}
	if len(o.Offsets) > 64 || !slices.IsSorted(o.Offsets) {
		return nil, errBadCK
	}
	return &o, nil
}
