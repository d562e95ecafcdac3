package broker

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/processor/consumer"
	"github.com/rmqgo/rmq/broker/processor/pull"
	"github.com/rmqgo/rmq/broker/processor/query"
	"github.com/rmqgo/rmq/broker/processor/send"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/remoting"
)

// procRegistrar lets the processor packages (which must not import this
// one) register handlers on the broker's executors.
type procRegistrar struct{ b *Broker }

func (r procRegistrar) RegisterProcessor(c int32, h remoting.Handler, pool int) {
	r.b.RegisterProcessor(c, h, Pool(pool))
}

// messaging holds the message-path processors.
type messaging struct {
	subs    *subscription.Manager
	clients *client.Processor
	pull    *pull.Processor
	offsets *consumer.Processor
	send    *send.Processor
	query   *query.Processor

	// checkGroup vets subscription groups before they are stored; set by
	// wireLite (lite.bind.topic) before the broker serves requests.
	checkGroup func(subscription.GroupConfig) error

	// Background services added by the feature wirings (wire_*.go), in
	// start order; closed in reverse.
	starters []func()
	closers  []func()
}

// wiring is what a feature's wire_*.go file gets to plug itself in: the
// store, the processors built so far, and the dependencies of the send and
// pull processors before they are built (hooks such as Schedule,
// Transactions, Locks and Filters go there).
type wiring struct {
	b        *Broker
	st       *store.Store
	log      *slog.Logger
	m        *messaging
	reg      procRegistrar
	sendDeps *send.Deps
	pullDeps *pull.Deps
}

// installMessaging builds the send, pull, client and offset processors on
// top of the store and registers their request codes. Features hook in
// through the wire* methods, each in its own file.
func (b *Broker) installMessaging(st *store.Store, log *slog.Logger) (*messaging, error) {
	cfg := b.cfg.Get()
	m := &messaging{}
	var err error
	m.subs, err = subscription.New(subscription.Options{
		Config: b.cfg.Get,
		Path:   subscription.DefaultPath(cfg),
		Logger: log.With("component", "subscription"),
		CheckGroup: func(c subscription.GroupConfig) error {
			if m.checkGroup == nil {
				return nil
			}
			return m.checkGroup(c)
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
	w := &wiring{b: b, st: st, log: log, m: m, reg: procRegistrar{b}}
	w.pullDeps = &pull.Deps{
		Config:        b.cfg.Get,
		Store:         st,
		Topics:        b.topics,
		Subscriptions: m.subs,
		Consumers:     m.clients.Consumers(),
		Logger:        log.With("component", "pull"),
	}
	w.sendDeps = &send.Deps{
		Config:    b.cfg.Get,
		Topics:    b.topics,
		Store:     st,
		StoreHost: b.storeHost,
		Groups:    m.subs,
		Replies:   send.ChannelPusher{Find: m.clients.Producers().FindChannel},
		// Java registers synchronously after creating a topic in the send
		// path, so a consumer started right after the first send finds
		// the route.
		TopicCreated: func(string) {
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Get().RegisterBrokerTimeoutMills)
			defer cancel()
			b.RegisterNow(ctx)
		},
		Logger: log.With("component", "send"),
	}
	for _, wire := range []func(*wiring) error{b.wireFilter, b.wireOrderly, b.wireSchedule, b.wireTransaction, b.wireConsumerAdmin, b.wirePop, b.wireLite, b.wireRetry} {
		if err := wire(w); err != nil {
			return nil, err
		}
	}
	if m.pull, err = pull.New(*w.pullDeps); err != nil {
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
		Logger:        log.With("component", "offset"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: offset processor: %w", err)
	}
	if m.send, err = send.New(*w.sendDeps); err != nil {
		return nil, fmt.Errorf("broker: send processor: %w", err)
	}
	m.query, err = query.New(query.Deps{Config: b.cfg.Get, Store: st, Logger: log.With("component", "query")})
	if err != nil {
		return nil, fmt.Errorf("broker: query processor: %w", err)
	}
	r := w.reg
	m.subs.Register(r)
	m.clients.Register(r)
	m.pull.Register(r)
	m.offsets.Register(r)
	m.send.Register(r)
	m.query.Register(r)
	b.server.OnClose(m.clients.OnChannelClose)
	// Wirings that wrap the registered processors (static topics rewrite
	// logic queues in front of send, pull and offset handlers) run last.
	for _, wire := range []func(*wiring) error{b.wireStaticTopic} {
		if err := wire(w); err != nil {
			return nil, err
		}
	}
	return m, nil
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
