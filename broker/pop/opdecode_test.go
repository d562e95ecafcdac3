package pop

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func opSeeds() []*op {
	id := ckID{Group: "g1", Topic: "%RETRY%g1_T", QueueID: 3, Start: 120, PopTime: 1_700_000_000_123}
	id2 := ckID{Group: "g<2>", Topic: "T", QueueID: -1, Start: 0, PopTime: 7}
	return []*op{
		{Kind: opAck, ID: &id, Offsets: []int64{120, 121}},
		{Kind: opAck, ID: &id},
		{Kind: opAck, ID: &id2, Offsets: []int64{}},
		{Kind: opAcks, Acks: []ackEntry{{ID: id, Offsets: []int64{1}}, {ID: id2, Offsets: nil}}},
		{Kind: opAcks},
		{Kind: opCheckpoint, Seq: 5, CK: &checkpoint{ckID: id, ReviveQid: 1, InvisibleTime: 5000, Due: 9, Offsets: []int64{120, 121}}, Next: 122},
		{Kind: opRevive, ID: &id, Offsets: []int64{120}},
	}
}

// TestDecodeOpRoundTrip: what encodeOp writes decodeOp reads back, by
// either path.
func TestDecodeOpRoundTrip(t *testing.T) {
	for _, o := range opSeeds() {
		b, err := encodeOp(o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeOp(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		var want op
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("%s:\n got %+v\nwant %+v", b, got, &want)
		}
		// Escaped names (g<2>) take encoding/json's path.
		if _, fast := decodeAckOp(b); fast != ((o.Kind == opAck || o.Kind == opAcks) && !bytes.ContainsRune(b, '\\')) {
			t.Errorf("%s: fast path taken: %v", b, fast)
		}
	}
}

// FuzzDecodeOp: whatever the hand-written ack decoder accepts,
// encoding/json reads alike.
func FuzzDecodeOp(f *testing.F) {
	for _, o := range opSeeds() {
		b, _ := encodeOp(o)
		f.Add(b)
	}
	f.Add([]byte(`{"k":"ack","id":{"c":"g","t":"t","q":01,"so":1,"pt":2}}`))
	f.Add([]byte(`{"k":"acks","a":[{"id":{"c":"g","t":"t","q":2147483648,"so":1,"pt":2},"o":[1e2]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeAckOp(b)
		var want op
		err := json.Unmarshal(b, &want)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(fast, &want) {
			t.Fatalf("%q:\nfast %+v\njson %+v", b, fast, &want)
		}
	})
}
