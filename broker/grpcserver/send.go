package grpcserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// SendInput is one message for the broker's send path: properties in
// RocketMQ's own names (TAGS, KEYS, UNIQ_KEY, user properties).
type SendInput struct {
	Topic         string
	QueueID       int32
	Body          []byte
	Properties    map[string]string
	BornTimestamp int64
	// SysFlag is the request's sysFlag (the transaction type of a half
	// message).
	SysFlag int32
	// ProducerGroup is the header's producer group: the topic, as the
	// proxy sends it.
	ProducerGroup string
	// BornHost is the gRPC peer's address, stored as the born host.
	BornHost netip.AddrPort
}

// SendResult is the send path's answer: a remoting response code
// (remoting/code) and remark, and on success the queue offset, the
// transaction id (half messages), the CommitLog offset and the recall
// handle (timer messages, recall.go).
type SendResult struct {
	Code            int32
	Remark          string
	Offset          int64
	TransactionID   string
	CommitLogOffset int64
	RecallHandle    string
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
	// Everything else, NOT_LEADER_FOR_QUEUE (501, a static topic's logic
	// queue led elsewhere) included, is INTERNAL_SERVER_ERROR, as the
	// proxy's ResponseBuilder.buildCode default: the 5.x producers retry
	// such a failure at once on the next queue of their route, and their
	// periodic route refresh follows the move (docs/static-topics.md §6.8).
	return v2pb.Code_INTERNAL_SERVER_ERROR
}

// SendMessage stores messages through the broker's send path (its checks,
// topic permissions and store), as Apache's proxy builds them (Apache
// proxy/src/main/java/org/apache/rocketmq/proxy/grpc/v2/producer/
// SendMessageActivity.java and BuildMessagePropertyUtil.java,
// proxy/.../processor/ProducerProcessor.java):
//   - the message type, from the message (TRANSACTION when declared so, then
//     DELAY with a delivery timestamp, FIFO with a message group, PRIORITY
//     with a priority, LITE with a lite topic, else NORMAL), must be the
//     topic's message.type (MIXED takes all; a topic without one is
//     NORMAL): MESSAGE_PROPERTY_CONFLICT_WITH_TYPE;
//   - FIFO: the group is the __SHARDINGKEY property and picks the queue by
//     a consistent hash of its Java hashCode over the writable queues, so a
//     group stays on one queue; other messages go round robin;
//   - DELAY: TIMER_DELIVER_MS is the delivery timestamp; one further ahead
//     than timerMaxDelaySec is ILLEGAL_DELIVERY_TIME; one in the past is
//     delivered at once;
//   - TRANSACTION: the half message (TRAN_MSG, the PREPARED sysFlag type,
//     CHECK_IMMUNITY_TIME_IN_SECONDS from the recovery duration);
//   - PRIORITY: the priority is _SYS_MSG_PRIORITY_; LITE: the lite topic is
//     __LITE_TOPIC (a bad name: ILLEGAL_LITE_TOPIC), which the broker's send
//     path dispatches to the lite topic's queue;
//   - every message: PGROUP is the topic (the group of transactions),
//     __BORNHOST the client's host (or the peer's), BORN_TIMESTAMP, and the
//     peer's address is the stored born host.
func (m *messaging) SendMessage(ctx context.Context, req *v2pb.SendMessageRequest) (*v2pb.SendMessageResponse, error) {
	msgs := req.GetMessages()
	// As the proxy's SendMessageActivity: a request carries one topic's
	// messages; none, or another topic than the first's, is
	// MESSAGE_CORRUPTED and nothing is sent.
	if len(msgs) == 0 {
		return &v2pb.SendMessageResponse{Status: &v2pb.Status{Code: v2pb.Code_MESSAGE_CORRUPTED, Message: "no message to send"}}, nil
	}
	for _, msg := range msgs[1:] {
		if !proto.Equal(msg.GetTopic(), msgs[0].GetTopic()) {
			return &v2pb.SendMessageResponse{Status: &v2pb.Status{Code: v2pb.Code_MESSAGE_CORRUPTED, Message: "topic in message is not same"}}, nil
		}
	}
	var peerAddr netip.AddrPort
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		peerAddr = addrPortOf(p.Addr)
	}
	resp := &v2pb.SendMessageResponse{Status: ok()}
	for _, msg := range msgs {
		e := m.sendOne(ctx, msg, peerAddr)
		resp.Entries = append(resp.Entries, e)
		if e.GetStatus().GetCode() != v2pb.Code_OK && resp.Status.GetCode() == v2pb.Code_OK {
			resp.Status = e.GetStatus()
		}
	}
	return resp, nil
}

// Topic message types (the message.type attribute).
const (
	typeNormal      = "NORMAL"
	typeFIFO        = "FIFO"
	typeDelay       = "DELAY"
	typeTransaction = "TRANSACTION"
	typePriority    = "PRIORITY"
	typeLite        = "LITE"
	typeMixed       = "MIXED"
)

// messageType is the type the proxy derives from the properties it sets
// (Java's TopicMessageType.parseFromMessageProperty, 5.5): TRANSACTION,
// then DELAY, FIFO, PRIORITY, LITE, else NORMAL.
func messageType(sp *v2pb.SystemProperties) string {
	switch {
	case sp.GetMessageType() == v2pb.MessageType_TRANSACTION:
		return typeTransaction
	case sp.DeliveryTimestamp != nil:
		return typeDelay
	case sp.GetMessageGroup() != "":
		return typeFIFO
	case sp.Priority != nil:
		return typePriority
	case sp.GetLiteTopic() != "":
		return typeLite
	}
	return typeNormal
}

// declared is the client's message type in the topic attribute's names.
func declared(t v2pb.MessageType) string {
	switch t {
	case v2pb.MessageType_NORMAL:
		return typeNormal
	case v2pb.MessageType_FIFO:
		return typeFIFO
	case v2pb.MessageType_DELAY:
		return typeDelay
	case v2pb.MessageType_TRANSACTION:
		return typeTransaction
	case v2pb.MessageType_PRIORITY:
		return typePriority
	case v2pb.MessageType_LITE:
		return typeLite
	}
	return ""
}

// topicAccepts is the proxy's check (Apache proxy/.../processor/validator/
// DefaultTopicMessageTypeValidator.java): the message's type must be the
// topic's, a MIXED topic takes every type, a topic without message.type is
// NORMAL (Java's TopicConfig.getTopicMessageType).
func topicAccepts(topicType, msgType string) bool {
	if topicType == "" {
		topicType = typeNormal
	}
	return topicType == typeMixed || topicType == msgType
}

func (m *messaging) sendOne(ctx context.Context, msg *v2pb.Message, born netip.AddrPort) *v2pb.SendResultEntry {
	sp := msg.GetSystemProperties()
	id := sp.GetMessageId()
	fail := func(c v2pb.Code, format string, args ...any) *v2pb.SendResultEntry {
		return &v2pb.SendResultEntry{Status: &v2pb.Status{Code: c, Message: fmt.Sprintf(format, args...)}, MessageId: id}
	}
	if strings.TrimSpace(id) == "" {
		return fail(v2pb.Code_ILLEGAL_MESSAGE_ID, "message id cannot be empty")
	}
	if st := checkMessage(msg, m.backend.MaxMessageSize()); st != nil {
		return &v2pb.SendResultEntry{Status: st, MessageId: id}
	}
	typ := messageType(sp)
	if d := declared(sp.GetMessageType()); d != "" && d != typ {
		return fail(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "the message is declared %s but its properties make it %s "+
			"(FIFO needs a message group, DELAY a delivery timestamp, PRIORITY a priority, LITE a lite topic, NORMAL none of them)", d, typ)
	}
	name := msg.GetTopic().GetName()
	if err := checkTopicName(name); err != nil {
		return fail(v2pb.Code_ILLEGAL_TOPIC, "%v", err)
	}
	t, found := m.backend.Topic(name)
	if !found {
		return fail(v2pb.Code_TOPIC_NOT_FOUND, "topic not found: %s", name)
	}
	if !topicAccepts(t.MessageType, typ) {
		tt := t.MessageType
		if tt == "" {
			tt = typeNormal
		}
		return fail(v2pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "TopicMessageType validate failed: the topic %s is %s, the message is %s", name, tt, typ)
	}
	if t.Perm&permWrite == 0 || t.WriteQueues <= 0 && !t.Static {
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
	props := make(map[string]string, len(msg.GetUserProperties())+8)
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
	props[message.PropertyProducerGroup] = name
	var sysFlag int32
	queue := pickQueue(t, m.next.Add(1), "")
	switch typ {
	case typeFIFO:
		group := sp.GetMessageGroup()
		props[message.PropertyShardingKey] = group
		queue = pickQueue(t, 0, group)
	case typeDelay:
		at := sp.GetDeliveryTimestamp()
		if err := at.CheckValid(); err != nil {
			return fail(v2pb.Code_ILLEGAL_DELIVERY_TIME, "delivery timestamp: %v", err)
		}
		if maxDelay := m.backend.MaxDelay(); maxDelay > 0 && time.Until(at.AsTime()) > maxDelay {
			return fail(v2pb.Code_ILLEGAL_DELIVERY_TIME, "the delivery time %s is further ahead than the max delay %v (timerMaxDelaySec)",
				at.AsTime().UTC().Format(time.RFC3339Nano), maxDelay)
		}
		props[message.PropertyTimerDeliverMS] = strconv.FormatInt(at.AsTime().UnixMilli(), 10)
	case typePriority:
		if sp.GetPriority() < 0 {
			return fail(v2pb.Code_BAD_REQUEST, "priority %d is negative", sp.GetPriority())
		}
		props[message.PropertyPriority] = strconv.Itoa(int(sp.GetPriority()))
	case typeLite:
		// The broker checks the length against maxLiteTopicSize.
		if err := protocol.ValidateLiteTopic(sp.GetLiteTopic(), math.MaxInt32); err != nil {
			return fail(v2pb.Code_ILLEGAL_LITE_TOPIC, "lite topic %q: %v", sp.GetLiteTopic(), err)
		}
		props[message.PropertyLiteTopic] = sp.GetLiteTopic()
	case typeTransaction:
		sysFlag = txPreparedType
		props[message.PropertyTransactionPrepared] = "true"
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil {
			props[message.PropertyCheckImmunityTimeInSec] = strconv.FormatInt(int64(d.AsDuration()/time.Second), 10)
		}
	}
	if tc := sp.GetTraceContext(); tc != "" {
		props[message.PropertyTraceContext] = tc
	}
	if h := strings.TrimSpace(sp.GetBornHost()); h != "" {
		props[message.PropertyBornHost] = h
	} else if born.IsValid() {
		props[message.PropertyBornHost] = born.Addr().String()
	}
	bornMs := time.Now().UnixMilli()
	if bt := sp.GetBornTimestamp(); bt.IsValid() {
		bornMs = bt.AsTime().UnixMilli()
		props[message.PropertyBornTimestamp] = strconv.FormatInt(bornMs, 10)
	}
	res, err := m.backend.Send(ctx, SendInput{
		Topic: name, QueueID: queue, Body: body, Properties: props,
		BornTimestamp: bornMs, SysFlag: sysFlag, ProducerGroup: name, BornHost: born,
	})
	if err != nil {
		return fail(v2pb.Code_INTERNAL_SERVER_ERROR, "send: %v", err)
	}
	if res.Code != rcSuccess {
		return fail(sendCode(res.Code), "%s", res.Remark)
	}
	e := &v2pb.SendResultEntry{Status: ok(), MessageId: id, Offset: res.Offset, RecallHandle: res.RecallHandle}
	if typ == typeTransaction {
		e.TransactionId = res.TransactionID
		if e.TransactionId == "" {
			e.TransactionId = id
		}
		m.producers.remember(name, e.TransactionId, res.Offset, res.CommitLogOffset)
	}
	return e
}

// pickQueue is the queue a message goes to: for a FIFO message (group not
// empty) the consistent hash of the group's Java hashCode, else the round
// robin counter next, over the topic's write queues.
//
// A static topic (docs/static-topics.md) is written through its logic
// queues, and this broker can only write those it leads (the send
// rewriting turns a logic id into the leader's physical queue, §7.1), so
// the pick is among t.Logic [our choice: Apache's proxy knows no static
// topics — its routes are the physical queueDatas — and the 5.x clients
// do not say which queue they chose (the Python client leaves queue_id
// unset), so the broker picks, as it does for normal topics]. A broker
// leading none gets -1: the rewriting answers NOT_LEADER_FOR_QUEUE, which
// the client retries on another queue of its route until its route
// refresh drops this broker.
func pickQueue(t Topic, next uint64, group string) int32 {
	if t.Static {
		if len(t.Logic) == 0 {
			return -1
		}
		if group != "" {
			return t.Logic[jumpHash(int64(javaHashCode(group)), len(t.Logic))]
		}
		return t.Logic[next%uint64(len(t.Logic))]
	}
	if group != "" {
		return int32(jumpHash(int64(javaHashCode(group)), t.WriteQueues))
	}
	return int32(next % uint64(t.WriteQueues))
}

// checkTopicName is the proxy's GrpcValidator.validateTopic (Apache
// proxy/.../grpc/v2/common/GrpcValidator.java): a legal name, not a system
// topic (ILLEGAL_TOPIC).
func checkTopicName(name string) error {
	if err := protocol.ValidateTopic(name); err != nil {
		return err
	}
	if protocol.IsSystemTopic(name) {
		return fmt.Errorf("cannot access system topic %s", name)
	}
	return nil
}

// javaHashCode is Java's String.hashCode: over UTF-16 code units.
func javaHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// jumpHash is the jump consistent hash of Lamping and Veach ("A Fast,
// Minimal Memory, Consistent Hash Algorithm", 2014) with the linear
// congruential generator Guava's Hashing.consistentHash uses, which the
// proxy calls to place a message group: the same group lands on the same
// queue as behind Apache's proxy.
func jumpHash(key int64, buckets int) int {
	if buckets <= 1 {
		return 0
	}
	state := uint64(key)
	candidate := 0
	for {
		state = 2862933555777941757*state + 1
		next := float64(candidate+1) / (float64(int32(state>>33)+1) / float64(1<<31))
		if next < 0 || next >= float64(buckets) || int(next) >= buckets {
			return candidate
		}
		candidate = int(next)
	}
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
