package message

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/ (Java-encoded records,
// batches and property strings plus edge cases).

func FuzzDecodeStored(f *testing.F) {
	good, _ := EncodeStored(sample())
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, crc := range []bool{false, true} {
			v, err := ParseView(data, ParseOptions{VerifyCRC: crc})
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrBlank) {
					t.Fatalf("unclassified error %v", err)
				}
				continue
			}
			if int(v.TotalSize()) > len(data) || v.TotalSize() < MinRecordSize {
				t.Fatalf("view size %d of %d", v.TotalSize(), len(data))
			}
			// Touch every accessor: none may panic on a validated view.
			_ = v.StoreHost()
			_ = v.BornHost()
			_ = v.OffsetMsgID()
			_ = v.PreparedTransactionOffset()
			_ = v.ReconsumeTimes()
			m, err := v.Message(false)
			if err != nil {
				continue
			}
			if !crc {
				continue
			}
			// A valid record re-encodes to the same bytes unless the encoder
			// normalises it (v2 magic on a short topic, IPv4-mapped hosts).
			short := len(m.Topic) <= maxTopicLenV1
			if (v.Magic() == MagicV2) == short || m.BornHost.Addr().Is4In6() || m.StoreHost.Addr().Is4In6() {
				continue
			}
			again, err := AppendStoredRaw(nil, m, v.Properties())
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			if !bytes.Equal(again, v.Bytes()) {
				t.Fatalf("re-encode differs:\n got %x\nwant %x", again, v.Bytes())
			}
		}
		// DecodeAll never returns more bytes than it was given.
		msgs, _ := DecodeAll(data, DecodeOptions{AliasBody: true})
		total := 0
		for _, m := range msgs {
			total += int(m.StoreSize)
		}
		if total > len(data) {
			t.Fatalf("decoded %d bytes of %d", total, len(data))
		}
	})
}

func FuzzDecodeProperties(f *testing.F) {
	f.Add([]byte("a\x01b\x02"))
	f.Add([]byte("k\x01v\x01w\x02\x02x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := DecodeProperties(data)
		// One walk for several keys agrees with the map, absent ones too.
		keys := []string{"a", "k", "UNIQ_KEY", "TAGS"}
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		vals := make([][]byte, len(keys))
		PropertyValues(data, keys, vals)
		for i, k := range keys {
			if v, ok := m[k]; ok != (vals[i] != nil) || string(vals[i]) != v {
				t.Fatalf("PropertyValues %q = %q, map %q (%t)", k, vals[i], v, ok)
			}
		}
		for k, v := range m {
			if k == "" || v == "" || bytes.ContainsAny([]byte(k), "\x01\x02") || bytes.IndexByte([]byte(v), PropertySeparator) >= 0 {
				t.Fatalf("bad entry %q=%q", k, v)
			}
			if got, ok := PropertyValue(data, k); !ok || got != v {
				t.Fatalf("PropertyValue(%q) = %q, map %q", k, got, v)
			}
		}
		enc, err := EncodeProperties(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if back := DecodeProperties(enc); !maps.Equal(back, m) {
			t.Fatalf("round trip %q -> %q", m, back)
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	b, _ := AppendBatchItem(nil, 1, []byte("x"), map[string]string{"a": "b"})
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		var enc []byte
		for _, m := range msgs {
			if enc, err = AppendBatchItem(enc, m.Flag, m.Body, m.Properties); err != nil {
				t.Fatalf("re-encode: %v", err)
			}
		}
		back, err := DecodeBatch(enc)
		if err != nil || len(back) != len(msgs) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range back {
			if back[i].Flag != msgs[i].Flag || !bytes.Equal(back[i].Body, msgs[i].Body) || !maps.Equal(back[i].Properties, msgs[i].Properties) {
				t.Fatalf("item %d differs", i)
			}
		}
	})
}

// FuzzDecompress: any body under any compression type decompresses or
// fails; never more than the bound, never a panic. Seeds: the Java 5.5.0
// LZ4 and ZSTD bodies and a zlib one.
func FuzzDecompress(f *testing.F) {
	z, _, _ := Compress(bytes.Repeat([]byte("fuzz "), 100))
	f.Add(z, int32(FlagCompressed|CompressionZLIB))
	for _, seed := range []struct {
		file string
		typ  int32
	}{{"java550-lz4-body.bin", CompressionLZ4}, {"java550-zstd-body.bin", CompressionZSTD}} {
		if b, err := os.ReadFile(filepath.Join("testdata", seed.file)); err == nil {
			f.Add(b, FlagCompressed|seed.typ)
		}
	}
	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, body []byte, sysFlag int32) {
		out, err := Decompress(body, sysFlag|FlagCompressed, limit)
		if err == nil && len(out) > limit {
			t.Fatalf("%d bytes past the bound %d", len(out), limit)
		}
	})
}
