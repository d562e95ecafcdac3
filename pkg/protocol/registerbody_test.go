package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"strconv"
	"testing"
)

// TestEncodeRegisterBodyCompressedLayout reads the deflated stream back
// field by field: the layout and the TopicConfig text are Apache's
// (RegisterBrokerBody.encode(true), TopicConfig.encode()).
func TestEncodeRegisterBodyCompressedLayout(t *testing.T) {
	in := RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigAndMappingSerializeWrapper{
		DataVersion: DataVersion{Counter: 1, Timestamp: 2},
		TopicConfigTable: map[string]TopicConfig{
			"B": {TopicName: "B", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6, TopicFilterType: SingleTag, Attributes: map[string]string{}},
			"A": {TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 2, Perm: 7, TopicFilterType: MultiTag, Attributes: map[string]string{"+message.type": "FIFO"}},
			"C": {TopicName: "C", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4},
		},
	}}
	body, err := EncodeRegisterBodyCompressed(in)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not a zlib stream: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	intAt := func() int {
		if len(raw) < 4 {
			t.Fatalf("stream ends early")
		}
		n := int(binary.BigEndian.Uint32(raw))
		raw = raw[4:]
		return n
	}
	chunk := func() string {
		n := intAt()
		if n > len(raw) {
			t.Fatalf("chunk of %d bytes, %d left", n, len(raw))
		}
		s := string(raw[:n])
		raw = raw[n:]
		return s
	}
	got := []string{chunk()}
	topics := intAt()
	got = append(got, strconv.Itoa(topics))
	for range topics {
		got = append(got, chunk())
	}
	got = append(got, chunk(), strconv.Itoa(intAt()))
	want := []string{
		`{"counter":1,"stateVersion":0,"timestamp":2}`, "3",
		`A 4 2 7 MULTI_TAG {"+message.type":"FIFO"}`, "B 8 8 6 SINGLE_TAG {}", "C 1 1 4 SINGLE_TAG ",
		"[]", "0",
	}
	if len(raw) != 0 || len(got) != len(want) {
		t.Fatalf("fields %q (left %d bytes), want %q", got, len(raw), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d = %q, want %q", i, got[i], want[i])
		}
	}
}
