package schedule

import (
	"encoding/binary"
	"fmt"
	"maps"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/pkg/message"
)

// Timing counts: per real topic, the timer messages (rmq_sys_wheel_timer,
// cancellation markers excluded) whose key is pending in the index: Java's
// TimerMetrics timingCount, which GET_TIMER_METRICS answers and
// rocketmq_timing_messages exports. Each count is written, as an absolute
// value, in the Pebble batch that adds or deletes the keys it counts, so
// after a crash the counts agree with the keys that survived; re-indexing
// and the marker scan then adjust both together. A store written before
// the counts existed has none: Open counts its pending keys once.

// Timing is one real topic's timing count and when it last changed.
type Timing struct {
	Count       int64
	UpdatedAtMs int64
}

func timingKey(topic string) []byte {
	k := make([]byte, 0, 2+len(topic))
	k = append(k, kv.PrefixTimer, subTiming)
	return append(k, topic...)
}

func timingInitKey() []byte { return []byte{kv.PrefixTimer, subTimingInit} }

func encodeTiming(t Timing) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(t.Count))
	return binary.BigEndian.AppendUint64(b, uint64(t.UpdatedAtMs))
}

// TimingCounts returns the timing count of every real topic that had a
// timer message (zero counts included, as Java keeps them) and a version
// that changes whenever a count does (0 until the first change of this
// run).
//
// A delivered message stops counting at once; its count is written with
// its key deletion, once the CommitLog flush passed the delivered copy.
func (s *Service) TimingCounts() (map[string]Timing, int64) {
	s.timingMu.Lock()
	defer s.timingMu.Unlock()
	out := maps.Clone(s.timing)
	for topic, d := range s.timingDelivered {
		t := out[topic]
		t.Count += d
		t.UpdatedAtMs = max(t.UpdatedAtMs, s.timingDeliveredAt)
		out[topic] = t
	}
	return out, s.timingVersion
}

// roundTiming counts the timing changes of a delivery round whose key
// deletions wait for the flush (undelivered: they were committed).
func (s *Service) roundTiming(deltas map[string]int64, sign int64) {
	if len(deltas) == 0 {
		return
	}
	s.timingMu.Lock()
	defer s.timingMu.Unlock()
	if s.timingDelivered == nil {
		s.timingDelivered = map[string]int64{}
	}
	for topic, d := range deltas {
		if s.timingDelivered[topic] += sign * d; s.timingDelivered[topic] == 0 {
			delete(s.timingDelivered, topic)
		}
	}
	if sign > 0 {
		s.timingDeliveredAt = s.now().UnixMilli()
		s.timingVersion++
	}
}

// loadTiming reads the persisted counts, or counts the pending keys when
// the store has none yet (written by a version without them).
func (s *Service) loadTiming() error {
	s.timing = map[string]Timing{}
	_, inited, err := s.getInt(timingInitKey())
	if err != nil {
		return err
	}
	if !inited {
		return s.rebuildTiming()
	}
	lo := []byte{kv.PrefixTimer, subTiming}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: kv.PrefixEnd(lo)})
	if err != nil {
		return fmt.Errorf("schedule: load timing counts: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v := it.Value()
		if len(v) != 16 {
			continue
		}
		s.timing[string(it.Key()[2:])] = Timing{Count: int64(binary.BigEndian.Uint64(v)), UpdatedAtMs: int64(binary.BigEndian.Uint64(v[8:]))}
	}
	return it.Error()
}

// rebuildTiming counts the pending keys' timer messages by REAL_TOPIC and
// persists the counts.
func (s *Service) rebuildTiming() error {
	counts := map[string]int64{}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: pendingPrefix(), UpperBound: kv.PrefixEnd(pendingPrefix())})
	if err != nil {
		return fmt.Errorf("schedule: count timing messages: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		_, phy, okk := parseTimerKey(it.Key())
		if !okk {
			continue
		}
		if topic, timer := s.timerTopicAt(phy); timer {
			counts[topic]++
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("schedule: count timing messages: %w", err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	vals, err := s.applyTiming(b, counts)
	if err != nil {
		return err
	}
	if err := b.Set(timingInitKey(), u64(1), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("schedule: commit timing counts: %w", err)
	}
	s.commitTiming(vals)
	return nil
}

// timerTopicAt reads the record at phy: timer reports a timer-topic
// message that is not a cancellation marker, of REAL_TOPIC topic.
func (s *Service) timerTopicAt(phy int64) (topic string, timer bool) {
	rec, err := s.cl.ReadRecord(phy)
	if err != nil {
		return "", false
	}
	defer rec.Release()
	if string(rec.View.Topic()) != TimerTopic {
		return "", false
	}
	props := rec.View.Properties()
	if _, marker := message.PropertyValue(props, message.PropertyTimerDelUniqKey); marker {
		return "", false
	}
	topic, _ = message.PropertyValue(props, message.PropertyRealTopic)
	return topic, true
}

// applyTiming writes the counts changed by deltas into b and returns
// them, for commitTiming once b committed.
func (s *Service) applyTiming(b *pebble.Batch, deltas map[string]int64) (map[string]Timing, error) {
	now := s.now().UnixMilli()
	s.timingMu.Lock()
	defer s.timingMu.Unlock()
	vals := make(map[string]Timing, len(deltas))
	for topic, d := range deltas {
		if d == 0 {
			continue
		}
		t := s.timing[topic]
		t.Count += d
		t.UpdatedAtMs = now
		if err := b.Set(timingKey(topic), encodeTiming(t), nil); err != nil {
			return nil, err
		}
		vals[topic] = t
	}
	return vals, nil
}

// commitTiming takes the counts of a committed batch.
func (s *Service) commitTiming(vals map[string]Timing) {
	s.timingMu.Lock()
	defer s.timingMu.Unlock()
	maps.Copy(s.timing, vals)
	if len(vals) > 0 {
		s.timingVersion++
	}
}
