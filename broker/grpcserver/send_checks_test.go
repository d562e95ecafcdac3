package grpcserver

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
)

// TestSendMessageBadInput: the proxy's checks of a message, each with its
// status code; nothing reaches the broker and the server keeps serving.
func TestSendMessageBadInput(t *testing.T) {
	many := map[string]string{}
	for i := 0; i <= userPropertyMaxNum; i++ {
		many["p"+strconv.Itoa(i)] = "v"
	}
	edit := func(f func(m *v2pb.Message)) *v2pb.Message {
		m := normalMessage("T", "01B", []byte("x"))
		f(m)
		return m
	}
	tests := []struct {
		name string
		msg  *v2pb.Message
		code v2pb.Code
	}{
		{"empty body", edit(func(m *v2pb.Message) { m.Body = nil }), v2pb.Code_MESSAGE_BODY_EMPTY},
		{"body over maxMessageSize", edit(func(m *v2pb.Message) { m.Body = make([]byte, 4<<20+1) }), v2pb.Code_MESSAGE_BODY_TOO_LARGE},
		{"too many user properties", edit(func(m *v2pb.Message) { m.UserProperties = many }), v2pb.Code_MESSAGE_PROPERTIES_TOO_LARGE},
		{"user properties too large", edit(func(m *v2pb.Message) { m.UserProperties = map[string]string{"big": strings.Repeat("v", 16*1024)} }),
			v2pb.Code_MESSAGE_PROPERTIES_TOO_LARGE},
		{"control character in a property key", edit(func(m *v2pb.Message) { m.UserProperties = map[string]string{"a\x01": "v"} }),
			v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"control character in a property value", edit(func(m *v2pb.Message) { m.UserProperties = map[string]string{"a": "v\n"} }),
			v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"system property", edit(func(m *v2pb.Message) { m.UserProperties = map[string]string{"UNIQ_KEY": "x"} }),
			v2pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"blank tag", edit(func(m *v2pb.Message) { m.SystemProperties.Tag = ptr("  ") }), v2pb.Code_ILLEGAL_MESSAGE_TAG},
		{"tag with |", edit(func(m *v2pb.Message) { m.SystemProperties.Tag = ptr("a|b") }), v2pb.Code_ILLEGAL_MESSAGE_TAG},
		{"tag with a control character", edit(func(m *v2pb.Message) { m.SystemProperties.Tag = ptr("a\x7f") }), v2pb.Code_ILLEGAL_MESSAGE_TAG},
		{"blank key", edit(func(m *v2pb.Message) { m.SystemProperties.Keys = []string{"k", " "} }), v2pb.Code_ILLEGAL_MESSAGE_KEY},
		{"key with a control character", edit(func(m *v2pb.Message) { m.SystemProperties.Keys = []string{"k\t"} }), v2pb.Code_ILLEGAL_MESSAGE_KEY},
		{"group of 64 bytes", edit(func(m *v2pb.Message) {
			m.SystemProperties.MessageType, m.SystemProperties.MessageGroup = v2pb.MessageType_FIFO, ptr(strings.Repeat("g", 64))
		}), v2pb.Code_ILLEGAL_MESSAGE_GROUP},
		{"group with a control character", edit(func(m *v2pb.Message) {
			m.SystemProperties.MessageType, m.SystemProperties.MessageGroup = v2pb.MessageType_FIFO, ptr("g\x00")
		}), v2pb.Code_ILLEGAL_MESSAGE_GROUP},
		{"recovery beyond an hour", edit(func(m *v2pb.Message) {
			m.SystemProperties.MessageType = v2pb.MessageType_TRANSACTION
			m.SystemProperties.OrphanedTransactionRecoveryDuration = durationpb.New(time.Hour + time.Second)
		}), v2pb.Code_BAD_REQUEST},
		{"blank message id", edit(func(m *v2pb.Message) { m.SystemProperties.MessageId = "  " }), v2pb.Code_ILLEGAL_MESSAGE_ID},
	}
	b := fakeBackend{topics: map[string]Topic{"T": {ReadQueues: 1, WriteQueues: 1, Perm: 6}}, sent: make(chan SendInput, 1)}
	c, _ := messagingClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range tests {
		r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{tc.msg}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if st := r.GetEntries()[0].GetStatus(); st.GetCode() != tc.code || st.GetMessage() == "" {
			t.Errorf("%s: %v, want %v with a message", tc.name, st, tc.code)
		}
		select {
		case in := <-b.sent:
			t.Errorf("%s: reached the broker: %+v", tc.name, in)
		default:
		}
	}
	// A body of exactly maxMessageSize passes the transport (gRPC's own
	// 4 MiB request limit would refuse it) and the checks.
	r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{normalMessage("T", "01OK", make([]byte, 4<<20))}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK {
		t.Fatalf("a good send of maxMessageSize after the bad ones: %v %v", r.GetStatus(), err)
	}
	if in := <-b.sent; len(in.Body) != 4<<20 {
		t.Fatalf("body of %d bytes stored", len(in.Body))
	}
}
