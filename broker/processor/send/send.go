// Package send answers the producer requests: SEND_MESSAGE (10, long header
// names), SEND_MESSAGE_V2 (310, short names), SEND_BATCH_MESSAGE (320) and
// SEND_REPLY_MESSAGE(_V2) (324/325), following Apache RocketMQ's
// SendMessageProcessor and ReplyMessageProcessor (docs/protocol.md §5).
//
// Checks run in Java's order: broker role and start time, broker write
// permission for order topics, topic name (29), send-forbidden topics (16),
// topic existence or auto-creation from the default topic (17), topic write
// permission (16), queue id (29), %RETRY% group and DLQ redirect (26), then
// message content (13) and the store. Transactions, delays and reply pushes
// are seams (TransactionHook, ScheduleHook, ReplyPusher) wired by the broker.
package send

import (
	"context"
	"errors"
	"fmt"
	"github.com/rmqgo/rmq/broker/metrics"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Java constants the send path uses.
const (
	// DLQNumsPerGroup: a DLQ topic has one queue.
	DLQNumsPerGroup = 1
	// VersionV349 is MQVersion V3_4_9: from it on the request's
	// maxReconsumeTimes header overrides the group's retryMaxTimes.
	VersionV349 = 121
	// defaultRetryMaxTimes is SubscriptionGroupConfig.retryMaxTimes.
	defaultRetryMaxTimes = 16
	// defaultRegion is MixAll.DEFAULT_TRACE_REGION_ID.
	defaultRegion = "DefaultRegion"
	// cleanupCompaction is the cleanup.policy of compaction topics.
	cleanupCompaction = "COMPACTION"
	// Topic sysFlag bits for unit mode (TopicSysFlag).
	topicFlagUnit    = 0x1
	topicFlagUnitSub = 0x2
)

// Response extFields of a send (SendMessageResponseHeader).
const (
	extMsgID         = "msgId"
	extQueueID       = "queueId"
	extQueueOffset   = "queueOffset"
	extTransactionID = "transactionId"
)

// Deps are the processor's collaborators. Config, Topics and Store are
// required.
type Deps struct {
	// Config returns the live broker configuration (config.Holder.Get).
	Config func() *config.Config
	Topics Topics
	Store  Store
	// StoreHost is brokerIP1:listenPort, written into every record and its
	// offset message id. It is cached once it has a non-zero port (the
	// listener's port is known only after Start). nil: brokerIP1 and the
	// configured listenPort.
	StoreHost func() netip.AddrPort
	// Groups looks up %RETRY% groups; nil treats every group as existing
	// with retryMaxTimes 16.
	Groups Groups
	// Locks reports orderly locks; nil: none.
	Locks OrderLocks
	// Transactions prepares half messages; nil: HalfMessage.
	Transactions TransactionHook
	// Schedule parks DELAY/TIMER messages; nil: stored as is (logged once).
	Schedule ScheduleHook
	// MessageTypeCheck vets each message against its topic (message
	// type, size limits by type); nil: no check.
	MessageTypeCheck MessageChecker
	// Replicas makes sends wait for slave acks; nil: never waits.
	Replicas Replicas
	// Replies pushes SEND_REPLY_MESSAGE to the requester; nil: every push
	// fails with "channel not found" (the reply is still stored).
	Replies ReplyPusher
	// TopicCreated runs after the send path created a topic (auto-create,
	// retry, DLQ), e.g. to register with the nameservers at once. Optional:
	// topic.Manager's OnChange already triggers a (debounced) registration.
	TopicCreated func(topic string)
	// UniqIDs creates UNIQ_KEYs for messages that lack one; nil: a
	// generator for brokerIP1 and this process.
	UniqIDs *message.UniqIDGenerator
	// RandIntN picks a random queue in [0, n); nil: math/rand/v2.
	RandIntN func(n int) int
	// Fenced reports that controller mode keeps the broker from taking
	// writes (no role yet, or its master lease lapsed); sends are then
	// answered SERVICE_NOT_AVAILABLE so producers retry another broker.
	// nil: never fenced.
	Fenced func() bool
	// MessagesIn counts stored messages for the broker's metrics
	// (broker/metrics: rocketmq_messages_in_total, throughput_in,
	// message_size); bytes is what the CommitLog took. nil: not counted.
	MessagesIn func(topic string, t metrics.MessageType, msgs int, bytes int64)
	// SentToDLQ counts a %RETRY% send moved to the group's DLQ
	// (rocketmq_send_to_dlq_messages_total; Java labels it with the send's
	// topic and producer group). nil: not counted.
	SentToDLQ func(topic, group string)
	// Stats records stored messages per topic (Apache's TOPIC_PUT_NUMS,
	// TOPIC_PUT_SIZE: VIEW_BROKER_STATS_DATA, mqadmin statsAll); nil: none.
	Stats PutStats
	// Now is the clock; nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Processor holds the send handlers. It is safe for concurrent use.
type Processor struct {
	d   Deps
	log *slog.Logger
	tx  TransactionHook

	host           atomic.Pointer[netip.AddrPort]
	scheduleNotice sync.Once
	names          nameCache // topic and group names of the send headers
}

// New returns a Processor.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Topics == nil || d.Store == nil {
		return nil, errors.New("send: Deps.Config, Deps.Topics and Deps.Store are required")
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if d.StoreHost == nil {
		d.StoreHost = func() netip.AddrPort {
			c := d.Config()
			return netip.AddrPortFrom(parseIP(c.BrokerIP1), uint16(c.ListenPort))
		}
	}
	if d.UniqIDs == nil {
		d.UniqIDs = message.NewUniqIDGenerator(parseIP(d.Config().BrokerIP1), os.Getpid(), rand.Int32(), d.Now)
	}
	if d.RandIntN == nil {
		d.RandIntN = rand.IntN
	}
	defaults.Clock(&d.Now)
	tx := d.Transactions
	if tx == nil {
		tx = HalfMessage{}
	}
	return &Processor{d: d, log: log, tx: tx}, nil
}

// parseIP reads brokerIP1; a host name or garbage becomes 0.0.0.0, as the
// stored format has room only for an address.
func parseIP(s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	return netip.IPv4Unspecified()
}

// Handlers maps each request code to its handler. Handlers tolerate a nil
// channel (the born host is then 0.0.0.0:0), so tests may call them directly.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.SendMessage:        p.wrap(p.sendHandler(false)),
		code.SendMessageV2:      p.wrap(p.sendHandler(true)),
		code.SendBatchMessage:   p.wrap(p.sendHandler(true)),
		code.SendReplyMessage:   p.wrap(p.replyHandler(false)),
		code.SendReplyMessageV2: p.wrap(p.replyHandler(true)),
	}
}

// Register installs the handlers on the send executor.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolSend)
}

// wrap answers an error through toCodeError and adds MSG_REGION/TRACE_ON,
// which Java puts on every send response, failed or not.
func (p *Processor) wrap(h remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		resp, err := h(ctx, ch, req)
		if err == nil {
			return resp, nil
		}
		resp = remoting.ResponseFromError(req, toCodeError(err))
		// Broker-side failures are worth a warning; bad requests are the
		// client's business and would flood the log.
		level := slog.LevelDebug
		if resp.Code == code.SystemError || resp.Code == code.ServiceNotAvailable {
			level = slog.LevelWarn
		}
		if p.log.Enabled(ctx, level) {
			p.log.Log(ctx, level, "send failed", "code", req.Code, "remote", processor.RemoteAddr(ch), "topic", topicOf(req), "response", resp.Code, "err", err)
		}
		resp.ExtFields = make(map[string]string, 2)
		p.addRegion(resp.ExtFields, p.d.Config())
		return resp, nil
	}
}

func (p *Processor) addRegion(ext map[string]string, cfg *config.Config) {
	region, traceOn := regionOf(cfg)
	ext[message.PropertyMsgRegion] = region
	ext[message.PropertyTraceSwitch] = traceOn
}

// regionOf is the MSG_REGION and TRACE_ON Java's broker puts on every send
// response and on the properties of every message it stores from a single
// send or a reply (AbstractSendMessageProcessor.buildMsgContext; a client's
// own values are overwritten). The Java client's consume trace hook drops
// the trace of a message without MSG_REGION.
func regionOf(cfg *config.Config) (region, traceOn string) {
	region = cfg.RegionID
	if region == "" {
		region = defaultRegion
	}
	return region, strconv.FormatBool(cfg.TraceOn)
}

// topicOf reads the topic of a send request under either name (for logs).
func topicOf(req *remoting.Command) string {
	if t := req.Ext("topic"); t != "" {
		return t
	}
	return req.Ext("b")
}

// origin is what WithOrigin gives a handler.
type origin struct {
	bornHost netip.AddrPort
	props    map[string]string
}

// originKey is the context key of WithOrigin.
type originKey struct{}

// WithOrigin gives the send handlers, for a request without a remoting
// channel (the broker's gRPC endpoint, broker/grpcserver):
//   - the producer's address, which becomes the stored message's born host
//     as a remoting producer's would;
//   - for SEND_MESSAGE (not batch, not reply), the message's properties as a
//     map, instead of the header's properties string: the gRPC endpoint
//     builds them as a map, and encoding them only for the handler to
//     decode them again cost a few percent of a gRPC send. The handler
//     owns the map (it adds the properties the broker sets) and drops the
//     reserved ones, as from the string; the header's properties field is
//     then ignored. A nil map leaves the header's string in use.
//
// One context value for both: two (and the boxed address) cost a gRPC send
// three allocations more.
func WithOrigin(ctx context.Context, addr netip.AddrPort, props map[string]string) context.Context {
	return context.WithValue(ctx, originKey{}, &origin{bornHost: addr, props: props})
}

// sendProps is the message's properties: WithOrigin's map for a
// request without a channel, else the header's string decoded, with room
// for extra more.
func sendProps(ctx context.Context, ch *remoting.Channel, h *sendHeader, extra int) map[string]string {
	if ch == nil {
		if o, ok := ctx.Value(originKey{}).(*origin); ok && o.props != nil {
			stripReserved(o.props)
			return o.props
		}
	}
	return decodeProps(h.properties, extra)
}

// hasOriginProps reports a request without a channel whose properties
// WithOrigin gave as a map (sendProps takes those, not the header's).
func hasOriginProps(ctx context.Context) bool {
	o, ok := ctx.Value(originKey{}).(*origin)
	return ok && o.props != nil
}

// bornHost is the producer's address as the channel sees it, or as
// WithOrigin gave it for a request without a channel.
func bornHost(ctx context.Context, ch *remoting.Channel) netip.AddrPort {
	if ch == nil {
		var ap netip.AddrPort
		if o, ok := ctx.Value(originKey{}).(*origin); ok {
			ap = o.bornHost
		}
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, err := netip.ParseAddrPort(ch.RemoteAddr())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// storeHost returns the cached store host, asking Deps.StoreHost until the
// port is known.
func (p *Processor) storeHost() netip.AddrPort {
	if h := p.host.Load(); h != nil {
		return *h
	}
	h := p.d.StoreHost()
	if h.Port() != 0 {
		p.host.Store(&h)
	}
	return h
}

func (p *Processor) sendHandler(short bool) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		h, err := parseSendRequest(req, short, &p.names)
		if err != nil {
			return nil, err
		}
		// Java decides by the header's batch flag, not by the request code.
		if h.batch {
			return p.sendBatch(ctx, ch, req, &h)
		}
		return p.sendOne(ctx, ch, req, &h)
	}
}

// preSend is Java's rejectRequest and startAcceptSendRequestTimeStamp check.
func (p *Processor) preSend(cfg *config.Config, checkRole bool) error {
	// A fenced controller-mode broker runs as SLAVE until it has a role;
	// the role check below would answer SYSTEM_BUSY, which producers do
	// not take as "try another broker".
	if p.d.Fenced != nil && p.d.Fenced() {
		return fmt.Errorf("%w: the broker[%s] is fenced until the controller names its role", errFenced, cfg.BrokerIP1)
	}
	if checkRole && !cfg.IsMaster() && !cfg.EnableSlaveActingMaster {
		return fmt.Errorf("%w: [REJECTREQUEST]system busy, start flow control for a while (this broker is a slave)", errBusy)
	}
	if ts := cfg.StartAcceptSendRequestTimeStamp; ts > 0 && p.d.Now().UnixMilli() < ts {
		return fmt.Errorf("%w, until %s", errNotReady, time.UnixMilli(ts).Format("2006-01-02 15:04:05.000"))
	}
	return nil
}

// msgCheck is Java's AbstractSendMessageProcessor.msgCheck plus the topic
// write-permission check; it returns the topic's config, creating the topic
// from the default topic when it is unknown.
func (p *Processor) msgCheck(cfg *config.Config, ch *remoting.Channel, h *sendHeader) (protocol.TopicConfig, error) {
	// Java rejects only order topics here: a broker whose write permission
	// was wiped is hidden from publish routes, but in-flight sends to
	// unordered topics still land.
	if cfg.BrokerPermission&protocol.PermWrite == 0 && p.d.Topics.IsOrder(h.topic) {
		return protocol.TopicConfig{}, fmt.Errorf("%w: the broker[%s] sending message is forbidden", processor.ErrNoPermission, cfg.BrokerIP1)
	}
	if err := protocol.ValidateTopic(h.topic); err != nil {
		return protocol.TopicConfig{}, fmt.Errorf("%w: %v", errInvalidParam, err)
	}
	if protocol.IsSendForbidden(h.topic) {
		return protocol.TopicConfig{}, fmt.Errorf("%w: sending message to topic[%s] is forbidden", processor.ErrNoPermission, h.topic)
	}
	tc, ok := p.d.Topics.GetShared(h.topic)
	if !ok {
		var err error
		if tc, err = p.autoCreate(ch, h); err != nil {
			return protocol.TopicConfig{}, err
		}
	}
	if tc.Perm&protocol.PermWrite == 0 {
		return protocol.TopicConfig{}, fmt.Errorf("%w: the topic[%s] is not writable (perm %s)", processor.ErrNoPermission, h.topic, protocol.PermString(tc.Perm))
	}
	if valid := max(tc.WriteQueueNums, tc.ReadQueueNums); int(h.queueID) >= valid {
		return protocol.TopicConfig{}, fmt.Errorf("%w: request queueId[%d] is illegal, topic %s has %d queues, producer %s",
			errInvalidParam, h.queueID, h.topic, valid, processor.RemoteAddr(ch))
	}
	return tc, nil
}

// autoCreate creates an unknown topic from the request's default topic
// (TBW102), or a %RETRY% topic with one queue, as Java's
// createTopicInSendMessageMethod / createTopicInSendMessageBackMethod do.
func (p *Processor) autoCreate(ch *remoting.Channel, h *sendHeader) (protocol.TopicConfig, error) {
	retry := strings.HasPrefix(h.topic, protocol.RetryGroupTopicPrefix)
	sysFlag := 0
	if h.unitMode {
		sysFlag = topicFlagUnit
		if retry {
			sysFlag = topicFlagUnitSub
		}
	}
	tc, created, err := p.d.Topics.CreateFromDefault(h.topic, h.defaultTopic, int(h.defaultTopicQueueNums), sysFlag)
	if err != nil && tc.TopicName == "" && retry {
		rc := protocol.NewTopicConfig(h.topic)
		rc.ReadQueueNums, rc.WriteQueueNums = 1, 1
		rc.Perm = protocol.PermRead | protocol.PermWrite
		rc.TopicSysFlag = sysFlag
		tc, created, err = p.d.Topics.CreateIfAbsent(rc)
	}
	if tc.TopicName == "" {
		return protocol.TopicConfig{}, fmt.Errorf("%w: topic[%s] not exist, apply first please! (%v)", processor.ErrTopicNotExist, h.topic, err)
	}
	if err != nil {
		// The topic exists in memory; only persisting it failed.
		p.log.Error("persist auto-created topic", "topic", h.topic, "err", err)
	}
	if created {
		p.log.Info("topic created by send", "topic", h.topic, "defaultTopic", h.defaultTopic, "queues", tc.WriteQueueNums, "producer", processor.RemoteAddr(ch))
		p.topicCreated(h.topic)
	}
	return tc, nil
}

func (p *Processor) topicCreated(name string) {
	if p.d.TopicCreated != nil {
		p.d.TopicCreated(name)
	}
}

// admit runs the checks every send passes (preSend, with the broker role
// when checkRole, and msgCheck) and picks its queue: the topic's config and
// the queue id.
func (p *Processor) admit(cfg *config.Config, ch *remoting.Channel, h *sendHeader, checkRole bool) (protocol.TopicConfig, int32, error) {
	if err := p.preSend(cfg, checkRole); err != nil {
		return protocol.TopicConfig{}, 0, err
	}
	tc, err := p.msgCheck(cfg, ch, h)
	if err != nil {
		return tc, 0, err
	}
	queueID, err := p.pickQueue(&tc, h.queueID)
	return tc, queueID, err
}

// pickQueue resolves a negative queue id to a random writable queue.
func (p *Processor) pickQueue(tc *protocol.TopicConfig, queueID int32) (int32, error) {
	if queueID >= 0 {
		return queueID, nil
	}
	if tc.WriteQueueNums <= 0 {
		return 0, fmt.Errorf("%w: topic[%s] has no writable queue", processor.ErrNoPermission, tc.TopicName)
	}
	return int32(p.d.RandIntN(tc.WriteQueueNums)), nil
}

// sendOne stores a single message (Java's SendMessageProcessor.sendMessage).
func (p *Processor) sendOne(ctx context.Context, ch *remoting.Channel, req *remoting.Command, h *sendHeader) (*remoting.Command, error) {
	cfg := p.d.Config()
	tc, queueID, err := p.admit(cfg, ch, h, true)
	if err != nil {
		return nil, err
	}
	if ch != nil || !hasOriginProps(ctx) {
		if uniq, wait, ok := scanPlain(h.properties); ok && plainSend(&tc, h) {
			return p.sendPlain(ctx, req, cfg, &tc, h, queueID, bornHost(ctx, ch), uniq, wait)
		}
	}
	props := sendProps(ctx, ch, h, 4) // room for UNIQ_KEY, CLUSTER, MSG_REGION and TRACE_ON
	msg := &message.Message{
		Topic:          h.topic,
		Flag:           h.flag,
		Body:           req.Body,
		Properties:     props,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       bornHost(ctx, ch),
		StoreHost:      p.storeHost(),
		QueueID:        queueID,
		ReconsumeTimes: h.reconsumeTimes,
	}
	if err := p.checkMessage(&tc, msg, h.sysFlag); err != nil {
		return nil, err
	}
	if strings.HasPrefix(h.topic, protocol.RetryGroupTopicPrefix) {
		if err := p.retryOrDLQ(req, h, msg, &tc); err != nil {
			return nil, err
		}
	}
	msg.SysFlag = h.sysFlag
	if tc.TopicFilterType == protocol.MultiTag {
		msg.SysFlag |= message.FlagMultiTags
	}
	uniq := props[message.PropertyUniqClientMessageIDKeyIdx]
	if uniq == "" {
		uniq = p.d.UniqIDs.Next()
		props[message.PropertyUniqClientMessageIDKeyIdx] = uniq
	}
	if policy, _ := tc.Attribute(topic.AttrCleanupPolicy); policy == cleanupCompaction && strings.TrimSpace(props[message.PropertyKeys]) == "" {
		return nil, fmt.Errorf("%w: Required message key is missing (topic[%s] is a compaction topic)", ErrMessageIllegal, tc.TopicName)
	}
	props[message.PropertyCluster] = cfg.BrokerClusterName
	props[message.PropertyMsgRegion], props[message.PropertyTraceSwitch] = regionOf(cfg)
	if IsPrepared(props, h.sysFlag, h.reconsumeTimes) {
		if cfg.RejectTransactionMessage {
			return nil, fmt.Errorf("%w: the broker[%s] sending transaction message is forbidden", processor.ErrNoPermission, cfg.BrokerIP1)
		}
		// No lite dispatch for a half message: the half topic is not
		// excluded from multi-dispatch, so the LMQ would see it before the
		// commit. The commit path applies ApplyLite to the real topic.
		if err := p.tx.PrepareHalf(msg); err != nil {
			return nil, fmt.Errorf("prepare half message: %w", err)
		}
	} else {
		if err := ApplyLite(&tc, props, cfg.MaxLiteTopicSize); err != nil {
			return nil, err
		}
		if message.IsScheduled(props) {
			if err := p.schedule(msg); err != nil {
				return nil, err
			}
		}
	}
	if err := checkBody(cfg, len(msg.Body)); err != nil {
		return nil, err
	}
	if err := checkPropsLen(props); err != nil {
		return nil, err
	}
	res, err := p.d.Store.PutMessage(ctx, msg)
	if err == nil {
		p.putStats(msg.Topic, 1, len(msg.Body))
	}
	resp, err := p.putResponse(ctx, req, cfg, res, err, props[message.PropertyWaitStoreMsgOK], queueID, uniq, false)
	if err == nil && p.d.MessagesIn != nil {
		// A timer or delay-level message counts in under the topic it was
		// parked in (rmq_sys_wheel_timer, SCHEDULE_TOPIC_XXXX), as Java's
		// SendMessageProcessor labels the message's topic after its
		// schedule hook. A delay-level delivery counts in again under the
		// real topic (schedule.Observer DelayDelivered, as Java's
		// ScheduleMessageService); a timer delivery does not.
		in := h.topic
		if msg.Topic == topic.TimerTopic || msg.Topic == protocol.ScheduleTopic {
			in = msg.Topic
		}
		p.d.MessagesIn(in, metrics.TypeOf(props), 1, res.End-res.PhysicalOffset)
	}
	if rh, ok := p.d.Schedule.(RecallHandler); ok && err == nil {
		if h := rh.RecallHandle(msg, cfg.BrokerName); h != "" {
			resp.SetExt("recallHandle", h)
		}
	}
	return resp, err
}

// plainSend reports whether a send whose properties are plain (scanPlain)
// takes sendPlain: not a retry topic's (DLQ rules), not a transaction's
// half (sysFlag), not to a compaction topic (which requires KEYS).
func plainSend(tc *protocol.TopicConfig, h *sendHeader) bool {
	if message.TransactionType(h.sysFlag) != message.TransactionNotType || strings.HasPrefix(h.topic, protocol.RetryGroupTopicPrefix) {
		return false
	}
	policy, _ := tc.Attribute(topic.AttrCleanupPolicy)
	return policy != cleanupCompaction
}

// sendPlain is sendOne for the common send, whose properties are only
// UNIQ_KEY, WAIT, KEYS and TAGS (what Java's, Go's and Node's producers put
// on a plain message): nothing to strip, refuse or hand to the lite,
// transaction or schedule hooks, a NORMAL message. It is stored with the
// producer's entries and CLUSTER, MSG_REGION and TRACE_ON (as sendOne adds
// them) in key order: the same bytes as sendOne's map would store, with no
// map built.
func (p *Processor) sendPlain(ctx context.Context, req *remoting.Command, cfg *config.Config, tc *protocol.TopicConfig, h *sendHeader, queueID int32, born netip.AddrPort, uniq, wait string) (*remoting.Command, error) {
	region, traceOn := regionOf(cfg)
	added := [...][2]string{
		{message.PropertyCluster, cfg.BrokerClusterName},
		{message.PropertyMsgRegion, region},
		{message.PropertyTraceSwitch, traceOn},
	}
	size := len(h.properties)
	for _, kv := range added {
		size += len(kv[0]) + len(kv[1]) + 2
	}
	raw := appendSortedPlain(make([]byte, 0, size), h.properties, added[:]...)
	msg := &message.Message{
		Topic:          h.topic,
		Flag:           h.flag,
		Body:           req.Body,
		RawProperties:  raw,
		BornTimestamp:  h.bornTimestamp,
		BornHost:       born,
		StoreHost:      p.storeHost(),
		QueueID:        queueID,
		ReconsumeTimes: h.reconsumeTimes,
	}
	// The checker sees no property (a nil map), as for a plain batch
	// item: a NORMAL message.
	if err := p.checkMessage(tc, msg, h.sysFlag); err != nil {
		return nil, err
	}
	msg.SysFlag = h.sysFlag
	if tc.TopicFilterType == protocol.MultiTag {
		msg.SysFlag |= message.FlagMultiTags
	}
	if err := checkBody(cfg, len(msg.Body)); err != nil {
		return nil, err
	}
	if err := checkPropsBytes(len(raw)); err != nil {
		return nil, err
	}
	res, err := p.d.Store.PutMessage(ctx, msg)
	if err == nil {
		p.putStats(msg.Topic, 1, len(msg.Body))
	}
	resp, err := p.putResponse(ctx, req, cfg, res, err, wait, queueID, uniq, false)
	if err == nil && p.d.MessagesIn != nil {
		p.d.MessagesIn(h.topic, metrics.Normal, 1, res.End-res.PhysicalOffset)
	}
	return resp, err
}

// appendSortedPlain appends the entries of props, plain (scanPlain: at
// most the four keys, each once, well formed), and the added entries (keys
// props does not have; an empty value leaves the entry out), in key order:
// what message.AppendProperties writes for the same map, which is what the
// broker stores (mqadmin shows pulled messages' properties in that order,
// docs/protocol.md §5.4).
func appendSortedPlain[S string | []byte](dst []byte, props S, added ...[2]string) []byte {
	var kv [8][2]S
	n := 0
	for len(props) > 0 {
		end := indexByte(props, message.PropertySeparator)
		item := props[:end]
		props = props[end+1:]
		sep := indexByte(item, message.NameValueSeparator)
		kv[n] = [2]S{item[:sep], item[sep+1:]}
		n++
	}
	for _, a := range added { // S is string where entries are added: no copies
		if a[1] != "" {
			kv[n] = [2]S{S(a[0]), S(a[1])}
			n++
		}
	}
	for i := 1; i < n; i++ { // insertion sort: seven entries at most
		for j := i; j > 0 && string(kv[j][0]) < string(kv[j-1][0]); j-- {
			kv[j], kv[j-1] = kv[j-1], kv[j]
		}
	}
	for _, e := range kv[:n] {
		dst = append(dst, e[0]...)
		dst = append(dst, message.NameValueSeparator)
		dst = append(dst, e[1]...)
		dst = append(dst, message.PropertySeparator)
	}
	return dst
}

// sortPlainInPlace puts the entries of b, plain (plainProps), in key order
// in place: the same length, the same entries.
func sortPlainInPlace(b []byte) {
	var scratch [256]byte
	buf := scratch[:0]
	if len(b) > len(scratch) {
		buf = make([]byte, 0, len(b))
	}
	copy(b, appendSortedPlain(buf, b))
}

// PutStats counts stored messages (brokerstats.Manager).
type PutStats interface {
	TopicPut(topic string, msgs, size int)
}

// putStats counts a stored send of msgs messages of size body bytes.
func (p *Processor) putStats(topic string, msgs, size int) {
	if p.d.Stats != nil {
		p.d.Stats.TopicPut(topic, msgs, size)
	}
}

// checkBody enforces maxMessageSize on the body as stored (compressed).
func checkBody(cfg *config.Config, n int) error {
	if n > cfg.MaxMessageSize {
		return fmt.Errorf("%w: the message body size %d exceeds maxMessageSize %d", ErrMessageIllegal, n, cfg.MaxMessageSize)
	}
	return nil
}

// retryGroup is the consumer group of a %RETRY% topic (Java's
// KeyBuilder.parseGroup, which understands pop retry topics v2
// "%RETRY%<group>+<topic>").
func retryGroup(topic string) string {
	rest := topic[len(protocol.RetryGroupTopicPrefix):]
	if g, _, ok := strings.Cut(rest, "+"); ok && strings.Count(rest, "+") == 1 {
		return g
	}
	return rest
}

// retryOrDLQ checks a send to %RETRY%<group> (a client re-sending a failed
// message itself): the group must exist, and a message past its
// maxReconsumeTimes, or of a group holding orderly locks, goes to
// %DLQ%<group> with DELAY=-1 (Java's handleRetryAndDLQ). tc becomes the DLQ's
// config.
func (p *Processor) retryOrDLQ(req *remoting.Command, h *sendHeader, msg *message.Message, tc *protocol.TopicConfig) error {
	group := retryGroup(h.topic)
	maxTimes, ok := int32(defaultRetryMaxTimes), true
	if p.d.Groups != nil {
		maxTimes, ok = p.d.Groups.RetryMaxTimes(group)
	}
	if !ok {
		return fmt.Errorf("%w: subscription group not exist, %s", processor.ErrGroupNotExist, group)
	}
	if req.Version >= VersionV349 && h.hasMaxReconsumeTimes {
		maxTimes = h.maxReconsumeTimes
	}
	locked := p.d.Locks != nil && p.d.Locks.HasLiveLocks(group)
	if h.reconsumeTimes <= maxTimes && !locked {
		return nil
	}
	msg.Properties[message.PropertyDelayTimeLevel] = "-1"
	// A DLQ is not excluded from multi-dispatch (docs/lite-topics.md §3.1): a lite
	// message's dispatch properties must not follow it there.
	delete(msg.Properties, message.PropertyInnerMultiDispatch)
	delete(msg.Properties, message.PropertyInnerMultiQueueOffset)
	dlq := protocol.DLQTopic(group)
	dc := protocol.NewTopicConfig(dlq)
	dc.ReadQueueNums, dc.WriteQueueNums = DLQNumsPerGroup, DLQNumsPerGroup
	dc.Perm = protocol.PermRead | protocol.PermWrite
	dtc, created, err := p.d.Topics.CreateIfAbsent(dc)
	if dtc.TopicName == "" {
		return fmt.Errorf("topic[%s] not exist: %w", dlq, err)
	}
	if err != nil {
		p.log.Error("persist DLQ topic", "topic", dlq, "err", err)
	}
	if created {
		p.topicCreated(dlq)
	}
	if p.d.SentToDLQ != nil {
		p.d.SentToDLQ(h.topic, h.producerGroup)
	}
	p.log.Info("retry message sent to DLQ", "group", group, "topic", h.topic, "reconsumeTimes", h.reconsumeTimes,
		"maxReconsumeTimes", maxTimes, "orderlyLocked", locked)
	msg.Topic = dlq
	msg.QueueID = int32(p.d.RandIntN(DLQNumsPerGroup))
	*tc = dtc
	return nil
}

// IsPrepared reports a transactional half message: TRAN_MSG=true (what Java
// checks) or the PREPARED sysFlag type, except the pre-4.6.1 client quirk of
// re-sending a consumed half message with reconsumeTimes and a delay.
func IsPrepared(props map[string]string, sysFlag, reconsumeTimes int32) bool {
	tran := strings.EqualFold(props[message.PropertyTransactionPrepared], "true") ||
		message.TransactionType(sysFlag) == message.TransactionPreparedType
	if !tran {
		return false
	}
	return !(reconsumeTimes > 0 && message.DelayLevel(props) > 0)
}

func (p *Processor) schedule(msg *message.Message) error {
	if p.d.Schedule == nil {
		p.scheduleNotice.Do(func() {
			p.log.Warn("delay and timer messages are delivered immediately: no schedule service is wired yet", "topic", msg.Topic)
		})
		return nil
	}
	if err := p.d.Schedule.Schedule(msg); err != nil {
		return fmt.Errorf("schedule message: %w", err)
	}
	return nil
}

// putResponse turns a store result into the send response. A flush timeout
// still stored the message: it is answered with the normal fields and code
// FLUSH_DISK_TIMEOUT, which clients count as sent.
//
// A stored message whose WAIT property (wait) is not "false" then waits for its
// replicas (Deps.Replicas); a replication failure is answered
// FLUSH_SLAVE_TIMEOUT, also over a flush timeout, as Apache's
// CommitLog.handleDiskFlushAndHA lets the replica status win.
func (p *Processor) putResponse(ctx context.Context, req *remoting.Command, cfg *config.Config, res store.PutResult, err error, wait string, queueID int32, txID string, batch bool) (*remoting.Command, error) {
	rc := code.Success
	switch {
	case err == nil && res.FlushTimedOut:
		rc = code.FlushDiskTimeout
	case err != nil && errors.Is(err, store.ErrFlushTimeout) && len(res.MsgIDs) > 0:
		rc = code.FlushDiskTimeout
	case err != nil:
		return nil, fmt.Errorf("put message: %w", err)
	}
	remark := ""
	if p.d.Replicas != nil && res.End > 0 && wait != "false" {
		if rerr := p.d.Replicas.WaitReplicas(ctx, res.End); rerr != nil {
			rc, remark = code.FlushSlaveTimeout, rerr.Error()
		}
	}
	resp := remoting.NewResponse(req, rc, remark)
	ext := make(map[string]string, 6)
	ext[extMsgID] = p.msgIDs(res, batch)
	ext[extQueueID] = strconv.Itoa(int(queueID))
	ext[extQueueOffset] = strconv.FormatInt(res.QueueOffset, 10)
	if txID != "" {
		ext[extTransactionID] = txID
	}
	p.addRegion(ext, cfg)
	resp.ExtFields = ext
	return resp, nil
}

// msgIDs is the response msgId: the offset message id, comma-joined for a
// batch. A store that returns no ids gets one derived from the physical
// offset.
func (p *Processor) msgIDs(res store.PutResult, batch bool) string {
	switch {
	case len(res.MsgIDs) == 0:
		return message.OffsetMsgID(p.storeHost(), res.PhysicalOffset)
	case !batch || len(res.MsgIDs) == 1:
		return res.MsgIDs[0]
	}
	return strings.Join(res.MsgIDs, ",")
}
