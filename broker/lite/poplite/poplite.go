// Package poplite answers POP_LITE_MESSAGE (200070, docs/lite-topics.md §6): a
// client's pop drains its event set LMQ by LMQ, each LMQ consumed FIFO under
// its (group, lmq) lock and order state, and parks in a long poll keyed by
// the client when nothing is there. It also handles the lite branch of
// ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME (requests carrying liteTopic,
// §6.7–§6.8), ACK_LITE_MESSAGE (200072, aliased to that ack) and of
// NOTIFICATION (requests carrying liteConsumer, §6.11). A slave answers the
// pops and acks as it answers regular ones (pop.NotMaster).
package poplite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/lite/dispatcher"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/lite/offsets"
	"github.com/rmqgo/rmq/broker/lite/orderinfo"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/longpoll"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// CodeAckLiteMessage is ACK_LITE_MESSAGE: reserved upstream with no
// processor; here an alias of ACK_MESSAGE with liteTopic.
const CodeAckLiteMessage = code.AckLiteMessage

// Protocol constants.
const (
	// MaxMsgNum caps one pop.
	MaxMsgNum = 32
	// ReviveQid is the POP order revive queue id every lite receipt carries.
	ReviveQid = 999
	// bornSlack: a request that arrives this long after its poll budget
	// ran out is answered POLLING_TIMEOUT at once.
	bornSlack = 500
)

// Store is what pops read.
type Store interface {
	GetMessage(ctx context.Context, topic string, queueID int32, offset int64, maxMsgNums int, maxBytes int, filter store.MessageFilter) (*store.GetResult, error)
	MaxOffset(topic string, queueID int32) int64
	MinOffset(topic string, queueID int32) int64
}

// Deps are the processor's collaborators; all but InMemory, Now and Logger
// are required.
type Deps struct {
	Config     func() *config.Config
	Store      Store
	Meta       *meta.Source
	Registry   *registry.Registry
	Dispatcher *dispatcher.Dispatcher
	Orders     *orderinfo.Manager
	Locks      *orderinfo.Locks
	Offsets    *offsets.Offsets
	// InMemory reports whether the message at offset of lmq is still hot
	// (the MAX init mode starts a new group at 0 then, §6.3 step 3).
	InMemory func(lmq string, offset int64) bool
	// Hold tunes the long polling (MaxParked = maxPopPollingSize).
	Hold longpoll.Config
	// MessagesOut counts popped messages under the parent topic
	// (broker/metrics); nil: not counted.
	MessagesOut func(topic, group string, msgs int, bytes int64)
	// LagCollect is told after each read of an LMQ for group whether it
	// filled the pop's batch (more may wait at next) or caught up
	// (broker/metrics lite lag); nil: not told.
	LagCollect func(group, parent, lmq string, full bool, next int64)
	Now        func() time.Time
	Logger     *slog.Logger
}

// Processor is safe for concurrent use.
type Processor struct {
	d       Deps
	log     *slog.Logger
	hold    *longpoll.Service // parked POP_LITE_MESSAGE
	notices *longpoll.Service // parked lite NOTIFICATION (§6.11)
}

// New validates d and builds the processor and its long polling; it
// installs itself as the dispatcher's waker.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Store == nil || d.Meta == nil || d.Registry == nil || d.Dispatcher == nil ||
		d.Orders == nil || d.Locks == nil || d.Offsets == nil {
		return nil, errors.New("poplite: Config, Store, Meta, Registry, Dispatcher, Orders, Locks and Offsets are required")
	}
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	d.Hold = d.Hold.Inherit(d.Now, d.Logger)
	p := &Processor{d: d, log: d.Logger}
	// The long-poll table is keyed by client: "topic" = pollKey(client),
	// queue 0, every request waiting for "offset" 0, and a client's "max
	// offset" is 1 while its event set is not empty.
	pending := func(k string, _ int32) int64 {
		if key, ok := parsePollKey(k); ok && d.Dispatcher.Pending(key) > 0 {
			return 1
		}
		return 0
	}
	p.hold = longpoll.New(d.Hold, p.resume, pending)
	p.notices = longpoll.New(d.Hold, p.resumeNotify, pending)
	d.Dispatcher.SetWaker(p.Wake)
	return p, nil
}

func pollKey(k registry.ClientKey) string { return k.Group + "\x00" + k.ClientID }

func parsePollKey(s string) (registry.ClientKey, bool) {
	g, c, ok := strings.Cut(s, "\x00")
	return registry.ClientKey{ClientID: c, Group: g}, ok
}

// Wake re-runs the parked pops and notifications of a client (the
// dispatcher placed an event).
func (p *Processor) Wake(k registry.ClientKey) {
	p.hold.WakeQueue(pollKey(k), 0, 1)
	p.notices.WakeQueue(pollKey(k), 0, 1)
}

// Parked is the number of parked pops.
func (p *Processor) Parked() int { return p.hold.Len() }

// ParkedNotifications is the number of parked lite notifications.
func (p *Processor) ParkedNotifications() int { return p.notices.Len() }

// Handlers maps the pop code to its handler.
func (p *Processor) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{code.PopLiteMessage: p.handle}
}

// Register installs the pop handler on the pull executor and
// ACK_LITE_MESSAGE on the admin executor.
func (p *Processor) Register(r processor.Registrar) {
	r.RegisterProcessor(code.PopLiteMessage, p.handle, processor.PoolPull)
	r.RegisterProcessor(CodeAckLiteMessage, p.handleAckLite, processor.PoolPull)
}

// Start runs the long pollings' deadline loops.
func (p *Processor) Start() {
	p.hold.Start()
	p.notices.Start()
}

// Drain answers every parked pop and notification (shutdown).
func (p *Processor) Drain() int { return p.hold.Drain() + p.notices.Drain() }

// Close stops the long pollings.
func (p *Processor) Close() {
	p.hold.Close()
	p.notices.Close()
}

type popHeader struct {
	clientID, group, topic string
	maxMsgNum              int32
	invisibleTime          int64
	pollTime               int64
	bornTime               int64
	attemptID              string
}

func parsePop(req *remoting.Command) (popHeader, error) {
	f := protocol.FieldsOf(req.ExtFields)
	h := popHeader{
		clientID:      f.Str("clientId"),
		group:         f.Str("consumerGroup"),
		topic:         f.Str("topic"),
		maxMsgNum:     f.Int32("maxMsgNum"),
		invisibleTime: f.Int64("invisibleTime"),
		pollTime:      f.Int64("pollTime"),
		bornTime:      f.Int64("bornTime"),
		attemptID:     f.OptStr("attemptId", ""),
	}
	if err := f.Err(); err != nil {
		return h, remoting.Errorf(code.InvalidParameter, "POP_LITE_MESSAGE: %v", err)
	}
	return h, nil
}

func (p *Processor) handle(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return p.process(ctx, ch, req, true)
}

// resume re-runs a woken or expired pop and writes its answer.
func (p *Processor) resume(ctx context.Context, ch *remoting.Channel, req *remoting.Command) {
	resp, err := p.process(ctx, ch, req, true)
	processor.WriteResumed(p.log, "pop lite", ch, req, resp, err)
}

// check runs the pre-checks of §6.2.
func (p *Processor) check(h *popHeader, now int64) error {
	cfg := p.d.Config()
	if h.bornTime <= 0 {
		h.bornTime = now
	}
	if now-h.bornTime-h.pollTime > bornSlack {
		return remoting.Errorf(code.PollingTimeout, "the request expired: born %d + poll %d ms is past", h.bornTime, h.pollTime)
	}
	if cfg.BrokerPermission&protocol.PermRead == 0 {
		return remoting.Errorf(code.NoPermission, "the broker[%s] pop lite message is forbidden", cfg.BrokerIP1)
	}
	// A slave records no order state or offsets: the same answer as a
	// regular pop (upstream's lite pop has no such check).
	if err := pop.NotMaster(cfg); err != nil {
		return err
	}
	if h.maxMsgNum <= 0 || h.maxMsgNum > MaxMsgNum {
		return remoting.Errorf(code.InvalidParameter, "maxMsgNum %d out of range 1..%d", h.maxMsgNum, MaxMsgNum)
	}
	if h.invisibleTime <= 0 {
		return remoting.Errorf(code.InvalidParameter, "invisibleTime %d must be positive", h.invisibleTime)
	}
	return p.checkTarget(h.topic, h.group)
}

// checkTarget: the broker is readable, topic is a readable LITE parent and
// group a consume-enabled lite group bound to it (§6.2 steps 4 and 5).
func (p *Processor) checkTarget(topic, group string) error {
	cfg := p.d.Config()
	if cfg.BrokerPermission&protocol.PermRead == 0 {
		return remoting.Errorf(code.NoPermission, "the broker[%s] pop lite message is forbidden", cfg.BrokerIP1)
	}
	tc, ok := p.d.Meta.Topic(topic)
	if !ok {
		return remoting.Errorf(code.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if tc.Perm&protocol.PermRead == 0 {
		return remoting.Errorf(code.NoPermission, "the topic[%s] peeking message is forbidden", topic)
	}
	if !meta.IsParent(tc) {
		return remoting.Errorf(code.InvalidParameter, "topic[%s] is not a LITE topic (message.type)", topic)
	}
	g, ok := p.d.Meta.Group(group)
	if !ok {
		return remoting.Errorf(code.SubscriptionGroupNotExist, "subscription group [%s] does not exist", group)
	}
	if !g.ConsumeEnable {
		return remoting.Errorf(code.NoPermission, "subscription group no permission, %s", group)
	}
	if g.BindTopic != topic {
		return remoting.Errorf(code.InvalidParameter, "group [%s] is not bound to lite topic [%s] (lite.bind.topic=%q)", group, topic, g.BindTopic)
	}
	return nil
}

func (p *Processor) process(ctx context.Context, ch *remoting.Channel, req *remoting.Command, allowSuspend bool) (*remoting.Command, error) {
	h, err := parsePop(req)
	if err != nil {
		return nil, err
	}
	now := p.d.Now().UnixMilli()
	if h.bornTime <= 0 {
		// Java fills bornTime in on the request: a re-run after a wake-up
		// keeps the original deadline.
		req.SetExt("bornTime", strconv.FormatInt(now, 10))
	}
	if err := p.check(&h, now); err != nil {
		return nil, err
	}
	key := registry.ClientKey{ClientID: h.clientID, Group: h.group}
	p.d.Dispatcher.Touch(key, false)
	res := p.popByClient(ctx, key, &h, now)
	if len(res.body) > 0 || res.count > 0 {
		p.d.Dispatcher.Touch(key, true)
		resp := remoting.NewResponse(req, code.Success, "")
		resp.SetExt("popTime", strconv.FormatInt(now, 10))
		resp.SetExt("invisibleTime", strconv.FormatInt(h.invisibleTime, 10))
		resp.SetExt("reviveQid", strconv.Itoa(ReviveQid))
		resp.SetExt("orderCountInfo", strings.Join(res.counts, ";"))
		resp.Body = res.body
		if f := p.d.MessagesOut; f != nil {
			f(h.topic, h.group, res.count, int64(len(res.body)))
		}
		return resp, nil
	}
	deadline := time.UnixMilli(h.bornTime + h.pollTime)
	if !allowSuspend || h.pollTime <= 0 || !p.d.Now().Before(deadline) {
		return remoting.NewResponse(req, code.PollingTimeout, "no new message, polling timeout"), nil
	}
	err = p.hold.Park(longpoll.Request{Channel: ch, Command: req, Topic: pollKey(key), Deadline: deadline})
	if errors.Is(err, longpoll.ErrFull) {
		return remoting.NewResponse(req, code.PollingFull, "too many pop lite requests are suspended"), nil
	}
	if err != nil {
		return remoting.NewResponse(req, code.PollingTimeout, "no new message, polling timeout"), nil
	}
	p.d.Dispatcher.MarkLongPoll(key)
	// An event placed between the drain and the park must not wait for
	// the periodic check.
	if p.d.Dispatcher.Pending(key) > 0 {
		p.Wake(key)
	}
	return nil, nil
}

type popResult struct {
	body   []byte
	counts []string
	count  int
}

// popByClient drains the client's events until maxMsgNum messages are
// found (§6.3). An lmq counts as handled only once it was read under its
// lock: one skipped because it was locked or blocked does not suppress a
// later event for it in this pop (#11191).
func (p *Processor) popByClient(ctx context.Context, key registry.ClientKey, h *popHeader, popTime int64) popResult {
	var res popResult
	handled := map[string]bool{}
	for res.count < int(h.maxMsgNum) {
		lmq, ok := p.d.Dispatcher.Poll(key)
		if !ok {
			break
		}
		if handled[lmq] || !naming.BelongsTo(lmq, h.topic) {
			continue
		}
		if p.d.Registry.Tombstoned(key, lmq) {
			continue
		}
		n, done := p.popLMQ(ctx, key.Group, lmq, int(h.maxMsgNum)-res.count, h, popTime, &res)
		if done {
			handled[lmq] = true
		}
		res.count += n
	}
	return res
}

// popLMQ pops up to n messages of one lmq for group (§6.3 popLiteTopic);
// done is false when the lmq was locked or blocked.
func (p *Processor) popLMQ(ctx context.Context, group, lmq string, n int, h *popHeader, popTime int64, res *popResult) (count int, done bool) {
	k := orderinfo.Key{LMQ: lmq, Group: group}
	if !p.d.Locks.TryLock(k) {
		return 0, false
	}
	defer p.d.Locks.Unlock(k)
	resetTo, hasReset := p.d.Offsets.TakeReset(group, lmq)
	// A pending reset bypasses the FIFO block (#10550).
	if !hasReset && p.d.Orders.Blocked(k, h.attemptID) {
		return 0, false
	}
	var offset int64
	switch {
	case hasReset:
		p.d.Orders.Clear(k)
		offset = resetTo
		p.d.Offsets.Commit(group, lmq, offset)
	default:
		offset = p.d.Offsets.Committed(group, lmq)
		if offset < 0 {
			offset = p.initOffset(lmq)
			p.d.Offsets.Commit(group, lmq, offset)
		}
	}
	for attempt := 0; attempt < 2; attempt++ {
		r, err := p.d.Store.GetMessage(ctx, lmq, naming.QueueID, offset, n, 0, nil)
		if err != nil {
			p.log.Warn("pop lite read", "lmq", lmq, "group", group, "offset", offset, "err", err)
			return 0, true
		}
		switch r.Status {
		case store.Found:
			counts := p.d.Orders.Update(k, h.attemptID, popTime, h.invisibleTime, r.QueueOffsets)
			for i, rec := range r.Records {
				res.body = append(res.body, rec...)
				res.counts = append(res.counts, strconv.Itoa(int(counts[i])))
			}
			count = len(r.Records)
			r.Release()
			if f := p.d.LagCollect; f != nil {
				f(group, h.topic, lmq, count >= n, r.NextBeginOffset)
			}
			return count, true
		case store.OffsetTooSmall, store.OffsetOverflowBadly, store.OffsetFoundNull, store.NoMatchedMessage, store.MessageWasRemoving:
			r.Release()
			if r.NextBeginOffset == offset {
				return 0, true
			}
			// Correct the group's offset and read once more.
			offset = r.NextBeginOffset
			p.d.Offsets.Commit(group, lmq, offset)
		default:
			// NO_MATCHED_LOGIC_QUEUE (deleted lmq), NO_MESSAGE_IN_QUEUE,
			// OFFSET_OVERFLOW_ONE: nothing to pop, nothing to correct.
			r.Release()
			if f := p.d.LagCollect; f != nil {
				f(group, h.topic, lmq, false, offset)
			}
			return 0, true
		}
	}
	return 0, true
}

// initOffset is where a group without a committed offset starts (MAX init
// mode): at 0 while the LMQ still starts at 0 and that message is hot, so
// the first message of a new lite topic is not skipped; else at the last
// message.
func (p *Processor) initOffset(lmq string) int64 {
	min := p.d.Store.MinOffset(lmq, naming.QueueID)
	if min <= 0 && (p.d.InMemory == nil || p.d.InMemory(lmq, 0)) {
		return 0
	}
	return max(p.d.Store.MaxOffset(lmq, naming.QueueID)-1, 0)
}

// errf is a CodeError with a formatted remark.
func errf(c int32, format string, args ...any) error {
	return &remoting.CodeError{Code: c, Remark: fmt.Sprintf(format, args...)}
}
