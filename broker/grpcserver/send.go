package grpcserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
)

// SendInput is one message for the broker's send path: properties in
// RocketMQ's own names (TAGS, KEYS, UNIQ_KEY, user properties).
type SendInput struct {
	Topic         string
	QueueID       int32
	Body          []byte
	Properties    map[string]string
	BornTimestamp int64
}

// SendResult is the send path's answer: a remoting response code
// (remoting/code) and remark, and the queue offset on success.
type SendResult struct {
	Code   int32
	Remark string
	Offset int64
}

// Sender stores messages through the broker's send path.
type Sender interface {
	Send(ctx context.Context, in SendInput) (SendResult, error)
}

// Remoting response codes the send path answers (remoting/code).
const (
	rcSuccess             = 0
	rcSystemBusy          = 2
	rcFlushDiskTimeout    = 10
	rcSlaveNotAvailable   = 11
	rcFlushSlaveTimeout   = 12
	rcMessageIllegal      = 13
	rcServiceNotAvailable = 14
	rcNoPermission        = 16
	rcTopicNotExist       = 17
)

// sendCode maps a send response code to the gRPC status code the proxy
// gives for it.
func sendCode(rc int32) v2pb.Code {
	switch rc {
	case rcSuccess:
		return v2pb.Code_OK
	case rcFlushDiskTimeout:
		return v2pb.Code_MASTER_PERSISTENCE_TIMEOUT
	case rcFlushSlaveTimeout:
		return v2pb.Code_SLAVE_PERSISTENCE_TIMEOUT
	case rcSlaveNotAvailable:
		return v2pb.Code_HA_NOT_AVAILABLE
	case rcMessageIllegal:
		return v2pb.Code_BAD_REQUEST
	case rcNoPermission:
		return v2pb.Code_FORBIDDEN
	case rcTopicNotExist:
		return v2pb.Code_TOPIC_NOT_FOUND
	case rcSystemBusy, rcServiceNotAvailable:
		return v2pb.Code_TOO_MANY_REQUESTS
	}
	return v2pb.Code_INTERNAL_SERVER_ERROR
}

// SendMessage stores NORMAL messages through the broker's send path (its
// checks, topic permissions and store). The queue is chosen round robin
// over the topic's writable queues, as the proxy does for messages without
// a message group. FIFO, delay, transactional, lite and priority messages
// are not served yet: NOT_IMPLEMENTED.
func (m *messaging) SendMessage(ctx context.Context, req *v2pb.SendMessageRequest) (*v2pb.SendMessageResponse, error) {
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return &v2pb.SendMessageResponse{Status: &v2pb.Status{Code: v2pb.Code_BAD_REQUEST, Message: "no message to send"}}, nil
	}
	resp := &v2pb.SendMessageResponse{Status: ok()}
	for _, msg := range msgs {
		e := m.sendOne(ctx, msg)
		resp.Entries = append(resp.Entries, e)
		if e.GetStatus().GetCode() != v2pb.Code_OK && resp.Status.GetCode() == v2pb.Code_OK {
			resp.Status = e.GetStatus()
		}
	}
	return resp, nil
}

func (m *messaging) sendOne(ctx context.Context, msg *v2pb.Message) *v2pb.SendResultEntry {
	sp := msg.GetSystemProperties()
	id := sp.GetMessageId()
	fail := func(c v2pb.Code, format string, args ...any) *v2pb.SendResultEntry {
		return &v2pb.SendResultEntry{Status: &v2pb.Status{Code: c, Message: fmt.Sprintf(format, args...)}, MessageId: id}
	}
	if id == "" {
		return fail(v2pb.Code_ILLEGAL_MESSAGE_ID, "message id is empty")
	}
	if sp.MessageGroup != nil || sp.DeliveryTimestamp != nil || sp.OrphanedTransactionRecoveryDuration != nil ||
		sp.LiteTopic != nil || sp.Priority != nil ||
		(sp.GetMessageType() != v2pb.MessageType_NORMAL && sp.GetMessageType() != v2pb.MessageType_MESSAGE_TYPE_UNSPECIFIED) {
		return fail(v2pb.Code_NOT_IMPLEMENTED, "only NORMAL messages are served over gRPC yet (message type %v)", sp.GetMessageType())
	}
	name := msg.GetTopic().GetName()
	t, found := m.backend.Topic(name)
	if !found {
		return fail(v2pb.Code_TOPIC_NOT_FOUND, "topic not found: %s", name)
	}
	if t.Perm&permWrite == 0 || t.WriteQueues <= 0 {
		return fail(v2pb.Code_FORBIDDEN, "topic %s is not writable", name)
	}
	body := msg.GetBody()
	switch sp.GetBodyEncoding() {
	case v2pb.Encoding_GZIP:
		var err error
		limit := m.backend.MaxMessageSize()
		if body, err = gunzip(body, limit); err != nil {
			return fail(v2pb.Code_MESSAGE_CORRUPTED, "gzip body: %v", err)
		}
		if len(body) > limit {
			return fail(v2pb.Code_MESSAGE_BODY_TOO_LARGE, "body larger than %d bytes once decompressed", limit)
		}
	case v2pb.Encoding_IDENTITY, v2pb.Encoding_ENCODING_UNSPECIFIED:
	default:
		return fail(v2pb.Code_BAD_REQUEST, "unknown body encoding %v", sp.GetBodyEncoding())
	}
	props := make(map[string]string, len(msg.GetUserProperties())+3)
	for k, v := range msg.GetUserProperties() {
		props[k] = v
	}
	if sp.Tag != nil {
		props[message.PropertyTags] = sp.GetTag()
	}
	if len(sp.GetKeys()) > 0 {
		props[message.PropertyKeys] = strings.Join(sp.GetKeys(), message.KeySeparator)
	}
	props[message.PropertyUniqClientMessageIDKeyIdx] = id
	queue := int32(m.next.Add(1) % uint64(t.WriteQueues))
	res, err := m.backend.Send(ctx, SendInput{
		Topic: name, QueueID: queue, Body: body, Properties: props,
		BornTimestamp: sp.GetBornTimestamp().AsTime().UnixMilli(),
	})
	if err != nil {
		return fail(v2pb.Code_INTERNAL_SERVER_ERROR, "send: %v", err)
	}
	if res.Code != rcSuccess {
		return fail(sendCode(res.Code), "%s", res.Remark)
	}
	return &v2pb.SendResultEntry{Status: ok(), MessageId: id, Offset: res.Offset}
}

// gunzip decompresses at most limit+1 bytes (enough to tell the body is
// too large).
func gunzip(b []byte, limit int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, int64(limit)+1))
}
