package metrics

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Timer wheel event families (Apache's DefaultStoreMetricsManager, fed by
// TimerMessageStore): the timer service (broker/schedule) reports each
// timer message it takes into its index and each one it takes out, by real
// topic. They follow the timer service, not the send path.

// timerStats is one real topic's timer counters.
type timerStats struct {
	attrs    attribute.Set
	enqueued atomic.Int64
	dequeued atomic.Int64
	timing   atomic.Int64 // parked now: enqueued minus dequeued timers (markers excluded)
	latency  *histogram   // seconds from birth to the delivery time
}

func (m *Metrics) timerTopic(topic string) *timerStats {
	if m == nil || !m.cfg.EnableStoreMetrics {
		return nil
	}
	return m.timer.get(topic, func() *timerStats {
		return &timerStats{
			attrs: m.attrs(attribute.String(labelStorageType, storageTypeLocal),
				attribute.String(labelStorageMedium, storageMediumDisk), attribute.String(labelTopic, topic)),
			latency: newHistogram(delayLatencyBounds),
		}
	})
}

// TimerEnqueued counts a timer message of realTopic taken into the timer
// index (rocketmq_timer_enqueue_total; Java's putMessageToTimerWheel). A
// cancellation marker (TIMER_DEL_UNIQKEY) counts as an enqueue only; a
// timer also counts as timing (rocketmq_timing_messages) and records the
// seconds from its birth to its delivery time
// (rocketmq_delay_message_latency_seconds).
func (m *Metrics) TimerEnqueued(realTopic string, marker bool, bornMs, deliverMs int64) {
	s := m.timerTopic(realTopic)
	if s == nil {
		return
	}
	s.enqueued.Add(1)
	if marker {
		return
	}
	s.timing.Add(1)
	s.latency.observe(max(deliverMs-bornMs, 0) / 1000)
}

// TimerDequeued counts a timer message of realTopic taken out of the timer
// index when due: delivered, re-parked (rolled) or dropped as cancelled
// (rocketmq_timer_dequeue_total; Java's dequeue put).
func (m *Metrics) TimerDequeued(realTopic string, marker bool) {
	s := m.timerTopic(realTopic)
	if s == nil {
		return
	}
	s.dequeued.Add(1)
	if !marker {
		s.timing.Add(-1)
	}
}

// timerCounters registers the timer event counters and the timing gauge; a
// topic's series appear once one of its timers was enqueued.
func (m *Metrics) timerCounters(meter metric.Meter, errs *[]error) {
	if !m.cfg.EnableStoreMetrics {
		return
	}
	enq, err1 := meter.Int64ObservableCounter(counterTimerEnqueue, metric.WithDescription("Total number of timer enqueue"))
	deq, err2 := meter.Int64ObservableCounter(counterTimerDequeue, metric.WithDescription("Total number of timer dequeue"))
	timing, err3 := meter.Int64ObservableGauge(gaugeTimingMessages, metric.WithDescription("Current message number in timing"))
	if err := errors.Join(err1, err2, err3); err != nil {
		*errs = append(*errs, err)
		return
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.timer.each(func(_ string, s *timerStats) {
			a := metric.WithAttributeSet(s.attrs)
			o.ObserveInt64(enq, s.enqueued.Load(), a)
			if n := s.dequeued.Load(); n > 0 {
				o.ObserveInt64(deq, n, a)
			}
			// Timers parked before a restart are not counted: a
			// delivery after it may take the count below zero.
			o.ObserveInt64(timing, max(s.timing.Load(), 0), a)
		})
		return nil
	}, enq, deq, timing)
	if err != nil {
		*errs = append(*errs, err)
	}
}

// timerLatencyPoints are the delay latency histogram's points.
func (m *Metrics) timerLatencyPoints(d collection) []metricdata.HistogramDataPoint[int64] {
	var pts []metricdata.HistogramDataPoint[int64]
	m.timer.each(func(_ string, s *timerStats) {
		if pt, ok := d.point(s.latency, s.attrs); ok {
			pts = append(pts, pt)
		}
	})
	return pts
}
