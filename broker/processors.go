package broker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/lite"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/processor/consumer"
	"github.com/rmqgo/rmq/broker/processor/pull"
	"github.com/rmqgo/rmq/broker/processor/query"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/broker/slavesync"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/remoting"
)

// messaging holds the message-path processors.
type messaging struct {
	subs    *subscription.Manager
	clients *client.Processor
	pull    *pull.Processor
	offsets *consumer.Processor
	send    *send.Processor
	query   *query.Processor
	lite    *lite.Service
	pop     *pop.Processor
	sched   *schedule.Service
	// timer answers the delay and timer progress codes (45, 60, 61) and
	// keeps a slave's copies of its master's.
	timer *slavesync.TimerState
	// replicas waits for the slaves (nil: no replication to wait for);
	// set by wireHA, after the pop processor that uses it is built.
	replicas send.Replicas

	// Background services added by the feature wirings (wire_*.go), in
	// start order; closed in reverse.
	starters []func()
	closers  []func()
}

// wiring is what every feature step (wire_*.go, methods of the broker) gets:
// the store and the processors all steps may use (subscriptions, clients).
// What one step needs from an earlier one is passed as an argument, so the
// compiler sees the order.
type wiring struct {
	st  *store.Store
	log *slog.Logger
	m   *messaging
	// guard, when set (controller mode), wraps the store sends write to.
	guard func(send.Store) send.Store
}

// installMessaging builds the send, pull, client and offset processors on
// top of the store and registers their request codes. Features hook in
// through the wire* steps, each in its own file.
func (b *Broker) installMessaging(st *store.Store, log *slog.Logger, o *options) (*messaging, error) {
	cfg := b.cfg.Get()
	m := &messaging{}
	// Lite topics vet groups (lite.bind.topic) but read the subscription
	// table, so the check is bound once they are wired, before the broker
	// serves requests.
	var checkGroup func(subscription.GroupConfig) error
	var err error
	m.subs, err = subscription.New(subscription.Options{
		Config: b.cfg.Get,
		Path:   subscription.DefaultPath(cfg),
		Logger: log.With("component", "subscription"),
		CheckGroup: func(c subscription.GroupConfig) error {
			if checkGroup == nil {
				return nil
			}
			return checkGroup(c)
		},
		CleanOffsets: func(g string) {
			st.Offsets().DeleteWhere(func(k offset.Key) bool { return k.Group == g })
			if m.pull != nil {
				m.pull.ForgetGroup(g)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("broker: subscription groups: %w", err)
	}
	m.clients, err = client.NewProcessor(client.Deps{
		Config:              b.cfg.Get,
		Subscriptions:       m.subs,
		Topics:              b.topics,
		TriggerRegistration: b.TriggerRegistration,
		Logger:              log.With("component", "client"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: client manager: %w", err)
	}
	w := &wiring{st: st, log: log, m: m}
	filters, typeCheck, err := b.wireFilter(w)
	if err != nil {
		return nil, err
	}
	locks, err := b.wireOrderly(w, o.lockMaxLiveTime)
	if err != nil {
		return nil, err
	}
	sched, err := b.wireSchedule(w)
	if err != nil {
		return nil, err
	}
	m.sched = sched
	if err := b.wireTransaction(w, sched); err != nil {
		return nil, err
	}
	resets, err := b.wireConsumerAdmin(w)
	if err != nil {
		return nil, err
	}
	if err := b.wireMaintenance(w); err != nil {
		return nil, err
	}
	pops, err := b.wirePop(w, filters, resets)
	if err != nil {
		return nil, err
	}
	m.pop = pops
	if err := b.wireSlaveSync(w, pops); err != nil {
		return nil, err
	}
	if m.lite, err = b.wireLite(w, pops, o.liteExpirationUnit); err != nil {
		return nil, err
	}
	checkGroup = m.lite.CheckGroup
	if err := b.wireRetry(w, sched, m.lite); err != nil {
		return nil, err
	}

	m.pull, err = pull.New(pull.Deps{
		Config:        b.cfg.Get,
		Store:         st,
		Topics:        b.topics,
		Subscriptions: m.subs,
		Consumers:     m.clients.Consumers(),
		Filters:       filters,
		Resets:        resets,
		// Slave reads: lag against the CommitLog's end, and whether the
		// master is registered (broker/processor/pull suggestBroker).
		CommitLogMaxOffset: st.CommitLog().MaxOffset,
		MasterOnline:       func() bool { return b.MasterAddr() != "" },
		MessagesOut:        b.metricsOut(),
		Resumed:            b.metricsResumed(),
		Stats:              b.stats,
		Logger:             log.With("component", "pull"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: pull processor: %w", err)
	}
	m.offsets, err = consumer.New(consumer.Deps{
		Config:        b.cfg.Get,
		Store:         st,
		Topics:        b.topics,
		Subscriptions: m.subs,
		Consumers:     m.clients.Consumers(),
		PullOffsets:   m.pull,
		GroupOffsets:  st.Offsets(),
		PendingResets: resets,
		Logger:        log.With("component", "offset"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: offset processor: %w", err)
	}
	replicas, err := b.wireHA(w)
	if err != nil {
		return nil, err
	}
	if replicas != nil {
		replicas = countedReplicas{r: replicas, waits: &b.replicaWaits}
	}
	m.replicas = replicas
	var sendStore send.Store = st
	if w.guard != nil {
		sendStore = w.guard(st)
	}
	m.send, err = send.New(send.Deps{
		Config:    b.cfg.Get,
		Topics:    b.topics,
		Store:     sendStore,
		StoreHost: b.storeHost,
		Groups:    m.subs,
		Locks:     locks,
		Schedule:  sched,
		// Lite sends are vetted in front of the message-type check.
		MessageTypeCheck: m.lite.SendChecker(typeCheck),
		Replies:          send.ChannelPusher{Find: m.clients.Producers().FindChannel},
		Replicas:         replicas,
		TopicCreated:     b.topicCreated,
		Fenced:           b.fenced,
		MessagesIn:       b.metricsIn(),
		SentToDLQ:        b.metricsDLQ(),
		Stats:            b.stats,
		Logger:           log.With("component", "send"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: send processor: %w", err)
	}
	m.query, err = query.New(query.Deps{Config: b.cfg.Get, Store: st, Logger: log.With("component", "query")})
	if err != nil {
		return nil, fmt.Errorf("broker: query processor: %w", err)
	}
	// Static topics rewrite logic queues in front of the send, pull and
	// offset handlers: they are collected, wrapped, then registered.
	handlers := handlerTable{}
	m.subs.Register(handlers)
	m.clients.Register(handlers)
	m.pull.Register(handlers)
	m.offsets.Register(handlers)
	m.send.Register(handlers)
	m.query.Register(handlers)
	if err := b.wireStaticTopic(w, handlers); err != nil {
		return nil, err
	}
	processor.RegisterPooled(b, handlers)
	b.server.OnClose(m.clients.OnChannelClose)
	return m, nil
}

// topicCreated registers the topic with the nameservers at once, as Java
// does after creating a topic in the send path: a consumer started right
// after the first send finds the route. Java registers everything; the new
// topic alone is enough.
func (b *Broker) topicCreated(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Get().RegisterBrokerTimeoutMills)
	defer cancel()
	b.registrar.RegisterTopics(ctx, []string{name})
}

// handlerTable collects handlers before they are registered, so that a
// later step can wrap them (statictopic.Wrapper).
type handlerTable map[int32]processor.PooledHandler

func (t handlerTable) RegisterProcessor(c int32, h remoting.Handler, pool processor.Pool) {
	t[c] = processor.PooledHandler{H: h, Pool: pool}
}

func (t handlerTable) WrapProcessor(c int32, wrap func(remoting.Handler) remoting.Handler) bool {
	ph, ok := t[c]
	if ok {
		t[c] = processor.PooledHandler{H: wrap(ph.H), Pool: ph.Pool}
	}
	return ok
}

func (m *messaging) start() {
	m.clients.Start()
	m.pull.Start()
	for _, f := range m.starters {
		f()
	}
}

func (m *messaging) close() {
	for i := len(m.closers) - 1; i >= 0; i-- {
		m.closers[i]()
	}
	m.pull.Close()
	m.clients.Close()
}
