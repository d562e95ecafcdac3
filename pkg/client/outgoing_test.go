package client

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/credentials"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func testProducer(t *testing.T, mod func(*ProducerConfig)) *Producer {
	t.Helper()
	cfg := ProducerConfig{CommonConfig: CommonConfig{NameServers: []string{"127.0.0.1:1"}}, Group: "G"}
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func inflate(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPrepareCompression(t *testing.T) {
	big := bytes.Repeat([]byte("rocketmq "), 1000) // 9000 bytes
	tests := []struct {
		name     string
		over     int
		body     []byte
		compress bool
	}{
		{"below default threshold", 0, big[:4095], false},
		{"at default threshold", 0, big[:4096], true},
		{"custom threshold", 100, big[:100], true},
		{"disabled", -1, big, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testProducer(t, func(c *ProducerConfig) { c.CompressOver = tt.over })
			out, err := p.prepare(&message.Message{Topic: "T", Body: tt.body})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.sysFlag&compressedSysFlag == compressedSysFlag; got != tt.compress {
				t.Fatalf("compressed = %v, want %v (sysFlag %#x)", got, tt.compress, out.sysFlag)
			}
			if !tt.compress {
				if !bytes.Equal(out.body, tt.body) {
					t.Fatal("body changed")
				}
				return
			}
			if len(out.body) >= len(tt.body) {
				t.Errorf("compressed body of %d bytes is not smaller than %d", len(out.body), len(tt.body))
			}
			if !bytes.Equal(inflate(t, out.body), tt.body) {
				t.Fatal("compressed body does not inflate back")
			}
			// What consumers run must understand it too.
			if got, err := message.Decompress(out.body, out.sysFlag, 0); err != nil || !bytes.Equal(got, tt.body) {
				t.Fatalf("message.Decompress: %v", err)
			}
		})
	}
}

func TestPrepareRejects(t *testing.T) {
	p := testProducer(t, func(c *ProducerConfig) { c.MaxMessageSize = 10 })
	tests := []struct {
		name string
		msg  *message.Message
	}{
		{"nil", nil},
		{"empty body", &message.Message{Topic: "T"}},
		{"too large", &message.Message{Topic: "T", Body: make([]byte, 11)}},
		{"bad topic", &message.Message{Topic: "a b", Body: []byte("x")}},
		{"forbidden topic", &message.Message{Topic: protocol.ScheduleTopic, Body: []byte("x")}},
		{"bad property", &message.Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{"k": "a\x02b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := p.prepare(tt.msg); !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("err = %v, want ErrInvalidMessage", err)
			}
		})
	}
}

func TestPrepareStampsIDAndRetryHeader(t *testing.T) {
	p := testProducer(t, nil)
	m := &message.Message{Topic: "%RETRY%G", Body: []byte("x"), Properties: map[string]string{
		message.PropertyReconsumeTime: "3", message.PropertyMaxReconsumeTimes: "16", "k": "v",
	}}
	out, err := p.prepare(m)
	if err != nil {
		t.Fatal(err)
	}
	if out.msgID == "" || m.UniqKey() != out.msgID {
		t.Fatalf("UNIQ_KEY not stamped: %q / %q", out.msgID, m.UniqKey())
	}
	props := message.DecodeProperties([]byte(out.props))
	if props[message.PropertyReconsumeTime] != "" || props[message.PropertyMaxReconsumeTimes] != "" || props["k"] != "v" {
		t.Fatalf("properties = %v", props)
	}
	if m.Properties[message.PropertyReconsumeTime] != "3" {
		t.Fatal("the caller's message must keep its properties")
	}
	h := sendHeaderV2("G", out, protocol.MessageQueue{Topic: m.Topic, BrokerName: "b", QueueID: 0}, "TBW102", 4, 1, 0)
	if h["j"] != "3" || h["l"] != "16" {
		t.Fatalf("header j/l = %q/%q", h["j"], h["l"])
	}
	// An id already set is kept.
	again, _ := p.prepare(m)
	if again.msgID != out.msgID {
		t.Fatal("UNIQ_KEY changed on resend")
	}
}

func TestSendHeaderV2(t *testing.T) {
	out := &outgoing{topic: "T", sysFlag: 0x301, flag: 7, props: "TAGS\x01a\x02"}
	h := sendHeaderV2("G", out, protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}, "TBW102", 4, 1700000000123, 0)
	want := map[string]string{
		"a": "G", "b": "T", "c": "TBW102", "d": "4", "e": "3", "f": "769", "g": "1700000000123",
		"h": "7", "i": "TAGS\x01a\x02", "j": "0", "k": "false", "m": "false", "n": "broker-a",
	}
	if len(h) != len(want) {
		t.Errorf("header has %d fields, want %d: %v", len(h), len(want), h)
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("header %s = %q, want %q", k, h[k], v)
		}
	}
	out.batch = true
	if h := sendHeaderV2("G", out, protocol.MessageQueue{}, "TBW102", 4, 0, 0); h["m"] != "true" {
		t.Errorf("batch header m = %q", h["m"])
	}
	// With room for the signature's fields, signing adds them without
	// growing the map: no allocation beyond building the header.
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}
	build := testing.AllocsPerRun(100, func() { _ = sendHeaderV2("G", out, mq, "TBW102", 4, 1, credentials.SignedFields) })
	signed := testing.AllocsPerRun(100, func() {
		h := sendHeaderV2("G", out, mq, "TBW102", 4, 1, credentials.SignedFields)
		h[credentials.KeyAccessKey], h[credentials.KeySecurityToken], h[credentials.KeySignature] = "ak", "tok", "sig"
	})
	if signed != build {
		t.Errorf("signing fields cost %v allocations on top of the header's %v", signed-build, build)
	}
}

func TestPullHeader(t *testing.T) {
	mq := protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 2}
	tests := []struct {
		name    string
		req     PullRequest
		suspend int64
		sysFlag string
		sub     string
	}{
		{"plain", PullRequest{Queue: mq, Offset: 5, MaxNums: 32}, 0, "4", "*"},
		{"long poll", PullRequest{Queue: mq, MaxNums: 1}, 20000, "6", "*"},
		{"commit and tags", PullRequest{Queue: mq, MaxNums: 1, CommitOffset: 9, Expression: "a || b"}, 20000, "7", "a || b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := pullHeader("G", tt.req, tt.suspend)
			if h["sysFlag"] != tt.sysFlag || h["subscription"] != tt.sub || h["expressionType"] != "TAG" {
				t.Fatalf("header = %v", h)
			}
			if h["consumerGroup"] != "G" || h["topic"] != "T" || h["queueId"] != "2" || h["bname"] != "b" ||
				h["queueOffset"] != strings.TrimSpace(h["queueOffset"]) || h["suspendTimeoutMillis"] == "" {
				t.Fatalf("header = %v", h)
			}
		})
	}
}

func TestPrepareBatch(t *testing.T) {
	p := testProducer(t, nil)
	msgs := []*message.Message{
		{Topic: "T", Body: []byte("one"), Flag: 1, Properties: map[string]string{"TAGS": "x"}},
		{Topic: "T", Body: bytes.Repeat([]byte("z"), 5000)}, // never compressed in a batch
	}
	out, err := p.prepareBatch(msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !out.batch || out.count != 2 || out.sysFlag != 0 {
		t.Fatalf("outgoing = %+v", out)
	}
	decoded, err := message.DecodeBatch(out.body)
	if err != nil {
		t.Fatal(err)
	}
	if len(decoded) != 2 || string(decoded[0].Body) != "one" || decoded[0].Flag != 1 || decoded[0].Tags() != "x" || len(decoded[1].Body) != 5000 {
		t.Fatalf("decoded batch = %+v", decoded)
	}
	ids := strings.Split(out.msgID, ",")
	if len(ids) != 2 || decoded[0].UniqKey() != ids[0] || decoded[1].UniqKey() != ids[1] || ids[0] == ids[1] {
		t.Fatalf("ids %v vs inner %q %q", ids, decoded[0].UniqKey(), decoded[1].UniqKey())
	}
	if hdr := message.DecodeProperties([]byte(out.props)); hdr[message.PropertyUniqClientMessageIDKeyIdx] == "" {
		t.Fatal("batch header has no UNIQ_KEY")
	}

	bad := []struct {
		name string
		msgs []*message.Message
	}{
		{"empty", nil},
		{"two topics", []*message.Message{{Topic: "T", Body: []byte("a")}, {Topic: "U", Body: []byte("b")}}},
		{"delay", []*message.Message{{Topic: "T", Body: []byte("a"), Properties: map[string]string{"DELAY": "1"}}}},
		{"retry topic", []*message.Message{{Topic: "%RETRY%G", Body: []byte("a")}}},
		{"empty body", []*message.Message{{Topic: "T", Body: []byte("a")}, {Topic: "T"}}},
		{"mixed WAIT", []*message.Message{{Topic: "T", Body: []byte("a"), Properties: map[string]string{"WAIT": "false"}}, {Topic: "T", Body: []byte("b")}}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := p.prepareBatch(tt.msgs); !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("err = %v, want ErrInvalidMessage", err)
			}
		})
	}
	big := testProducer(t, func(c *ProducerConfig) { c.MaxMessageSize = 100 })
	if _, err := big.prepareBatch([]*message.Message{{Topic: "T", Body: make([]byte, 90)}}); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("oversized batch: err = %v", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	p := testProducer(t, func(c *ProducerConfig) { c.NameServers = []string{" a:1; b:2 ", ""}; c.Group = "" })
	c := p.cfg
	if len(c.NameServers) != 2 || c.Group != DefaultProducerGroup || c.SendTimeout != DefaultSendTimeout ||
		c.RetryTimesWhenSendFailed != 2 || c.CompressOver != 4096 || c.CompressLevel != 5 ||
		c.MaxMessageSize != 4<<20 || c.CreateTopicKey != "TBW102" || c.DefaultTopicQueueNums != 4 {
		t.Fatalf("defaults = %+v", c)
	}
	if p := testProducer(t, func(c *ProducerConfig) { c.RetryTimesWhenSendFailed = -1 }); p.cfg.RetryTimesWhenSendFailed != 0 {
		t.Fatal("negative retries must mean none")
	}
	for _, bad := range []ProducerConfig{
		{},
		{CommonConfig: CommonConfig{NameServers: []string{"a:1"}}, Group: "bad group"},
		{CommonConfig: CommonConfig{NameServers: []string{"a:1"}}, CompressLevel: 10},
		{CommonConfig: CommonConfig{NameServers: []string{"a:1"}, Credentials: &Credentials{AccessKey: "ak"}}},
	} {
		if _, err := NewProducer(bad); err == nil {
			t.Errorf("NewProducer(%+v) accepted", bad)
		}
	}
}
