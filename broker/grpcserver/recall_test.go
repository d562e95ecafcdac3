package grpcserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/remoting/code"
)

// recallBackend records RECALL_MESSAGE and answers result (or err).
type recallBackend struct {
	fakeBackend
	asked  chan [2]string // topic, handle
	result RecallResult
	err    error
}

func (b recallBackend) Recall(_ context.Context, topic, handle string) (RecallResult, error) {
	b.asked <- [2]string{topic, handle}
	return b.result, b.err
}

// TestRecallMessage: the proxy's checks before the broker's
// RECALL_MESSAGE, and how its answers are passed on.
func TestRecallMessage(t *testing.T) {
	topics := map[string]Topic{
		"D":   {ReadQueues: 2, WriteQueues: 2, Perm: 6, MessageType: "DELAY"},
		"MIX": {ReadQueues: 2, WriteQueues: 2, Perm: 6, MessageType: "MIXED"},
		"N":   {ReadQueues: 2, WriteQueues: 2, Perm: 6},
		"F":   {ReadQueues: 2, WriteQueues: 2, Perm: 6, MessageType: "FIFO"},
	}
	tests := []struct {
		name    string
		topic   string
		result  RecallResult
		err     error
		code    v2pb.Code
		message string // the status message, when checked
		asked   bool   // the broker's RECALL_MESSAGE ran
	}{
		{"recalled", "D", RecallResult{Code: code.Success, MessageID: "01AB"}, nil, v2pb.Code_OK, "OK", true},
		{"mixed topic", "MIX", RecallResult{Code: code.Success, MessageID: "01AB"}, nil, v2pb.Code_OK, "", true},
		{"normal topic", "N", RecallResult{}, nil, v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
			"TopicMessageType validate failed, the expected type is NORMAL, but actual type is DELAY", false},
		{"fifo topic", "F", RecallResult{}, nil, v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "", false},
		{"unknown topic", "Nope", RecallResult{}, nil, v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
			"TopicMessageType validate failed, the expected type is UNSPECIFIED, but actual type is DELAY", false},
		{"bad topic name", "a b", RecallResult{}, nil, v2pb.Code_ILLEGAL_TOPIC, "", false},
		{"system topic", "SCHEDULE_TOPIC_XXXX", RecallResult{}, nil, v2pb.Code_ILLEGAL_TOPIC, "", false},
		{"broker refuses the handle", "D", RecallResult{Code: code.IllegalOperation, Remark: "recall handle is invalid"}, nil,
			v2pb.Code_INTERNAL_SERVER_ERROR, "recall handle is invalid", true},
		{"broker busy", "D", RecallResult{Code: code.SystemBusy, Remark: "busy"}, nil, v2pb.Code_INTERNAL_SERVER_ERROR, "busy", true},
		{"backend error", "D", RecallResult{}, errors.New("no route"), v2pb.Code_INTERNAL_SERVER_ERROR, "recall: no route", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := recallBackend{fakeBackend: fakeBackend{topics: topics}, asked: make(chan [2]string, 1), result: tc.result, err: tc.err}
			c, _ := messagingClient(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r, err := c.RecallMessage(ctx, &v2pb.RecallMessageRequest{Topic: &v2pb.Resource{Name: tc.topic}, RecallHandle: "h1"})
			if err != nil {
				t.Fatal(err)
			}
			if r.GetStatus().GetCode() != tc.code || (tc.message != "" && r.GetStatus().GetMessage() != tc.message) {
				t.Fatalf("status %v, want %v %q", r.GetStatus(), tc.code, tc.message)
			}
			if tc.code == v2pb.Code_OK && r.GetMessageId() != "01AB" {
				t.Errorf("message id %q, want 01AB", r.GetMessageId())
			}
			select {
			case got := <-b.asked:
				if !tc.asked {
					t.Errorf("RECALL_MESSAGE ran for %v, want refused before", got)
				} else if got != [2]string{tc.topic, "h1"} {
					t.Errorf("RECALL_MESSAGE for %v, want %s h1", got, tc.topic)
				}
			default:
				if tc.asked {
					t.Error("RECALL_MESSAGE never ran")
				}
			}
		})
	}
}

// TestRecallMessageNotServed: a backend without recall answers
// NOT_IMPLEMENTED.
func TestRecallMessageNotServed(t *testing.T) {
	c, _ := messagingClient(t, fakeBackend{topics: map[string]Topic{"D": {Perm: 6, MessageType: "DELAY"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.RecallMessage(ctx, &v2pb.RecallMessageRequest{Topic: &v2pb.Resource{Name: "D"}, RecallHandle: "h"})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_NOT_IMPLEMENTED {
		t.Fatalf("%v %v, want NOT_IMPLEMENTED", r, err)
	}
}

// TestSendAnswersRecallHandle: a send's recall handle reaches the client.
func TestSendAnswersRecallHandle(t *testing.T) {
	b := fakeBackend{topics: map[string]Topic{"D": {ReadQueues: 1, WriteQueues: 1, Perm: 6, MessageType: "DELAY"}},
		sent: make(chan SendInput, 1), result: SendResult{Code: code.Success, RecallHandle: "handle-1"}}
	c, _ := messagingClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg := typedMessage("D", "01D1", func(sp *v2pb.SystemProperties) {
		sp.MessageType, sp.DeliveryTimestamp = v2pb.MessageType_DELAY, timestamppb.New(time.Now().Add(time.Minute))
	})
	r, err := c.SendMessage(ctx, &v2pb.SendMessageRequest{Messages: []*v2pb.Message{msg}})
	if err != nil || r.GetStatus().GetCode() != v2pb.Code_OK || len(r.GetEntries()) != 1 {
		t.Fatalf("%v %v", r, err)
	}
	if h := r.GetEntries()[0].GetRecallHandle(); h != "handle-1" {
		t.Errorf("recall handle %q, want handle-1", h)
	}
}
