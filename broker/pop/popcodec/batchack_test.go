package popcodec

import (
	"errors"
	"slices"
	"testing"
)

func TestDecodeBatchAckBody(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []BatchAck
		offsets [][]int64
		err     bool
	}{
		{name: "short names",
			body:    `{"acks":[{"b":"BQ==","c":"g","it":60000,"pt":1700000000000,"q":1,"r":"0","rq":3,"so":100,"t":"T"}],"brokerName":"broker-a"}`,
			want:    []BatchAck{{ConsumerGroup: "g", Topic: "T", Retry: "0", StartOffset: 100, QueueID: 1, ReviveQueueID: 3, PopTime: 1700000000000, InvisibleTime: 60000, Bits: []byte{5}}},
			offsets: [][]int64{{100, 102}}},
		{name: "long names, numeric strings, byte array",
			body:    `{"brokerName":"b","acks":[{"consumerGroup":"g","topic":"T","retry":1,"startOffset":"7","queueId":"0","reviveQueueId":0,"popTime":"5","invisibleTime":9,"bitSet":[0,1]}]}`,
			want:    []BatchAck{{ConsumerGroup: "g", Topic: "T", Retry: "1", StartOffset: 7, PopTime: 5, InvisibleTime: 9, Bits: []byte{0, 1}}},
			offsets: [][]int64{{15}}},
		{name: "lite", body: `{"acks":[{"c":"g","t":"T","lt":"l1","b":"AQ=="}]}`,
			want: []BatchAck{{ConsumerGroup: "g", Topic: "T", Retry: "0", LiteTopic: "l1", Bits: []byte{1}}}, offsets: [][]int64{{0}}},
		{name: "no retry flag", body: `{"acks":[{"c":"g","t":"T"}]}`, want: []BatchAck{{ConsumerGroup: "g", Topic: "T", Retry: "0"}}, offsets: [][]int64{nil}},
		{name: "empty", body: `{}`},
		{name: "not json", body: `{"acks":`, err: true},
		{name: "acks not a list", body: `{"acks":{}}`, err: true},
		{name: "number overflow", body: `{"acks":[{"q":99999999999}]}`, err: true},
		{name: "bad base64", body: `{"acks":[{"b":"%%%"}]}`, err: true},
		{name: "byte out of range", body: `{"acks":[{"b":[300]}]}`, err: true},
		{name: "bit set of objects", body: `{"acks":[{"b":{}}]}`, err: true},
		{name: "group not a string", body: `{"acks":[{"c":{}}]}`, err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeBatchAckBody([]byte(tc.body))
			if tc.err {
				if !errors.Is(err, ErrBatchAckBody) {
					t.Fatalf("err %v, want ErrBatchAckBody", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Acks) != len(tc.want) {
				t.Fatalf("%d acks, want %d", len(got.Acks), len(tc.want))
			}
			for i, a := range got.Acks {
				w := tc.want[i]
				if a.ConsumerGroup != w.ConsumerGroup || a.Topic != w.Topic || a.Retry != w.Retry || a.StartOffset != w.StartOffset ||
					a.QueueID != w.QueueID || a.ReviveQueueID != w.ReviveQueueID || a.PopTime != w.PopTime ||
					a.InvisibleTime != w.InvisibleTime || a.LiteTopic != w.LiteTopic || !slices.Equal(a.Bits, w.Bits) {
					t.Errorf("ack %d: %+v, want %+v", i, a, w)
				}
				if !slices.Equal(a.Offsets(), tc.offsets[i]) {
					t.Errorf("ack %d offsets %v, want %v", i, a.Offsets(), tc.offsets[i])
				}
			}
		})
	}
}

func TestBitSetRoundTrip(t *testing.T) {
	for _, offs := range [][]int64{nil, {100}, {100, 101, 131}, {107, 108, 115, 200}} {
		b := EncodeBitSet(100, offs)
		got := BatchAck{StartOffset: 100, Bits: b}.Offsets()
		if !slices.Equal(got, offs) {
			t.Errorf("%v → %x → %v", offs, b, got)
		}
	}
	if b := EncodeBitSet(100, []int64{5}); len(b) != 0 {
		t.Errorf("offset below start encoded: %x", b)
	}
}
