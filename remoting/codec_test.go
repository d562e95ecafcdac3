package remoting

import (
	"bytes"
	"encoding/hex"
	"maps"
	"strings"
	"testing"
)

// Test vectors from docs/protocol.md §1.5.
func TestSpecVectors(t *testing.T) {
	jsonText := `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`
	jsonFrame, _ := hex.DecodeString("0000006800000064")
	jsonFrame = append(jsonFrame, jsonText...)
	binFrame, _ := hex.DecodeString(strings.ReplaceAll("00000025 01000021 0069 09 013d 00000001 00000000 00000000 0000000c 0005 746f706963 00000001 54", " ", ""))

	for _, tc := range []struct {
		name  string
		frame []byte
		st    SerializeType
	}{{"json", jsonFrame, SerializeJSON}, {"rocketmq", binFrame, SerializeRocketMQ}} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := FrameLength(tc.frame, DefaultMaxFrameSize)
			if err != nil || n != len(tc.frame) {
				t.Fatalf("FrameLength = %d, %v; want %d", n, err, len(tc.frame))
			}
			cmd, err := Decode(tc.frame[4:])
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Code != 105 || cmd.Language != LangGo || cmd.Version != 317 || cmd.Opaque != 1 || cmd.Flag != 0 || cmd.Ext("topic") != "T" || cmd.SerializeType != tc.st {
				t.Fatalf("decoded %+v", cmd)
			}
			if tc.st == SerializeRocketMQ {
				out, err := Encode(cmd)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(out, tc.frame) {
					t.Fatalf("re-encoded\n%x\nwant\n%x", out, tc.frame)
				}
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		in := &Command{Code: 310, Language: LangJava, Version: 479, Opaque: -7, Flag: FlagOneway,
			Remark: "quote\" back\\ nl\n ctl\x01 ünï", ExtFields: map[string]string{"a": "g1", "b": "Topic", "i": "k\x01v\x02"},
			Body: []byte("hello"), SerializeType: st}
		frame, err := Encode(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decode(frame[4:])
		if err != nil {
			t.Fatalf("%v: %v", st, err)
		}
		if out.Code != in.Code || out.Language != in.Language || out.Version != in.Version || out.Opaque != in.Opaque ||
			out.Flag != in.Flag || out.Remark != in.Remark || !bytes.Equal(out.Body, in.Body) || len(out.ExtFields) != 3 {
			t.Fatalf("%v: got %+v", st, out)
		}
		for k, v := range in.ExtFields {
			if out.ExtFields[k] != v {
				t.Fatalf("%v: ext %q = %q want %q", st, k, out.ExtFields[k], v)
			}
		}
	}
}

// TestWideCodeLeavesRocketMQHeader: a code that does not fit the binary
// header's 16 bits (pop 200050) goes out with a JSON header instead of
// being truncated; 16-bit codes keep the binary header.
func TestWideCodeLeavesRocketMQHeader(t *testing.T) {
	for _, c := range []struct {
		code int32
		want SerializeType
	}{{200050, SerializeJSON}, {890050, SerializeJSON}, {-40000, SerializeJSON}, {310, SerializeRocketMQ}, {-1, SerializeRocketMQ}} {
		frame, err := Encode(&Command{Code: c.code, ExtFields: map[string]string{"k": "v"}, SerializeType: SerializeRocketMQ})
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decode(frame[4:])
		if err != nil {
			t.Fatalf("code %d: %v", c.code, err)
		}
		if out.Code != c.code || out.SerializeType != c.want || out.ExtFields["k"] != "v" {
			t.Fatalf("code %d: decoded code %d as %v, want %v", c.code, out.Code, out.SerializeType, c.want)
		}
	}
}

// TestDecodeInternsSignatureKeys: a ROCKETMQ header's AccessKey and
// Signature keys decode without an allocation each (two fewer than keys
// of the same lengths that are not interned), and decode right.
func TestDecodeInternsSignatureKeys(t *testing.T) {
	decodeAllocs := func(ext map[string]string) float64 {
		frame, err := Encode(&Command{Code: 310, ExtFields: ext, SerializeType: SerializeRocketMQ})
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decode(frame[4:])
		if err != nil || !maps.Equal(out.ExtFields, ext) {
			t.Fatalf("decoded %v (%v), want %v", out, err, ext)
		}
		return testing.AllocsPerRun(100, func() { _, _ = Decode(frame[4:]) })
	}
	signed := decodeAllocs(map[string]string{"b": "T", "AccessKey": "ak", "Signature": "sig", "SecurityToken": "tok"})
	other := decodeAllocs(map[string]string{"b": "T", "AccessKez": "ak", "Signaturf": "sig", "SecurityTokem": "tok"})
	if signed != other-3 {
		t.Fatalf("a signed header decodes with %v allocations, another with %v: want 3 fewer", signed, other)
	}
}

func TestDecodeLenientJSON(t *testing.T) {
	h := `{"code":34,"extFields":{"n":12,"b":true,"s":"x","z":null},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":479}`
	frame := append([]byte{0, 0, 0, byte(len(h))}, h...)
	cmd, err := Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Language != LangJava || cmd.Ext("n") != "12" || cmd.Ext("b") != "true" || cmd.Ext("s") != "x" {
		t.Fatalf("got %+v", cmd)
	}
}

func TestDecodeBad(t *testing.T) {
	for name, frame := range map[string][]byte{
		"short":          {0, 0},
		"header>frame":   {0, 0, 0, 50, '{', '}'},
		"non-json":       append([]byte{0, 0, 0, 5}, "hello"...),
		"unknown-type":   {7, 0, 0, 0},
		"truncated-bin":  {1, 0, 0, 3, 0, 1, 2},
		"bad-remark-len": append([]byte{1, 0, 0, 21}, []byte{0, 1, 9, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0x7f, 0, 0, 0, 0, 0, 0, 0}...),
	} {
		if _, err := Decode(frame); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// TestJSONHeaderBytes: our JSON header, byte for byte; it carries Java's
// serializeTypeCurrentRPC key, which the Rust client requires.
func TestJSONHeaderBytes(t *testing.T) {
	cmd := &Command{Code: 0, Language: LangGo, Version: 513, Opaque: 7, Flag: 1, Remark: "ok", ExtFields: map[string]string{"b": "2", "a": "1"}}
	frame, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":0,"language":"GO","version":513,"opaque":7,"flag":1,"remark":"ok","extFields":{"a":"1","b":"2"},"serializeTypeCurrentRPC":"JSON"}`
	if got := string(frame[8:]); got != want {
		t.Fatalf("header\n%s\nwant\n%s", got, want)
	}
	back, err := Decode(frame[4:])
	if err != nil || back.Opaque != 7 || back.Remark != "ok" || back.Ext("b") != "2" {
		t.Fatalf("decoded %+v, %v", back, err)
	}
}
