// Package pull answers PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361)
// (Java's PullMessageProcessor and DefaultPullMessageResultHandler,
// docs/protocol.md §6.2): permission and subscription checks, the read from the
// message store with a tag filter, the mapping of the store's status to a
// pull code and nextBeginOffset, offset commits, and long polling through
// package longpoll.
package pull

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/sysmem"
	"github.com/rmqgo/rmq/broker/longpoll"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Pull request sysFlag bits (docs/protocol.md §5.7).
const (
	FlagCommitOffset = 0x1
	FlagSuspend      = 0x2
	FlagSubscription = 0x4
	FlagClassFilter  = 0x8
	FlagLitePull     = 0x10
)

// MaxMsgNums caps one pull (Java's maxTransferCountOnMessageInMemory).
const MaxMsgNums = 32

// permReadForbiddenBit is 1 << PermName.INDEX_PERM_READ in the subscription
// group forbidden table.
const permReadForbiddenBit = 1 << 2

// FilterFactory compiles subscriptions that are not tag expressions
// (SQL92). Without one such pulls answer SUBSCRIPTION_PARSE_FAILED.
type FilterFactory interface {
	// NewFilter returns the filter of group's subscription sub; an error
	// means the expression does not compile.
	NewFilter(group string, sub client.SubscriptionData) (store.MessageFilter, error)
}

// Deps are the processor's collaborators; all but Filters are required.
type Deps struct {
	Config        func() *config.Config
	Store         store.MessageStore
	Topics        *topic.Manager
	Subscriptions *subscription.Manager
	Consumers     *client.ConsumerManager
	Filters       FilterFactory
	// Resets holds server-side offset resets (useServerSideResetOffset);
	// nil: none.
	Resets *ResetTable
	// CommitLogMaxOffset is the CommitLog's end; with slaveReadEnable a
	// pull that lags it by more than accessMessageInMemoryMaxRatio of
	// MemoryBytes is redirected to the group's whichBrokerWhenConsumeSlowly.
	// Nil: pulls never count as lagging.
	CommitLogMaxOffset func() int64
	// MemoryBytes is the machine's RAM; 0: sysmem.Total(), 1 GiB if unknown.
	MemoryBytes int64
	// MasterOnline reports whether a slave's master is up (a slave that
	// has nothing to serve sends the consumer back to it); nil: always.
	MasterOnline func() bool
	// Stats records the messages each group pulls (Apache's GROUP_GET_NUMS,
	// GROUP_GET_SIZE: VIEW_BROKER_STATS_DATA, mqadmin statsAll); nil: none.
	Stats GetStats
	// Hold tunes long polling; its Now and Logger default to the ones below.
	Hold longpoll.Config
	// MessagesOut counts delivered messages for the broker's metrics
	// (broker/metrics: rocketmq_messages_out_total, throughput_out);
	// nil: not counted.
	MessagesOut func(topic, group string, msgs int, bytes int64)
	// Resumed is told of each long-polling pull answered after it was
	// suspended (broker/metrics: rpc latency with is_long_polling);
	// nil: not told.
	Resumed func(req, resp *remoting.Command, err error)
	Now     func() time.Time
	Logger  *slog.Logger
}

type pullKey struct {
	group, topic string
	qid          int32
}

// Processor serves pulls. New registers its long-polling service as a
// store arrival listener; Start/Close run and stop it.
type Processor struct {
	d    Deps
	log  *slog.Logger
	hold *longpoll.Service

	pmu    sync.RWMutex
	pulled map[pullKey]int64 // last nextBeginOffset per (group, topic, queue), for consume stats

	// bodies recycles the buffers answers' bodies are built in, once the
	// connection has copied them (remoting.Command.Written): a catch-up
	// pull answers 32 messages, and a new buffer each time was an
	// allocation of tens of KiB to zero and collect.
	bodies sync.Pool
}

// New validates d, builds the processor and its long-polling service, and
// subscribes the latter to the store's arrivals.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Store == nil || d.Topics == nil || d.Subscriptions == nil || d.Consumers == nil {
		return nil, errors.New("pull: Deps.Config, Store, Topics, Subscriptions and Consumers are required")
	}
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	if d.MemoryBytes <= 0 {
		d.MemoryBytes = int64(sysmem.Total())
	}
	if d.MemoryBytes <= 0 {
		d.MemoryBytes = 1 << 30
	}
	d.Hold = d.Hold.Inherit(d.Now, d.Logger)
	p := &Processor{d: d, log: d.Logger, pulled: map[pullKey]int64{}}
	p.hold = longpoll.New(d.Hold, p.resume, d.Store.MaxOffset)
	d.Store.AddArrivalListener(p.hold.OnArrival)
	if d.Resets != nil {
		d.Resets.setWake(func(topic string, qid int32) { p.hold.WakeQueue(topic, qid, math.MaxInt64) })
	}
	return p, nil
}

// Hold is the long-polling service.
func (p *Processor) Hold() *longpoll.Service { return p.hold }

// Start runs long polling's deadline and re-check loop.
func (p *Processor) Start() { p.hold.Start() }

// Close stops long polling (suspended pulls are dropped).
func (p *Processor) Close() { p.hold.Close() }

// Handlers maps PULL_MESSAGE and LITE_PULL_MESSAGE to the handler.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.PullMessage:     p.handle,
		code.LitePullMessage: p.handle,
	}
}

// Register installs Handlers on the pull pool.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterAll(r, p.Handlers(), processor.PoolPull)
}

// PullOffset is the last nextBeginOffset answered to (group, topic, queue)
// (Java's pull offset table, ConsumeStats.pullOffset).
func (p *Processor) PullOffset(group, topic string, queueID int32) (int64, bool) {
	p.pmu.RLock()
	defer p.pmu.RUnlock()
	v, ok := p.pulled[pullKey{group, topic, queueID}]
	return v, ok
}

// ForgetGroup drops a group's pull offsets and pending resets (group
// deleted).
func (p *Processor) ForgetGroup(group string) {
	if p.d.Resets != nil {
		p.d.Resets.ForgetGroup(group)
	}
	p.forgetPulled(func(k pullKey) bool { return k.group == group })
}

// ForgetTopic drops a topic's pull offsets and pending resets (topic
// deleted).
func (p *Processor) ForgetTopic(topic string) {
	if p.d.Resets != nil {
		p.d.Resets.ForgetTopic(topic)
	}
	p.forgetPulled(func(k pullKey) bool { return k.topic == topic })
}

// forgetPulled drops the pull offsets whose key matches.
func (p *Processor) forgetPulled(match func(pullKey) bool) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	maps.DeleteFunc(p.pulled, func(k pullKey, _ int64) bool { return match(k) })
}

func (p *Processor) handle(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if cfg := p.d.Config(); cfg.BrokerRole == config.RoleSlave && !cfg.SlaveReadEnable {
		// Java's PullMessageProcessor.rejectRequest: the remoting layer
		// answers SYSTEM_BUSY with this remark.
		return nil, remoting.Errorf(code.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while")
	}
	return p.process(ctx, ch, req, true)
}

// resume re-runs a woken pull without suspension and answers it (Java's
// executeRequestWhenWakeup).
func (p *Processor) resume(ctx context.Context, ch *remoting.Channel, req *remoting.Command) {
	resp, err := p.process(ctx, ch, req, false)
	if p.d.Resumed != nil {
		p.d.Resumed(req, resp, err) // before the answer: whoever reads it sees the count
	}
	processor.WriteResumed(p.log, "pull", ch, req, resp, err)
}

type header struct {
	group, topic             string
	queueID                  int32
	queueOffset              int64
	maxMsgNums, sysFlag      int32
	commitOffset             int64
	suspendMillis            int64
	subVersion               int64
	subscription, expression string
	maxMsgBytes              int32
}

func parseHeader(ext map[string]string) (header, error) {
	f := protocol.FieldsOf(ext)
	h := header{
		group:         f.Str("consumerGroup"),
		topic:         f.Str("topic"),
		queueID:       f.Int32("queueId"),
		queueOffset:   f.Int64("queueOffset"),
		maxMsgNums:    f.Int32("maxMsgNums"),
		sysFlag:       f.Int32("sysFlag"),
		commitOffset:  f.Int64("commitOffset"),
		suspendMillis: f.Int64("suspendTimeoutMillis"),
		subVersion:    f.Int64("subVersion"),
		subscription:  f.OptStr("subscription", ""),
		expression:    f.OptStr("expressionType", ""),
		maxMsgBytes:   f.OptInt32("maxMsgBytes", 0),
	}
	return h, f.Err()
}

// process is one pull; allowSuspend is false when a suspended pull is
// re-run (then it is always answered and offsets are not committed).
func (p *Processor) process(ctx context.Context, ch *remoting.Channel, req *remoting.Command, allowSuspend bool) (*remoting.Command, error) {
	h, err := parseHeader(req.ExtFields)
	if err != nil {
		return nil, processor.BadRequest(err)
	}
	cfg := p.d.Config()
	if cfg.BrokerPermission&protocol.PermRead == 0 {
		return nil, remoting.Errorf(code.NoPermission, "the broker[%s] pulling message is forbidden", cfg.BrokerIP1)
	}
	if req.Code == code.LitePullMessage && !cfg.LitePullMessageEnable {
		return nil, remoting.Errorf(code.NoPermission, "the broker[%s] for lite pull consumer is forbidden", cfg.BrokerIP1)
	}
	sg, ok := p.d.Subscriptions.FindOrCreate(h.group)
	if !ok {
		return nil, remoting.Errorf(code.SubscriptionGroupNotExist, "subscription group [%s] does not exist", h.group)
	}
	if !sg.ConsumeEnable {
		return nil, remoting.Errorf(code.NoPermission, "subscription group no permission, %s", h.group)
	}
	tc, ok := p.d.Topics.Get(h.topic)
	if !ok {
		return nil, remoting.Errorf(code.TopicNotExist, "topic[%s] not exist, apply first please!", h.topic)
	}
	if tc.Perm&protocol.PermRead == 0 {
		return nil, remoting.Errorf(code.NoPermission, "the topic[%s] pulling message is forbidden", h.topic)
	}
	if h.queueID < 0 || int(h.queueID) >= tc.ReadQueueNums {
		return nil, remoting.Errorf(code.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
			h.queueID, h.topic, tc.ReadQueueNums, processor.RemoteAddr(ch))
	}

	sub, err := p.subscriptionOf(h, sg)
	if err != nil {
		return nil, err
	}
	filter, err := p.filterOf(h.group, sub)
	if err != nil {
		return nil, err
	}
	if p.d.Resets != nil && cfg.UseServerSideResetOffset {
		if off, ok := p.d.Resets.Take(h.group, h.topic, h.queueID); ok {
			return p.resetResponse(req, h, tc.TopicSysFlag, sg, off), nil
		}
	}

	maxNums := int(h.maxMsgNums)
	if c := cfg.MaxTransferCountOnMessageInMemory; c > 0 {
		maxNums = min(maxNums, c)
	}
	maxNums = max(min(maxNums, MaxMsgNums), 1)
	maxBytes := cfg.MaxTransferBytesOnMessageInMemory
	if maxBytes <= 0 {
		maxBytes = 256 << 10
	}
	if h.maxMsgBytes > 0 {
		maxBytes = min(maxBytes, int(h.maxMsgBytes))
	}
	res, err := p.d.Store.GetMessage(ctx, h.topic, h.queueID, h.queueOffset, maxNums, maxBytes, filter)
	if err != nil {
		return nil, remoting.Errorf(code.SystemError, "store getMessage failed: %v", err)
	}
	if res == nil {
		return nil, remoting.Errorf(code.SystemError, "store getMessage return null")
	}
	defer res.Release()

	respCode, next := mapResult(res, h.queueOffset)
	if respCode == code.PullOffsetMoved {
		// Rare and consequential (a Java consumer drops the queue and
		// resumes from next): Apache logs it too.
		remote := ""
		if ch != nil {
			remote = ch.RemoteAddr()
		}
		p.log.Info("pull offset moved", "group", h.group, "topic", h.topic, "queueId", h.queueID,
			"offset", h.queueOffset, "next", next, "min", res.MinOffset, "max", res.MaxOffset, "status", res.Status.String(),
			"remote", remote)
	}
	suggest, respCode := p.suggestBroker(cfg, sg, res, respCode)
	if respCode == code.Success && p.d.MessagesOut != nil {
		p.d.MessagesOut(h.topic, h.group, len(res.Records), int64(res.TotalSize))
	}
	p.recordPullOffset(h, next)
	if allowSuspend && h.sysFlag&FlagCommitOffset != 0 && h.commitOffset >= 0 {
		// Only forward [our choice; Java overwrites]: the broker runs pulls
		// and UPDATE_CONSUMER_OFFSET on different executors, so the commit
		// piggybacked on a client's last pull can land after the explicit
		// commit its shutdown sent next, and would hand the next owner of
		// the queue messages already consumed. Moving an offset back is
		// what resets and UPDATE_CONSUMER_OFFSET are for.
		p.d.Store.AdvanceOffset(h.group, h.topic, h.queueID, h.commitOffset)
	}

	if respCode == code.PullNotFound && allowSuspend && h.sysFlag&FlagSuspend != 0 && ch != nil {
		timeout := time.Duration(h.suspendMillis) * time.Millisecond
		if !cfg.LongPollingEnable {
			timeout = cfg.ShortPollingTimeMills
		}
		if timeout > 0 {
			err := p.hold.Park(longpoll.Request{
				Channel: ch, Command: req, Topic: h.topic, QueueID: h.queueID, Offset: h.queueOffset,
				Filter: filter, Deadline: p.d.Now().Add(timeout),
			})
			switch {
			case err == nil:
				// A message stored between the read and the park found
				// nothing parked to wake: look again now.
				if m := p.d.Store.MaxOffset(h.topic, h.queueID); m > h.queueOffset {
					p.hold.WakeQueue(h.topic, h.queueID, m)
				}
				return nil, nil // answered by the hold service
			case errors.Is(err, longpoll.ErrFull):
				// Clients back off ~3 s on an error code instead of
				// re-pulling at once as they would after PULL_NOT_FOUND.
				return nil, remoting.Errorf(code.SystemBusy, "[PULL_HOLD_FULL] too many suspended pull requests, try again later")
			}
			// Closed: answer now.
		}
	}

	resp := remoting.NewResponse(req, respCode, res.Status.String())
	resp.SetExt("suggestWhichBrokerId", strconv.FormatInt(suggest, 10))
	resp.SetExt("nextBeginOffset", strconv.FormatInt(next, 10))
	resp.SetExt("minOffset", strconv.FormatInt(res.MinOffset, 10))
	resp.SetExt("maxOffset", strconv.FormatInt(res.MaxOffset, 10))
	resp.SetExt("topicSysFlag", strconv.Itoa(tc.TopicSysFlag))
	resp.SetExt("groupSysFlag", strconv.Itoa(sg.GroupSysFlag))
	if respCode == code.Success {
		resp.Body, resp.Written = p.concatRecords(res)
		if p.d.Stats != nil {
			p.d.Stats.GroupGet(h.group, h.topic, len(res.Records), res.TotalSize)
		}
	}
	return resp, nil
}

// GetStats counts pulled messages (brokerstats.Manager).
type GetStats interface {
	GroupGet(group, topic string, msgs, size int)
}

// suggestBroker is the suggestWhichBrokerId of an answer, and its code
// (Java's PullMessageProcessor): with slaveReadEnable the group's
// whichBrokerWhenConsumeSlowly when the pull lags the CommitLog's end by
// more than accessMessageInMemoryMaxRatio of RAM (its data is no longer in
// the page cache), else the group's brokerId; without it the master. A
// slave serving a pull that does not lag sends the consumer back to the
// master, with PULL_RETRY_IMMEDIATELY when it found nothing, while the
// master is online [our choice: Java assumes so in classic mode; we go by
// the registration answers, so that consumers stay on a slave whose
// master is gone instead of retrying at once forever].
func (p *Processor) suggestBroker(cfg *config.Config, sg subscription.GroupConfig, res *store.GetResult, respCode int32) (int64, int32) {
	lagging := p.lagging(cfg, res)
	suggest := int64(protocol.MasterID)
	if cfg.SlaveReadEnable {
		suggest = sg.BrokerID
		if lagging {
			suggest = sg.WhichBrokerWhenConsumeSlowly
		}
	}
	if cfg.BrokerID != protocol.MasterID && !lagging && (p.d.MasterOnline == nil || p.d.MasterOnline()) {
		suggest = protocol.MasterID
		if res.Status != store.Found {
			respCode = code.PullRetryImmediately
		}
	}
	return suggest, respCode
}

// lagging reports whether the last message read lies further behind the
// CommitLog's end than accessMessageInMemoryMaxRatio of RAM (Java's
// GetMessageResult.suggestPullingFromSlave).
func (p *Processor) lagging(cfg *config.Config, res *store.GetResult) bool {
	if p.d.CommitLogMaxOffset == nil || len(res.Records) == 0 {
		return false
	}
	last := res.Records[len(res.Records)-1]
	if len(last) < message.PosPhysicalOffset+8 {
		return false
	}
	phy := int64(binary.BigEndian.Uint64(last[message.PosPhysicalOffset:]))
	return p.d.CommitLogMaxOffset()-phy > p.d.MemoryBytes*int64(cfg.AccessMessageInMemoryMaxRatio)/100
}

// subscriptionOf builds the subscription from the request (sysFlag bit 2)
// or takes it from the group's heartbeat registration (§6.2 step 2).
func (p *Processor) subscriptionOf(h header, sg subscription.GroupConfig) (client.SubscriptionData, error) {
	if h.sysFlag&FlagSubscription != 0 {
		sub, err := client.BuildSubscription(h.topic, h.subscription, h.expression)
		if err != nil {
			p.log.Warn("parse the consumer's subscription failed", "group", h.group, "subscription", h.subscription, "err", err)
			return sub, remoting.Errorf(code.SubscriptionParseFailed, "parse the consumer's subscription failed")
		}
		sub.SubVersion = p.d.Now().UnixMilli()
		p.d.Consumers.CompensateSubscription(h.group, sub)
		return sub, nil
	}
	model, ok := p.d.Consumers.MessageModel(h.group)
	if !ok {
		return client.SubscriptionData{}, remoting.Errorf(code.SubscriptionNotExist, "the consumer's group info not exist")
	}
	if !sg.ConsumeBroadcastEnable && model == client.Broadcasting {
		return client.SubscriptionData{}, remoting.Errorf(code.NoPermission, "the consumer group[%s] can not consume by broadcast way", h.group)
	}
	if p.d.Subscriptions.Forbidden(h.group, h.topic)&permReadForbiddenBit != 0 {
		return client.SubscriptionData{}, remoting.Errorf(code.NoPermission, "the consumer group[%s] is forbidden for topic[%s]", h.group, h.topic)
	}
	sub, ok := p.d.Consumers.RegisteredSubscription(h.group, h.topic)
	if !ok {
		return sub, remoting.Errorf(code.SubscriptionNotExist, "the consumer's subscription not exist")
	}
	if sub.SubVersion < h.subVersion {
		return sub, remoting.Errorf(code.SubscriptionNotLatest, "the consumer's subscription not latest")
	}
	return sub, nil
}

// filterOf returns the store filter of a subscription: tag codes here,
// other expression types through the FilterFactory.
func (p *Processor) filterOf(group string, sub client.SubscriptionData) (store.MessageFilter, error) {
	if sub.IsTagType() {
		return newTagFilter(sub), nil
	}
	if p.d.Filters == nil {
		return nil, remoting.Errorf(code.SubscriptionParseFailed, "the broker does not support consumer to filter message by %s", sub.ExpressionType)
	}
	f, err := p.d.Filters.NewFilter(group, sub)
	if err != nil {
		// A factory that already chose the code (e.g. SQL92 while
		// enablePropertyFilter is off → SYSTEM_ERROR, as Java) keeps it.
		return nil, processor.KeepCode(err, code.SubscriptionParseFailed, "parse the consumer's subscription failed: %v", err)
	}
	return f, nil
}

func (p *Processor) recordPullOffset(h header, next int64) {
	k := pullKey{h.group, h.topic, h.queueID}
	p.pmu.Lock()
	p.pulled[k] = next
	p.pmu.Unlock()
}

// mapResult turns a store status into the pull code and nextBeginOffset
// (docs/protocol.md §6.2 table; Java's composeResponseHeader). The offsets of
// the "no data here" rows are derived from min/max rather than trusted
// from the store: a missing nextBeginOffset rewinds clients to 0.
func mapResult(r *store.GetResult, reqOffset int64) (int32, int64) {
	switch r.Status {
	case store.Found:
		return code.Success, r.NextBeginOffset
	case store.NoMatchedMessage, store.MessageWasRemoving:
		return code.PullRetryImmediately, r.NextBeginOffset
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if reqOffset != 0 {
			return code.PullOffsetMoved, 0
		}
		return code.PullNotFound, 0
	case store.OffsetFoundNull:
		return code.PullNotFound, r.NextBeginOffset
	case store.OffsetOverflowOne:
		return code.PullNotFound, reqOffset
	case store.OffsetOverflowBadly:
		return code.PullOffsetMoved, r.MaxOffset
	case store.OffsetTooSmall:
		return code.PullOffsetMoved, r.MinOffset
	case store.OffsetReset:
		return code.PullOffsetMoved, r.NextBeginOffset
	}
	return code.SystemError, reqOffset
}

// maxPooledBody bounds the buffers kept for reuse: a pull answers at most
// maxTransferBytesOnMessageInMemory (256 KiB by default) plus one message.
const maxPooledBody = 1 << 20

// concatRecords builds the body once from the records (which may alias
// store memory released right after), in a recycled buffer, and returns
// the function that gives the buffer back once it was written.
func (p *Processor) concatRecords(r *store.GetResult) ([]byte, func()) {
	n := 0
	for _, rec := range r.Records {
		n += len(rec)
	}
	var bp *[]byte
	if v, ok := p.bodies.Get().(*[]byte); ok && cap(*v) >= n {
		bp = v
	} else {
		// Rounded up so that the buffers of varying answers fit the
		// next ones.
		b := make([]byte, 0, (n+32<<10-1)&^(32<<10-1))
		bp = &b
	}
	body := (*bp)[:0]
	for _, rec := range r.Records {
		body = append(body, rec...)
	}
	if cap(body) > maxPooledBody {
		return body, nil
	}
	return body, func() {
		*bp = body[:0]
		p.bodies.Put(bp)
	}
}

// tagFilter matches consume-queue tag codes against a TAG subscription
// (Java's ExpressionMessageFilter for tag expressions).
type tagFilter struct {
	all   bool
	codes []int32
}

func newTagFilter(sub client.SubscriptionData) tagFilter {
	return tagFilter{all: sub.ClassFilterMode || sub.SubString == client.SubAll || sub.SubString == "", codes: sub.CodeSet}
}

func (f tagFilter) MatchTagsCode(tagsCode int64) bool {
	if f.all {
		return true
	}
	c := int32(tagsCode) // Java compares tagsCode.intValue()
	for _, x := range f.codes {
		if x == c {
			return true
		}
	}
	return false
}

func (f tagFilter) MatchProperties([]byte) bool { return true }

// TagsOnly marks the filter store.TagsOnlyFilter.
func (tagFilter) TagsOnly() {}

// DrainHeld answers every suspended pull now (broker shutdown).
func (p *Processor) DrainHeld() int { return p.hold.Drain() }
