package slavesync

import (
	"context"
	"maps"
	"testing"

	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

type offsetMap map[offset.Key]int64

func (m offsetMap) Range(f func(offset.Key, int64) bool) {
	for k, v := range m {
		if !f(k, v) {
			return
		}
	}
}

func (m offsetMap) Version() (int64, int64) { return 3, 1700000000000 }

func TestEncodeOffsetsIsFastjsonAndRoundTrips(t *testing.T) {
	table := offsetMap{
		{Group: "g1", Topic: "T", QueueID: 1}:              7,
		{Group: "g1", Topic: "T", QueueID: 0}:              5,
		{Group: "g1", Topic: "%LMQ%$P$lite", QueueID: 0}:   9,
		{Group: "%LMQ%g2", Topic: "%LMQ%mqtt", QueueID: 0}: 4,
		{Group: "g3", Topic: "%RETRY%g3", QueueID: 0}:      1,
	}
	body := EncodeOffsets(table)
	want := `{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"offsetTable":{` +
		`"%LMQ%$P$lite@g1":{0:9},"%LMQ%mqtt@%LMQ%g2":{0:4},"%RETRY%g3@g3":{0:1},"T@g1":{0:5,1:7}}}`
	if string(body) != want {
		t.Fatalf("body\n %s\nwant\n %s", body, want)
	}
	got, err := DecodeOffsets(body)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Table, map[offset.Key]int64(table)) {
		t.Fatalf("round trip: %v", got.Table)
	}
	if got.DataVersion != (protocol.DataVersion{Counter: 3, Timestamp: 1700000000000}) {
		t.Fatalf("data version %+v", got.DataVersion)
	}
}

func TestDecodeOffsetsSkipsKeysWithoutSeparator(t *testing.T) {
	got, err := DecodeOffsets([]byte(`{"offsetTable":{"bad":{0:1},"T@g":{"2":3}},"lmqOffsetTable":{"nosep":5}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Table) != 1 || got.Table[offset.Key{Group: "g", Topic: "T", QueueID: 2}] != 3 {
		t.Fatalf("table %v", got.Table)
	}
	if _, err := DecodeOffsets([]byte(`{"offsetTable":[]}`)); err == nil {
		t.Fatal("a malformed body decoded")
	}
}

func TestOffsetsHandler(t *testing.T) {
	h := OffsetsHandler(offsetMap{{Group: "g", Topic: "T", QueueID: 0}: 1})
	resp, err := h(context.Background(), nil, remoting.NewRequest(code.GetAllConsumerOffset, nil, nil))
	if err != nil || resp.Code != code.Success {
		t.Fatalf("resp %+v, %v", resp, err)
	}
	if got, err := DecodeOffsets(resp.Body); err != nil || got.Table[offset.Key{Group: "g", Topic: "T"}] != 1 {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
}
