package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// goldenExpect is what a golden frame (testdata/golden, captured from real
// clients by scripts/capture-golden.sh) must decode to.
type goldenExpect struct {
	code     int32
	lang     LanguageCode
	version  int32
	st       SerializeType
	ext      map[string]string // exact values
	extKeys  []string          // keys that must be present (values vary per capture)
	nExt     int               // exact number of extFields, 0 = not checked
	body     string
	propKeys []string // message property keys in the properties ext field
}

// goldenExpectations maps each file in testdata/golden to its expectation.
func goldenExpectations() map[string]goldenExpect {
	m := map[string]goldenExpect{
		"go_105_json.bin": {
			code: 105, lang: LangGo, version: 317, st: SerializeJSON,
			ext: map[string]string{"topic": "TopicTest"}, nExt: 1,
		},
		"go_10_json.bin": {
			code: 10, lang: LangGo, version: 317, st: SerializeJSON,
			ext: map[string]string{
				"producerGroup": "golden_producer_group", "topic": "TopicTest", "defaultTopic": "TBW102",
				"defaultTopicQueueNums": "4", "sysFlag": "0", "flag": "0", "reconsumeTimes": "0",
				"unitMode": "false", "maxReconsumeTimes": "0", "batch": "false", "bname": "broker-capture",
			},
			extKeys:  []string{"queueId", "bornTimestamp", "properties"},
			nExt:     14,
			body:     "hello golden",
			propKeys: []string{"TAGS", "KEYS", "UNIQ_KEY"},
		},
	}
	// The Java client was captured in both serializations, with the same
	// content: java_<code>_json.bin and java_<code>_rocketmq.bin.
	java := map[string]goldenExpect{
		"java_105": {
			code: 105, lang: LangJava, version: 513,
			ext: map[string]string{"topic": "TopicTest"}, nExt: 1,
		},
		"java_310": {
			code: 310, lang: LangJava, version: 513,
			ext: map[string]string{
				"b": "TopicTest", "c": "TBW102", "d": "4", "f": "0", "h": "0", "j": "0",
				"k": "false", "m": "false", "n": "broker-capture",
			},
			extKeys:  []string{"a", "e", "g", "i"},
			nExt:     13,
			body:     "hello golden",
			propKeys: []string{"TAGS", "KEYS", "UNIQ_KEY", "WAIT"},
		},
		"java_35": {
			code: 35, lang: LangJava, version: 513,
			extKeys: []string{"producerGroup", "clientID"}, nExt: 2,
		},
	}
	for prefix, e := range java {
		for suffix, st := range map[string]SerializeType{"json": SerializeJSON, "rocketmq": SerializeRocketMQ} {
			e.st = st
			m[prefix+"_"+suffix+".bin"] = e
		}
	}
	return m
}

// TestGoldenFrames decodes every frame captured from real clients, checks
// its fields, re-encodes it in the same serialization and decodes that again.
func TestGoldenFrames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	expectations := goldenExpectations()
	if len(files) < len(expectations) {
		t.Errorf("found %d golden files, want at least %d", len(files), len(expectations))
	}
	seen := make(map[string]bool, len(files))
	for _, path := range files {
		name := filepath.Base(path)
		seen[name] = true
		t.Run(strings.TrimSuffix(name, ".bin"), func(t *testing.T) {
			want, ok := expectations[name]
			if !ok {
				t.Fatalf("no expectation for %s: add one to goldenExpectations()", name)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cmd := decodeWhole(t, raw)
			checkGolden(t, cmd, want)

			out, err := Encode(cmd)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			again := decodeWhole(t, out)
			if !reflect.DeepEqual(again, cmd) {
				t.Fatalf("re-encoded frame decodes differently:\n got %+v\nwant %+v", again, cmd)
			}
			switch cmd.SerializeType {
			case SerializeRocketMQ:
				compareRocketMQFrames(t, raw, out)
			case SerializeJSON:
				compareJSONFrames(t, raw, out)
			}
		})
	}
	for name := range expectations {
		if !seen[name] {
			t.Errorf("golden file %s is missing (run scripts/capture-golden.sh)", name)
		}
	}
}

// decodeWhole checks FrameLength against the whole buffer and decodes it.
func decodeWhole(t *testing.T, raw []byte) *Command {
	t.Helper()
	n, err := FrameLength(raw, DefaultMaxFrameSize)
	if err != nil {
		t.Fatalf("FrameLength: %v", err)
	}
	if n != len(raw) {
		t.Fatalf("FrameLength = %d, file has %d bytes", n, len(raw))
	}
	cmd, err := Decode(raw[4:n])
	if err != nil {
		t.Fatalf("Decode: %v\n%x", err, raw)
	}
	return cmd
}

func checkGolden(t *testing.T, cmd *Command, want goldenExpect) {
	t.Helper()
	if cmd.Code != want.code || cmd.Language != want.lang || cmd.Version != want.version || cmd.SerializeType != want.st {
		t.Errorf("code/lang/version/ser = %d/%s/%d/%s, want %d/%s/%d/%s",
			cmd.Code, cmd.Language, cmd.Version, cmd.SerializeType, want.code, want.lang, want.version, want.st)
	}
	if cmd.IsResponse() || cmd.IsOneway() {
		t.Errorf("flag = %d, want a plain request", cmd.Flag)
	}
	if cmd.Remark != "" {
		t.Errorf("remark = %q, want empty", cmd.Remark)
	}
	for k, v := range want.ext {
		if got, ok := cmd.ExtFields[k]; !ok || got != v {
			t.Errorf("ext[%q] = %q (present %v), want %q", k, got, ok, v)
		}
	}
	for _, k := range want.extKeys {
		if cmd.Ext(k) == "" {
			t.Errorf("ext[%q] missing or empty", k)
		}
	}
	if want.nExt > 0 && len(cmd.ExtFields) != want.nExt {
		t.Errorf("%d extFields, want %d: %v", len(cmd.ExtFields), want.nExt, cmd.ExtFields)
	}
	if string(cmd.Body) != want.body {
		t.Errorf("body = %q, want %q", cmd.Body, want.body)
	}
	if len(want.propKeys) > 0 {
		props := cmd.Ext("properties")
		if props == "" {
			props = cmd.Ext("i")
		}
		got := propertyKeys(props)
		for _, k := range want.propKeys {
			if !got[k] {
				t.Errorf("property %q missing from %q", k, props)
			}
		}
	}
}

// propertyKeys splits a properties string (k 0x01 v 0x02 ...).
func propertyKeys(s string) map[string]bool {
	keys := make(map[string]bool)
	for _, item := range strings.Split(s, "\x02") {
		if k, v, ok := strings.Cut(item, "\x01"); ok && k != "" && v != "" {
			keys[k] = true
		}
	}
	return keys
}

// compareRocketMQFrames compares a captured ROCKETMQ frame with our
// re-encoding field by field: fixed header and remark byte for byte, the ext
// map as a set of entries (Java and Go map order both vary), body byte for
// byte. With at most one ext entry the whole frame must be identical.
func compareRocketMQFrames(t *testing.T, orig, ours []byte) {
	t.Helper()
	if len(orig) != len(ours) {
		t.Errorf("frame length %d, captured %d", len(ours), len(orig))
	}
	parse := func(frame []byte) (fixed []byte, ext []string, body []byte) {
		hl := int(binary.BigEndian.Uint32(frame[4:]) & 0xFFFFFF)
		h := frame[8 : 8+hl]
		rl := int(binary.BigEndian.Uint32(h[13:]))
		fixed = h[:17+rl]
		el := int(binary.BigEndian.Uint32(h[17+rl:]))
		m := h[21+rl : 21+rl+el]
		for q := 0; q < len(m); {
			kl := int(binary.BigEndian.Uint16(m[q:]))
			vl := int(binary.BigEndian.Uint32(m[q+2+kl:]))
			end := q + 2 + kl + 4 + vl
			ext = append(ext, string(m[q:end]))
			q = end
		}
		sort.Strings(ext)
		return fixed, ext, frame[8+hl:]
	}
	f1, e1, b1 := parse(orig)
	f2, e2, b2 := parse(ours)
	if !bytes.Equal(f1, f2) {
		t.Errorf("fixed header + remark differ:\n ours %x\n capt %x", f2, f1)
	}
	if !reflect.DeepEqual(e1, e2) {
		t.Errorf("ext entries differ:\n ours %q\n capt %q", e2, e1)
	}
	if !bytes.Equal(b1, b2) {
		t.Errorf("body differs:\n ours %x\n capt %x", b2, b1)
	}
	if len(e1) <= 1 && !bytes.Equal(orig, ours) {
		t.Errorf("frame differs:\n ours %x\n capt %x", ours, orig)
	}
}

// compareJSONFrames compares the JSON headers as generic JSON after removing
// what the encoder legitimately drops: Java's serializeTypeCurrentRPC and an
// empty remark (client-go always writes "remark":""). Bodies must be equal.
func compareJSONFrames(t *testing.T, orig, ours []byte) {
	t.Helper()
	header := func(frame []byte) (map[string]any, []byte) {
		hl := int(binary.BigEndian.Uint32(frame[4:]) & 0xFFFFFF)
		var m map[string]any
		if err := json.Unmarshal(frame[8:8+hl], &m); err != nil {
			t.Fatalf("header is not JSON: %v\n%s", err, frame[8:8+hl])
		}
		delete(m, "serializeTypeCurrentRPC")
		if r, ok := m["remark"]; ok && r == "" {
			delete(m, "remark")
		}
		return m, frame[8+hl:]
	}
	h1, b1 := header(orig)
	h2, b2 := header(ours)
	if !reflect.DeepEqual(h1, h2) {
		t.Errorf("JSON headers differ:\n ours %v\n capt %v", h2, h1)
	}
	if !bytes.Equal(b1, b2) {
		t.Errorf("body differs:\n ours %q\n capt %q", b2, b1)
	}
}
