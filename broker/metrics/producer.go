package metrics

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// producer hands the hot-path histograms to the reader at collection time
// (sdkmetric.Producer): the SDK's synchronous histograms take a lock per
// observation, these take a few atomic adds.
type producer struct{ m *Metrics }

func (p producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	m := p.m
	now := m.now()
	d := m.histDelta.begin(m, now)
	defer d.end()
	var out []metricdata.Metrics
	hist := func(name, unit, desc string, pts []metricdata.HistogramDataPoint[int64]) {
		if len(pts) == 0 {
			return
		}
		out = append(out, metricdata.Metrics{Name: name, Unit: unit, Description: desc,
			Data: metricdata.Histogram[int64]{Temporality: d.temporality(), DataPoints: pts}})
	}
	if m.cfg.EnableRequestMetrics {
		var pts []metricdata.HistogramDataPoint[int64]
		add := func(s *inStats) {
			for t := range numMessageTypes {
				pts = d.appendPoint(pts, s.size[t], s.attrs[t])
			}
		}
		m.in.each(func(_ string, s *inStats) { add(s) })
		add(m.inOverflow)
		hist(histMessageSize, "", "Incoming messages size", pts)

		pts = nil
		for i, h := range m.topicCreate {
			status := invocationSuccess
			if i%2 == 1 {
				status = invocationFailure
			}
			set := m.attrs(attribute.String(labelInvocationStatus, status), attribute.Bool(labelIsSystem, i >= 2))
			pts = d.appendPoint(pts, h, set)
		}
		hist(histTopicCreateTime, unitMillis, "The distribution of create topic time", pts)

		pts = nil
		for i, h := range m.groupCreate {
			status := invocationSuccess
			if i == 1 {
				status = invocationFailure
			}
			pts = d.appendPoint(pts, h, m.attrs(attribute.String(labelInvocationStatus, status)))
		}
		hist(histGroupCreateTime, unitMillis, "The distribution of create subscription time", pts)
	}
	if m.cfg.EnableTransactionMetrics {
		var pts []metricdata.HistogramDataPoint[int64]
		m.tx.each(func(_ string, s *txStats) {
			pts = d.appendPoint(pts, s.finish, s.commitAttrs)
		})
		hist(histFinishLatency, unitMs, "Transaction finish latency", pts)
	}
	if m.cfg.EnableRemotingMetrics {
		var pts []metricdata.HistogramDataPoint[int64]
		m.rpc.each(func(_ rpcKey, s *rpcStats) {
			pts = d.appendPoint(pts, s.hist, s.attrs)
		})
		hist(histRPCLatency, unitMillis, "Rpc latency", pts)
	}
	if m.cfg.EnablePopMetrics {
		if pt, ok := d.point(m.popScan, m.attrs()); ok {
			hist(histPopBufferScanTime, unitMillis, "Time consuming of pop buffer scan", []metricdata.HistogramDataPoint[int64]{pt})
		}
	}
	if m.cfg.EnableStoreMetrics {
		hist(histDelayLatency, unitSecs, "Timer message set latency distribution", m.timerLatencyPoints(d))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: meterName}, Metrics: out}}, nil
}

// histDeltas turns the histograms' cumulative points into deltas since the
// previous collection when metricsInDelta is on with OTLP_GRPC (Java's
// OTLP exporter then reports histograms as deltas too). A zero value
// reports cumulative points.
type histDeltas struct {
	on   bool
	mu   sync.Mutex
	prev map[*histogram]histSnap
	at   time.Time // the previous collection
}

type histSnap struct {
	counts []uint64
	sum    int64
}

// collection is one Produce call's view.
type collection struct {
	d          *histDeltas
	start, now time.Time
}

func (d *histDeltas) begin(m *Metrics, now time.Time) collection {
	if !d.on {
		return collection{start: m.start, now: now}
	}
	d.mu.Lock()
	start := d.at
	if start.IsZero() {
		start = m.start
	}
	return collection{d: d, start: start, now: now}
}

func (c collection) end() {
	if c.d != nil {
		c.d.at = c.now
		c.d.mu.Unlock()
	}
}

func (c collection) temporality() metricdata.Temporality {
	if c.d != nil {
		return metricdata.DeltaTemporality
	}
	return metricdata.CumulativeTemporality
}

// appendPoint appends h's point for set to pts when h has one.
func (c collection) appendPoint(pts []metricdata.HistogramDataPoint[int64], h *histogram, set attribute.Set) []metricdata.HistogramDataPoint[int64] {
	if pt, ok := c.point(h, set); ok {
		return append(pts, pt)
	}
	return pts
}

// point is h's point of this collection: cumulative, or the delta since
// the previous one (no min and max then: they are not known per interval);
// false when nothing was observed (in the interval).
func (c collection) point(h *histogram, set attribute.Set) (metricdata.HistogramDataPoint[int64], bool) {
	pt, ok := h.point(set, c.start, c.now)
	if !ok || c.d == nil {
		return pt, ok
	}
	if c.d.prev == nil {
		c.d.prev = map[*histogram]histSnap{}
	}
	prev := c.d.prev[h]
	c.d.prev[h] = histSnap{counts: slices.Clone(pt.BucketCounts), sum: pt.Sum}
	var total uint64
	for i := range pt.BucketCounts {
		if i < len(prev.counts) {
			pt.BucketCounts[i] -= prev.counts[i]
		}
		total += pt.BucketCounts[i]
	}
	if total == 0 {
		return pt, false
	}
	pt.Count, pt.Sum = total, pt.Sum-prev.sum
	pt.Min, pt.Max = metricdata.Extrema[int64]{}, metricdata.Extrema[int64]{}
	return pt, true
}

// point is the histogram's data point; false when nothing was observed.
func (h *histogram) point(set attribute.Set, start, now time.Time) (metricdata.HistogramDataPoint[int64], bool) {
	n := h.count.Load()
	if n == 0 {
		return metricdata.HistogramDataPoint[int64]{}, false
	}
	counts := make([]uint64, len(h.counts))
	var total uint64
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	// Buckets and count are read one after the other while sends go on:
	// report the buckets' total so that the point is consistent.
	return metricdata.HistogramDataPoint[int64]{
		Attributes:   set,
		StartTime:    start,
		Time:         now,
		Count:        total,
		Bounds:       h.bounds,
		BucketCounts: counts,
		Min:          metricdata.NewExtrema(h.min.Load()),
		Max:          metricdata.NewExtrema(h.max.Load()),
		Sum:          h.sum.Load(),
	}, true
}

// requestCodeDesc is Java's RemotingHelper.getRequestCodeDesc: the request
// code's field name in lower case, or the number.
func requestCodeDesc(c int32) string {
	name := code.RequestName(c)
	if strings.HasPrefix(name, "REQUEST(") {
		return strconv.Itoa(int(c))
	}
	return strings.ToLower(name)
}

// responseCodeDesc is Java's RemotingHelper.getResponseCodeDesc.
func responseCodeDesc(c int32) string {
	name := code.ResponseName(c)
	if strings.HasPrefix(name, "CODE(") {
		return strconv.Itoa(int(c))
	}
	return strings.ToLower(name)
}

// isSystemTopic is Java's TopicValidator.isSystemTopic.
func isSystemTopic(topic string) bool { return topic != "" && protocol.IsSystemTopic(topic) }

// isSystemGroup is Java's BrokerMetricsManager.isSystemGroup (CID_RMQ_SYS_
// in any case).
func isSystemGroup(group string) bool {
	return len(group) >= len(systemGroupPrefixLow) && strings.EqualFold(group[:len(systemGroupPrefixLow)], systemGroupPrefixLow)
}

// isRetryOrDLQ is Java's BrokerMetricsManager.isRetryOrDlqTopic.
func isRetryOrDLQ(topic string) bool {
	return strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(topic, protocol.DLQGroupTopicPrefix)
}

// parentOfLmq maps a lite LMQ name "%LMQ%$parent$lite" to its parent and
// any other LMQ name to "%LMQ%", so that a million lite topics stay one
// series per parent (docs/lite-topics.md).
func parentOfLmq(topic string) string {
	const lmq, lite = "%LMQ%", "%LMQ%$"
	if !strings.HasPrefix(topic, lmq) {
		return topic
	}
	if strings.HasPrefix(topic, lite) {
		if parent, _, ok := strings.Cut(topic[len(lite):], "$"); ok && parent != "" {
			return parent
		}
	}
	return lmq
}
