package metrics

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rmqgo/rmq/pkg/protocol"
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
	latency  *histogram // seconds from birth to the delivery time
}

func (m *Metrics) timerTopic(topic string) *timerStats {
	if m == nil || !m.cfg.EnableStoreMetrics {
		return nil
	}
	return m.timer.get(topic, func() *timerStats {
		return &timerStats{attrs: m.timerAttrs(topic), latency: newHistogram(delayLatencyBounds)}
	})
}

// timerAttrs are the labels of a real topic's timer series (Java's
// DefaultStoreMetricsManager).
func (m *Metrics) timerAttrs(topic string) attribute.Set {
	return m.attrs(attribute.String(labelStorageType, storageTypeLocal),
		attribute.String(labelStorageMedium, storageMediumDisk), attribute.String(labelTopic, topic))
}

// TimerEnqueued counts a timer message of realTopic taken into the timer
// index (rocketmq_timer_enqueue_total; Java's putMessageToTimerWheel). A
// cancellation marker (TIMER_DEL_UNIQKEY) counts as an enqueue only; a
// timer also records the seconds from its birth to its delivery time
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
	s.latency.observe(max(deliverMs-bornMs, 0) / 1000)
}

// TimerDequeued counts a timer message of realTopic taken out of the timer
// index when due: delivered, re-parked (rolled) or dropped as cancelled
// (rocketmq_timer_dequeue_total; Java's dequeue put).
func (m *Metrics) TimerDequeued(realTopic string, _ bool) {
	s := m.timerTopic(realTopic)
	if s == nil {
		return
	}
	s.dequeued.Add(1)
}

// DelayDelivered counts msgs delay-level messages delivered to realTopic
// as Java's ScheduleMessageService does once their put succeeded: in under
// realTopic (message_type delay) and out of SCHEDULE_TOPIC_XXXX to its
// SCHEDULE_CONSUMER group. Their send counted them in under
// SCHEDULE_TOPIC_XXXX.
func (m *Metrics) DelayDelivered(realTopic string, msgs int, bytes int64) {
	if m == nil {
		return
	}
	m.MessagesIn(realTopic, Delay, msgs, bytes)
	m.MessagesOut(protocol.ScheduleTopic, scheduleConsumerGroup, msgs, bytes)
}

// scheduleConsumerGroup is the group the delay-level delivery consumes
// SCHEDULE_TOPIC_XXXX as (MixAll.SCHEDULE_CONSUMER_GROUP).
const scheduleConsumerGroup = "SCHEDULE_CONSUMER"

// timerCounters registers the timer event counters and the timing gauge; a
// topic's event series appear once one of its timers was enqueued, its
// timing series once the timer service counted one (Sources.Timing, kept
// across restarts as Java's timerMetrics.json is).
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
		})
		if m.src.Timing != nil {
			for topic, n := range m.src.Timing() {
				o.ObserveInt64(timing, max(n, 0), metric.WithAttributeSet(m.timerAttrs(topic)))
			}
		}
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
		pts = d.appendPoint(pts, s.latency, s.attrs)
	})
	return pts
}
