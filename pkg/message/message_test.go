package message

import (
	"bytes"
	"errors"
	"hash/crc32"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func sample() *Message {
	return &Message{
		Topic: "TopicTest", Flag: 3, Body: []byte("hello"),
		Properties:    map[string]string{PropertyTags: "TagA", PropertyKeys: "a b"},
		BornTimestamp: 1, BornHost: netip.MustParseAddrPort("10.0.0.1:1"),
		StoreTimestamp: 2, StoreHost: netip.MustParseAddrPort("10.0.0.2:10911"),
		QueueID: 1, QueueOffset: 9, CommitLogOffset: 1000, ReconsumeTimes: 1,
	}
}

func TestStoredRoundTrip(t *testing.T) {
	v6 := netip.MustParseAddrPort("[2001:db8::5]:8080")
	mapped := netip.AddrPortFrom(netip.AddrFrom16(netip.MustParseAddr("::ffff:1.2.3.4").As16()), 7)
	cases := []struct {
		name      string
		mut       func(*Message)
		magic     int32
		sysFlagV6 int32
	}{
		{"v4", func(*Message) {}, MagicV1, 0},
		{"born v6", func(m *Message) { m.BornHost = v6 }, MagicV1, FlagBornHostV6},
		{"store v6", func(m *Message) { m.StoreHost = v6 }, MagicV1, FlagStoreHostV6},
		{"both v6", func(m *Message) { m.BornHost, m.StoreHost = v6, v6 }, MagicV1, FlagBornHostV6 | FlagStoreHostV6},
		{"mapped v4 stays v4", func(m *Message) { m.BornHost = mapped }, MagicV1, 0},
		{"stale v6 bits cleared", func(m *Message) { m.SysFlag |= FlagBornHostV6 | FlagStoreHostV6 }, MagicV1, 0},
		{"topic 127 is v1", func(m *Message) { m.Topic = strings.Repeat("t", 127) }, MagicV1, 0},
		{"topic 128 is v2", func(m *Message) { m.Topic = strings.Repeat("t", 128) }, MagicV2, 0},
		{"empty everything", func(m *Message) { m.Body, m.Properties, m.Topic = nil, nil, "" }, MagicV1, 0},
		{"compressed flag kept", func(m *Message) { m.SysFlag = FlagCompressed | CompressionZLIB }, MagicV1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := sample()
			c.mut(m)
			b, err := EncodeStored(m)
			if err != nil {
				t.Fatal(err)
			}
			bodyLen, propsLen := len(m.Body), 0
			if len(m.Properties) > 0 {
				p, _ := EncodeProperties(m.Properties)
				propsLen = len(p)
			}
			if want := StoredSize(m.SysFlag&^(FlagBornHostV6|FlagStoreHostV6)|c.sysFlagV6, bodyLen, len(m.Topic), propsLen); len(b) != want {
				t.Fatalf("len %d, StoredSize %d", len(b), want)
			}
			got, n, err := DecodeStored(b, DecodeOptions{VerifyCRC: true})
			if err != nil || n != len(b) {
				t.Fatalf("decode: %v (n=%d)", err, n)
			}
			v, _ := ParseView(b, ParseOptions{})
			if v.Magic() != c.magic || got.SysFlag&(FlagBornHostV6|FlagStoreHostV6) != c.sysFlagV6 {
				t.Fatalf("magic %#x sysFlag %#x", v.Magic(), got.SysFlag)
			}
			if got.Topic != m.Topic || !bytes.Equal(got.Body, m.Body) || !maps.Equal(got.Properties, m.Properties) ||
				got.BornHost.Addr().Unmap() != m.BornHost.Addr().Unmap() || got.StoreHost != netip.AddrPortFrom(m.StoreHost.Addr().Unmap(), m.StoreHost.Port()) ||
				got.QueueOffset != 9 || got.CommitLogOffset != 1000 || got.StoreTimestamp != 2 || got.BodyCRC != BodyCRC(m.Body) {
				t.Fatalf("round trip: %+v", got)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Message)
		want error
	}{
		{"topic too long", func(m *Message) { m.Topic = strings.Repeat("t", 32768) }, ErrTooLarge},
		{"props too long", func(m *Message) { m.Properties["big"] = strings.Repeat("v", 32768) }, ErrTooLarge},
		{"empty key", func(m *Message) { m.Properties[""] = "v" }, ErrInvalidProperty},
		{"empty value", func(m *Message) { m.Properties["k"] = "" }, ErrInvalidProperty},
		{"separator in key", func(m *Message) { m.Properties["a\x01b"] = "v" }, ErrInvalidProperty},
		{"0x02 in value", func(m *Message) { m.Properties["k"] = "a\x02" }, ErrInvalidProperty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := sample()
			c.mut(m)
			dst := []byte("prefix")
			out, err := AppendStored(dst, m)
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if string(out) != "prefix" {
				t.Fatalf("dst not restored: %q", out)
			}
		})
	}
	// 0x01 inside a value survives (Java splits on the first 0x01 only).
	m := sample()
	m.Properties["k"] = "a\x01b"
	b, err := EncodeStored(m)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := DecodeStored(b, DecodeOptions{})
	if got.Properties["k"] != "a\x01b" {
		t.Fatalf("got %q", got.Properties["k"])
	}
}

func TestParseViewErrors(t *testing.T) {
	good, _ := EncodeStored(sample())
	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	put32 := func(b []byte, pos int, v uint32) {
		b[pos], b[pos+1], b[pos+2], b[pos+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	cases := []struct {
		name string
		in   []byte
		opts ParseOptions
		want error
	}{
		{"empty", nil, ParseOptions{}, ErrTruncated},
		{"short header", good[:7], ParseOptions{}, ErrTruncated},
		{"truncated", good[:len(good)-1], ParseOptions{}, ErrTruncated},
		{"zeros", make([]byte, 200), ParseOptions{}, ErrCorrupt},
		{"bad magic", mod(func(b []byte) { b[4] ^= 1 }), ParseOptions{}, ErrCorrupt},
		{"blank", AppendBlank(nil, 64), ParseOptions{}, ErrBlank},
		{"size below min", mod(func(b []byte) { put32(b, 0, 90) }), ParseOptions{}, ErrCorrupt},
		{"size above max", good, ParseOptions{MaxSize: len(good) - 1}, ErrCorrupt},
		{"size too big for fields", append(mod(func(b []byte) { put32(b, 0, uint32(len(good)+1)) }), 0), ParseOptions{}, ErrCorrupt},
		{"negative body", mod(func(b []byte) { put32(b, 84, 0xFFFFFFFF) }), ParseOptions{}, ErrCorrupt},
		{"body past end", mod(func(b []byte) { put32(b, 84, 1000) }), ParseOptions{}, ErrCorrupt},
		{"crc", mod(func(b []byte) { b[88] ^= 0xFF }), ParseOptions{VerifyCRC: true}, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseView(c.in, c.opts); !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
	// CRC damage passes when not verifying (clients do not verify).
	if _, err := ParseView(mod(func(b []byte) { b[88] ^= 0xFF }), ParseOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestViewAccessorsAndPatch(t *testing.T) {
	m := sample()
	m.BornHost = netip.MustParseAddrPort("[::2]:3")
	b, _ := EncodeStored(m)
	PatchStored(b, 77, 88, 99)
	v, err := ParseView(b, ParseOptions{VerifyCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.QueueOffset() != 77 || v.PhysicalOffset() != 88 || v.StoreTimestamp() != 99 || v.BornTimestamp() != 1 {
		t.Fatalf("patch: %d %d %d", v.QueueOffset(), v.PhysicalOffset(), v.StoreTimestamp())
	}
	if string(v.Topic()) != "TopicTest" || string(v.Body()) != "hello" || v.QueueID() != 1 || v.Flag() != 3 ||
		v.ReconsumeTimes() != 1 || v.StoreHost() != m.StoreHost || v.BornHost() != m.BornHost {
		t.Fatal("accessors")
	}
	if tag, ok := v.Property(PropertyTags); !ok || tag != "TagA" {
		t.Fatalf("tag %q", tag)
	}
	if v.OffsetMsgID() != OffsetMsgID(m.StoreHost, 88) {
		t.Fatal("offset id")
	}
}

func TestDecodeAll(t *testing.T) {
	var body []byte
	for i := range 3 {
		m := sample()
		m.QueueOffset = int64(i)
		body, _ = AppendStored(body, m)
	}
	msgs, err := DecodeAll(body, DecodeOptions{VerifyCRC: true})
	if err != nil || len(msgs) != 3 || msgs[2].QueueOffset != 2 {
		t.Fatalf("%v %d", err, len(msgs))
	}
	// A broken third record: the first two are still returned.
	body[len(body)-20] ^= 0xFF
	rec := len(body) / 3
	body[2*rec+4] = 0
	msgs, err = DecodeAll(body, DecodeOptions{})
	if !errors.Is(err, ErrCorrupt) || len(msgs) != 2 {
		t.Fatalf("%v %d", err, len(msgs))
	}
}

func TestPropertiesEncode(t *testing.T) {
	b, err := EncodeProperties(map[string]string{"b": "2", "a": "1"})
	if err != nil || string(b) != "a\x011\x02b\x012\x02" {
		t.Fatalf("%q %v", b, err)
	}
	if b, _ := EncodeProperties(nil); len(b) != 0 {
		t.Fatal("nil map")
	}
	raw := []byte("a\x011\x02a\x012\x02")
	if v, ok := PropertyValue(raw, "a"); !ok || v != "2" {
		t.Fatalf("last wins: %q", v)
	}
	if _, ok := PropertyValue(raw, "zz"); ok {
		t.Fatal("absent")
	}
	vals := [][]byte{[]byte("stale"), nil}
	if PropertyValues(raw, []string{"zz", "a"}, vals); vals[0] != nil || string(vals[1]) != "2" {
		t.Fatalf("PropertyValues: %q", vals)
	}
	b, _ = AppendProperty([]byte("x\x01y\x02"), PropertyCluster, "DefaultCluster")
	if DecodeProperties(b)[PropertyCluster] != "DefaultCluster" {
		t.Fatal("append")
	}
}

// CheckProperties refuses what AppendProperties refuses, and nothing else.
func TestCheckProperties(t *testing.T) {
	for _, tc := range []struct {
		m  map[string]string
		ok bool
	}{
		{nil, true},
		{map[string]string{"a": "1", "b": "x\x01y"}, true},
		{map[string]string{"": "1"}, false},
		{map[string]string{"a": ""}, false},
		{map[string]string{"a\x01": "1"}, false},
		{map[string]string{"a\x02": "1"}, false},
		{map[string]string{"a": "1\x02"}, false},
	} {
		err := CheckProperties(tc.m)
		_, aerr := AppendProperties(nil, tc.m)
		if (err == nil) != tc.ok || (aerr == nil) != tc.ok || err != nil && !errors.Is(err, ErrInvalidProperty) {
			t.Errorf("%q: CheckProperties %v, AppendProperties %v, want ok=%v", tc.m, err, aerr, tc.ok)
		}
	}
}

func TestTagHashCodeInvalidUTF8(t *testing.T) {
	// Each stray byte counts as U+FFFD (what Java's decoder yields for it).
	if TagHashCode("\xff") != TagHashCode("\uFFFD") {
		t.Fatal("stray byte")
	}
}

func TestOffsetMsgIDErrors(t *testing.T) {
	for _, id := range []string{"", "ABC", strings.Repeat("Z", 32), strings.Repeat("0", 33),
		"0A000001" + "00010000" + "0000000000000000"} { // port 65536
		if _, _, err := ParseOffsetMsgID(id); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("%q: %v", id, err)
		}
	}
}

func TestUniqIDGenerator(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	now := time.Date(2025, 3, 2, 0, 0, 1, 500e6, loc)
	g := NewUniqIDGenerator(netip.MustParseAddr("10.1.2.3"), 0x1234, 0x0A0B0C0D, func() time.Time { return now })
	id := g.Next()
	// ms since 2025-03-01 00:00 local = 86401500 = 0x052661DC; counter 0.
	if id != "0A010203"+"1234"+"0A0B0C0D"+"052661DC"+"0000" {
		t.Fatalf("id %s", id)
	}
	if id2 := g.Next(); id2[28:] != "0001" {
		t.Fatalf("counter: %s", id2)
	}
	now = time.Date(2025, 4, 1, 0, 0, 0, 1e6, loc) // next month: offset restarts
	if id3 := g.Next(); id3[20:28] != "00000001" {
		t.Fatalf("month roll: %s", id3)
	}
	g6 := NewUniqIDGenerator(netip.MustParseAddr("2001:db8::1"), 1, 1, nil)
	if len(g6.Next()) != 56 {
		t.Fatal("v6 length")
	}
	// Concurrent use yields distinct ids.
	seen := sync.Map{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				if _, dup := seen.LoadOrStore(g.Next(), true); dup {
					t.Error("duplicate id")
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBatch(t *testing.T) {
	var body []byte
	body, _ = AppendBatchItem(body, 1, []byte("one"), map[string]string{PropertyTags: "a"})
	body, _ = AppendBatchItem(body, 2, nil, nil)
	msgs, err := DecodeBatch(body)
	if err != nil || len(msgs) != 2 || string(msgs[0].Body) != "one" || msgs[0].Tags() != "a" || msgs[1].Flag != 2 {
		t.Fatalf("%v %+v", err, msgs)
	}
	for name, in := range map[string][]byte{
		"short":      body[:10],
		"bad total":  append([]byte{0, 0, 0, 99}, body[4:]...),
		"body > len": append(append(bytes.Clone(body[:16]), 0x7F, 0, 0, 0), body[20:]...),
	} {
		if _, err := DecodeBatch(in); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRawProperties: a message carrying its properties undecoded
// (DecodeBatchRaw) reads, encodes and changes as one with the map.
func TestRawProperties(t *testing.T) {
	props := map[string]string{PropertyTags: "a", PropertyKeys: "k1 k2", PropertyUniqClientMessageIDKeyIdx: "U1", "X": "y\x01z"}
	var body []byte
	body, _ = AppendBatchItem(body, 1, []byte("one"), props)
	body, _ = AppendBatchItem(body, 2, nil, nil)
	msgs, err := DecodeBatchRaw(body)
	if err != nil || len(msgs) != 2 || msgs[0].Properties != nil || msgs[1].Properties != nil {
		t.Fatalf("%v %+v", err, msgs)
	}
	m := msgs[0]
	if m.Tags() != "a" || !slices.Equal(m.Keys(), []string{"k1", "k2"}) || m.UniqKey() != "U1" || m.Property("X") != "y\x01z" || m.Property("none") != "" {
		t.Fatalf("reads: %q %q %q %q", m.Tags(), m.Keys(), m.UniqKey(), m.Property("X"))
	}
	mapped := *m
	mapped.RawProperties, mapped.Properties = nil, props
	for _, pair := range [][2]*Message{{m, &mapped}, {msgs[1], {Flag: 2}}} {
		raw, err := EncodeStored(pair[0])
		if err != nil {
			t.Fatal(err)
		}
		want, _ := EncodeStored(pair[1])
		if !bytes.Equal(raw, want) {
			t.Fatalf("record from raw properties\n%q\nfrom the map\n%q", raw, want)
		}
	}
	m.SetProperty("Z", "1")
	if m.RawProperties != nil || len(m.Properties) != 5 || m.Properties["X"] != "y\x01z" || m.Property("Z") != "1" {
		t.Fatalf("after SetProperty: %q raw %q", m.Properties, m.RawProperties)
	}
	msgs[1].SetProperty("A", "b")
	if msgs[1].Properties["A"] != "b" {
		t.Fatalf("SetProperty on empty raw: %q", msgs[1].Properties)
	}
}

// TestDecompressJavaBodies: bodies the Java client 5.5.0 stored with
// -Drocketmq.message.compressType=LZ4 and ZSTD (8 KiB of its check
// program's random hex; sysFlag 0x101 and 0x201), read back as the check's
// CRC32 and length properties say, and refused past a size bound.
func TestDecompressJavaBodies(t *testing.T) {
	for _, tc := range []struct {
		file    string
		typ     int32
		crc     uint32
		wantLen int
	}{
		{"java550-lz4-body.bin", CompressionLZ4, 950064176, 8192},
		{"java550-zstd-body.bin", CompressionZSTD, 1337427977, 8192},
	} {
		t.Run(tc.file, func(t *testing.T) {
			z, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			out, err := Decompress(z, FlagCompressed|tc.typ, 1<<20)
			if err != nil || len(out) != tc.wantLen || crc32.ChecksumIEEE(out) != tc.crc {
				t.Fatalf("decompressed %d bytes (crc %d): %v", len(out), crc32.ChecksumIEEE(out), err)
			}
			if _, err := Decompress(z, FlagCompressed|tc.typ, tc.wantLen-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("bound: %v", err)
			}
			if _, err := Decompress(z[:len(z)/2], FlagCompressed|tc.typ, 0); err == nil {
				t.Fatal("a cut body decompressed")
			}
		})
	}
}

func TestCompression(t *testing.T) {
	body := bytes.Repeat([]byte("compress me "), 1000)
	z, flags, err := Compress(body)
	if err != nil || flags&FlagCompressed == 0 || CompressionType(flags) != CompressionZLIB {
		t.Fatal(err)
	}
	out, err := Decompress(z, flags, 0)
	if err != nil || !bytes.Equal(out, body) {
		t.Fatal(err)
	}
	if _, err := Decompress(z, FlagCompressed, len(body)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bound: %v", err)
	}
	if _, err := Decompress(z, FlagCompressed|CompressionLZ4, 0); err == nil {
		t.Fatal("a zlib body read as LZ4")
	}
	if _, err := Decompress(z, FlagCompressed|0x400, 0); !errors.Is(err, ErrUnsupportedCompression) {
		t.Fatal(err)
	}
	if out, _ := Decompress(body, 0, 0); &out[0] != &body[0] {
		t.Fatal("uncompressed body should pass through")
	}
}

func TestSysFlagHelpers(t *testing.T) {
	f := SetTransactionType(FlagCompressed|TransactionPreparedType, TransactionRollbackType)
	if TransactionType(f) != TransactionRollbackType || f&FlagCompressed == 0 {
		t.Fatalf("%#x", f)
	}
}

// TestAppendRecordProperty: a property added to an encoded record reads
// back as if it had been in the map, for v1 and v2 records and IPv6 hosts,
// as the last of several records; bad input changes nothing.
func TestAppendRecordProperty(t *testing.T) {
	long := sample()
	long.Topic = strings.Repeat("t", 200) // v2 magic
	v6 := sample()
	v6.BornHost = netip.MustParseAddrPort("[2001:db8::5]:8080")
	v6.StoreHost = netip.MustParseAddrPort("[2001:db8::6]:10911")
	empty := sample()
	empty.Properties = nil
	for name, m := range map[string]*Message{"v1": sample(), "v2": long, "v6": v6, "no properties": empty} {
		t.Run(name, func(t *testing.T) {
			prefix, err := AppendStored(nil, sample())
			if err != nil {
				t.Fatal(err)
			}
			rec, err := AppendStored(prefix, m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendRecordProperty(rec, len(prefix), PropertyInnerMultiQueueOffset, "7,8")
			if err != nil {
				t.Fatal(err)
			}
			want := *m
			want.Properties = map[string]string{PropertyInnerMultiQueueOffset: "7,8"}
			for k, v := range m.Properties {
				want.Properties[k] = v
			}
			wantRec, err := AppendStored(nil, &want)
			if err != nil {
				t.Fatal(err)
			}
			if len(got)-len(prefix) != len(wantRec) {
				t.Fatalf("record of %d bytes, want %d", len(got)-len(prefix), len(wantRec))
			}
			d, _, err := DecodeStored(got[len(prefix):], DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(d.Properties, want.Properties) || d.Topic != m.Topic || !bytes.Equal(d.Body, m.Body) {
				t.Fatalf("decoded %+v", d)
			}
			if _, err := ParseView(got, ParseOptions{VerifyCRC: true}); err != nil {
				t.Fatalf("the record before it: %v", err)
			}
		})
	}
	rec, _ := AppendStored(nil, sample())
	for name, c := range map[string]struct {
		rec        []byte
		start      int
		key, value string
	}{
		"start past the end":   {rec, len(rec) + 1, "K", "v"},
		"not the last record":  {append(append([]byte(nil), rec...), 0, 0), 0, "K", "v"},
		"truncated":            {rec[:len(rec)-1], 0, "K", "v"},
		"separator in a value": {rec, 0, "K", "a\x02b"},
		"too long":             {rec, 0, "K", strings.Repeat("v", MaxPropertiesLength)},
	} {
		t.Run(name, func(t *testing.T) {
			before := append([]byte(nil), c.rec...)
			got, err := AppendRecordProperty(c.rec, c.start, c.key, c.value)
			if err == nil {
				t.Fatal("no error")
			}
			if !bytes.Equal(got, before) {
				t.Fatal("the record changed")
			}
		})
	}
}

// StoredCap bounds the record from above, by exactly the IPv6 hosts' extra
// bytes when the hosts are IPv4.
func TestStoredCap(t *testing.T) {
	cases := []struct {
		name  string
		mut   func(*Message)
		slack int
	}{
		{"ipv4 hosts", func(*Message) {}, 24},
		{"no properties", func(m *Message) { m.Properties = nil }, 24},
		{"ipv6 hosts", func(m *Message) {
			m.BornHost = netip.MustParseAddrPort("[::2]:10")
			m.StoreHost = netip.MustParseAddrPort("[::1]:10911")
		}, 0},
		{"v2 topic", func(m *Message) { m.Topic = strings.Repeat("t", 200) }, 24},
		{"empty body", func(m *Message) { m.Body = nil }, 24},
		{"raw properties", func(m *Message) {
			m.RawProperties, _ = EncodeProperties(m.Properties)
			m.Properties = nil
		}, 24},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := sample()
			c.mut(m)
			rec, err := AppendStored(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			if got := StoredCap(m); got != len(rec)+c.slack {
				t.Fatalf("StoredCap %d, record %d bytes, want slack %d", got, len(rec), c.slack)
			}
		})
	}
}
