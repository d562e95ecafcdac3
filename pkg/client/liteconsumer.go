package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Actions of a lite subscription request (LITE_SUBSCRIPTION_CTL).
const (
	litePartialAdd     = "PARTIAL_ADD"
	litePartialRemove  = "PARTIAL_REMOVE"
	liteCompleteAdd    = "COMPLETE_ADD"
	liteCompleteRemove = "COMPLETE_REMOVE"
	// liteNoRouteRetry: how soon a consumer whose bind topic has no route
	// yet looks again.
	liteNoRouteRetry = time.Second
)

// LitePushConsumer consumes lite topics of one LITE parent topic for a lite
// consumer group (docs/lite-topics.md, Java's LitePushConsumer): it subscribes to
// lite topics by name (SubscribeLite) on every broker of the parent,
// long-polls each broker with POP_LITE_MESSAGE and hands the messages to
// the Handler, FIFO per lite topic: one lite topic's messages strictly one
// after another, each acked before the next is handled; different lite
// topics in parallel. The brokers keep the positions. Build it with
// NewLitePushConsumer, Start, then SubscribeLite; Shutdown stops every
// goroutine it started. Safe for concurrent use.
type LitePushConsumer struct {
	cfg  LitePushConsumerConfig
	core *core
	log  *slog.Logger
	life lifecycle

	syncMu  sync.Mutex // serializes subscription requests (partial and full)
	subMu   sync.Mutex
	lites   map[string]bool // the lite subscription
	version atomic.Int64    // of subscription requests

	pollMu  sync.Mutex
	pollers map[string]*litePoller // broker name → its pop loop

	cache *liteCache
	lanes *liteLanes
	pops  atomic.Uint64 // numbers the pop answers

	ctx        context.Context // cancelled by Shutdown: manager and pop loops
	cancel     context.CancelFunc
	consumeCtx context.Context // handler calls and acks; cancelled when Shutdown gives up waiting
	consumeEnd context.CancelFunc
	wake       chan struct{} // reconcile the pollers now
	wg         sync.WaitGroup
	workers    sync.WaitGroup
}

// litePoller is the pop loop of one broker.
type litePoller struct {
	cancel context.CancelFunc
	done   chan struct{}
	// addr is the master address the subscription was last sent to: a
	// new master of the same broker name (failover) knows nothing of it.
	addr string
}

// NewLitePushConsumer checks cfg and builds a consumer; nothing is dialled
// until Start.
func NewLitePushConsumer(cfg LitePushConsumerConfig) (*LitePushConsumer, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	c := &LitePushConsumer{
		cfg:     cfg,
		log:     cfg.Logger.With("group", cfg.Group, "bindTopic", cfg.BindTopic),
		lites:   make(map[string]bool),
		pollers: make(map[string]*litePoller),
		cache:   newLiteCache(cfg.MaxCachedMessages),
		wake:    make(chan struct{}, 1),
	}
	c.lanes = newLiteLanes(cfg.MaxCachedMessages)
	c.version.Store(time.Now().UnixMilli())
	c.core = newCore(cfg.CommonConfig, c.heartbeatData)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.consumeCtx, c.consumeEnd = context.WithCancel(context.Background())
	return c, nil
}

// Start registers the handler for NOTIFY_UNSUBSCRIBE_LITE and begins the
// heartbeats, the subscription sync and one pop loop per broker of
// BindTopic in the background.
func (c *LitePushConsumer) Start() error {
	if !c.life.start() {
		return fmt.Errorf("client: start lite push consumer %s: already started or shut down", c.cfg.Group)
	}
	c.core.rc.RegisterHandler(code.NotifyUnsubscribeLite, c.onNotifyUnsubscribe)
	c.core.run()
	for range c.cfg.ConsumeGoroutines {
		c.workers.Add(1)
		go c.worker()
	}
	c.wg.Add(1)
	go c.loop()
	c.log.Info("client: lite push consumer started", "clientID", c.core.clientID)
	return nil
}

// Shutdown stops popping, waits (until ctx ends) for the handler calls in
// flight and their acks, makes the messages popped but not handled visible
// again (so another consumer of the group takes their lite topics over at
// once), removes this client's lite subscription from the brokers
// (COMPLETE_REMOVE), unregisters and closes the connections. Later calls do
// nothing.
func (c *LitePushConsumer) Shutdown(ctx context.Context) error {
	first, idle := c.life.close()
	if !first {
		return nil
	}
	var errs []error
	if err := drain(ctx, idle); err != nil {
		errs = append(errs, fmt.Errorf("client: lite push consumer %s: waiting for subscription calls: %w", c.cfg.Group, err))
	}
	c.cancel()
	c.wg.Wait() // the manager loop
	c.stopPollers(nil)
	c.lanes.close()
	done := make(chan struct{})
	go func() {
		c.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("client: lite push consumer %s: waiting for handlers: %w", c.cfg.Group, ctx.Err()))
	}
	c.consumeEnd()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RequestTimeout)
	c.releaseAll(wctx, c.lanes.takeAll())
	c.syncMu.Lock()
	for _, addr := range c.brokerAddrs() {
		if _, err := c.core.invokeOK(wctx, addr, code.LiteSubscriptionCtl, nil, c.subscriptionBody(liteCompleteRemove, nil, nil)); err != nil {
			c.log.Debug("client: lite COMPLETE_REMOVE failed", "broker", addr, "err", err)
		}
	}
	c.syncMu.Unlock()
	cancel()
	c.core.stop()
	c.core.unregister(context.WithoutCancel(ctx), "", c.cfg.Group)
	if err := c.core.close(); err != nil {
		errs = append(errs, err)
	}
	c.log.Info("client: lite push consumer shut down")
	return errors.Join(errs...)
}

// ClientID is the id brokers know this consumer by (ip@instance).
func (c *LitePushConsumer) ClientID() string { return c.core.clientID }

// Group is the lite consumer group.
func (c *LitePushConsumer) Group() string { return c.cfg.Group }

// LiteTopics lists the subscribed lite topics, sorted (Java's
// getLiteTopicSet).
func (c *LitePushConsumer) LiteTopics() []string {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	return slices.Sorted(maps.Keys(c.lites))
}

func (c *LitePushConsumer) subscribed(lite string) bool {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	return c.lites[lite]
}

// SubscribeLite adds lite topic name to the subscription on every readable
// broker of BindTopic (PARTIAL_ADD), optionally moving the group's
// position in it (at most one OffsetOption). A broker refusing it fails the
// call (ErrLiteSubscriptionQuotaExceeded when over quota) and the
// subscription is taken back from the others. Messages sent to the lite
// topic from then on are delivered.
func (c *LitePushConsumer) SubscribeLite(ctx context.Context, name string, opts ...OffsetOption) error {
	if err := protocol.ValidateLiteTopic(name, 0); err != nil {
		return fmt.Errorf("client: subscribe lite %q: %w", name, err)
	}
	opt, err := offsetWire(opts)
	if err != nil {
		return err
	}
	return c.changeLite(ctx, "subscribe", name, func(addrs []string) error {
		// Subscribed locally first: messages may arrive before the last
		// broker answers.
		c.subMu.Lock()
		had := c.lites[name]
		c.lites[name] = true
		c.subMu.Unlock()
		body := c.subscriptionBody(litePartialAdd, []string{name}, opt)
		for i, addr := range addrs {
			if _, err := c.core.invokeOK(ctx, addr, code.LiteSubscriptionCtl, nil, body); err != nil {
				if !had {
					c.subMu.Lock()
					delete(c.lites, name)
					c.subMu.Unlock()
					undo := c.subscriptionBody(litePartialRemove, []string{name}, nil)
					for _, a := range addrs[:i] {
						if _, uerr := c.core.invokeOK(context.WithoutCancel(ctx), a, code.LiteSubscriptionCtl, nil, undo); uerr != nil {
							c.log.Debug("client: taking back a lite subscription failed", "broker", a, "liteTopic", name, "err", uerr)
						}
					}
				}
				return fmt.Errorf("client: subscribe lite %q: %w", name, err)
			}
		}
		c.wakeManager()
		c.log.Debug("client: lite topic subscribed", "liteTopic", name, "offsetOption", opt)
		return nil
	})
}

// UnsubscribeLite removes lite topic name from the subscription on every
// readable broker of BindTopic (PARTIAL_REMOVE). Its messages popped but
// not handled yet are not handled; they become visible to the group again.
func (c *LitePushConsumer) UnsubscribeLite(ctx context.Context, name string) error {
	if err := protocol.ValidateLiteTopic(name, 0); err != nil {
		return fmt.Errorf("client: unsubscribe lite %q: %w", name, err)
	}
	return c.changeLite(ctx, "unsubscribe", name, func(addrs []string) error {
		c.subMu.Lock()
		delete(c.lites, name)
		c.subMu.Unlock()
		c.dropLite(ctx, name)
		body := c.subscriptionBody(litePartialRemove, []string{name}, nil)
		var errs []error
		for _, addr := range addrs {
			if _, err := c.core.invokeOK(ctx, addr, code.LiteSubscriptionCtl, nil, body); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			// The next full sync removes it from these brokers.
			return fmt.Errorf("client: unsubscribe lite %q: %w", name, errors.Join(errs...))
		}
		c.log.Debug("client: lite topic unsubscribed", "liteTopic", name)
		return nil
	})
}

// changeLite runs change, a subscription change of lite topic name ("verb
// lite name" in errors), with the readable brokers of BindTopic while the
// consumer runs, one change or full sync at a time.
func (c *LitePushConsumer) changeLite(ctx context.Context, verb, name string, change func(addrs []string) error) error {
	if err := c.life.begin(); err != nil {
		return err
	}
	defer c.life.end()
	addrs, err := c.subscribeAddrs(ctx)
	if err != nil {
		return fmt.Errorf("client: %s lite %q: %w", verb, name, err)
	}
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	return change(addrs)
}

// subscriptionBody builds a LITE_SUBSCRIPTION_CTL body with one entry.
func (c *LitePushConsumer) subscriptionBody(action string, lites []string, opt *protocol.LiteOffsetOption) []byte {
	if lites == nil {
		lites = []string{}
	}
	return protocol.MustMarshal(protocol.LiteSubscriptionCtlBody{SubscriptionSet: []protocol.LiteSubscriptionDTO{{
		Action:       action,
		ClientID:     c.core.clientID,
		Group:        c.cfg.Group,
		LiteTopicSet: lites,
		OffsetOption: opt,
		Topic:        c.cfg.BindTopic,
		Version:      c.version.Add(1),
	}}})
}

// readableBrokers lists the brokers with readable queues of the bind
// topic in the cached route, sorted.
func (c *LitePushConsumer) readableBrokers() []string {
	tr := c.core.route(c.cfg.BindTopic)
	if tr == nil {
		return nil
	}
	var names []string
	for _, mq := range tr.subscribe {
		names = append(names, mq.BrokerName)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// brokerAddrs lists the master addresses of the readable brokers.
func (c *LitePushConsumer) brokerAddrs() []string {
	var out []string
	for _, name := range c.readableBrokers() {
		if a := c.core.brokerAddr(name, false); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// subscribeAddrs is brokerAddrs, fetching the route if it is not cached.
func (c *LitePushConsumer) subscribeAddrs(ctx context.Context) ([]string, error) {
	if addrs := c.brokerAddrs(); len(addrs) > 0 {
		return addrs, nil
	}
	if _, err := c.core.updateRoute(ctx, c.cfg.BindTopic, routeFetch{}); err != nil {
		return nil, fmt.Errorf("%w: topic %s: %w", ErrNoRoute, c.cfg.BindTopic, err)
	}
	addrs := c.brokerAddrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no readable broker", ErrNoRoute, c.cfg.BindTopic)
	}
	return addrs, nil
}

// fullSync sends the whole subscription (COMPLETE_ADD) to addrs, or to
// every broker when addrs is nil.
func (c *LitePushConsumer) fullSync(ctx context.Context, addrs []string) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if addrs == nil {
		addrs = c.brokerAddrs()
	}
	body := c.subscriptionBody(liteCompleteAdd, c.LiteTopics(), nil)
	for _, addr := range addrs {
		if ctx.Err() != nil {
			return
		}
		if _, err := c.core.invokeOK(ctx, addr, code.LiteSubscriptionCtl, nil, body); err != nil {
			c.log.Warn("client: lite subscription sync failed", "broker", addr, "err", err)
		}
	}
}

// wakeManager asks the loop to look at the route now.
func (c *LitePushConsumer) wakeManager() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// loop keeps one pop loop per readable broker of the bind topic (checked
// every RouteRefreshInterval, the core refreshing the route) and sends
// the full subscription every SyncInterval.
func (c *LitePushConsumer) loop() {
	defer c.wg.Done()
	ctx := c.ctx
	route := time.NewTimer(c.reconcile(ctx))
	defer route.Stop()
	syncT := time.NewTicker(c.cfg.SyncInterval)
	defer syncT.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-syncT.C:
			c.fullSync(ctx, nil)
			continue
		case <-c.wake:
		case <-route.C:
		}
		next := c.reconcile(ctx)
		if !route.Stop() {
			select {
			case <-route.C:
			default:
			}
		}
		route.Reset(next)
	}
}

// reconcile starts pop loops for brokers that joined the route (sending
// them the subscription first) and stops those of brokers that left; it
// returns when to look again.
func (c *LitePushConsumer) reconcile(ctx context.Context) time.Duration {
	if c.core.route(c.cfg.BindTopic) == nil {
		if _, err := c.core.updateRoute(ctx, c.cfg.BindTopic, routeFetch{ifMissing: true}); err != nil {
			if ctx.Err() == nil {
				c.log.Debug("client: no route for the lite bind topic yet", "err", err)
			}
			return liteNoRouteRetry
		}
	}
	brokers := c.readableBrokers()
	if len(brokers) == 0 {
		return liteNoRouteRetry
	}
	c.stopPollers(brokers)
	// New brokers (all of them at start) and brokers with a new master
	// address get the subscription now, not at the next sync.
	var addrs []string
	c.pollMu.Lock()
	for _, name := range brokers {
		if ctx.Err() != nil {
			break
		}
		addr := c.core.brokerAddr(name, false)
		if p, ok := c.pollers[name]; ok {
			if addr != "" && addr != p.addr {
				p.addr = addr
				addrs = append(addrs, addr)
			}
			continue
		}
		pctx, cancel := context.WithCancel(ctx)
		p := &litePoller{cancel: cancel, done: make(chan struct{}), addr: addr}
		c.pollers[name] = p
		if addr != "" {
			addrs = append(addrs, addr)
		}
		go c.popLoop(pctx, name, p.done)
	}
	c.pollMu.Unlock()
	if len(addrs) > 0 {
		c.fullSync(ctx, addrs)
	}
	return c.cfg.RouteRefreshInterval
}

// stopPollers stops the pop loops of brokers not in keep (all for nil) and
// waits for them.
func (c *LitePushConsumer) stopPollers(keep []string) {
	c.pollMu.Lock()
	var stopped []*litePoller
	for name, p := range c.pollers {
		if keep == nil || !slices.Contains(keep, name) {
			p.cancel()
			stopped = append(stopped, p)
			delete(c.pollers, name)
		}
	}
	c.pollMu.Unlock()
	for _, p := range stopped {
		<-p.done
	}
}

// onNotifyUnsubscribe (NOTIFY_UNSUBSCRIBE_LITE, one-way): a broker took a
// lite topic away from this client (an exclusive group gave it to another
// client); it leaves the subscription and its unhandled messages are let
// go.
func (c *LitePushConsumer) onNotifyUnsubscribe(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	lite := req.Ext("liteTopic")
	if g := req.Ext("consumerGroup"); g != "" && g != c.cfg.Group || lite == "" {
		return nil, nil
	}
	if id := req.Ext("clientId"); id != "" && id != c.core.clientID {
		return nil, nil
	}
	c.subMu.Lock()
	had := c.lites[lite]
	delete(c.lites, lite)
	c.subMu.Unlock()
	if had {
		c.log.Info("client: a broker unsubscribed this client from a lite topic", "liteTopic", lite)
	}
	// Bound by the consumer's life, not the connection's.
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	stop := context.AfterFunc(c.consumeCtx, cancel)
	defer stop()
	c.dropLite(ctx, lite)
	return nil, nil
}

// heartbeatData announces the group as a pop consumer without topic
// subscriptions (lite subscriptions travel in LITE_SUBSCRIPTION_CTL), so
// admin tools list the client.
func (c *LitePushConsumer) heartbeatData() *heartbeatData {
	// An empty set, not nil: the group is announced with no subscription.
	return clusteringHeartbeat(c.core.clientID, c.cfg.Group, consumePop, consumeFromLastOffset, []subscriptionData{})
}
