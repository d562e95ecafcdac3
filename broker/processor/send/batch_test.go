package send

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// batchBody builds a SEND_BATCH_MESSAGE body; props[i] may be nil.
func batchBody(t testing.TB, n int, props func(i int) map[string]string) []byte {
	t.Helper()
	var b []byte
	for i := range n {
		var err error
		b, err = message.AppendBatchItem(b, int32(i), fmt.Appendf(nil, "body-%d", i), props(i))
		if err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// batchReq is a client-go style batch: V2 names, m=true, no UNIQ_KEY per item.
func batchReq(topicName string, queueID int, body []byte) *remoting.Command {
	ext := v2Ext(topicName, queueID, "")
	ext["m"] = "true"
	return request(code.SendBatchMessage, ext, body)
}

func TestBatch(t *testing.T) {
	f := newFixture(t)
	// Something already in the queue, so offsets do not start at 0.
	wantCode(t, f.call(t, sendV2("MultiTag", 1, basicProps, "first")), code.Success)

	const n = 5
	body := batchBody(t, n, func(i int) map[string]string {
		p := map[string]string{"TAGS": fmt.Sprint("t", i), "KEYS": fmt.Sprint("k", i), "__RMQ.TRANSIENT.X": "1"}
		if i == 3 {
			p["UNIQ_KEY"] = "JAVA-SET"
		}
		return p
	})
	req := batchReq("MultiTag", 1, body)
	req.ExtFields["i"] = props("UNIQ_KEY", "BATCH-ID", "CLUSTER", "x")
	resp := f.call(t, req)
	wantCode(t, resp, code.Success)

	all := f.store.stored(t)
	if len(all) != n+1 {
		t.Fatalf("stored %d messages, want %d", len(all), n+1)
	}
	msgs := all[1:]
	var ids []string
	uniq := map[string]bool{}
	for i, m := range msgs {
		ids = append(ids, message.OffsetMsgID(testStoreHost, m.CommitLogOffset))
		if m.Topic != "MultiTag" || m.QueueID != 1 || m.QueueOffset != int64(i+1) || m.Flag != int32(i) ||
			string(m.Body) != fmt.Sprint("body-", i) || m.Tags() != fmt.Sprint("t", i) || m.BornTimestamp != 1700000000000 {
			t.Errorf("item %d: %+v", i, m)
		}
		if m.SysFlag != message.FlagMultiTags {
			t.Errorf("item %d sysFlag %#x", i, m.SysFlag)
		}
		if _, ok := m.Properties["__RMQ.TRANSIENT.X"]; ok {
			t.Errorf("item %d keeps a transient property", i)
		}
		// Header properties are not merged into items (Java's batch encoder).
		if m.Property("CLUSTER") != "" {
			t.Errorf("item %d got header/broker properties: %v", i, m.Properties)
		}
		u := m.UniqKey()
		if u == "" || uniq[u] {
			t.Errorf("item %d UNIQ_KEY %q (duplicate or missing)", i, u)
		}
		uniq[u] = true
	}
	if msgs[3].UniqKey() != "JAVA-SET" {
		t.Errorf("client UNIQ_KEY replaced: %q", msgs[3].UniqKey())
	}
	if got, want := resp.Ext("msgId"), strings.Join(ids, ","); got != want {
		t.Errorf("msgId %q, want %q", got, want)
	}
	if resp.Ext("queueOffset") != "1" || resp.Ext("queueId") != "1" || resp.Ext("transactionId") != "BATCH-ID" {
		t.Errorf("ext %v", resp.ExtFields)
	}
	if _, ok := resp.ExtFields["batchUniqId"]; ok {
		t.Error("batchUniqId must only be sent for inner-batch topics")
	}
	if f.store.calls != 2 {
		t.Errorf("store called %d times, want one PutMessages for the batch", f.store.calls)
	}
}

func TestBatchRandomQueueAndLongNames(t *testing.T) {
	f := newFixture(t)
	body := batchBody(t, 2, func(int) map[string]string { return nil })
	// SEND_MESSAGE with batch=true is a batch too (Java decides by the flag).
	req := request(code.SendMessage, with(sendV1("TopicTest", -1, "", ""), "batch", "true").ExtFields, body)
	wantCode(t, f.call(t, req), code.Success)
	msgs := f.store.stored(t)
	if len(msgs) != 2 || msgs[0].QueueID != 2 || msgs[1].QueueID != 2 {
		t.Fatalf("stored %d, queues %v", len(msgs), msgs)
	}
}

func TestBatchRejects(t *testing.T) {
	good := func(t *testing.T) []byte { return batchBody(t, 2, func(int) map[string]string { return nil }) }
	tests := []struct {
		name   string
		req    func(t *testing.T) *remoting.Command
		code   int32
		remark string
	}{
		{"retry topic", func(t *testing.T) *remoting.Command { return batchReq("%RETRY%g1", 0, good(t)) }, code.MessageIllegal, "retry"},
		{"transaction", func(t *testing.T) *remoting.Command { return with(batchReq("TopicTest", 0, good(t)), "f", "4") },
			code.MessageIllegal, "transaction"},
		{"header delay", func(t *testing.T) *remoting.Command {
			return with(batchReq("TopicTest", 0, good(t)), "i", props("DELAY", "2"))
		}, code.MessageIllegal, "delay"},
		{"item delay", func(t *testing.T) *remoting.Command {
			return batchReq("TopicTest", 0, batchBody(t, 2, func(i int) map[string]string {
				return map[string]string{"DELAY": fmt.Sprint(i + 1)}
			}))
		}, code.MessageIllegal, "item 0"},
		{"too large", func(t *testing.T) *remoting.Command {
			b, _ := message.AppendBatchItem(nil, 0, make([]byte, 4<<20), nil)
			return batchReq("TopicTest", 0, b)
		}, code.MessageIllegal, "maxMessageSize"},
		{"item properties too large", func(t *testing.T) *remoting.Command {
			return batchReq("TopicTest", 0, batchBody(t, 1, func(int) map[string]string {
				return map[string]string{"BIG": strings.Repeat("x", message.MaxPropertiesLength-40)}
			}))
		}, code.MessageIllegal, "properties"},
		{"empty body", func(t *testing.T) *remoting.Command { return batchReq("TopicTest", 0, nil) }, code.MessageIllegal, "no message"},
		{"bad lite name", func(t *testing.T) *remoting.Command {
			return batchReq("Lite", 0, batchBody(t, 1, func(int) map[string]string { return map[string]string{"__LITE_TOPIC": "a,b"} }))
		}, code.MessageIllegal, "__LITE_TOPIC"},
		{"queue out of range", func(t *testing.T) *remoting.Command { return batchReq("TopicTest", 4, good(t)) }, code.InvalidParameter, "queueId"},
		{"forbidden topic", func(t *testing.T) *remoting.Command { return batchReq("SCHEDULE_TOPIC_XXXX", 0, good(t)) }, code.NoPermission, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			resp := f.call(t, tt.req(t))
			wantCode(t, resp, tt.code)
			if tt.remark != "" && !strings.Contains(resp.Remark, tt.remark) {
				t.Errorf("remark %q does not mention %q", resp.Remark, tt.remark)
			}
			if n := len(f.store.stored(t)); n != 0 {
				t.Errorf("stored %d", n)
			}
		})
	}
}

func TestBatchLite(t *testing.T) {
	f := newFixture(t)
	body := batchBody(t, 2, func(i int) map[string]string { return map[string]string{"__LITE_TOPIC": fmt.Sprint("s", i)} })
	wantCode(t, f.call(t, batchReq("Lite", 0, body)), code.Success)
	for i, m := range f.store.stored(t) {
		if got := m.Property("INNER_MULTI_DISPATCH"); got != fmt.Sprint("%LMQ%$Lite$s", i) {
			t.Errorf("item %d dispatch %q", i, got)
		}
	}
}

// TestMalformedBatch feeds broken bodies: MESSAGE_ILLEGAL, never a panic.
func TestMalformedBatch(t *testing.T) {
	good := batchBody(t, 3, func(i int) map[string]string { return map[string]string{"K": "v"} })
	be := binary.BigEndian
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	bodies := map[string][]byte{
		"truncated":          good[:len(good)-3],
		"short header":       good[:10],
		"negative bodyLen":   mutate(func(b []byte) []byte { be.PutUint32(b[16:], 0xFFFFFFF0); return b }),
		"huge bodyLen":       mutate(func(b []byte) []byte { be.PutUint32(b[16:], 1<<30); return b }),
		"totalSize mismatch": mutate(func(b []byte) []byte { be.PutUint32(b[0:], be.Uint32(b)+1); return b }),
		"negative propLen":   mutate(func(b []byte) []byte { b[20+6] = 0xFF; return b }),
		"zero totalSize":     mutate(func(b []byte) []byte { be.PutUint32(b[0:], 0); return b }),
		"trailing garbage":   append(append([]byte(nil), good...), 1, 2, 3),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 50 {
		b := make([]byte, r.IntN(80))
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		bodies[fmt.Sprint("random ", i)] = b
	}
	f := newFixture(t)
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			resp := f.call(t, batchReq("TopicTest", 0, body))
			if resp.Code != code.MessageIllegal && resp.Code != code.InvalidParameter {
				t.Fatalf("code %d (%s), want 13 or 29", resp.Code, resp.Remark)
			}
		})
	}
	if n := len(f.store.stored(t)); n != 0 {
		t.Errorf("stored %d", n)
	}
}

// rawBatchItem is a batch item whose properties string is given as is.
func rawBatchItem(dst []byte, body string, props string) []byte {
	be := binary.BigEndian
	dst = be.AppendUint32(dst, uint32(22+len(body)+len(props)))
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = be.AppendUint16(dst, uint16(len(props)))
	return append(dst, props...)
}

// wantItemProps is what the broker stores for a batch item's properties
// string: Java's decoding, reserved keys dropped, a UNIQ_KEY when none.
func wantItemProps(raw []byte) map[string]string {
	m := message.DecodeProperties(raw)
	if m == nil {
		m = map[string]string{}
	}
	stripReserved(m)
	return m
}

// checkStoredItems checks the last len(items) stored messages against the
// batch items' properties strings (UNIQ_KEY: the item's, or a new one).
func checkStoredItems(t *testing.T, st *fakeStore, items [][]byte) {
	t.Helper()
	all := st.stored(t)
	got := all[len(all)-len(items):]
	for i, raw := range items {
		want := wantItemProps(raw)
		have := got[i].Properties
		if want[message.PropertyUniqClientMessageIDKeyIdx] == "" {
			if have[message.PropertyUniqClientMessageIDKeyIdx] == "" {
				t.Fatalf("item %d (%q): stored without a UNIQ_KEY", i, raw)
			}
			want[message.PropertyUniqClientMessageIDKeyIdx] = have[message.PropertyUniqClientMessageIDKeyIdx]
		}
		if !maps.Equal(have, want) {
			t.Fatalf("item %d (%q): stored properties %q, want %q", i, raw, have, want)
		}
	}
}

// TestBatchPlainItems: items whose properties are only UNIQ_KEY, WAIT, KEYS
// and TAGS, well formed, are stored with the producer's entries sorted in
// place; every other item is decoded, stripped and completed as before.
// Both store the bytes a decode-and-encode would.
func TestBatchPlainItems(t *testing.T) {
	const u = plainUniq
	for _, tc := range append(plainCases(),
		plainCase{"delay", u + "DELAY\x013\x02", false},
	) {
		t.Run(tc.name, func(t *testing.T) {
			if got := plainProps([]byte(tc.props)); got != tc.plain {
				t.Fatalf("plainProps(%q) = %t, want %t", tc.props, got, tc.plain)
			}
			f := newFixture(t)
			var body []byte
			items := [][]byte{[]byte(tc.props), []byte(u + "WAIT\x01true\x02")}
			for i, p := range items {
				body = rawBatchItem(body, fmt.Sprint("b", i), string(p))
			}
			resp := f.call(t, batchReq("TopicTest", 1, body))
			if tc.name == "delay" {
				wantCode(t, resp, code.MessageIllegal)
				return
			}
			wantCode(t, resp, code.Success)
			checkStoredItems(t, f.store, items)
			if tc.plain {
				// Taken as sent, in key order: the bytes the map would give.
				rec := f.store.records[len(f.store.records)-2]
				v, err := message.ParseView(rec, message.ParseOptions{})
				want, _ := message.AppendProperties(nil, message.DecodeProperties([]byte(tc.props)))
				if err != nil || string(v.Properties()) != string(want) {
					t.Fatalf("stored properties %q, want %q (%v)", v.Properties(), want, err)
				}
			}
		})
	}
}

func FuzzSendBatch(f *testing.F) {
	f.Add(batchBody(f, 2, func(int) map[string]string { return map[string]string{"K": "v"} }))
	f.Add(batchBody(f, 2, func(int) map[string]string { return map[string]string{"UNIQ_KEY": "u1", "WAIT": "true"} }))
	f.Add([]byte{})
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		fx.store.forget()
		resp := fx.call(t, batchReq("TopicTest", 0, body))
		switch resp.Code {
		case code.Success:
			// Every item stored with the properties Java's decoding
			// gives, however it took them (as sent or decoded).
			items, err := message.DecodeBatchRaw(body)
			if err != nil {
				t.Fatalf("stored a batch that does not decode: %v", err)
			}
			raws := make([][]byte, len(items))
			for i, m := range items {
				raws[i] = m.RawProperties
			}
			checkStoredItems(t, fx.store, raws)
		case code.MessageIllegal, code.InvalidParameter:
		default:
			t.Fatalf("code %d: %s", resp.Code, resp.Remark)
		}
	})
}
