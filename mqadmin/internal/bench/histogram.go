package bench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// subBits sets the histogram's precision: 2^subBits buckets per power of
// two, so a recorded value is off by at most 1/64 (1.6 %).
const subBits = 6

const (
	subCount = 1 << subBits
	nBuckets = subCount + (64-subBits-1)*subCount
)

// Histogram is a lock-free log-linear histogram of non-negative integers
// (latencies in microseconds here): exact below 64, then 64 buckets per
// power of two. Record is safe for concurrent use.
type Histogram struct {
	counts [nBuckets]atomic.Int64
	n      atomic.Int64
	sum    atomic.Int64
	max    atomic.Int64
}

func bucketOf(v int64) int {
	if v < subCount {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - subBits - 1 // v>>e is in [64, 128)
	return subCount + e*subCount + int(v>>e) - subCount
}

// bucketValue is the middle of bucket i's range.
func bucketValue(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	e := (i - subCount) / subCount
	lo := int64(subCount+(i-subCount)%subCount) << e
	return lo + (int64(1)<<e)/2
}

// Record adds one value; negatives count as 0.
func (h *Histogram) Record(v int64) {
	v = max(v, 0)
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// RecordDuration records d in microseconds.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(d.Microseconds()) }

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.n.Load() }

// Max is the largest value recorded (exact).
func (h *Histogram) Max() int64 { return h.max.Load() }

// Mean is the exact average (0 when empty).
func (h *Histogram) Mean() float64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return float64(h.sum.Load()) / float64(n)
}

// Percentile returns the value at quantile q (0 < q ≤ 1): the smallest
// recorded value v such that at least q of the values are ≤ v, within the
// bucket precision and never above Max. 0 when empty.
func (h *Histogram) Percentile(q float64) int64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.999999999) // ceil without float surprises
	rank = min(max(rank, 1), n)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return min(bucketValue(i), h.Max())
		}
	}
	return h.Max()
}
