package pop

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodeOp writes exactly what encoding/json writes, for the ack ops it
// encodes by hand and for the others it hands over.
func TestEncodeOpMatchesEncodingJSON(t *testing.T) {
	id := ckID{Group: "pop_cg", Topic: "%RETRY%pop_cg_PopTopic", QueueID: 3, Start: 1 << 40, PopTime: 1_700_000_000_123}
	odd := ckID{Group: "g\"<&>\\\x01é", Topic: "t\u2028", QueueID: -1, Start: -5, PopTime: 0}
	ck := &checkpoint{ckID: id, ReviveQid: 2, InvisibleTime: 30_000, Due: 1_700_000_030_123, Offsets: []int64{1, 2}}
	for name, o := range map[string]*op{
		"ack":              {Kind: opAck, ID: &id, Offsets: []int64{5, 7}},
		"ack odd names":    {Kind: opAck, ID: &odd, Offsets: []int64{-1}},
		"ack no offsets":   {Kind: opAck, ID: &id},
		"acks":             {Kind: opAcks, Acks: []ackEntry{{ID: id, Offsets: []int64{1}}, {ID: odd, Offsets: []int64{2, 3}}}},
		"acks nil offsets": {Kind: opAcks, Acks: []ackEntry{{ID: id}}},
		"acks empty":       {Kind: opAcks},
		"ack with seq":     {Kind: opAck, ID: &id, Seq: 9},
		"checkpoint":       {Kind: opCheckpoint, Seq: 4, CK: ck, Next: 3},
		"change":           {Kind: opChange, ID: &id, Offsets: []int64{1}, CK: ck},
	} {
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeOp(o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		var back op
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
