package message

import (
	"bytes"
	"net/netip"
	"testing"
)

func benchMessage() *Message {
	return &Message{
		Topic: "BenchmarkTopic", Body: bytes.Repeat([]byte{'x'}, 1024),
		Properties: map[string]string{
			PropertyTags: "TagA", PropertyKeys: "order-1234", PropertyWaitStoreMsgOK: "true",
			PropertyUniqClientMessageIDKeyIdx: "0A0102030000000000000000000000AB", PropertyCluster: "DefaultCluster",
		},
		BornHost:  netip.MustParseAddrPort("10.0.0.1:50000"),
		StoreHost: netip.MustParseAddrPort("10.0.0.2:10911"),
	}
}

func BenchmarkEncodeStored(b *testing.B) {
	m := benchMessage()
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.SetBytes(int64(len(m.Body)))
	for b.Loop() {
		var err error
		if buf, err = AppendStored(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeStoredRaw(b *testing.B) {
	m := benchMessage()
	props, _ := EncodeProperties(m.Properties)
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.SetBytes(int64(len(m.Body)))
	for b.Loop() {
		buf, _ = AppendStoredRaw(buf[:0], m, props)
	}
}

func BenchmarkParseView(b *testing.B) {
	benchStoredRecord(b, func(rec []byte) error {
		_, err := ParseView(rec, ParseOptions{})
		return err
	})
}

func BenchmarkParseViewCRC(b *testing.B) {
	benchStoredRecord(b, func(rec []byte) error {
		_, err := ParseView(rec, ParseOptions{VerifyCRC: true})
		return err
	})
}

func BenchmarkDecodeStored(b *testing.B) {
	benchStoredRecord(b, func(rec []byte) error {
		_, _, err := DecodeStored(rec, DecodeOptions{AliasBody: true})
		return err
	})
}

// benchStoredRecord measures read on one stored record of benchMessage.
func benchStoredRecord(b *testing.B, read func(rec []byte) error) {
	rec, _ := EncodeStored(benchMessage())
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if err := read(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeProperties(b *testing.B) {
	props, _ := EncodeProperties(benchMessage().Properties)
	b.ReportAllocs()
	for b.Loop() {
		DecodeProperties(props)
	}
}

func BenchmarkTagHashCode(b *testing.B) {
	for b.Loop() {
		TagHashCode("TagA-some-longer-tag")
	}
}

func BenchmarkOffsetMsgID(b *testing.B) {
	h := netip.MustParseAddrPort("10.0.0.2:10911")
	b.ReportAllocs()
	for b.Loop() {
		OffsetMsgID(h, 1<<40)
	}
}

// BenchmarkEncodeProperties: a gRPC send's properties (about ten keys).
func BenchmarkEncodeProperties(b *testing.B) {
	m := map[string]string{
		PropertyTags: "TagA", PropertyKeys: "order-1234", PropertyWaitStoreMsgOK: "true",
		PropertyUniqClientMessageIDKeyIdx: "0A0102030000000000000000000000AB", PropertyCluster: "DefaultCluster",
		"__BORNHOST": "10.0.0.1:50000", "TRACE_ON": "true", "MSG_REGION": "DefaultRegion",
		"__SHARDINGKEY": "g1", "a": "b",
	}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendProperties(buf[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}
