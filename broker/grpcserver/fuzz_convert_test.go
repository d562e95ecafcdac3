package grpcserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
)

// storingBackend stores every accepted send as the broker does: the
// properties encoded (an encoding failure refuses the send), the record
// encoded and decoded again.
type storingBackend struct {
	stored []*message.Message
}

func (b *storingBackend) Topic(name string) (Topic, bool) {
	// Every name is a MIXED topic, so each message type gets through.
	return Topic{ReadQueues: 4, WriteQueues: 4, Perm: 6, MessageType: typeMixed}, true
}
func (*storingBackend) BrokerName() string      { return "broker-a" }
func (*storingBackend) MaxMessageSize() int     { return 1 << 16 }
func (*storingBackend) MaxDelay() time.Duration { return 24 * time.Hour }
func (*storingBackend) EndTransaction(context.Context, EndTxInput) (SendResult, error) {
	return SendResult{Code: rcSuccess}, nil
}

func (b *storingBackend) Send(_ context.Context, in SendInput) (SendResult, error) {
	props, err := message.EncodeProperties(in.Properties)
	if err != nil {
		return SendResult{}, err
	}
	rec, err := message.EncodeStored(&message.Message{
		Topic: in.Topic, QueueID: in.QueueID, Body: in.Body, Properties: message.DecodeProperties(props),
		BornTimestamp: in.BornTimestamp, SysFlag: in.SysFlag, BornHost: in.BornHost,
		StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), StoreTimestamp: in.BornTimestamp,
	})
	if err != nil {
		return SendResult{}, err
	}
	m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
	if err != nil {
		return SendResult{}, err
	}
	b.stored = append(b.stored, m)
	return SendResult{Code: rcSuccess, Offset: int64(len(b.stored))}, nil
}

// FuzzSendMessageConversion feeds SendMessageRequest wire bytes through
// SendMessage (the proxy's checks and conversion: system properties, user
// property maps, gzip bodies), stores what is accepted, and converts the
// stored messages back as ReceiveMessage does. Nothing may panic; what was
// accepted comes back with its id, body (decompressed), tag, keys and user
// properties, and every answer and converted message can be marshalled.
func FuzzSendMessageConversion(f *testing.F) {
	tag := "TagA"
	group := "g1"
	lite := "lite-1"
	prio := int32(3)
	seeds := []*v2pb.SendMessageRequest{
		{Messages: []*v2pb.Message{{
			Topic: &v2pb.Resource{Name: "T"}, UserProperties: map[string]string{"color": "red", "n": "1"},
			SystemProperties: &v2pb.SystemProperties{MessageId: "01AA", Tag: &tag, Keys: []string{"k1", "k2"},
				BodyEncoding: v2pb.Encoding_IDENTITY, MessageType: v2pb.MessageType_NORMAL, BornHost: "10.0.0.9",
				BornTimestamp: timestamppb.New(time.UnixMilli(1700000000123))},
			Body: []byte("hello"),
		}}},
		{Messages: []*v2pb.Message{{
			Topic:            &v2pb.Resource{Name: "T"},
			SystemProperties: &v2pb.SystemProperties{MessageId: "01AB", BodyEncoding: v2pb.Encoding_GZIP, MessageGroup: &group, MessageType: v2pb.MessageType_FIFO},
			Body:             gzipped([]byte("zipped body")),
		}}},
		{Messages: []*v2pb.Message{{
			Topic: &v2pb.Resource{Name: "T"},
			SystemProperties: &v2pb.SystemProperties{MessageId: "01AC", MessageType: v2pb.MessageType_DELAY,
				DeliveryTimestamp: timestamppb.New(time.Now().Add(time.Minute))},
			Body: []byte("later"),
		}, {
			Topic:            &v2pb.Resource{Name: "T"},
			SystemProperties: &v2pb.SystemProperties{MessageId: "01AD", MessageType: v2pb.MessageType_TRANSACTION},
			Body:             []byte("half"),
		}}},
		{Messages: []*v2pb.Message{{
			Topic:            &v2pb.Resource{Name: "T"},
			SystemProperties: &v2pb.SystemProperties{MessageId: "01AE", LiteTopic: &lite, MessageType: v2pb.MessageType_LITE},
			Body:             []byte("lite"),
		}, {
			Topic:            &v2pb.Resource{Name: "T"},
			SystemProperties: &v2pb.SystemProperties{MessageId: "01AF", Priority: &prio, MessageType: v2pb.MessageType_PRIORITY},
			Body:             []byte("prio"),
		}}},
		{Messages: []*v2pb.Message{{
			Topic:            &v2pb.Resource{Name: "T"},
			SystemProperties: &v2pb.SystemProperties{MessageId: "01B0", BodyEncoding: v2pb.Encoding_GZIP},
			Body:             []byte("\x1f\x8b not gzip"),
		}}},
	}
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req v2pb.SendMessageRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		be := &storingBackend{}
		m := newMessaging(be, "127.0.0.1", 8081)
		resp, err := m.SendMessage(context.Background(), &req)
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		if _, err := proto.Marshal(resp); err != nil {
			t.Fatalf("answer does not marshal: %v", err)
		}
		// The accepted messages, in order, are the stored ones (ids may
		// repeat within a request).
		var accepted []*v2pb.Message
		for i, e := range resp.GetEntries() {
			if e.GetStatus().GetCode() == v2pb.Code_OK {
				accepted = append(accepted, req.GetMessages()[i])
			}
		}
		if len(accepted) != len(be.stored) {
			t.Fatalf("%d messages accepted, %d stored", len(accepted), len(be.stored))
		}
		for i, st := range be.stored {
			in := accepted[i]
			out := buildMessage(st, &v2pb.Resource{Name: st.Topic}, time.Minute)
			if _, err := proto.Marshal(out); err != nil {
				t.Fatalf("stored message does not convert to a marshallable one: %v", err)
			}
			if id := out.GetSystemProperties().GetMessageId(); id != in.GetSystemProperties().GetMessageId() {
				t.Fatalf("message id %q came back as %q", in.GetSystemProperties().GetMessageId(), id)
			}
			body := in.GetBody()
			if in.GetSystemProperties().GetBodyEncoding() == v2pb.Encoding_GZIP {
				if body, err = gunzip(body, be.MaxMessageSize()); err != nil {
					t.Fatalf("accepted a gzip body that does not inflate: %v", err)
				}
			}
			if !bytes.Equal(out.GetBody(), body) {
				t.Fatalf("body %q came back as %q", body, out.GetBody())
			}
			if in.GetSystemProperties().Tag != nil && out.GetSystemProperties().GetTag() != in.GetSystemProperties().GetTag() {
				t.Fatalf("tag %q came back as %q", in.GetSystemProperties().GetTag(), out.GetSystemProperties().GetTag())
			}
			if want, got := nonEmpty(in.GetSystemProperties().GetKeys()), nonEmpty(out.GetSystemProperties().GetKeys()); want != got {
				t.Fatalf("keys %q came back as %q", want, got)
			}
			for k, v := range in.GetUserProperties() {
				if got := out.GetUserProperties()[k]; got != v {
					t.Fatalf("user property %q=%q came back as %q", k, v, got)
				}
			}
		}
	})
}

// nonEmpty is keys as stored: joined by the key separator, which splits
// them again on the way back.
func nonEmpty(keys []string) string {
	return strings.Join(strings.Fields(strings.Join(keys, message.KeySeparator)), message.KeySeparator)
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// FuzzBuildMessage converts stored messages, whatever their properties and
// bodies (sent over remoting by any client: invalid UTF-8, compressed
// flags), as ReceiveMessage does: nothing panics, and the result always
// marshals (a message that does not would fail every receive of its queue).
func FuzzBuildMessage(f *testing.F) {
	props, _ := message.EncodeProperties(map[string]string{
		message.PropertyTags: "TagA", message.PropertyKeys: "k1 k2", "color": "red",
		message.PropertyUniqClientMessageIDKeyIdx: "01AA", message.PropertyTimerDeliverMS: "1700000000123",
		message.PropertyShardingKey: "g1", message.PropertyTraceContext: "tc",
	})
	f.Add(props, []byte("hello"), int32(0))
	f.Add([]byte("TAGS\x01\xff\xfe\x02KEYS\x01a\xc3\x28 b\x02\xf0\x28\x8c\xbc\x01v\x02"), []byte("x"), int32(0))
	z, flag, _ := message.Compress([]byte("compressed body"))
	f.Add(props, z, flag)
	f.Add(props, []byte("not zlib"), int32(message.FlagCompressed))
	f.Fuzz(func(t *testing.T, props, body []byte, sysFlag int32) {
		m := &message.Message{
			Topic: "T", Properties: message.DecodeProperties(props), Body: body, SysFlag: sysFlag,
			BornHost: netip.MustParseAddrPort("10.0.0.1:5000"), StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
		}
		if b, err := message.Decompress(m.Body, m.SysFlag, 1<<16); err == nil {
			m.Body = b
		}
		out := buildMessage(m, &v2pb.Resource{Name: "T"}, time.Minute)
		if _, err := proto.Marshal(out); err != nil {
			t.Fatalf("converted message does not marshal: %v", err)
		}
	})
}

// TestBuildMessageMendsInvalidUTF8 is FuzzBuildMessage's crasher: a message
// stored over remoting with a tag, keys and a user property that are not
// UTF-8 converted to a message protobuf refused to marshal. Each run of bad
// bytes becomes U+FFFD.
func TestBuildMessageMendsInvalidUTF8(t *testing.T) {
	m := &message.Message{Topic: "T", Body: []byte("x"), Properties: map[string]string{
		message.PropertyTags: "a\xffb", message.PropertyKeys: "k\xc3\x28 ok", "us\xfe\xfer": "v\x80",
		message.PropertyUniqClientMessageIDKeyIdx: "01\xff",
	}}
	out := buildMessage(m, &v2pb.Resource{Name: "T"}, time.Minute)
	if _, err := proto.Marshal(out); err != nil {
		t.Fatal(err)
	}
	sp := out.GetSystemProperties()
	if sp.GetTag() != "a\uFFFDb" || strings.Join(sp.GetKeys(), ",") != "k\uFFFD(,ok" || sp.GetMessageId() != "01\uFFFD" ||
		out.GetUserProperties()["us\uFFFDr"] != "v\uFFFD" {
		t.Fatalf("tag %q keys %q id %q user %q", sp.GetTag(), sp.GetKeys(), sp.GetMessageId(), out.GetUserProperties())
	}
}
