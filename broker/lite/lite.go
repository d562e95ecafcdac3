// Package lite composes lite-topic support (docs/lite-topics.md) on top of the
// message store: naming and validation on the send path, the lifecycle
// sweeper, the subscription registry, event dispatch, POP_LITE_MESSAGE and
// lite acks, and the admin codes. Each concern has its own package below;
// Service builds and wires them, and the broker's wire_lite.go installs it.
package lite

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/internal/pace"
	"github.com/rmqgo/rmq/broker/lite/dispatcher"
	"github.com/rmqgo/rmq/broker/lite/lifecycle"
	"github.com/rmqgo/rmq/broker/lite/liteadmin"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/lite/offsets"
	"github.com/rmqgo/rmq/broker/lite/orderinfo"
	"github.com/rmqgo/rmq/broker/lite/poplite"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/lite/subscribe"
	"github.com/rmqgo/rmq/broker/longpoll"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// ToolsConsumerGroup is the admin tools' group; its pull offsets of a
// deleted lmq go too (§4.5 step 4).
const ToolsConsumerGroup = "TOOLS_CONSUMER"

// DefaultHotBytes is how far behind the CommitLog's end a message counts
// as in memory for the MAX init mode of a new group.
const DefaultHotBytes = 1 << 30

// Deps are the service's collaborators; Config, Store, Topics and Groups
// are required.
type Deps struct {
	Config func() *config.Config
	Store  *store.Store
	Topics meta.Topics
	Groups meta.Groups
	// BrokerName is this broker's name (sharding, §4.6).
	BrokerName func() string
	// Routes returns, in route order, the broker name of each write queue
	// of a parent topic; ok is false when unknown. Nil: every lite topic's
	// home is this broker.
	Routes func(parent string) (writeQueueBrokers []string, ok bool)
	// HotBytes overrides DefaultHotBytes.
	HotBytes int64
	// Started is the broker's start time (the sweeper waits minLiteTTl
	// after it).
	Started time.Time
	// ExpirationUnit is the unit of lite.topic.expiration (0: a minute;
	// tests shorten it).
	ExpirationUnit time.Duration
	// MessagesOut counts popped lite messages under their parent topic
	// (broker/metrics); nil: not counted.
	MessagesOut func(topic, group string, msgs int, bytes int64)
	// LagCollect is poplite's lag hook (broker/metrics lite lag); nil:
	// none.
	LagCollect func(group, parent, lmq string, full bool, next int64)
	// Deleted is told of the LMQs the lifecycle deleted; nil: not told.
	Deleted func(lmqs []string)
	Logger  *slog.Logger
}

// Service is lite-topic support of one broker.
type Service struct {
	d   Deps
	log *slog.Logger

	Meta       *meta.Source
	Offsets    *offsets.Offsets
	Orders     *orderinfo.Manager
	Locks      *orderinfo.Locks
	Registry   *registry.Registry
	Dispatcher *dispatcher.Dispatcher
	Lifecycle  *lifecycle.Manager
	Pop        *poplite.Processor
	Subscribe  *subscribe.Processor
	Admin      *liteadmin.Processor

	cleaning sync.WaitGroup
	sweeper  loop.Runner
}

// New builds the service and hooks it to the store (LMQ listeners); Start
// runs its loops.
func New(d Deps) (*Service, error) {
	if d.Config == nil || d.Store == nil || d.Topics == nil || d.Groups == nil {
		return nil, errors.New("lite: Config, Store, Topics and Groups are required")
	}
	defaults.Logger(&d.Logger)
	if d.BrokerName == nil {
		d.BrokerName = func() string { return d.Config().BrokerName }
	}
	defaults.Positive(&d.HotBytes, DefaultHotBytes)
	s := &Service{d: d, log: d.Logger}
	st := d.Store
	s.Meta = meta.NewSource(d.Topics, d.Groups)
	s.Offsets = offsets.New(st.Offsets())
	s.Locks = orderinfo.NewLocks(0, nil)
	s.Orders = orderinfo.New(orderinfo.Options{OnRelease: func(k orderinfo.Key) {
		if s.d.Config().EnableNotifyAfterPopOrderLockRelease {
			s.Dispatcher.Dispatch(k.Group, k.LMQ)
		}
	}})
	var err error
	s.Registry, err = registry.New(registry.Options{
		Group:            s.Meta.Group,
		MaxSubscriptions: func() int64 { return d.Config().MaxLiteSubscriptionCount },
		Active:           s.subscriptionActive,
		ResetOffset: func(group, lmq string, off int64) {
			s.Offsets.SetReset(group, lmq, off)
			s.Orders.Clear(orderinfo.Key{LMQ: lmq, Group: group})
			// The reset makes messages poppable again (an ack announces
			// only a remaining backlog): give the lmq an event.
			s.Dispatcher.Dispatch(group, lmq)
		},
		CommittedOffset:   s.Offsets.Committed,
		MaxOffset:         s.maxOffset,
		NotifyUnsubscribe: func(k registry.ClientKey, lite string) { s.Subscribe.Notify(k, lite) },
		TombstoneTTL:      func() time.Duration { return d.Config().LiteSubscriptionCheckTimeoutMills },
	})
	if err != nil {
		return nil, err
	}
	s.Dispatcher, err = dispatcher.New(dispatcher.Options{
		Registry:     s.Registry,
		Group:        s.Meta.Group,
		MaxOffset:    s.maxOffset,
		Committed:    s.Offsets.Committed,
		ResetPending: s.Offsets.HasReset,
		LMQsOf:       func(parent string) []string { return s.Lifecycle.Index().LMQs(parent) },
		Config:       s.dispatcherConfig,
	})
	if err != nil {
		return nil, err
	}
	cascade := []func([]string, []lifecycle.Batch, func()){s.cleanDeleted}
	if d.Deleted != nil {
		cascade = append(cascade, func(lmqs []string, _ []lifecycle.Batch, _ func()) { d.Deleted(lmqs) })
	}
	s.Lifecycle, err = lifecycle.New(lifecycle.Options{
		Store:   lifecycleStore{st},
		Meta:    s.Meta,
		Config:  s.lifecycleConfig,
		Cascade: cascade,
		Flush:   st.ConsumeQueue().Flush,
		Started: d.Started,
		Logger:  d.Logger.With("part", "lifecycle"),
	})
	if err != nil {
		return nil, err
	}
	cfg := d.Config()
	s.Pop, err = poplite.New(poplite.Deps{
		Config:      d.Config,
		Store:       st,
		Meta:        s.Meta,
		Registry:    s.Registry,
		Dispatcher:  s.Dispatcher,
		Orders:      s.Orders,
		Locks:       s.Locks,
		Offsets:     s.Offsets,
		InMemory:    s.inMemory,
		Hold:        longpoll.Config{MaxParked: int(max(cfg.MaxPopPollingSize, 1))},
		MessagesOut: d.MessagesOut,
		LagCollect:  d.LagCollect,
		Logger:      d.Logger.With("part", "poplite"),
	})
	if err != nil {
		return nil, err
	}
	s.Subscribe, err = subscribe.New(subscribe.Deps{Config: d.Config, Meta: s.Meta, Registry: s.Registry, Logger: d.Logger.With("part", "subscribe")})
	if err != nil {
		return nil, err
	}
	s.Admin, err = liteadmin.New(liteadmin.Deps{
		Config:     d.Config,
		Store:      adminStore{st},
		Meta:       s.Meta,
		Lifecycle:  s.Lifecycle,
		Registry:   s.Registry,
		Dispatcher: s.Dispatcher,
		Orders:     s.Orders,
		Offsets:    s.Offsets,
		IsHome:     s.isHome,
		Logger:     d.Logger.With("part", "liteadmin"),
	})
	if err != nil {
		return nil, err
	}
	st.AddLmqListener(appendListener{s.Dispatcher})
	n := s.Lifecycle.Load()
	s.Meta.Refresh()
	s.log.Info("lite topics loaded", "liteTopics", n, "lmqCount", st.LmqCount())
	return s, nil
}

func (s *Service) maxOffset(lmq string) int64 { return s.d.Store.MaxOffset(lmq, naming.QueueID) }

// inMemory reports whether the message at offset of lmq lies within
// HotBytes of the CommitLog's end.
func (s *Service) inMemory(lmq string, off int64) bool {
	e, ok, err := s.d.Store.ConsumeQueue().Entry(lmq, naming.QueueID, off)
	if err != nil || !ok {
		return false
	}
	return s.d.Store.CommitLog().MaxOffset()-e.CommitLogOffset <= s.d.HotBytes
}

// isHome reports whether this broker is lite's home (§4.6).
func (s *Service) isHome(parent, lite string) bool {
	if s.d.Routes == nil {
		return true
	}
	brokers, ok := s.d.Routes(parent)
	if !ok || len(brokers) == 0 {
		return true
	}
	return brokers[naming.HomeBucket(lite, len(brokers))] == s.d.BrokerName()
}

// subscriptionActive: home here, or the LMQ already exists here.
func (s *Service) subscriptionActive(parent, lmq string) bool {
	_, lite, ok := naming.Parse(lmq)
	if !ok {
		return true
	}
	return s.isHome(parent, lite) || s.maxOffset(lmq) > 0
}

func (s *Service) dispatcherConfig() dispatcher.Config {
	cfg := s.d.Config()
	c := dispatcher.DefaultConfig()
	if cfg.MaxClientEventCount > 0 {
		c.MaxClientEventCount = cfg.MaxClientEventCount
	}
	if cfg.LiteEventCapacityCacheTTLMs > 0 {
		c.CapacityCacheTTL = cfg.LiteEventCapacityCacheTTLMs
	}
	if cfg.LiteEventFullDispatchDelayTime > 0 {
		c.FullDispatchDelay = cfg.LiteEventFullDispatchDelayTime
	}
	if cfg.LiteEventFullDispatchDelayTimeForWildcardGroup > 0 {
		c.FullDispatchDelayWildcard = cfg.LiteEventFullDispatchDelayTimeForWildcardGroup
	}
	if cfg.LiteEventCheckInterval > 0 {
		c.CheckInterval = cfg.LiteEventCheckInterval
	}
	return c
}

func (s *Service) lifecycleConfig() lifecycle.Config {
	cfg := s.d.Config()
	return lifecycle.Config{CheckInterval: cfg.LiteTTLCheckInterval, MinTTL: cfg.MinLiteTTL, ExpirationUnit: s.d.ExpirationUnit,
		PaceWork: cfg.LiteSweepWorkMs, PaceRest: cfg.LiteSweepRestMs}
}

// cleanDeleted drops what the groups hold of deleted lmqs (§4.5 steps 1,
// 3–5): committed offsets and pending resets (of the groups bound to the
// parents and the tools group), order state and subscriptions.
//
// A sweep deletes up to millions of lmqs, most of them holding nothing:
// looking every name up in each structure touches every name once per
// structure, a cache miss each. When a structure holds fewer lmqs than
// were deleted, its lmqs are listed instead, and the deleted names are
// looked up once, in the union of those lists.
func (s *Service) cleanDeleted(deleted []string, batches []lifecycle.Batch, yield func()) {
	groups := []string{ToolsConsumerGroup}
	for _, b := range batches {
		for _, g := range b.Groups {
			if !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	const (
		hasOffset = 1 << iota
		hasOrder
		hasSub
	)
	var walked uint8
	cand := map[string]uint8{}
	mark := func(bit uint8) func(string) { return func(l string) { cand[l] |= bit } }
	if s.Offsets.Size() < len(deleted) {
		walked |= hasOffset
		s.Offsets.EachLMQ(groups, mark(hasOffset))
	}
	if s.Orders.Count() < len(deleted) {
		walked |= hasOrder
		s.Orders.EachLMQ(mark(hasOrder), yield)
	}
	if s.Registry.LMQCount() < len(deleted) {
		walked |= hasSub
		s.Registry.EachLMQ(mark(hasSub), yield)
	}
	pick := func(bit uint8) []string {
		if walked&bit == 0 {
			return deleted
		}
		return nil
	}
	offs, ords, subs := pick(hasOffset), pick(hasOrder), pick(hasSub)
	if len(cand) > 0 {
		for i, l := range deleted {
			if i%paceNames == paceNames-1 {
				yield()
			}
			f := cand[l]
			if f == 0 {
				continue
			}
			if f&hasOffset != 0 {
				offs = append(offs, l)
			}
			if f&hasOrder != 0 {
				ords = append(ords, l)
			}
			if f&hasSub != 0 {
				subs = append(subs, l)
			}
		}
	}
	// A slice at a time, with yields; offsets and subscriptions have their
	// own locks, so with many of both they go on two goroutines (the
	// second with a pacer of its own).
	cleanOffsets := func(yield func()) {
		inSlices(offs, yield, func(part []string) { s.Offsets.DeleteLMQs(groups, part) })
	}
	if len(offs) >= parallelCleanMin && len(subs) >= parallelCleanMin && runtime.GOMAXPROCS(0) > 1 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			cfg := s.d.Config()
			cleanOffsets(pace.New(cfg.LiteSweepWorkMs, cfg.LiteSweepRestMs).Yield)
		}()
		defer func() { <-done }()
	} else {
		cleanOffsets(yield)
	}
	inSlices(ords, yield, func(part []string) { s.Orders.ClearLMQs(part, groups) })
	inSlices(subs, yield, func(part []string) { s.Registry.CleanLMQs(part) })
}

// parallelCleanMin is the number of lmqs holding offsets and holding
// subscriptions from which cleanDeleted cleans the two at the same time.
const parallelCleanMin = 10_000

// paceNames is how many names the cascade handles between yields (well
// under a millisecond: a name is a cache miss or two).
const paceNames = 1024

// inSlices calls f with slices of names, yielding in between.
func inSlices(names []string, yield func(), f func([]string)) {
	const slice = 1024 // under a millisecond under one lock
	for len(names) > 0 {
		part := names[:min(slice, len(names))]
		names = names[len(part):]
		f(part)
		yield()
	}
}

// Register installs POP_LITE_MESSAGE, ACK_LITE_MESSAGE,
// LITE_SUBSCRIPTION_CTL and the admin codes. Lite acks arrive through
// ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME: see poplite.Processor.
func (s *Service) Register(r processor.Registrar) {
	s.Pop.Register(r)
	s.Subscribe.Register(r)
	s.Admin.Register(r)
}

// TopicsChanged is the topic table's change hook: the LMQs of a deleted
// parent are deleted in the background (§4.4 step 3).
func (s *Service) TopicsChanged(names []string) {
	for _, name := range names {
		if _, exists := s.d.Topics.Get(name); exists || s.Lifecycle.Index().Count(name) == 0 {
			continue
		}
		s.cleaning.Add(1)
		go func(parent string) {
			defer s.cleaning.Done()
			n, err := s.Lifecycle.CleanParent(parent)
			if err != nil {
				s.log.Error("delete lite topics of a deleted parent", "parent", parent, "err", err)
			}
			s.log.Info("deleted lite topics of a deleted parent", "parent", parent, "count", n)
		}(name)
	}
}

// Start runs the sweeper, the dispatcher scan, the subscription expiry,
// the long polling and the lock sweeper.
func (s *Service) Start() {
	s.Pop.Start()
	s.Dispatcher.Start()
	s.Subscribe.Start()
	s.Lifecycle.Start()
	s.sweeper.Start(func(stop <-chan struct{}) {
		loop.Tick(stop, orderinfo.DefaultLease, func() {
			if n := s.Locks.Sweep(); n > 0 {
				s.log.Warn("dropped lite locks held past their lease", "count", n)
			}
		})
	})
}

// Drain answers every parked pop (before a graceful shutdown).
func (s *Service) Drain() int { return s.Pop.Drain() }

// Close stops everything.
func (s *Service) Close() {
	s.sweeper.Stop()
	s.Lifecycle.Close()
	s.Subscribe.Close()
	s.Dispatcher.Close()
	s.Pop.Close()
	s.Orders.Close()
	s.cleaning.Wait()
}

// CheckGroup vets a subscription group as it is about to be stored
// (subscription.Options.CheckGroup): a lite.bind.topic must be a legal topic
// name (Apache's fix of #11087) and, when the topic exists on this broker,
// a LITE topic [our choice; Apache's fix asks for an existing LITE topic, but
// groups and topics are created per broker and in any order, so a topic
// this broker does not have yet is accepted and pops check it at use].
func (s *Service) CheckGroup(c subscription.GroupConfig) error {
	v, ok := meta.BindTopicAttr(c.Attributes)
	if !ok {
		return nil
	}
	bind := strings.TrimSpace(v)
	if err := protocol.ValidateTopic(bind); err != nil {
		return fmt.Errorf("%s %q: %v", meta.AttrBindTopic, v, err)
	}
	if tc, exists := s.d.Topics.Get(bind); exists && !meta.IsParent(tc) {
		t, _ := tc.Attribute(topic.AttrMessageType)
		return fmt.Errorf("%s: topic [%s] is not a LITE topic (message.type=%q)", meta.AttrBindTopic, bind, t)
	}
	return nil
}

// SendChecker wraps the send path's message check (send.Deps.
// MessageTypeCheck): a message carrying __LITE_TOPIC must go to a LITE
// parent and carry a legal lite name (§1.4, [our choice] at the broker),
// so no LMQ is ever created for a bad name. Sends to %RETRY% and %DLQ%
// topics (consumers re-sending) are not checked.
//
// A broker without enableLmq and enableMultiDispatch (§2.4: both must be
// true for lite) refuses lite sends with NO_PERMISSION [our choice]. Apache
// stores such a message in the parent queue only and answers SEND_OK (its
// store ignores INNER_MULTI_DISPATCH when LMQ is off), so the message never
// reaches a lite consumer and nobody is told. NO_PERMISSION is what a
// broker answers for a message kind its configuration forbids
// (rejectTransactionMessage), and producers retry it on another broker of
// the route, which may have LMQ enabled.
func (s *Service) SendChecker(next send.MessageChecker) send.MessageChecker {
	return sendChecker{next: next, cfg: s.d.Config}
}

type sendChecker struct {
	next send.MessageChecker
	cfg  func() *config.Config
}

func (c sendChecker) CheckMessage(tc *protocol.TopicConfig, msg *message.Message, sysFlag int32) error {
	if lite, ok := msg.Properties[message.PropertyLiteTopic]; ok && !strings.HasPrefix(tc.TopicName, protocol.RetryGroupTopicPrefix) &&
		!strings.HasPrefix(tc.TopicName, protocol.DLQGroupTopicPrefix) {
		if !meta.IsParent(*tc) {
			return fmt.Errorf("%w: property %s is set but topic [%s] is not a LITE topic (message.type)", send.ErrMessageIllegal, message.PropertyLiteTopic, tc.TopicName)
		}
		cfg := c.cfg()
		if !cfg.EnableLmq || !cfg.EnableMultiDispatch {
			return remoting.Errorf(code.NoPermission, "the broker[%s] sending lite topic message is forbidden: enableLmq and enableMultiDispatch must both be true (enableLmq=%t, enableMultiDispatch=%t)",
				cfg.BrokerIP1, cfg.EnableLmq, cfg.EnableMultiDispatch)
		}
		if err := naming.ValidateLite(lite, cfg.MaxLiteTopicSize); err != nil {
			return fmt.Errorf("%w: illegal lite topic %q: %v", send.ErrMessageIllegal, lite, err)
		}
	}
	if c.next != nil {
		return c.next.CheckMessage(tc, msg, sysFlag)
	}
	return nil
}

// appendListener feeds LMQ appends to the dispatcher.
type appendListener struct{ d *dispatcher.Dispatcher }

func (a appendListener) OnLmqCreated(string)                     {}
func (a appendListener) OnLmqAppended(lmq string, off, ts int64) { a.d.OnLmqAppended(lmq, off, ts) }
func (a appendListener) OnLmqDeleted(string)                     {}

// lifecycleStore adapts the store to lifecycle.Store.
type lifecycleStore struct{ s *store.Store }

func (l lifecycleStore) Range(f func(consumequeue.QueueID, consumequeue.QueueState) bool) {
	l.s.ConsumeQueue().Range(f)
}

func (l lifecycleStore) DeleteLmqs(names []string, del func(string, consumequeue.QueueState) bool) ([]string, error) {
	return l.s.DeleteLmqs(names, del)
}

func (l lifecycleStore) DeleteLmqsWhere(pick, recheck func(string, consumequeue.QueueState) bool) ([]string, error) {
	return l.s.DeleteLmqsWhere(pick, recheck)
}

// adminStore adapts the store to liteadmin.Store.
type adminStore struct{ s *store.Store }

func (a adminStore) State(lmq string) (consumequeue.QueueState, bool) {
	return a.s.ConsumeQueue().State(lmq, naming.QueueID)
}

func (a adminStore) MessageStoreTime(topic string, qid int32, off int64) int64 {
	return a.s.MessageStoreTime(topic, qid, off)
}

func (a adminStore) LmqCount() int   { return a.s.LmqCount() }
func (a adminStore) QueueCount() int { return a.s.ConsumeQueue().QueueCount() }

func (a adminStore) OffsetTableSize() int {
	n := 0
	a.s.Offsets().Range(func(offset.Key, int64) bool { n++; return true })
	return n
}
