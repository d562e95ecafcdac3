package protocol

import (
	"encoding/hex"
	"reflect"
	"testing"
)

// The golden bodies below are what Apache 5.5.0's classes write for the
// same values (DelayOffsetSerializeWrapper.toJson, TimerCheckpoint.encode,
// TimerMetricsSerializeWrapper.toJson from rocketmq-broker/-store 5.5.0).
var goldenDV = DataVersion{Counter: 7, StateVersion: 3, Timestamp: 1700000000123}

// checkGoldenBody checks that v encodes to want and that body decodes to v.
func checkGoldenBody[T any](t *testing.T, v T, encode func(T) []byte, want string, decode func([]byte) (T, error), body string) {
	t.Helper()
	if got := string(encode(v)); got != want {
		t.Fatalf("encode:\n got %s\nwant %s", got, want)
	}
	back, err := decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Fatalf("decode: %+v, want %+v", back, v)
	}
}

func TestDelayOffsetsGolden(t *testing.T) {
	const golden = `{"dataVersion":{"counter":7,"stateVersion":3,"timestamp":1700000000123},"offsetTable":{1:5,2:0,18:123456789012}}`
	d := DelayOffsets{DataVersion: goldenDV, OffsetTable: map[int32]int64{18: 123456789012, 2: 0, 1: 5}}
	checkGoldenBody(t, d, DelayOffsets.Encode, golden, DecodeDelayOffsets, golden)
	empty := DelayOffsets{DataVersion: goldenDV}
	if got, want := string(empty.Encode()), `{"dataVersion":{"counter":7,"stateVersion":3,"timestamp":1700000000123},"offsetTable":{}}`; got != want {
		t.Fatalf("empty: %s", got)
	}
}

func TestTimerCheckpointGolden(t *testing.T) {
	const golden = "0000018bcfe56be8" + "0000000000000000" + "000000000000002a" + "000000000000002a" +
		"0000000000000003" + "0000018bcfe5687b" + "0000000000000007"
	c := TimerCheckpoint{LastReadTimeMs: 1700000001000, LastTimerQueueOffset: 42, MasterTimerQueueOffset: 42, DataVersion: goldenDV}
	if got := hex.EncodeToString(c.Encode()); got != golden {
		t.Fatalf("encode:\n got %s\nwant %s", got, golden)
	}
	raw, _ := hex.DecodeString(golden)
	for _, tc := range []struct {
		name string
		in   []byte
		want TimerCheckpoint
		err  bool
	}{
		{"full", raw, c, false},
		{"without data version", raw[:32], TimerCheckpoint{LastReadTimeMs: 1700000001000, LastTimerQueueOffset: 42, MasterTimerQueueOffset: 42}, false},
		{"trailing bytes", append(append([]byte{}, raw...), 0, 0), c, false},
		{"short", raw[:31], TimerCheckpoint{}, true},
		{"torn data version", raw[:40], TimerCheckpoint{}, true},
	} {
		got, err := DecodeTimerCheckpoint(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestTimerMetricsGolden(t *testing.T) {
	// Java writes the topics in its hash map's order; ours sorts them.
	const java = `{"dataVersion":{"counter":7,"stateVersion":3,"timestamp":1700000000123},"timingCount":{"TopicB":{"count":3,"timeStamp":1700000000999},"TopicA":{"count":0,"timeStamp":1700000000500}}}`
	const ours = `{"dataVersion":{"counter":7,"stateVersion":3,"timestamp":1700000000123},"timingCount":{"TopicA":{"count":0,"timeStamp":1700000000500},"TopicB":{"count":3,"timeStamp":1700000000999}}}`
	m := TimerMetrics{DataVersion: goldenDV, TimingCount: map[string]TimerMetric{
		"TopicB": {Count: 3, TimeStamp: 1700000000999}, "TopicA": {Count: 0, TimeStamp: 1700000000500}}}
	checkGoldenBody(t, m, TimerMetrics.Encode, ours, DecodeTimerMetrics, java)
	if got := string(TimerMetrics{}.Encode()); got != `{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"timingCount":{}}` {
		t.Fatalf("empty: %s", got)
	}
}

// FuzzTimerBodies: the three bodies an Apache or rmq master answers a
// slave with never panic their decoders, and what decodes re-encodes to a
// body that decodes to the same value.
func FuzzTimerBodies(f *testing.F) {
	f.Add([]byte(`{"dataVersion":{"counter":7,"stateVersion":3,"timestamp":1},"offsetTable":{1:5,2:0}}`))
	f.Add([]byte(`{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":2},"timingCount":{"T":{"count":3,"timeStamp":4}}}`))
	f.Add(make([]byte, TimerCheckpointSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		if d, err := DecodeDelayOffsets(data); err == nil {
			again, err := DecodeDelayOffsets(d.Encode())
			if err != nil || !reflect.DeepEqual(normDelay(again), normDelay(d)) {
				t.Fatalf("delay offsets %+v re-encoded to %s: %+v %v", d, d.Encode(), again, err)
			}
		}
		if m, err := DecodeTimerMetrics(data); err == nil {
			again, err := DecodeTimerMetrics(m.Encode())
			if err != nil || len(again.TimingCount) != len(m.TimingCount) || again.DataVersion != m.DataVersion {
				t.Fatalf("timer metrics %+v re-encoded to %s: %+v %v", m, m.Encode(), again, err)
			}
		}
		if c, err := DecodeTimerCheckpoint(data); err == nil {
			if again, err := DecodeTimerCheckpoint(c.Encode()); err != nil || again != c && len(data) >= TimerCheckpointSize {
				t.Fatalf("checkpoint %+v: %+v %v", c, again, err)
			}
		}
	})
}

func normDelay(d DelayOffsets) DelayOffsets {
	if d.OffsetTable == nil {
		d.OffsetTable = map[int32]int64{}
	}
	return d
}
