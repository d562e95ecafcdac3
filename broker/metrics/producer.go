package metrics

import (
	"context"
	"strconv"
	"strings"
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
	var out []metricdata.Metrics
	hist := func(name, unit, desc string, pts []metricdata.HistogramDataPoint[int64]) {
		if len(pts) == 0 {
			return
		}
		out = append(out, metricdata.Metrics{Name: name, Unit: unit, Description: desc,
			Data: metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality, DataPoints: pts}})
	}
	if m.cfg.EnableRequestMetrics {
		var pts []metricdata.HistogramDataPoint[int64]
		add := func(s *inStats) {
			for t := range numMessageTypes {
				if pt, ok := s.size[t].point(s.attrs[t], m.start, now); ok {
					pts = append(pts, pt)
				}
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
			if pt, ok := h.point(set, m.start, now); ok {
				pts = append(pts, pt)
			}
		}
		hist(histTopicCreateTime, unitMillis, "The distribution of create topic time", pts)

		pts = nil
		for i, h := range m.groupCreate {
			status := invocationSuccess
			if i == 1 {
				status = invocationFailure
			}
			if pt, ok := h.point(m.attrs(attribute.String(labelInvocationStatus, status)), m.start, now); ok {
				pts = append(pts, pt)
			}
		}
		hist(histGroupCreateTime, unitMillis, "The distribution of create subscription time", pts)
	}
	if m.cfg.EnableTransactionMetrics {
		var pts []metricdata.HistogramDataPoint[int64]
		m.tx.each(func(_ string, s *txStats) {
			if pt, ok := s.finish.point(s.commitAttrs, m.start, now); ok {
				pts = append(pts, pt)
			}
		})
		hist(histFinishLatency, unitMs, "Transaction finish latency", pts)
	}
	if m.cfg.EnableRemotingMetrics {
		var pts []metricdata.HistogramDataPoint[int64]
		m.rpc.each(func(_ rpcKey, s *rpcStats) {
			if pt, ok := s.hist.point(s.attrs, m.start, now); ok {
				pts = append(pts, pt)
			}
		})
		hist(histRPCLatency, unitMillis, "Rpc latency", pts)
	}
	if m.cfg.EnablePopMetrics {
		if pt, ok := m.popScan.point(m.attrs(), m.start, now); ok {
			hist(histPopBufferScanTime, unitMillis, "Time consuming of pop buffer scan", []metricdata.HistogramDataPoint[int64]{pt})
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: meterName}, Metrics: out}}, nil
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
