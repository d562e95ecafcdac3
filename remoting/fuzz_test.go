package remoting

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/; the f.Add calls below add
// hand-made commands, the JSON test vector of docs/protocol.md §1.5 and,
// when present, frames captured from real clients (testdata/golden).
// Run e.g.: go test -run='^$' -fuzz=FuzzDecode -fuzztime=20s

// FuzzDecode feeds arbitrary bytes as a stream of frames, and as one frame
// body, checking that decoding never panics and that whatever decodes
// re-encodes to something that decodes to the same command.
func FuzzDecode(f *testing.F) {
	for _, cmd := range seedCommands() {
		frame, err := Encode(cmd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame)
	}
	for _, b := range goldenFrames(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		for rest := data; ; {
			n, err := FrameLength(rest, DefaultMaxFrameSize)
			if err != nil || n == 0 || n > len(rest) {
				return
			}
			checkDecode(t, rest[4:n])
			rest = rest[n:]
		}
	})
}

// FuzzDecodeJSONHeader fuzzes the JSON header decoder through Decode.
func FuzzDecodeJSONHeader(f *testing.F) {
	f.Add([]byte(`{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`), []byte(nil))
	f.Add([]byte(`{"code":34,"extFields":{"n":12,"b":true,"s":"x","z":null,"o":{"a":[1]}},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`), []byte("body"))
	f.Add([]byte(`{"code":200050,"language":9,"remark":"\u00e9\ud800","extFields":null}`), []byte(nil))
	f.Add([]byte(`{}`), []byte{0})
	f.Fuzz(func(t *testing.T, header, body []byte) {
		checkDecode(t, frameWithHeader(SerializeJSON, header, body)[4:])
	})
}

// FuzzDecodeRocketMQHeader fuzzes the binary header decoder through Decode.
func FuzzDecodeRocketMQHeader(f *testing.F) {
	for _, cmd := range seedCommands() {
		cmd.SerializeType = SerializeRocketMQ
		frame, err := Encode(cmd)
		if err != nil {
			f.Fatal(err)
		}
		hl := int(frame[5])<<16 | int(frame[6])<<8 | int(frame[7])
		f.Add(frame[8:8+hl], cmd.Body)
	}
	f.Add(make([]byte, 21), []byte(nil))
	f.Fuzz(func(t *testing.T, header, body []byte) {
		checkDecode(t, frameWithHeader(SerializeRocketMQ, header, body)[4:])
	})
}

func seedCommands() []*Command {
	send := NewRequest(310, map[string]string{
		"a": "group", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000",
		"h": "0", "i": "KEYS\x01k1\x02TAGS\x01TagA\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a",
	}, []byte("hello world"))
	resp := NewResponse(send, 17, "No topic route info in name server for the topic: T \"quoted\" \n")
	resp.SetExt("msgId", "C0A8000100002A9F0000000000000000")
	pop := NewRequest(200050, nil, nil)
	pop.MarkOneway()
	pop.Opaque = -5
	return []*Command{send, resp, pop, {Code: 0, SerializeType: SerializeRocketMQ}}
}

func goldenFrames(f *testing.F) [][]byte {
	paths, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkDecode decodes frame (bytes after the length field); if it decodes,
// the command must survive encode → decode → encode → decode unchanged.
func checkDecode(t *testing.T, frame []byte) {
	cmd, err := Decode(frame)
	checkDeferred(t, frame, cmd, err)
	if err != nil {
		if cmd != nil {
			t.Fatalf("Decode returned a command and error %v", err)
		}
		return
	}
	if cmd.SerializeType != SerializeJSON && cmd.SerializeType != SerializeRocketMQ {
		t.Fatalf("decoded serialization %v", cmd.SerializeType)
	}
	d2 := reencode(t, cmd)
	// Fields both codecs carry losslessly once decoded.
	if d2.Code != cmd.Code || d2.Version != cmd.Version || d2.Opaque != cmd.Opaque || d2.Flag != cmd.Flag ||
		d2.Remark != cmd.Remark || !bytes.Equal(d2.Body, cmd.Body) || d2.SerializeType != cmd.SerializeType {
		t.Fatalf("round trip changed the command:\n%+v\n%+v", cmd, d2)
	}
	if cmd.Language <= LangNodeJS && d2.Language != cmd.Language {
		t.Fatalf("language %v became %v", cmd.Language, d2.Language)
	}
	if !maps.Equal(normExt(cmd), normExt(d2)) {
		t.Fatalf("extFields %q became %q", cmd.ExtFields, d2.ExtFields)
	}
	if d3 := reencode(t, d2); !sameCommand(d2, d3) {
		t.Fatalf("encoding is not stable:\n%+v\n%+v", d2, d3)
	}
}

// checkDeferred decodes frame again with its code's extFields deferred:
// it must fail exactly when Decode failed (eagerErr), and every way of
// reading the deferred fields must give what Decode gave (eager).
func checkDeferred(t *testing.T, frame []byte, eager *Command, eagerErr error) {
	var deferred []int32
	if eager != nil {
		deferred = []int32{eager.Code}
	} else if len(frame) >= 6 {
		// The code a ROCKETMQ header would carry.
		deferred = []int32{int32(int16(uint16(frame[4])<<8 | uint16(frame[5])))}
	}
	cmd, err := DecodeDeferring(frame, deferred)
	if (err == nil) != (eagerErr == nil) {
		t.Fatalf("deferred decode error %v, eager %v", err, eagerErr)
	}
	if err != nil {
		return
	}
	want := !eager.IsResponse() && eager.SerializeType == SerializeRocketMQ && len(eager.ExtFields) > 0
	if cmd.Deferred() != want {
		t.Fatalf("Deferred() = %v, want %v (%+v)", cmd.Deferred(), want, eager)
	}
	for k, v := range eager.ExtFields {
		if got := cmd.Ext(k); got != v {
			t.Fatalf("deferred Ext(%q) = %q, want %q", k, got, v)
		}
		if got, ok := cmd.ExtBytes(k); !ok || string(got) != v {
			t.Fatalf("deferred ExtBytes(%q) = %q, %v, want %q", k, got, ok, v)
		}
	}
	if got, ok := cmd.ExtBytes("\x00absent"); ok || got != nil {
		t.Fatalf("ExtBytes of an absent key = %q, %v", got, ok)
	}
	if f1, f2 := encodeOrFail(t, eager), encodeOrFail(t, cmd); !bytes.Equal(f1, f2) && len(eager.ExtFields) <= 1 {
		// Map order varies with more than one field; one field must match byte for byte.
		t.Fatalf("a deferred command encodes differently:\n%q\n%q", f1, f2)
	}
	if d := reencode(t, cmd); !sameCommand(d, eager) {
		t.Fatalf("a deferred command re-encodes to another command:\n%+v\n%+v", d, eager)
	}
	if !maps.Equal(cmd.Fields(), eager.ExtFields) || cmd.Deferred() {
		t.Fatalf("Fields() = %q, want %q", cmd.ExtFields, eager.ExtFields)
	}
}

// knownLanguage is the language a command keeps through a JSON re-encoding:
// an ordinal past the known names (accepted from a JSON header, as
// checkDecode allows) is written back as OTHER. Found by
// FuzzDecodeJSONHeader (testdata f8407644962edb32: "lAnguAge":20, a key
// in another case, which encoding/json matches to "language").
func knownLanguage(l LanguageCode) LanguageCode {
	if l > LangNodeJS {
		return LangOther
	}
	return l
}

func encodeOrFail(t *testing.T, cmd *Command) []byte {
	b, err := Encode(cmd)
	if err != nil {
		t.Fatalf("encode %+v: %v", cmd, err)
	}
	return b
}

func reencode(t *testing.T, cmd *Command) *Command {
	frame, err := Encode(cmd)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", cmd, err)
	}
	if n, err := FrameLength(frame, 0); err != nil || n != len(frame) {
		t.Fatalf("re-encoded frame length %d, %v; have %d bytes", n, err, len(frame))
	}
	out, err := Decode(frame[4:])
	if err != nil {
		t.Fatalf("our own encoding of %+v does not decode: %v\n%q", cmd, err, frame)
	}
	return out
}

// normExt drops what the ROCKETMQ codec cannot carry (Java treats an empty
// string as null and skips it).
func normExt(cmd *Command) map[string]string {
	m := make(map[string]string, len(cmd.ExtFields))
	for k, v := range cmd.ExtFields {
		if cmd.SerializeType == SerializeRocketMQ && (k == "" || v == "") {
			continue
		}
		m[k] = v
	}
	return m
}

func sameCommand(a, b *Command) bool {
	return a.Code == b.Code && knownLanguage(a.Language) == knownLanguage(b.Language) && a.Version == b.Version && a.Opaque == b.Opaque &&
		a.Flag == b.Flag && a.Remark == b.Remark && bytes.Equal(a.Body, b.Body) &&
		a.SerializeType == b.SerializeType && maps.Equal(normExt(a), normExt(b))
}
