package protocol

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// DelayOffsets is the GET_ALL_DELAY_OFFSET (45) body (Java's
// DelayOffsetSerializeWrapper, as ScheduleMessageService.encode writes it
// and an Apache slave stores it as config/delayOffset.json): per delay
// level (1-based) the consume-queue offset of SCHEDULE_TOPIC_XXXX queue
// level−1 from which the delivery continues.
type DelayOffsets struct {
	DataVersion DataVersion     `json:"dataVersion"`
	OffsetTable map[int32]int64 `json:"offsetTable"`
}

// Encode writes d as fastjson does: fields in name order, the levels as
// bare numeric keys ({"dataVersion":{…},"offsetTable":{1:5,2:0}}).
func (d DelayOffsets) Encode() []byte {
	b := make([]byte, 0, 96+len(d.OffsetTable)*16)
	b = append(b, `{"dataVersion":`...)
	b = append(b, MustMarshal(d.DataVersion)...)
	b = append(b, `,"offsetTable":{`...)
	for i, lvl := range slices.Sorted(maps.Keys(d.OffsetTable)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(lvl), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, d.OffsetTable[lvl], 10)
	}
	return append(b, "}}"...)
}

// DecodeDelayOffsets parses a GET_ALL_DELAY_OFFSET body (or an Apache
// delayOffset.json).
func DecodeDelayOffsets(body []byte) (DelayOffsets, error) {
	var d DelayOffsets
	if err := Unmarshal(body, &d); err != nil {
		return DelayOffsets{}, fmt.Errorf("delay offsets: %w", err)
	}
	return d, nil
}

// TimerCheckpoint is the GET_TIMER_CHECK_POINT (60) body, Java's
// TimerCheckpoint.encode: seven big-endian longs (56 bytes).
type TimerCheckpoint struct {
	// LastReadTimeMs: the timer messages due before it were delivered.
	LastReadTimeMs int64
	// LastTimerLogFlushPos is the flushed end of Java's timer log.
	LastTimerLogFlushPos int64
	// LastTimerQueueOffset and MasterTimerQueueOffset: the entries of
	// rmq_sys_wheel_timer queue 0 below them were taken into the timer.
	LastTimerQueueOffset   int64
	MasterTimerQueueOffset int64
	DataVersion            DataVersion
}

// TimerCheckpointSize is the encoded size (Java writes the data version
// since 5.x; decode accepts the older 32 bytes without it).
const TimerCheckpointSize = 56

// Encode writes c in Java's layout.
func (c TimerCheckpoint) Encode() []byte {
	b := make([]byte, 0, TimerCheckpointSize)
	for _, v := range []int64{c.LastReadTimeMs, c.LastTimerLogFlushPos, c.LastTimerQueueOffset, c.MasterTimerQueueOffset,
		c.DataVersion.StateVersion, c.DataVersion.Timestamp, c.DataVersion.Counter} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// DecodeTimerCheckpoint parses Java's layout: 32 bytes, or 56 with the
// data version (TimerCheckpoint.decode; trailing bytes are ignored).
func DecodeTimerCheckpoint(b []byte) (TimerCheckpoint, error) {
	if len(b) < 32 {
		return TimerCheckpoint{}, fmt.Errorf("timer checkpoint: %d bytes, want 32 or %d", len(b), TimerCheckpointSize)
	}
	at := func(i int) int64 { return int64(binary.BigEndian.Uint64(b[i*8:])) }
	c := TimerCheckpoint{LastReadTimeMs: at(0), LastTimerLogFlushPos: at(1), LastTimerQueueOffset: at(2), MasterTimerQueueOffset: at(3)}
	if len(b) >= TimerCheckpointSize {
		c.DataVersion = DataVersion{StateVersion: at(4), Timestamp: at(5), Counter: at(6)}
	} else if len(b) > 32 {
		return TimerCheckpoint{}, fmt.Errorf("timer checkpoint: %d bytes, want 32 or %d", len(b), TimerCheckpointSize)
	}
	return c, nil
}

// TimerMetric is one topic's entry of the timer metrics (Java's
// TimerMetrics.Metric): the timer messages of the topic waiting in the
// timer, and when that count last changed.
type TimerMetric struct {
	Count     int64 `json:"count"`
	TimeStamp int64 `json:"timeStamp"`
}

// TimerMetrics is the GET_TIMER_METRICS (61) body (Java's
// TimerMetricsSerializeWrapper; an Apache broker persists it as
// config/timermetrics).
type TimerMetrics struct {
	DataVersion DataVersion            `json:"dataVersion"`
	TimingCount map[string]TimerMetric `json:"timingCount"`
}

// Encode writes m as fastjson does (fields and topics in name order).
func (m TimerMetrics) Encode() []byte {
	if m.TimingCount == nil {
		m.TimingCount = map[string]TimerMetric{}
	}
	return MustMarshal(m)
}

// DecodeTimerMetrics parses a GET_TIMER_METRICS body.
func DecodeTimerMetrics(body []byte) (TimerMetrics, error) {
	var m TimerMetrics
	if err := Unmarshal(body, &m); err != nil {
		return TimerMetrics{}, fmt.Errorf("timer metrics: %w", err)
	}
	return m, nil
}
