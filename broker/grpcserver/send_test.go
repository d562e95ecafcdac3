package grpcserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func normalMessage(topic, id string, body []byte) *v2pb.Message {
	tag := "TagA"
	return &v2pb.Message{
		Topic:          &v2pb.Resource{Name: topic},
		UserProperties: map[string]string{"color": "red"},
		SystemProperties: &v2pb.SystemProperties{
			Tag: &tag, Keys: []string{"k1", "k2"}, MessageId: id,
			BodyEncoding: v2pb.Encoding_IDENTITY, MessageType: v2pb.MessageType_NORMAL,
			BornTimestamp: timestamppb.New(time.UnixMilli(1700000000123)), BornHost: "10.0.0.9",
		},
		Body: body,
	}
}

func TestSendMessage(t *testing.T) {
	born := time.UnixMilli(1700000000123)
	group := "g1"
	tests := []struct {
		name     string
		msg      func() *v2pb.Message
		result   SendResult
		code     v2pb.Code
		stored   bool   // the backend got the message
		wantBody string // the body the backend got
	}{
		{"normal", func() *v2pb.Message { return normalMessage("T", "01AA", []byte("hello")) }, SendResult{Offset: 42}, v2pb.Code_OK, true, "hello"},
		{"gzip body stored decompressed", func() *v2pb.Message {
			m := normalMessage("T", "01AB", gz(t, []byte("zipped")))
			m.SystemProperties.BodyEncoding = v2pb.Encoding_GZIP
			return m
		}, SendResult{Offset: 1}, v2pb.Code_OK, true, "zipped"},
		{"corrupt gzip", func() *v2pb.Message {
			m := normalMessage("T", "01AC", []byte("not gzip"))
			m.SystemProperties.BodyEncoding = v2pb.Encoding_GZIP
			return m
		}, SendResult{}, v2pb.Code_MESSAGE_CORRUPTED, false, ""},
		{"gzip bomb", func() *v2pb.Message {
			m := normalMessage("T", "01AD", gz(t, make([]byte, 5<<20)))
			m.SystemProperties.BodyEncoding = v2pb.Encoding_GZIP
			return m
		}, SendResult{}, v2pb.Code_MESSAGE_BODY_TOO_LARGE, false, ""},
		{"empty id", func() *v2pb.Message { return normalMessage("T", "", []byte("x")) }, SendResult{}, v2pb.Code_ILLEGAL_MESSAGE_ID, false, ""},
		{"fifo on a topic without message.type (NORMAL)", func() *v2pb.Message {
			m := normalMessage("T", "01AE", []byte("x"))
			m.SystemProperties.MessageGroup = &group
			m.SystemProperties.MessageType = v2pb.MessageType_FIFO
			return m
		}, SendResult{}, v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, false, ""},
		{"missing topic", func() *v2pb.Message { return normalMessage("Nope", "01AF", []byte("x")) }, SendResult{}, v2pb.Code_TOPIC_NOT_FOUND, false, ""},
		{"read-only topic", func() *v2pb.Message { return normalMessage("RO", "01B0", []byte("x")) }, SendResult{}, v2pb.Code_FORBIDDEN, false, ""},
		{"store: flush disk timeout", func() *v2pb.Message { return normalMessage("T", "01B1", []byte("x")) }, SendResult{Code: rcFlushDiskTimeout, Remark: "slow disk"}, v2pb.Code_MASTER_PERSISTENCE_TIMEOUT, true, "x"},
		{"store: topic not exist", func() *v2pb.Message { return normalMessage("T", "01B2", []byte("x")) }, SendResult{Code: rcTopicNotExist, Remark: "gone"}, v2pb.Code_TOPIC_NOT_FOUND, true, "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := fakeBackend{
				topics: map[string]Topic{"T": {ReadQueues: 4, WriteQueues: 4, Perm: 6}, "RO": {ReadQueues: 4, WriteQueues: 4, Perm: 4}},
				sent:   make(chan SendInput, 1), result: tc.result,
			}
			c, _ := messagingClient(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			msg := tc.msg()
			resp, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{msg}})
			if err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
			if resp.GetStatus().GetCode() != tc.code || len(resp.GetEntries()) != 1 || resp.GetEntries()[0].GetStatus().GetCode() != tc.code {
				t.Fatalf("answer %v, want %v", resp, tc.code)
			}
			e := resp.GetEntries()[0]
			if e.GetMessageId() != msg.GetSystemProperties().GetMessageId() {
				t.Errorf("entry message id %q, want %q", e.GetMessageId(), msg.GetSystemProperties().GetMessageId())
			}
			if tc.code == v2pb.Code_OK && e.GetOffset() != tc.result.Offset {
				t.Errorf("offset %d, want %d", e.GetOffset(), tc.result.Offset)
			}
			select {
			case in := <-b.sent:
				if !tc.stored {
					t.Fatalf("backend got %v, want nothing stored", in)
				}
				p := in.Properties
				if in.Topic != "T" || string(in.Body) != tc.wantBody || in.BornTimestamp != born.UnixMilli() ||
					p["TAGS"] != "TagA" || p["KEYS"] != "k1 k2" || p["UNIQ_KEY"] != msg.GetSystemProperties().GetMessageId() || p["color"] != "red" ||
					in.QueueID < 0 || in.QueueID >= 4 {
					t.Fatalf("backend got %+v", in)
				}
			default:
				if tc.stored {
					t.Fatalf("nothing reached the backend")
				}
			}
		})
	}
}

// TestSendMessageRoundRobin: successive sends go to every writable queue.
func TestSendMessageRoundRobin(t *testing.T) {
	b := fakeBackend{topics: map[string]Topic{"T": {ReadQueues: 3, WriteQueues: 3, Perm: 6}}, sent: make(chan SendInput, 6)}
	c, _ := messagingClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	seen := map[int32]int{}
	for i := 0; i < 6; i++ {
		if _, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{normalMessage("T", "01CC", []byte("x"))}}); err != nil {
			t.Fatal(err)
		}
		seen[(<-b.sent).QueueID]++
	}
	if len(seen) != 3 || seen[0] != 2 || seen[1] != 2 || seen[2] != 2 {
		t.Fatalf("queues used %v, want each of 0..2 twice", seen)
	}
}

func TestSendMessageEmpty(t *testing.T) {
	c, _ := messagingClient(t, fakeBackend{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{})
	if err != nil || resp.GetStatus().GetCode() != v2pb.Code_MESSAGE_CORRUPTED {
		t.Fatalf("SendMessage with no message: %v %v, want MESSAGE_CORRUPTED (the proxy's)", resp, err)
	}
}

// TestPickQueueStatic: a static topic's messages go to the logic queues
// this broker leads (round robin; a FIFO group by its hash, always the
// same), -1 when it leads none (the rewriting then answers
// NOT_LEADER_FOR_QUEUE); a normal topic's to its write queues.
func TestPickQueueStatic(t *testing.T) {
	static := Topic{ReadQueues: 3, WriteQueues: 3, Perm: 6, Static: true, Logic: []int32{1, 4}}
	normal := Topic{ReadQueues: 3, WriteQueues: 3, Perm: 6}
	tests := []struct {
		name  string
		t     Topic
		group string
		want  []int32 // for next = 0, 1, 2, 3
	}{
		{"static round robin", static, "", []int32{1, 4, 1, 4}},
		{"static leads none", Topic{ReadQueues: 1, WriteQueues: 1, Perm: 6, Static: true}, "", []int32{-1, -1, -1, -1}},
		{"static FIFO", static, "g1", []int32{static.Logic[jumpHash(int64(javaHashCode("g1")), 2)], static.Logic[jumpHash(int64(javaHashCode("g1")), 2)],
			static.Logic[jumpHash(int64(javaHashCode("g1")), 2)], static.Logic[jumpHash(int64(javaHashCode("g1")), 2)]}},
		{"normal round robin", normal, "", []int32{0, 1, 2, 0}},
	}
	for _, tc := range tests {
		for next, want := range tc.want {
			if got := pickQueue(tc.t, uint64(next), tc.group); got != want {
				t.Errorf("%s: pickQueue(next %d) = %d, want %d", tc.name, next, got, want)
			}
		}
	}
}

// addrPortOf reads a TCP peer's address as its string would parse.
func TestAddrPortOf(t *testing.T) {
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}, // 16-byte form
		&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1).To4(), Port: 1},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 7, Zone: "eth0"},
		&net.TCPAddr{IP: net.ParseIP("::1"), Port: 8081},
		&net.UnixAddr{Name: "/tmp/x", Net: "unix"},
	} {
		if got, want := addrPortOf(a), peerAddrPort(a.String()); got != want {
			t.Errorf("%v: %v, want %v", a, got, want)
		}
	}
	if got := addrPortOf(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5000}); got.String() != "127.0.0.1:5000" {
		t.Errorf("v4 peer %v", got)
	}
}
