package metrics

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Lite lag (Apache 5.5.0's LiteConsumerLagCalculator). A lite group's lag
// is reported under its parent topic in the consumer lag gauges, never per
// lite topic, so a million lite topics add one series per (parent, group):
//
//   - liteLagCountMetricsEnable: rocketmq_consumer_lag_messages and
//     rocketmq_consumer_ready_messages get the sum over the parent's LMQs
//     of (max offset − the group's committed offset), read by
//     Sources.LiteLagCounts in the background (at most once a second; a
//     scrape never waits for that walk after the first).
//   - liteLagLatencyCollectEnable: each POP_LITE_MESSAGE that filled its
//     batch from an LMQ records the store time of the LMQ's next message
//     (LitePopped); one that did not drops the LMQ. Per (parent, group) only
//     the liteLagLatencyTopK oldest are kept.
//   - liteLagLatencyMetricsEnable: rocketmq_consumer_lag_latency gets now −
//     the oldest of them.

// LiteSettings are the liteLag* keys, read at each collection.
type LiteSettings struct {
	LatencyMetrics bool // liteLagLatencyMetricsEnable
	CountMetrics   bool // liteLagCountMetricsEnable
}

type liteKey struct{ parent, group string }

// liteTopK holds the LMQs of one (parent, group) with the oldest
// unconsumed store times, at most k of them.
type liteTopK struct {
	mu   sync.Mutex
	lmqs []liteTime
}

type liteTime struct {
	lmq string
	ts  int64
}

func (t *liteTopK) remove(lmq string) {
	t.mu.Lock()
	t.lmqs = slices.DeleteFunc(t.lmqs, func(x liteTime) bool { return x.lmq == lmq })
	t.mu.Unlock()
}

// update records lmq's oldest unconsumed store time and keeps the k oldest
// (Java drops the newest once the queue holds more than topK).
func (t *liteTopK) update(lmq string, ts int64, k int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lmqs = slices.DeleteFunc(t.lmqs, func(x liteTime) bool { return x.lmq == lmq })
	t.lmqs = append(t.lmqs, liteTime{lmq, ts})
	for len(t.lmqs) > max(k, 1) {
		newest := 0
		for i, x := range t.lmqs {
			if x.ts > t.lmqs[newest].ts {
				newest = i
			}
		}
		t.lmqs = slices.Delete(t.lmqs, newest, newest+1)
	}
}

// oldest is the earliest store time held (0: none).
func (t *liteTopK) oldest() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var o int64
	for _, x := range t.lmqs {
		if o == 0 || x.ts < o {
			o = x.ts
		}
	}
	return o
}

// LitePopped records what a lite pop of lmq (a lite topic of parent) left
// behind for group: nextStoreMs is the store time of the LMQ's next
// message when the pop filled its batch, else 0 (caught up). topK is
// liteLagLatencyTopK. The broker calls it only with
// liteLagLatencyCollectEnable.
func (m *Metrics) LitePopped(group, parent, lmq string, nextStoreMs int64, topK int) {
	if m == nil || !m.cfg.EnableLagAndDlqMetrics {
		return
	}
	k := liteKey{parent, group}
	if nextStoreMs <= 0 {
		if t := m.lite.load(k); t != nil {
			t.remove(lmq)
		}
		return
	}
	if t := m.lite.get(k, func() *liteTopK { return &liteTopK{} }); t != nil {
		t.update(lmq, nextStoreMs, topK)
	}
}

// LiteTopicRemoved forgets a deleted lite topic's lag times (upstream
// #11057 keeps them).
func (m *Metrics) LiteTopicRemoved(parent, lmq string) {
	if m == nil {
		return
	}
	m.lite.each(func(k liteKey, t *liteTopK) {
		if k.parent == parent {
			t.remove(lmq)
		}
	})
}

// liteLags are the lite entries of the lag gauges by the settings now.
func (m *Metrics) liteLags(counts *asyncCache[[]Lag]) []Lag {
	if m.src.Lite == nil {
		return nil
	}
	st := m.src.Lite()
	var out []Lag
	if st.CountMetrics && counts != nil {
		for _, l := range counts.get() {
			out = append(out, Lag{Group: l.Group, Topic: l.Topic, Lag: l.Lag, Ready: l.Lag, lite: liteCount})
		}
	}
	if st.LatencyMetrics {
		m.lite.each(func(k liteKey, t *liteTopK) {
			if ts := t.oldest(); ts > 0 {
				out = append(out, Lag{Group: k.group, Topic: k.parent, EarliestUnconsumedMs: ts, lite: liteLatency})
			}
		})
	}
	return out
}

// Which lag gauges a lite entry feeds (Java: lag and ready messages from
// the lag count, lag latency from the top-K; never inflight or queueing).
const (
	liteCount uint8 = 1 << iota
	liteLatency
)

// mergeLite adds the lite entries to the regular ones: a (group, parent)
// already listed gets the lite values added, others are appended.
func mergeLite(lags, lite []Lag) []Lag {
	if len(lite) == 0 {
		return lags
	}
	type key struct{ group, topic string }
	idx := make(map[key]int, len(lags)+len(lite))
	out := slices.Clone(lags)
	for i, l := range out {
		if !l.Retry {
			idx[key{l.Group, l.Topic}] = i
		}
	}
	for _, l := range lite {
		i, ok := idx[key{l.Group, l.Topic}]
		if !ok {
			idx[key{l.Group, l.Topic}] = len(out)
			out = append(out, l)
			continue
		}
		o := &out[i]
		o.Lag += l.Lag
		o.Ready += l.Ready
		if l.EarliestUnconsumedMs > 0 && (o.EarliestUnconsumedMs == 0 || l.EarliestUnconsumedMs < o.EarliestUnconsumedMs) {
			o.EarliestUnconsumedMs = l.EarliestUnconsumedMs
		}
		if o.lite != 0 {
			o.lite |= l.lite
		}
	}
	return out
}

// asyncCache serves the last value of a slow source and refreshes it in
// the background once it is older than every; only the first get waits.
type asyncCache[T any] struct {
	src     func() T
	every   time.Duration
	now     func() time.Time
	mu      sync.Mutex
	v       T
	at      time.Time
	ok      bool
	running atomic.Bool
}

func (c *asyncCache[T]) get() T {
	c.mu.Lock()
	if !c.ok {
		c.v, c.at, c.ok = c.src(), c.now(), true
		v := c.v
		c.mu.Unlock()
		return v
	}
	v, stale := c.v, c.now().Sub(c.at) > c.every
	c.mu.Unlock()
	if stale && c.running.CompareAndSwap(false, true) {
		go func() {
			defer c.running.Store(false)
			nv := c.src()
			c.mu.Lock()
			c.v, c.at = nv, c.now()
			c.mu.Unlock()
		}()
	}
	return v
}
