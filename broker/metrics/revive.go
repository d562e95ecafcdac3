package metrics

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// reviveKey is one series of the pop revive counters (the fields a
// counter does not label stay zero).
type reviveKey struct {
	group, topic string
	queueID      int32
	ck           bool
	status       string
}

// reviveMessageType is Java's PopReviveMessageType name.
func reviveMessageType(ck bool) string {
	if ck {
		return "CK"
	}
	return "ACK"
}

func (m *Metrics) reviveCount(c *cowMap[reviveKey, counterStats], k reviveKey, mk func() attribute.Set) {
	if m == nil || !m.cfg.EnablePopMetrics {
		return
	}
	s := c.get(k, func() *counterStats { return &counterStats{attrs: mk()} })
	if s != nil {
		s.n.Add(1)
	}
}

// RevivePut counts a checkpoint (ck) or ack record written to the revive
// topic with Java's PutMessageStatus name (rocketmq_pop_revive_in_message_total).
func (m *Metrics) RevivePut(group, topic string, ck bool, status string) {
	k := reviveKey{group: group, topic: topic, ck: ck, status: status}
	m.reviveCount(&m.reviveIn, k, func() attribute.Set {
		return m.attrs(attribute.String(labelGroup, group), attribute.String(labelTopic, topic),
			attribute.String(labelReviveMessageType, reviveMessageType(ck)), attribute.String(labelPutStatus, status))
	})
}

// ReviveGot counts a checkpoint or ack taken up from revive queue queueID
// (rocketmq_pop_revive_out_message_total).
func (m *Metrics) ReviveGot(group, topic string, queueID int32, ck bool) {
	k := reviveKey{group: group, topic: topic, queueID: queueID, ck: ck}
	m.reviveCount(&m.reviveOut, k, func() attribute.Set {
		return m.attrs(attribute.String(labelGroup, group), attribute.String(labelTopic, topic),
			attribute.Int(labelQueueID, int(queueID)), attribute.String(labelReviveMessageType, reviveMessageType(ck)))
	})
}

// ReviveRetry counts an un-acked message stored again in its pop retry
// topic (rocketmq_pop_revive_retry_messages_total).
func (m *Metrics) ReviveRetry(group, topic, status string) {
	k := reviveKey{group: group, topic: topic, status: status}
	m.reviveCount(&m.reviveRetry, k, func() attribute.Set {
		return m.attrs(attribute.String(labelGroup, group), attribute.String(labelTopic, topic),
			attribute.String(labelPutStatus, status))
	})
}

// reviveCounters registers the three revive counters (Java's
// PopMetricsManager.initMetrics); a series appears once its event happened.
func (m *Metrics) reviveCounters(meter metric.Meter, errs *[]error) {
	in, err1 := meter.Int64ObservableCounter(counterPopReviveIn, metric.WithDescription("Total number of put message to revive topic"))
	out, err2 := meter.Int64ObservableCounter(counterPopReviveOut, metric.WithDescription("Total number of get message from revive topic"))
	retry, err3 := meter.Int64ObservableCounter(counterPopReviveRetry, metric.WithDescription("Total number of put message to pop retry topic"))
	if err := errors.Join(err1, err2, err3); err != nil {
		*errs = append(*errs, err)
		return
	}
	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, c := range []struct {
			inst metric.Int64ObservableCounter
			m    *cowMap[reviveKey, counterStats]
		}{{in, &m.reviveIn}, {out, &m.reviveOut}, {retry, &m.reviveRetry}} {
			c.m.each(func(_ reviveKey, s *counterStats) {
				o.ObserveInt64(c.inst, s.n.Load(), metric.WithAttributeSet(s.attrs))
			})
		}
		return nil
	}, in, out, retry)
	if err != nil {
		*errs = append(*errs, err)
	}
}
