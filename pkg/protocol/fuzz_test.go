package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzFastjsonKeys: bodies in fastjson's dialect (bare numeric keys, queue
// objects as keys) come from any client; the key rewriting never panics,
// leaves valid JSON alone, and a queue-keyed body that decodes survives a
// round trip through Java's format.
func FuzzFastjsonKeys(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":1}},"consumeTps":1.5}`))
	f.Add([]byte(`{"currIdMap":{0:0,3:1},"s":"{1:2}"}`))
	f.Add([]byte(`{"a":"\"{0:1}\\","b":[{-1:2}]}`))
	f.Add([]byte(`{{"k":{"n":1}}:{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		valid := json.Valid(data)
		if fixed, changed := QuoteBareKeys(data); valid && (changed || !bytes.Equal(fixed, data)) {
			t.Fatalf("QuoteBareKeys changed valid JSON %q into %q", data, fixed)
		}
		if fixed, changed := QuoteObjectKeys(data); valid && (changed || !bytes.Equal(fixed, data)) {
			t.Fatalf("QuoteObjectKeys changed valid JSON %q into %q", data, fixed)
		}
		UnquoteObjectKeys(data)
		var cs ConsumeStats
		if UnmarshalMQKeyed(data, &cs) != nil {
			return
		}
		java, err := MarshalMQKeyed(cs)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", cs, err)
		}
		var again ConsumeStats
		if err := UnmarshalMQKeyed(java, &again); err != nil {
			t.Fatalf("our own Java-format body %q does not decode: %v", java, err)
		}
		if java2, _ := MarshalMQKeyed(again); !bytes.Equal(java, java2) {
			t.Fatalf("round trip changed %q into %q", java, java2)
		}
	})
}
