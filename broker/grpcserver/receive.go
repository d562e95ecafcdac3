package grpcserver

import (
	"context"
	"crypto/md5"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rmqgo/rmq/pkg/grpcapi/v2pb"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/remoting/code"
)

// maxPopBatch is the pop path's cap on one pop (the proxy's
// MAX_MSG_NUMS_FOR_POP_REQUEST): larger batch sizes are lowered to it.
const maxPopBatch = 32

// nackInvisible is how long a popped message the stream could not deliver
// stays invisible (the proxy's NACK_INVISIBLE_TIME).
const nackInvisible = time.Second

// pollingReserve is kept from the client's deadline for the answer to
// travel back (the proxy's longPollingReserveTimeInMillis).
const pollingReserve = 100 * time.Millisecond

// popStatus is the status a receive ends with for a pop's answer other
// than SUCCESS (nil for SUCCESS), as the proxy maps them.
func popStatus(rc int32, remark string) *v2pb.Status {
	switch rc {
	case code.Success:
		return nil
	case code.PollingFull:
		return newStatus(v2pb.Code_TOO_MANY_REQUESTS, "polling full")
	case code.PollingTimeout, code.PullNotFound, code.NoMessage:
		return newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no new message")
	}
	return newStatus(consumeCode(rc), remark)
}

func (m *messaging) consumer() Consumer {
	c, _ := m.backend.(Consumer)
	return c
}

// consumerFor is the consumer backend for an rpc of group on topic, or the
// status that refuses the rpc: NOT_IMPLEMENTED without a consumer backend,
// else checkTopicGroup's.
func (m *messaging) consumerFor(topic, group *v2pb.Resource) (Consumer, *v2pb.Status) {
	c := m.consumer()
	if c == nil {
		return nil, newStatus(v2pb.Code_NOT_IMPLEMENTED, "no consumer backend")
	}
	return c, m.checkTopicGroup(topic, group)
}

func newStatus(c v2pb.Code, msg string) *v2pb.Status { return &v2pb.Status{Code: c, Message: msg} }

// checkTopicGroup is the proxy's validateTopicAndConsumerGroup plus the
// topic lookup: the first failing check's status, nil when both are fine.
func (m *messaging) checkTopicGroup(topic, group *v2pb.Resource) *v2pb.Status {
	if st := checkNames(topic, group); st != nil {
		return st
	}
	if _, ok := m.backend.Topic(topic.GetName()); !ok {
		return newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic not found: "+topic.GetName())
	}
	return nil
}

// checkNames is the proxy's validateTopicAndConsumerGroup (Apache
// proxy/.../grpc/v2/common/GrpcValidator.java): the topic's name first,
// then the group's; system topics and groups are illegal.
func checkNames(topic, group *v2pb.Resource) *v2pb.Status {
	if err := checkTopicName(topic.GetName()); err != nil {
		return newStatus(v2pb.Code_ILLEGAL_TOPIC, "illegal topic "+strconv.Quote(topic.GetName())+": "+err.Error())
	}
	return checkGroupName(group.GetName())
}

// QueryAssignment answers the queues a consumer group pops from, as the
// proxy (Apache proxy/.../grpc/v2/route/RouteActivity.java,
// queryAssignment): for each readable broker of the topic one queue with
// id -1 (a pop of every queue), or, for a FIFO group (consumeMessageOrderly),
// one per read queue. The brokers are those of the topic's route across
// brokers (route.go), each with its own endpoint, where the client then
// receives; without a nameserver answer, this broker alone.
func (m *messaging) QueryAssignment(ctx context.Context, req *v2pb.QueryAssignmentRequest) (*v2pb.QueryAssignmentResponse, error) {
	c := m.consumer()
	if c == nil {
		return &v2pb.QueryAssignmentResponse{Status: newStatus(v2pb.Code_NOT_IMPLEMENTED, "no consumer backend")}, nil
	}
	if st := checkNames(req.GetTopic(), req.GetGroup()); st != nil {
		return &v2pb.QueryAssignmentResponse{Status: st}, nil
	}
	name := req.GetTopic().GetName()
	local, hasLocal := m.backend.Topic(name)
	brokers, _, clustered := m.clusterRoute(ctx, name, local, hasLocal)
	if !clustered {
		if !hasLocal {
			return &v2pb.QueryAssignmentResponse{Status: newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic not found: "+name)}, nil
		}
		if m.slave() {
			return &v2pb.QueryAssignmentResponse{Status: newStatus(v2pb.Code_TOPIC_NOT_FOUND,
				"the nameservers name no master for topic "+name+" and this broker is a slave")}, nil
		}
		brokers = []brokerQueues{{name: m.backend.BrokerName(), ep: m.endpoint, t: local}}
	}
	if len(brokers) == 0 {
		return &v2pb.QueryAssignmentResponse{Status: newStatus(v2pb.Code_TOPIC_NOT_FOUND, "topic "+name+" is on no broker that serves gRPC")}, nil
	}
	g, _ := c.Group(req.GetGroup().GetName())
	topic := &v2pb.Resource{ResourceNamespace: req.GetTopic().GetResourceNamespace(), Name: name}
	var out []*v2pb.Assignment
	for _, bq := range brokers {
		t := bq.t
		if t.Perm&permRead == 0 || t.ReadQueues <= 0 {
			continue
		}
		perm := v2pb.Permission_READ
		if t.Perm&permWrite != 0 {
			perm = v2pb.Permission_READ_WRITE
		}
		broker := &v2pb.Broker{Name: bq.name, Id: 0, Endpoints: bq.ep}
		add := func(id int32) {
			out = append(out, &v2pb.Assignment{MessageQueue: &v2pb.MessageQueue{Topic: topic, Id: id, Permission: perm, Broker: broker}})
		}
		if g.Orderly {
			for i := 0; i < t.ReadQueues; i++ {
				add(int32(i))
			}
		} else {
			add(-1)
		}
	}
	if len(out) == 0 {
		return &v2pb.QueryAssignmentResponse{Status: newStatus(v2pb.Code_FORBIDDEN, "no readable queue")}, nil
	}
	return &v2pb.QueryAssignmentResponse{Status: ok(), Assignments: out}, nil
}

// ReceiveMessage pops messages for a consumer group (Apache
// proxy/.../grpc/v2/consumer/ReceiveMessageActivity.java and
// ReceiveMessageResponseStreamWriter.java). The stream carries a status
// first — OK followed by the messages, or the reason there are none
// (MESSAGE_NOT_FOUND when the long polling ended empty) — and ends with the
// delivery timestamp. The pop goes through the broker's POP_MESSAGE path,
// so revive, retry, the DLQ and orderly pops are shared with remoting
// consumers. As the proxy, messages whose tag the subscription does not
// want are acked, and messages delivered retryMaxTimes+1 times already go
// to the DLQ, instead of being returned.
func (m *messaging) ReceiveMessage(req *v2pb.ReceiveMessageRequest, stream v2pb.MessagingService_ReceiveMessageServer) error {
	ctx := stream.Context()
	finish := func(st *v2pb.Status) error {
		if st != nil {
			if err := stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: st}}); err != nil {
				return err
			}
		}
		return stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_DeliveryTimestamp{DeliveryTimestamp: timestamppb.Now()}})
	}
	c := m.consumer()
	if c == nil {
		return finish(newStatus(v2pb.Code_NOT_IMPLEMENTED, "no consumer backend"))
	}
	lim := c.ConsumeLimits()
	poll, st := pollingTime(ctx, req, lim)
	if st != nil {
		return finish(st)
	}
	topic, group := req.GetMessageQueue().GetTopic(), req.GetGroup()
	if st := m.checkTopicGroup(topic, group); st != nil {
		return finish(st)
	}
	invisible := req.GetInvisibleDuration().AsDuration()
	switch {
	case req.GetAutoRenew():
		// As the proxy: the invisible duration is the renewal slice.
		invisible = lim.RenewSlice
	case invisible < lim.MinInvisible:
		return finish(newStatus(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too small, min "+lim.MinInvisible.String()))
	case invisible > lim.MaxInvisible:
		return finish(newStatus(v2pb.Code_ILLEGAL_INVISIBLE_TIME, "the invisibleTime is too large, max "+lim.MaxInvisible.String()))
	}
	batch := req.GetBatchSize()
	if batch <= 0 {
		return finish(newStatus(v2pb.Code_BAD_REQUEST, "batch size must be positive"))
	}
	batch = min(batch, maxPopBatch)
	expType, exp := "TAG", req.GetFilterExpression().GetExpression()
	if req.GetFilterExpression().GetType() == v2pb.FilterType_SQL {
		expType = "SQL92"
	}
	if strings.TrimSpace(exp) == "" {
		exp = "*"
	}
	g, found := c.Group(group.GetName())
	if !found {
		return finish(newStatus(v2pb.Code_CONSUMER_GROUP_NOT_FOUND, "consumer group not found: "+group.GetName()))
	}
	if l := m.lite(); l != nil && m.clients.isLite(mdValue(ctx, mdClientID)) {
		return m.receiveLite(stream, l, c, g, req, PopRequest{
			Group: group.GetName(), Topic: topic.GetName(), MaxNum: batch, Invisible: invisible, PollTime: poll,
			AttemptID: req.GetAttemptId(), Peer: peerAddr(ctx), AutoRenew: req.GetAutoRenew(), ClientID: mdValue(ctx, mdClientID),
		}, finish)
	}
	res, err := c.Pop(ctx, PopRequest{
		Group: group.GetName(), Topic: topic.GetName(), MaxNum: batch, Invisible: invisible, PollTime: poll,
		ExpType: expType, Exp: exp, Order: g.Orderly, AttemptID: req.GetAttemptId(), Peer: peerAddr(ctx),
		AutoRenew: req.GetAutoRenew(), ClientID: mdValue(ctx, mdClientID),
	})
	if err != nil {
		return finish(newStatus(v2pb.Code_INTERNAL_SERVER_ERROR, "pop: "+err.Error()))
	}
	if st := popStatus(res.Code, res.Remark); st != nil {
		return finish(st)
	}
	msgs := m.sift(ctx, c, group.GetName(), topic.GetName(), expType, exp, g, res.Messages)
	if len(msgs) == 0 {
		return finish(newStatus(v2pb.Code_MESSAGE_NOT_FOUND, "no match message"))
	}
	if err := stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Status{Status: ok()}}); err != nil {
		m.nack(c, group.GetName(), topic.GetName(), msgs)
		return err
	}
	for i, msg := range msgs {
		pb := buildMessage(msg, topic, invisible)
		if err := stream.Send(&v2pb.ReceiveMessageResponse{Content: &v2pb.ReceiveMessageResponse_Message{Message: pb}}); err != nil {
			m.nack(c, group.GetName(), topic.GetName(), msgs[i:])
			return err
		}
	}
	return finish(nil)
}

// pollingTime is the proxy's long polling time of a receive: the request's
// long_polling_timeout (else what the deadline leaves), within the
// configured bounds and the deadline.
func pollingTime(ctx context.Context, req *v2pb.ReceiveMessageRequest, lim ConsumeLimits) (time.Duration, *v2pb.Status) {
	remaining := lim.MaxLongPolling + time.Minute
	if dl, ok := ctx.Deadline(); ok {
		remaining = time.Until(dl)
	}
	poll := remaining - 3*time.Second/2 // the clients' default request timeout is 3 s
	if req.LongPollingTimeout != nil {
		poll = req.GetLongPollingTimeout().AsDuration()
	}
	poll = max(poll, lim.MinLongPolling)
	poll = min(poll, lim.MaxLongPolling)
	if poll > remaining {
		if remaining < lim.MinLongPolling {
			return 0, newStatus(v2pb.Code_ILLEGAL_POLLING_TIME, "The deadline time remaining is not enough for polling, please check network condition")
		}
		poll = remaining
	}
	return max(poll-pollingReserve, 0), nil
}

// sift drops what the proxy's PopMessageResultFilterImpl drops: messages
// whose tag the subscription does not list (the store filters on tag hash
// codes only) are acked, messages already delivered maxAttempts times go
// to the DLQ.
func (m *messaging) sift(ctx context.Context, c Consumer, group, topic, expType, exp string, g Group, msgs []*message.Message) []*message.Message {
	tags := tagSet(expType, exp)
	maxAttempts := int32(g.RetryMaxTimes) + 1
	kept := msgs[:0]
	for _, msg := range msgs {
		unwanted := tags != nil && !tags[msg.Tags()]
		if !unwanted && msg.ReconsumeTimes < maxAttempts {
			kept = append(kept, msg) // the common case: no receipt to parse
			continue
		}
		r, err := ParseReceipt(msg.Property(message.PropertyPopCK))
		if err != nil {
			kept = append(kept, msg) // nothing to ack it with: the client decides
			continue
		}
		r = c.Current(group, r) // not for the client: no renewal
		if unwanted {
			_, _ = c.Ack(ctx, group, topic, r)
		} else {
			_, _ = c.DeadLetter(ctx, group, topic, messageID(msg), r)
		}
	}
	return kept
}

// nack makes messages the stream could not deliver visible again soon.
func (m *messaging) nack(c Consumer, group, topic string, msgs []*message.Message) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, msg := range msgs {
		if r, err := ParseReceipt(msg.Property(message.PropertyPopCK)); err == nil {
			_, _, _ = c.ChangeInvisible(ctx, group, topic, r, nackInvisible)
		}
	}
}

// tagSet is the set of tags a TAG expression lists, nil for every tag.
func tagSet(expType, exp string) map[string]bool {
	if expType != "TAG" {
		return nil
	}
	set := map[string]bool{}
	for t := range strings.SplitSeq(exp, "||") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return nil
		}
		if t != "" {
			set[t] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

// consumeCode maps a pop, ack or change response code to the gRPC status
// code (the proxy's ResponseBuilder, with the broker-side checks it does
// before forwarding).
func consumeCode(rc int32) v2pb.Code {
	switch rc {
	case code.Success:
		return v2pb.Code_OK
	case code.TopicNotExist:
		return v2pb.Code_TOPIC_NOT_FOUND
	case code.SubscriptionGroupNotExist:
		return v2pb.Code_CONSUMER_GROUP_NOT_FOUND
	case code.SubscriptionParseFailed, code.SubscriptionNotExist, code.FilterDataNotExist:
		return v2pb.Code_ILLEGAL_FILTER_EXPRESSION
	case code.NoPermission:
		return v2pb.Code_FORBIDDEN
	case code.SystemBusy:
		return v2pb.Code_TOO_MANY_REQUESTS
	case code.RequestCodeNotSupported:
		return v2pb.Code_NOT_IMPLEMENTED
	case code.NoMessage, code.MessageIllegal:
		// The receipt names no pop the broker knows (acked, revived, or
		// an offset outside the queue).
		return v2pb.Code_INVALID_RECEIPT_HANDLE
	}
	return v2pb.Code_INTERNAL_SERVER_ERROR
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

// messageID is the 5.x message id of a stored message: its UNIQ_KEY, else
// its offset message id (as the proxy's GrpcConverter).
func messageID(m *message.Message) string {
	if id := m.Property(message.PropertyUniqClientMessageIDKeyIdx); id != "" {
		return id
	}
	return m.OffsetMsgID()
}

// systemKeys are the properties that are not user properties (Apache's
// MessageConst.STRING_HASH_SET, with the ones we know).
var systemKeys = func() map[string]bool {
	ks := []string{
		message.PropertyKeys, message.PropertyTags, message.PropertyWaitStoreMsgOK, message.PropertyDelayTimeLevel,
		message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyTimerOutMS,
		message.PropertyTimerEnqueueMS, message.PropertyTimerDequeueMS, message.PropertyTimerRollTimes, message.PropertyTimerDelUniqKey,
		message.PropertyTimerDelayLevel, message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyRetryTopic,
		message.PropertyOriginMessageID, message.PropertyReconsumeTime, message.PropertyMaxReconsumeTimes,
		message.PropertyUniqClientMessageIDKeyIdx, message.PropertyTransactionPrepared, message.PropertyProducerGroup,
		message.PropertyTransactionID, message.PropertyCheckImmunityTimeInSec, message.PropertyTranPreparedQueueOffset,
		message.PropertyTransactionCheckTimes, message.PropertyMinOffset, message.PropertyMaxOffset, message.PropertyCluster,
		message.PropertyMessageType, message.PropertyCorrelationID, message.PropertyMessageReplyToClient, message.PropertyMessageTTL,
		message.PropertyMessageArriveTime, message.PropertyPushReplyTime, message.PropertyMsgRegion, message.PropertyTraceSwitch,
		message.PropertyShardingKey, message.PropertyInstanceID, message.PropertyInnerMultiDispatch,
		message.PropertyInnerMultiQueueOffset, message.PropertyLiteTopic, message.PropertyPopCK, message.PropertyPopCKOffset,
		message.PropertyFirstPopTime, message.PropertyInnerNum, message.PropertyInnerBase, message.PropertyExtendUniqInfo,
		message.PropertyDupInfo, message.PropertyBuyerID, message.PropertyTransferFlag, message.PropertyCorrectionFlag,
		message.PropertyMQ2Flag, message.PropertyConsumeStartTimestamp, message.PropertyTraceContext, message.PropertyBornHost,
		message.PropertyBornTimestamp, message.PropertyDLQOriginTopic, message.PropertyDLQOriginMessageID,
		message.PropertyRedirect, message.PropertyForwardQueueID, message.PropertyCRC32, message.PropertyPriority,
	}
	set := make(map[string]bool, len(ks))
	for _, k := range ks {
		set[k] = true
	}
	return set
}()

// buildMessage converts a popped message as the proxy's GrpcConverter
// (Apache proxy/.../grpc/v2/common/GrpcConverter.java, buildMessage). The
// body goes out decompressed (IDENTITY); its digest is the MD5 the proxy
// sends, which the 5.x clients verify.
func buildMessage(m *message.Message, topic *v2pb.Resource, invisible time.Duration) *v2pb.Message {
	// Most messages have no user property: no map for them (on the wire
	// an empty map and none are the same).
	var user map[string]string
	for k, v := range m.Properties {
		if !systemKeys[k] {
			if user == nil {
				user = make(map[string]string)
			}
			user[validUTF8(k)] = validUTF8(v)
		}
	}
	sum := md5.Sum(m.Body)
	sp := &v2pb.SystemProperties{
		MessageId:         validUTF8(messageID(m)),
		BodyDigest:        &v2pb.Digest{Type: v2pb.DigestType_MD5, Checksum: upperHex(sum)},
		BodyEncoding:      v2pb.Encoding_IDENTITY,
		MessageType:       storedType(m),
		BornTimestamp:     timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		BornHost:          validUTF8(bornHost(m)),
		StoreTimestamp:    timestamppb.New(time.UnixMilli(m.StoreTimestamp)),
		StoreHost:         hostString(m.StoreHost),
		QueueId:           m.QueueID,
		QueueOffset:       &m.QueueOffset,
		InvisibleDuration: durationpb.New(invisible),
	}
	if tag, ok := m.Properties[message.PropertyTags]; ok {
		tag = validUTF8(tag)
		sp.Tag = &tag
	}
	if keys := m.Keys(); len(keys) > 0 {
		for i, k := range keys {
			keys[i] = validUTF8(k)
		}
		sp.Keys = keys
	}
	if h := m.Property(message.PropertyPopCK); h != "" {
		h = validUTF8(h)
		sp.ReceiptHandle = &h
	}
	attempt := m.ReconsumeTimes + 1
	sp.DeliveryAttempt = &attempt
	if g, ok := m.Properties[message.PropertyShardingKey]; ok {
		g = validUTF8(g)
		sp.MessageGroup = &g
	}
	if v := m.Property(message.PropertyTimerDeliverMS); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(ms))
		}
	}
	if l := m.Property(message.PropertyLiteTopic); l != "" {
		l = validUTF8(l)
		sp.LiteTopic = &l
	}
	if tc, ok := m.Properties[message.PropertyTraceContext]; ok {
		tc = validUTF8(tc)
		sp.TraceContext = &tc
	}
	if t, id := m.Property(message.PropertyDLQOriginTopic), m.Property(message.PropertyDLQOriginMessageID); t != "" && id != "" {
		sp.DeadLetterQueue = &v2pb.DeadLetterQueue{Topic: validUTF8(t), MessageId: validUTF8(id)}
	}
	return &v2pb.Message{
		Topic:            &v2pb.Resource{ResourceNamespace: topic.GetResourceNamespace(), Name: topic.GetName()},
		UserProperties:   user,
		SystemProperties: sp,
		Body:             m.Body,
	}
}

// upperHex is an MD5 sum in upper-case hex, the proxy's digest text, in one
// allocation (hex, then upper case, built it twice).
func upperHex(sum [md5.Size]byte) string {
	const digits = "0123456789ABCDEF"
	var b [2 * md5.Size]byte
	for i, c := range sum {
		b[2*i], b[2*i+1] = digits[c>>4], digits[c&0xF]
	}
	return string(b[:])
}

// validUTF8 is s with each run of bytes that are not UTF-8 replaced by
// U+FFFD. A stored message's strings are bytes from any client (remoting
// keeps them as sent) while protobuf strings must be UTF-8: one invalid
// property would make the message unmarshallable and fail every receive of
// its queue. Java's proxy decodes them to Strings, replacing malformed input
// with U+FFFD too (per malformed sequence rather than per run).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// storedType is the proxy's classification of a stored message, in the
// order of send.go's messageType: TRANSACTION, DELAY, FIFO, PRIORITY,
// LITE, else NORMAL.
func storedType(m *message.Message) v2pb.MessageType {
	switch {
	case m.Property(message.PropertyTransactionPrepared) == "true":
		return v2pb.MessageType_TRANSACTION
	case m.Property(message.PropertyDelayTimeLevel) != "" || m.Property(message.PropertyTimerDeliverMS) != "" ||
		m.Property(message.PropertyTimerDelaySec) != "":
		return v2pb.MessageType_DELAY
	case m.Property(message.PropertyShardingKey) != "":
		return v2pb.MessageType_FIFO
	case m.Property(message.PropertyPriority) != "":
		return v2pb.MessageType_PRIORITY
	case m.Property(message.PropertyLiteTopic) != "":
		return v2pb.MessageType_LITE
	}
	return v2pb.MessageType_NORMAL
}

// bornHost is the __BORNHOST property, else the record's born host address
// (the proxy's getBornHostString: the address alone).
func bornHost(m *message.Message) string {
	if h := m.Property(message.PropertyBornHost); h != "" {
		return h
	}
	if m.BornHost.IsValid() {
		return m.BornHost.Addr().String()
	}
	return ""
}

// hostString is "ip:port", "" for no address.
func hostString(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
