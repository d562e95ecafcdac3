package send

import (
	"maps"
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// plainUniq is a plain UNIQ_KEY entry.
const plainUniq = "UNIQ_KEY\x01C0A800010000000000000000000001\x02"

// plainCase is a properties string and whether it is plain (plainProps).
type plainCase struct {
	name  string
	props string
	plain bool
}

// plainCases are the properties strings both send paths are tested with.
func plainCases() []plainCase {
	const u = plainUniq
	return []plainCase{
		{"java", u + "WAIT\x01true\x02", true},
		{"keys and tags", "KEYS\x01a b\x02" + u + "TAGS\x01t1\x02WAIT\x01false\x02", true},
		{"uniq only", u, true},
		{"no uniq key", "WAIT\x01true\x02", false},
		{"empty", "", false},
		{"other key", u + "X\x01y\x02", false},
		{"transient", u + "__RMQ.TRANSIENT.A\x01y\x02", false},
		{"pop receipt", u + "POP_CK\x01y\x02", false},
		{"duplicate key", u + "TAGS\x01a\x02TAGS\x01b\x02", false},
		{"empty value", u + "TAGS\x01\x02", false},
		{"no separator", u + "TAGS\x02", false},
		{"value with 0x01", u + "TAGS\x01a\x01b\x02", false},
		{"no trailing separator", "WAIT\x01true\x02UNIQ_KEY\x01C0A8", false},
	}
}

// TestSendPlainProperties: a single send whose properties are only
// UNIQ_KEY, WAIT, KEYS and TAGS, well formed, is stored without a map (its
// entries, CLUSTER, MSG_REGION and TRACE_ON sorted); any other is decoded,
// stripped and completed. Both store the same bytes: the entries a decode of
// the string plus those three (and a UNIQ_KEY when none) gives, keys
// sorted, and answer alike.
func TestSendPlainProperties(t *testing.T) {
	for _, tc := range append(plainCases(),
		plainCase{"cluster from the client", plainUniq + "CLUSTER\x01other\x02", false},
		plainCase{"region and trace switch from the client", plainUniq + "MSG_REGION\x01r\x02TRACE_ON\x01false\x02", false},
	) {
		for _, v2 := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				if _, _, ok := scanPlain(tc.props); ok != tc.plain {
					t.Fatalf("scanPlain(%q) = %t, want %t", tc.props, ok, tc.plain)
				}
				f := newFixture(t)
				req := sendV1("TopicTest", 1, tc.props, "body")
				if v2 {
					req = sendV2("TopicTest", 1, tc.props, "body")
				}
				resp := f.call(t, req)
				wantCode(t, resp, code.Success)
				if raw := f.store.rawPuts == 1; raw != tc.plain {
					t.Fatalf("stored without a map: %t, want %t", raw, tc.plain)
				}
				m := f.store.last(t)
				want := wantItemProps([]byte(tc.props))
				want[message.PropertyCluster] = "C1"
				// The broker's own, whatever the client sent (Java's
				// buildMsgContext).
				want[message.PropertyMsgRegion] = "DefaultRegion"
				want[message.PropertyTraceSwitch] = "true"
				if want[message.PropertyUniqClientMessageIDKeyIdx] == "" {
					want[message.PropertyUniqClientMessageIDKeyIdx] = m.Properties[message.PropertyUniqClientMessageIDKeyIdx]
				}
				if !maps.Equal(m.Properties, want) || m.Properties[message.PropertyUniqClientMessageIDKeyIdx] == "" {
					t.Fatalf("stored properties %q, want %q", m.Properties, want)
				}
				// The same bytes as the map would store: keys sorted.
				v, err := message.ParseView(f.store.records[len(f.store.records)-1], message.ParseOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if sorted, err := message.AppendProperties(nil, want); err != nil || string(v.Properties()) != string(sorted) {
					t.Fatalf("stored properties string %q, want %q (%v)", v.Properties(), sorted, err)
				}
				if resp.Ext("msgId") == "" || resp.Ext("queueId") != "1" || resp.Ext("queueOffset") != "0" ||
					resp.Ext(message.PropertyMsgRegion) == "" || resp.Ext(message.PropertyTraceSwitch) == "" {
					t.Fatalf("response fields %v", resp.ExtFields)
				}
				if m.Topic != "TopicTest" || m.QueueID != 1 || string(m.Body) != "body" || m.BornTimestamp != 1700000000000 {
					t.Fatalf("stored %+v", m)
				}
			})
		}
	}
}

// The sends that take other rules never take the plain path: a
// compaction topic still requires KEYS, a retry topic's send its group.
func TestSendPlainExceptions(t *testing.T) {
	const u = plainUniq
	f := newFixture(t)
	wantCode(t, f.call(t, sendV2("Compact", 0, u, "b")), code.MessageIllegal)
	wantCode(t, f.call(t, sendV2("Compact", 0, u+"KEYS\x01k\x02", "b")), code.Success)
	wantCode(t, f.call(t, sendV2("%RETRY%unknown", 0, u, "b")), code.SubscriptionGroupNotExist)
	wantCode(t, f.call(t, sendV2("%RETRY%g1", 0, u, "b")), code.Success)
	if f.store.rawPuts != 0 {
		t.Fatalf("%d sends of these took the plain path", f.store.rawPuts)
	}
}
