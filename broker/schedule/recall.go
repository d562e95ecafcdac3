package schedule

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// RecallHandle names a pending timer message for RECALL_MESSAGE (Java
// 5.3.2+ RecallMessageHandle.HandleV1): "v1 topic brokerName timestamp
// uniqKey", base64url-encoded. The send response of a timer message carries
// it (recallHandle); DefaultMQProducer.recallMessage hands it back.
type RecallHandle struct {
	Topic      string
	BrokerName string
	// Timestamp is the start of the message's timer slot + 1 ms, as Java
	// writes it (TIMER_OUT_MS, which Java floors to the slot start, + 1):
	// a time inside the message's slot, which is what a cancellation
	// marker must name (cancel.go).
	Timestamp string
	MessageID string // UNIQ_KEY
}

const recallVersion = "v1"

// ErrBadRecallHandle is what decoding a malformed handle returns (Java's
// DecoderException message).
var ErrBadRecallHandle = errors.New("recall handle is invalid")

// Encode is Java's HandleV1.buildHandle (URL-safe base64 with padding).
func (h RecallHandle) Encode() string {
	raw := strings.Join([]string{recallVersion, h.Topic, h.BrokerName, h.Timestamp, h.MessageID}, " ")
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// DecodeRecallHandle is Java's RecallMessageHandle.decodeHandle: padding
// optional, at least five space-separated fields, version v1.
func DecodeRecallHandle(s string) (RecallHandle, error) {
	if s == "" {
		return RecallHandle{}, ErrBadRecallHandle
	}
	raw, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(s); err != nil {
			return RecallHandle{}, ErrBadRecallHandle
		}
	}
	items := strings.Split(string(raw), " ")
	if items[0] != recallVersion || len(items) < 5 {
		return RecallHandle{}, ErrBadRecallHandle
	}
	return RecallHandle{Topic: items[1], BrokerName: items[2], Timestamp: items[3], MessageID: items[4]}, nil
}

// RecallHandle is the send path's recall handle for a message Schedule
// parked as a timer (Java's SendMessageProcessor.attachRecallHandle): its
// real topic, the broker, its slot's start + 1 and its UNIQ_KEY; "" for
// anything else (delay levels, retries, messages not parked).
func (s *Service) RecallHandle(msg *message.Message, brokerName string) string {
	if msg.Topic != TimerTopic || msg.Properties == nil {
		return ""
	}
	out, ok := msg.Properties[message.PropertyTimerOutMS]
	real := msg.Properties[message.PropertyRealTopic]
	if !ok || real == "" || strings.HasPrefix(real, protocol.RetryGroupTopicPrefix) {
		return ""
	}
	ms, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return ""
	}
	return RecallHandle{Topic: real, BrokerName: brokerName, Timestamp: strconv.FormatInt(handleTime(ms, s.precision()), 10),
		MessageID: msg.UniqKey()}.Encode()
}

// handleTime is the recall handle's time for a timer due at dueMs: the
// start of its slot + 1 ms. TIMER_OUT_MS keeps the exact delivery time
// here, where Java's is already floored to the slot start (a due time on
// a slot boundary belongs to the slot before: HookUtils.transformTimerMessage).
// dueMs + 1 would name the next slot for a due time on a boundary, and
// the marker would cancel nothing.
func handleTime(dueMs int64, precision time.Duration) int64 {
	p := max(precision.Milliseconds(), 1)
	return slotEnd(dueMs, precision) - p + 1
}

// RecallTag is the tag of the cancellation markers RECALL_MESSAGE stores.
const RecallTag = "_RECALL_TAG_"

// RecallMarker is the cancellation marker of a recall (Java's
// RecallMessageProcessor.buildMessage): a timer message to the handle's
// topic, due at the handle's time, whose TIMER_DEL_UNIQKEY names the
// message. Pass it through Schedule, then store it.
func RecallMarker(h RecallHandle, producerGroup string, bornMs int64) *message.Message {
	props := map[string]string{
		message.PropertyTags:                      RecallTag,
		message.PropertyTimerDelUniqKey:           DeleteKey(h.Topic, h.MessageID),
		message.PropertyUniqClientMessageIDKeyIdx: h.MessageID,
		message.PropertyTimerDeliverMS:            h.Timestamp,
		message.PropertyBornTimestamp:             strconv.FormatInt(bornMs, 10),
		// Java also writes an empty TRACE_CONTEXT; the stored format here
		// refuses empty values, and nothing reads it.
	}
	if producerGroup != "" {
		props[message.PropertyProducerGroup] = producerGroup
	}
	return &message.Message{Topic: h.Topic, Body: []byte("0"), Properties: props, BornTimestamp: bornMs}
}
