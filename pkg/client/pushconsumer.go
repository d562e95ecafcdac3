package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// PushConsumer consumes subscribed topics for a consumer group: it shares
// the queues out with the group's other consumers (Clustering) or reads
// them all (Broadcasting), pulls them with long polling and hands the
// messages to the Handler, committing offsets as they are consumed. Failed
// messages are retried through the group's retry topic (concurrent) or
// redelivered in place (orderly). Build it with NewPushConsumer, Subscribe,
// then Start; Shutdown stops every goroutine it started.
type PushConsumer struct {
	cfg   PushConsumerConfig
	pc    *PullConsumer // pulls, offsets, connections and the core loop
	core  *core
	inner *Producer // CLIENT_INNER_PRODUCER: retries sent as messages
	store offsetStore
	stats *consumeStats
	log   *slog.Logger
	life  lifecycle

	subMu    sync.Mutex
	subs     map[string]subscriptionData // user subscriptions by topic
	retrySub subscriptionData            // %RETRY%<group>, "*" (clustering)

	rbMu   sync.Mutex // serializes rebalance, offset reset and teardown
	qmu    sync.RWMutex
	queues map[protocol.MessageQueue]*pushQueue

	tasks   chan consumeTask // concurrent consumption work
	wake    chan struct{}    // rebalance now
	ctx     context.Context  // cancelled by Shutdown
	cancel  context.CancelFunc
	wg      sync.WaitGroup // loop, consume workers, delayed resubmits
	started time.Time

	// Lock requests in flight: Shutdown waits for their answers before it
	// unlocks, since the broker may run a LOCK_BATCH_MQ sent earlier after
	// the UNLOCK_BATCH_MQ sent later (different executors), and the queue
	// would stay locked to a consumer that is gone.
	lockMu     sync.Mutex
	lockClosed bool
	locking    sync.WaitGroup
}

// pushQueue is one queue this consumer holds, with its goroutines.
type pushQueue struct {
	mq     protocol.MessageQueue
	pq     *processQueue
	ctx    context.Context // cancelled when the queue is dropped
	cancel context.CancelFunc
	wg     sync.WaitGroup // pull loop and orderly consume loop
}

// NewPushConsumer checks cfg and builds a consumer; nothing is dialled
// until Start.
func NewPushConsumer(cfg PushConsumerConfig) (*PushConsumer, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	pc, err := NewPullConsumer(PullConsumerConfig{
		CommonConfig:       cfg.CommonConfig,
		Group:              cfg.Group,
		LongPollingSuspend: cfg.LongPollingSuspend,
		MaxBodySize:        cfg.MaxBodySize,
	})
	if err != nil {
		return nil, err
	}
	c := &PushConsumer{
		cfg:   cfg,
		pc:    pc,
		core:  pc.core,
		stats: newConsumeStats(),
		log:   cfg.Logger.With("group", cfg.Group),
		subs:  make(map[string]subscriptionData),
		// Built once: a new subVersion in every heartbeat would read as
		// a subscription change to the broker.
		retrySub: newSubscription(protocol.RetryTopic(cfg.Group), subAll, ExpressionTypeTag),
		queues:   make(map[protocol.MessageQueue]*pushQueue),
		wake:     make(chan struct{}, 1),
	}
	// The pull consumer's core announces what this consumer is.
	pc.core.heartbeat = c.heartbeatData
	if c.inner, err = newInnerProducer(cfg.CommonConfig, pc.core); err != nil {
		return nil, err
	}
	if cfg.Model == Broadcasting {
		c.store = newLocalOffsetStore(cfg.OffsetStoreDir, pc.core.clientID, cfg.Group, c.log)
	} else {
		c.store = newRemoteOffsetStore(pc, c.log)
	}
	if !cfg.Orderly {
		c.tasks = make(chan consumeTask, cfg.ConsumeGoroutines)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// newInnerProducer builds the producer a consumer uses to re-send failed
// messages to its retry topic, on the consumer's own connections.
func newInnerProducer(common CommonConfig, co *core) (*Producer, error) {
	cfg, err := ProducerConfig{CommonConfig: common, Group: clientInnerProducerGroupName}.normalize()
	if err != nil {
		return nil, err
	}
	z, err := newCompressor(cfg.CompressLevel)
	if err != nil {
		return nil, err
	}
	p := &Producer{groupClient: groupClient{core: co, kind: "producer", group: cfg.Group}, cfg: cfg, zlib: z}
	p.ids = message.NewUniqIDGenerator(localIP(), os.Getpid(), rand.Int32(), nil)
	p.life.start()
	return p, nil
}

// Subscribe consumes topic's messages matching expression (tags "a || b"
// or "*" for TAG, the default type; an SQL92 expression for SQL92). It may
// be called before or after Start; a later call for the same topic
// replaces the expression.
func (c *PushConsumer) Subscribe(topic, expression, expressionType string) error {
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("client: subscribe: %w", err)
	}
	if expressionType != "" && expressionType != ExpressionTypeTag && expressionType != ExpressionTypeSQL92 {
		return fmt.Errorf("client: subscribe %s: unknown expression type %q", topic, expressionType)
	}
	if err := c.pc.Subscribe(topic, expression, expressionType); err != nil {
		return err
	}
	c.subMu.Lock()
	c.subs[topic] = newSubscription(topic, expression, expressionType)
	c.subMu.Unlock()
	c.core.wakeHeartbeat()
	c.rebalanceNow()
	return nil
}

// Unsubscribe stops consuming topic; its queues are released at the next
// rebalance.
func (c *PushConsumer) Unsubscribe(topic string) {
	c.subMu.Lock()
	delete(c.subs, topic)
	c.subMu.Unlock()
	c.pc.Unsubscribe(topic)
	c.core.wakeHeartbeat()
	c.rebalanceNow()
}

// Start begins consuming: it registers the handlers for broker requests,
// then heartbeats, rebalances and pulls in the background.
func (c *PushConsumer) Start() error {
	if !c.life.start() {
		return fmt.Errorf("client: start push consumer %s: already started or shut down", c.cfg.Group)
	}
	if err := c.store.load(); err != nil {
		c.life.close()
		return err
	}
	c.registerHandlers()
	if err := c.pc.Start(); err != nil {
		c.life.close()
		return err
	}
	c.started = time.Now()
	if c.tasks != nil {
		for range c.cfg.ConsumeGoroutines {
			c.wg.Add(1)
			go c.consumeWorker()
		}
	}
	c.wg.Add(1)
	go c.loop()
	c.log.Info("client: push consumer started", "clientID", c.core.clientID, "model", c.cfg.Model.String(), "orderly", c.cfg.Orderly)
	return nil
}

// Shutdown stops pulling and waits (until ctx ends) for handler calls in
// flight, then commits the consumed offsets, releases orderly queue locks,
// unregisters from the brokers and closes the connections. Messages
// fetched but not consumed are delivered again later, here or to another
// consumer. Later calls do nothing.
func (c *PushConsumer) Shutdown(ctx context.Context) error {
	first, _ := c.life.close()
	if !first {
		return nil
	}
	c.cancel()
	held := c.Assigned()
	var errs []error
	done := make(chan struct{})
	var last []protocol.MessageQueue // read once done is closed
	go func() {
		defer close(done)
		// The loop first (a rebalance in progress may still start queues),
		// without holding rbMu, which it may be waiting for; then the
		// queues, under rbMu so that an offset reset cannot race.
		c.wg.Wait()
		c.rbMu.Lock()
		defer c.rbMu.Unlock()
		c.qmu.RLock()
		qs := slices.Collect(maps.Values(c.queues))
		last = slices.Collect(maps.Keys(c.queues))
		c.qmu.RUnlock()
		for _, q := range qs {
			c.stopQueue(q)
		}
	}()
	select {
	case <-done:
		// A rebalance that was running may have added queues since.
		for _, mq := range last {
			if !slices.Contains(held, mq) {
				held = append(held, mq)
			}
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("client: push consumer %s: waiting for handlers: %w", c.cfg.Group, ctx.Err()))
	}
	// Offsets and locks go out even if the wait was cut short: whatever was
	// consumed so far is committed.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.RequestTimeout)
	c.store.persist(wctx, held)
	if c.lockingOrderly() {
		c.stopLocking()
		c.unlockQueues(wctx, held)
	}
	cancel()
	c.inner.life.close()
	if err := c.pc.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	c.log.Info("client: push consumer shut down")
	return errors.Join(errs...)
}

// ClientID is the id brokers know this consumer by (ip@instance).
func (c *PushConsumer) ClientID() string { return c.core.clientID }

// Group is the consumer group.
func (c *PushConsumer) Group() string { return c.cfg.Group }

// Assigned lists the queues this consumer holds now, sorted.
func (c *PushConsumer) Assigned() []protocol.MessageQueue {
	c.qmu.RLock()
	defer c.qmu.RUnlock()
	out := slices.Collect(maps.Keys(c.queues))
	protocol.SortMessageQueues(out)
	return out
}

// rebalanceNow asks the loop for a rebalance at once.
func (c *PushConsumer) rebalanceNow() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *PushConsumer) lockingOrderly() bool { return c.cfg.Orderly && c.cfg.Model == Clustering }

// loop runs the periodic work: rebalance (every RebalanceInterval and on
// request), offset commits, lock renewal and statistics.
func (c *PushConsumer) loop() {
	defer c.wg.Done()
	ctx := c.ctx
	// Brokers must know this client before anyone asks them for the
	// group's members: routes first, then a heartbeat, then allocate.
	c.updateRoutes(ctx)
	c.core.sendHeartbeats(ctx)
	next := c.cfg.RebalanceInterval
	if !c.rebalance(ctx) {
		next = rebalanceRetryDelay
	}
	rb := time.NewTimer(next)
	defer rb.Stop()
	commit := time.NewTicker(c.cfg.OffsetCommitInterval)
	defer commit.Stop()
	var lockC <-chan time.Time
	if c.lockingOrderly() {
		t := time.NewTicker(c.cfg.LockRenewInterval)
		defer t.Stop()
		lockC = t.C
	}
	sample := time.NewTicker(statsSampleEvery)
	defer sample.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-rb.C:
		case <-commit.C:
			c.store.persist(ctx, c.Assigned())
			continue
		case <-lockC:
			c.renewLocks(ctx)
			continue
		case <-sample.C:
			c.stats.sample()
			continue
		}
		next := c.cfg.RebalanceInterval
		if !c.rebalance(ctx) {
			next = rebalanceRetryDelay
		}
		if !rb.Stop() {
			select {
			case <-rb.C:
			default:
			}
		}
		rb.Reset(next)
	}
}

// updateRoutes makes sure every subscribed topic has a cached route (the
// core refreshes cached routes periodically).
func (c *PushConsumer) updateRoutes(ctx context.Context) {
	for topic := range c.topicSubscriptions() {
		if _, err := c.core.updateRoute(ctx, topic, routeFetch{ifMissing: true}); err != nil && ctx.Err() == nil {
			c.log.Debug("client: no route for subscribed topic yet", "topic", topic, "err", err)
		}
	}
}

// topicSubscriptions returns the subscriptions to consume: the user's and,
// in clustering, the group's retry topic (Java's copySubscription).
func (c *PushConsumer) topicSubscriptions() map[string]subscriptionData {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	out := maps.Clone(c.subs)
	if c.cfg.Model == Clustering && len(out) > 0 {
		if _, ok := out[c.retrySub.Topic]; !ok {
			out[c.retrySub.Topic] = c.retrySub
		}
	}
	return out
}

// subscription returns the current subscription of topic.
func (c *PushConsumer) subscription(topic string) (subscriptionData, bool) {
	c.subMu.Lock()
	sd, ok := c.subs[topic]
	c.subMu.Unlock()
	if !ok && topic == c.retrySub.Topic {
		return c.retrySub, true
	}
	return sd, ok
}

// heartbeatData announces the group as a push ("CONSUME_PASSIVELY")
// consumer with its subscriptions, and the internal producer (Java).
func (c *PushConsumer) heartbeatData() *heartbeatData {
	subs := c.topicSubscriptions()
	set := make([]subscriptionData, 0, len(subs))
	for _, t := range slices.Sorted(maps.Keys(subs)) {
		set = append(set, subs[t])
	}
	return &heartbeatData{
		ClientID: c.core.clientID,
		ConsumerDataSet: []consumerData{{
			ConsumeFromWhere:    c.cfg.ConsumeFrom.String(),
			ConsumeType:         consumePassively,
			GroupName:           c.cfg.Group,
			MessageModel:        c.cfg.Model.String(),
			SubscriptionDataSet: set,
		}},
		ProducerDataSet: []producerData{{GroupName: clientInnerProducerGroupName}},
	}
}

// Values of ConsumerData fields used by push consumers.
const (
	consumePassively         = "CONSUME_PASSIVELY"
	consumePop               = "CONSUME_POP"
	messageModelBroadcasting = "BROADCASTING"
)

// startOffset positions a newly held queue (Java's computePullFromWhere):
// the stored offset, else per ConsumeFrom.
func (c *PushConsumer) startOffset(ctx context.Context, mq protocol.MessageQueue) (int64, error) {
	off, err := c.store.readStored(ctx, mq)
	switch {
	case err == nil && off >= 0:
		return off, nil
	case err != nil && !errors.Is(err, ErrOffsetNotFound):
		return -1, err
	}
	retry := mq.Topic == protocol.RetryTopic(c.cfg.Group)
	switch c.cfg.ConsumeFrom {
	case ConsumeFromFirstOffset:
		return 0, nil
	case ConsumeFromTimestamp:
		if retry {
			return c.pc.GetMaxOffset(ctx, mq)
		}
		return c.pc.SearchOffset(ctx, mq, c.cfg.ConsumeTimestamp)
	default:
		if retry {
			return 0, nil
		}
		return c.pc.GetMaxOffset(ctx, mq)
	}
}

// consumerIDs asks a broker of topic for the group's live client ids
// (GET_CONSUMER_LIST_BY_GROUP), sorted.
func (c *PushConsumer) consumerIDs(ctx context.Context, topic string) ([]string, error) {
	tr := c.core.route(topic)
	if tr == nil {
		return nil, fmt.Errorf("%w: topic %s", ErrNoRoute, topic)
	}
	var addrs []string
	for _, bd := range tr.data.BrokerDatas {
		if a := c.core.brokerAddr(bd.BrokerName, true); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no broker address", ErrNoRoute, topic)
	}
	// Any broker will do (Java picks one at random); try the others if it
	// fails.
	first := rand.IntN(len(addrs))
	var errs []error
	for i := range addrs {
		addr := addrs[(first+i)%len(addrs)]
		resp, err := c.core.invokeOK(ctx, addr, code.GetConsumerListByGroup, map[string]string{"consumerGroup": c.cfg.Group}, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var body struct {
			ConsumerIDList []string `json:"consumerIdList"`
		}
		if err := protocol.Unmarshal(resp.Body, &body); err != nil {
			errs = append(errs, fmt.Errorf("client: consumer list from %s: %w", addr, err))
			continue
		}
		slices.Sort(body.ConsumerIDList)
		return slices.Compact(body.ConsumerIDList), nil
	}
	return nil, errors.Join(errs...)
}

// subscribeQueues returns topic's readable queues, sorted.
func (c *PushConsumer) subscribeQueues(ctx context.Context, topic string) ([]protocol.MessageQueue, error) {
	tr := c.core.route(topic)
	if tr == nil || len(tr.subscribe) == 0 {
		var err error
		if tr, err = c.core.updateRoute(ctx, topic, routeFetch{ifMissing: true}); err != nil {
			return nil, err
		}
	}
	if len(tr.subscribe) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no readable queue", ErrNoRoute, topic)
	}
	return slices.Clone(tr.subscribe), nil
}
