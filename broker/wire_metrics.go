package broker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/admin"
	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/metrics"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/offset"
	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// newMetrics builds the broker's metrics (docs/operations.md, "Metrics");
// nil when metricsExporterType exports nothing. Its sources read the broker
// at collection time.
func (b *Broker) newMetrics(cfg *config.Config, log *slog.Logger) (*metrics.Metrics, error) {
	mc := metrics.Config{
		ExporterType:             cfg.MetricsExporterType,
		PromHost:                 cfg.MetricsPromExporterHost,
		PromPort:                 cfg.MetricsPromExporterPort,
		GrpcTarget:               cfg.MetricsGrpcExporterTarget,
		GrpcHeader:               cfg.MetricsGrpcExporterHeader,
		GrpcTimeout:              cfg.MetricGrpcExporterTimeOutInMills,
		GrpcInterval:             cfg.MetricGrpcExporterIntervalInMills,
		LogInterval:              cfg.MetricLoggingExporterIntervalInMills,
		Labels:                   cfg.MetricsLabel,
		InDelta:                  cfg.MetricsInDelta,
		CardinalityLimit:         cfg.MetricsOtelCardinalityLimit,
		BrokerIP1:                cfg.BrokerIP1,
		Cluster:                  cfg.BrokerClusterName,
		NodeID:                   cfg.BrokerName,
		EnableStatsMetrics:       cfg.EnableStatsMetrics,
		EnableRequestMetrics:     cfg.EnableRequestMetrics,
		EnableConnectionMetrics:  cfg.EnableConnectionMetrics,
		EnableLagAndDlqMetrics:   cfg.EnableLagAndDlqMetrics,
		EnableRemotingMetrics:    cfg.EnableRemotingMetrics,
		EnableStoreMetrics:       cfg.EnableMessageStoreMetrics,
		EnablePopMetrics:         cfg.EnablePopMetrics,
		EnableTransactionMetrics: cfg.EnableTransactionMetrics,
	}
	src := metrics.Sources{
		BrokerPermission: func() int64 { return int64(b.cfg.Get().BrokerPermission) },
		TopicCount:       func() int64 { return int64(b.topics.Len()) },
		Processors: func() map[string]int64 {
			out := make(map[string]int64, len(b.pools))
			for name, n := range b.poolStats() {
				if label, ok := watermarkName(name); ok {
					out[label] = int64(n.Queued)
				}
			}
			return out
		},
	}
	if b.store != nil {
		src.GroupCount = func() int64 { return int64(b.msg.subs.Len()) }
		src.Producers = b.metricProducers
		src.Consumers = b.metricConsumers
		src.Lags = b.metricLags
		src.Store = b.metricStore
		src.Timer = b.metricTimer
		src.Timing = b.metricTiming
		// Pop keeps no in-memory offset/checkpoint merge buffer (its
		// checkpoints go straight to the journal and Pebble), so both
		// buffer sizes are 0 (docs/operations.md).
		src.PopBuffers = func() (int64, int64) { return 0, 0 }
		src.Lite = func() metrics.LiteSettings {
			c := b.cfg.Get()
			return metrics.LiteSettings{LatencyMetrics: c.LiteLagLatencyMetricsEnable, CountMetrics: c.LiteLagCountMetricsEnable}
		}
		src.LiteLagCounts = b.metricLiteLagCounts
		src.PopRevive = func() []metrics.Revive {
			if b.msg.pop == nil {
				return nil
			}
			// One due index for all revive queues: reported as queue 0.
			n, ms := b.msg.pop.ReviveBehind(reviveBehindLimit)
			return []metrics.Revive{{QueueID: 0, BehindMsgs: n, BehindMs: ms}}
		}
	}
	return metrics.New(mc, src, log.With("component", "metrics"))
}

// timerScanLimit bounds the pending timers a scrape walks (the due ones and
// the snapshot of the next 24 h).
const timerScanLimit = 1_000_000

// metricTimer is the timer service's backlog (Java's timer metrics).
func (b *Broker) metricTimer() metrics.TimerStats {
	var t metrics.TimerStats
	if b.msg.sched == nil {
		return t
	}
	bounds := make([]time.Duration, len(metrics.TimerDistSeconds))
	for i, s := range metrics.TimerDistSeconds {
		bounds[i] = time.Duration(s) * time.Second
	}
	bh := b.msg.sched.Behind(time.Now(), bounds, timerScanLimit)
	t.EnqueueLag, t.EnqueueLatencyMs = bh.EnqueueLag, bh.EnqueueLatencyMs
	t.DequeueLag, t.DequeueLatencyMs = bh.DequeueLag, bh.DequeueLatencyMs
	copy(t.Snapshot[:], bh.Upcoming)
	return t
}

// metricTiming is the timer messages waiting per real topic (the timer
// service's persisted timing counts; on a slave, the copy of its
// master's).
func (b *Broker) metricTiming() map[string]int64 {
	if b.msg.timer == nil {
		return nil
	}
	m := b.msg.timer.Metrics()
	out := make(map[string]int64, len(m.TimingCount))
	for topic, t := range m.TimingCount {
		out[topic] = t.Count
	}
	return out
}

// reviveBehindLimit bounds the count of overdue pop checkpoints a scrape
// walks.
const reviveBehindLimit = 100000

// metricsPopScan is the pop revive service's round timer (nil when metrics
// are off).
func (b *Broker) metricsPopScan() func(time.Duration) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.PopBufferScan
}

// metricsRevive counts the pop revive traffic (nil when metrics are off).
func (b *Broker) metricsRevive() pop.ReviveCounter {
	if b.metrics == nil {
		return nil
	}
	return b.metrics
}

// watermarkName maps our executors to the processor label of
// rocketmq_processor_watermark (Java's BrokerMetricsManager
// initStatsMetrics; Java's async_put queue has no counterpart here, and our
// loadBalance executor none there).
func watermarkName(pool string) (string, bool) {
	switch pool {
	case admin.PoolSend, admin.PoolPull, admin.PoolAck, admin.PoolAdmin, "heartbeat", "reply":
		return pool, true
	case admin.PoolLitePull:
		return "lite_pull", true
	case admin.PoolQuery:
		return "query_message", true
	case admin.PoolEndTransaction:
		return "transaction", true
	case "clientManage":
		return "client_manager", true
	case "consumerManage":
		return "consumer_manager", true
	}
	return "", false
}

// Metrics is the broker's metrics (nil when disabled).
func (b *Broker) Metrics() *metrics.Metrics { return b.metrics }

// metricsHandler wraps a request handler to record rpc latency by request
// and response code (Java records it where the response is written,
// NettyRemotingAbstract.writeResponse) and the topic creation time of
// UPDATE_AND_CREATE_TOPIC (AdminBrokerProcessor). A handler that answers
// later itself (a suspended long-polling pull) is not recorded here.
func (b *Broker) metricsHandler(c int32, h remoting.Handler) remoting.Handler {
	m := b.metrics
	if m == nil {
		return h
	}
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		start := time.Now()
		resp, err := h(ctx, ch, req)
		if resp == nil && err == nil {
			return resp, err // suspended: metricsResumed records the answer
		}
		rc := responseCode(resp, err)
		now := time.Now()
		// A request no remoting server read (Arrival 0, no Received) came
		// through the gRPC endpoint, which calls these handlers in
		// process: its time starts at the handler.
		since := start
		if !req.Received.IsZero() {
			since = req.Received
		}
		m.RPC(c, rc, now.Sub(since), false, req.IsOneway(), req.Arrival == 0)
		switch c {
		case code.UpdateAndCreateTopic:
			m.TopicCreated(req.ExtFields["topic"], rc == code.Success, now.Sub(start))
		case code.UpdateAndCreateSubscriptionGroup:
			m.GroupCreated(rc == code.Success, now.Sub(start))
		}
		return resp, err
	}
}

// responseCode is the code a handler's result is answered with.
func responseCode(resp *remoting.Command, err error) int32 {
	if err != nil {
		var ce *remoting.CodeError
		if errors.As(err, &ce) {
			return ce.Code
		}
		return code.SystemError
	}
	if resp != nil {
		return resp.Code
	}
	return code.Success
}

// metricsResumed records a long-polling pull or pop answered after its
// suspension, from when the request was read (Java records it with
// is_long_polling=true when the response is written).
func (b *Broker) metricsResumed() func(req, resp *remoting.Command, err error) {
	m := b.metrics
	if m == nil {
		return nil
	}
	return func(req, resp *remoting.Command, err error) {
		if resp == nil && err == nil {
			return
		}
		if req.Received.IsZero() {
			return // gRPC: the handler's start is not known here
		}
		m.RPC(req.Code, responseCode(resp, err), time.Since(req.Received), true, req.IsOneway(), false)
	}
}

// metricProducers lists the producer connections.
func (b *Broker) metricProducers() []metrics.Client {
	pm := b.msg.clients.Producers()
	var out []metrics.Client
	for _, g := range pm.Groups() {
		for _, c := range pm.Channels(g) {
			out = append(out, metrics.Client{Language: strings.ToLower(c.Language.String()),
				Version: strings.ToLower(remoting.VersionDesc(c.Version)), Protocol: metrics.ProtocolRemoting})
		}
	}
	return out
}

// consumeMode is Java's ConsumeType.getTypeCN in lower case.
func consumeMode(t string) string {
	switch t {
	case client.ConsumeActively:
		return "pull"
	case client.ConsumePassively:
		return "push"
	case client.ConsumePop:
		return "pop"
	}
	return strings.ToLower(t)
}

// metricConsumers lists the consumer connections by group.
func (b *Broker) metricConsumers() []metrics.Client {
	cm := b.msg.clients.Consumers()
	var out []metrics.Client
	for _, g := range cm.Groups() {
		info, ok := cm.GroupInfo(g)
		if !ok {
			continue
		}
		for _, c := range info.Channels {
			out = append(out, metrics.Client{Group: g, ConsumeMode: consumeMode(info.ConsumeType),
				Language: strings.ToLower(c.Language.String()), Version: strings.ToLower(remoting.VersionDesc(c.Version)),
				Protocol: metrics.ProtocolRemoting})
		}
	}
	return out
}

// metricLags is Java's ConsumerLagCalculator: every online group that has
// a subscription group config, each topic it subscribes (not retry topics,
// only topics with a config that is readable or writable under
// brokerPermission, so LMQs are never listed). Per queue: lag = max −
// committed offset, inflight = pulled − committed, ready = max − pulled.
func (b *Broker) metricLags() []metrics.Lag {
	cfg := b.cfg.Get()
	cm := b.msg.clients.Consumers()
	st := b.store
	var out []metrics.Lag
	for _, g := range cm.Groups() {
		if !b.msg.subs.Contains(g) {
			continue
		}
		info, ok := cm.GroupInfo(g)
		if !ok {
			continue
		}
		if sg, ok := b.msg.subs.Find(g); ok && meta.GroupOf(sg).IsLite() {
			continue // lite groups: lite lag (metricLiteLagCounts), as Java
		}
		for topic := range info.Subscriptions {
			if strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) {
				continue
			}
			tc, ok := b.topics.Get(topic)
			if !ok || tc.Perm&cfg.BrokerPermission&(protocol.PermRead|protocol.PermWrite) == 0 {
				continue
			}
			l := metrics.Lag{Group: g, Topic: topic}
			for q := int32(0); q < int32(tc.WriteQueueNums); q++ {
				maxOff := st.MaxOffset(topic, q)
				committed, ok := st.Offsets().Get(offset.Key{Group: g, Topic: topic, QueueID: q})
				if !ok || committed < 0 {
					committed = st.MinOffset(topic, q)
				}
				if lag := maxOff - committed; lag > 0 {
					l.Lag += lag
					if ts := st.MessageStoreTime(topic, q, committed); ts > 0 && (l.EarliestUnconsumedMs == 0 || ts < l.EarliestUnconsumedMs) {
						l.EarliestUnconsumedMs = ts
					}
				}
				pulled, ok := b.msg.pull.PullOffset(g, topic, q)
				if !ok || pulled < committed {
					pulled = committed
				}
				l.Inflight += pulled - committed
				if ready := maxOff - pulled; ready > 0 {
					l.Ready += ready
					if ts := st.MessageStoreTime(topic, q, pulled); ts > 0 && (l.EarliestUnpulledMs == 0 || ts < l.EarliestUnpulledMs) {
						l.EarliestUnpulledMs = ts
					}
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// metricLiteLagCounts is Java's LiteConsumerLagCalculator.calculateLiteLagCount:
// for each lite group (bound to a parent topic now), every LMQ of the parent the
// group holds an offset of, its max offset − that offset, summed. It looks
// offsets up one by one (short read locks) rather than walking the offset
// table under its lock, which would hold commits back for the whole walk.
func (b *Broker) metricLiteLagCounts() []metrics.Lag {
	ls := b.msg.lite
	if ls == nil {
		return nil
	}
	st := b.store
	byParent := map[string][]string{}
	groups, _ := b.msg.subs.Snapshot()
	for name, c := range groups {
		if g := meta.GroupOf(c); g.IsLite() {
			byParent[g.BindTopic] = append(byParent[g.BindTopic], name)
		}
	}
	var out []metrics.Lag
	for parent, groups := range byParent {
		lmqs := ls.Lifecycle.Index().LMQs(parent)
		for _, g := range groups {
			var sum int64
			held := false
			for _, lmq := range lmqs {
				off := ls.Offsets.Committed(g, lmq)
				if off < 0 {
					continue
				}
				held = true
				sum += max(st.MaxOffset(lmq, naming.QueueID)-off, 0)
			}
			if held {
				out = append(out, metrics.Lag{Group: g, Topic: parent, Lag: sum})
			}
		}
	}
	return out
}

// metricsLiteLag is poplite's lag hook: with liteLagLatencyCollectEnable,
// a pop that filled its batch records the store time of the LMQ's next
// message, one that caught up drops the LMQ (Java's
// PopLiteMessageProcessor.collectLiteConsumerLagMetrics). Nil when
// metrics are off.
func (b *Broker) metricsLiteLag(st *store.Store) func(group, parent, lmq string, full bool, next int64) {
	m := b.metrics
	if m == nil {
		return nil
	}
	return func(group, parent, lmq string, full bool, next int64) {
		c := b.cfg.Get()
		if !c.LiteLagLatencyCollectEnable {
			return
		}
		var ts int64
		if full {
			ts = st.MessageStoreTime(lmq, naming.QueueID, next)
		}
		m.LitePopped(group, parent, lmq, ts, int(c.LiteLagLatencyTopK))
	}
}

// metricsLiteDeleted drops deleted LMQs from the lite lag times (nil when
// metrics are off).
func (b *Broker) metricsLiteDeleted() func([]string) {
	m := b.metrics
	if m == nil {
		return nil
	}
	return func(lmqs []string) {
		for _, l := range lmqs {
			m.LiteTopicRemoved(naming.ParentOf(l), l)
		}
	}
}

// metricStore is the store gauges: used bytes of the store's file system
// (Java: total − free space of storePathRootDir), bytes not yet flushed
// and not yet dispatched, the earliest stored message's time.
func (b *Broker) metricStore() metrics.StoreStats {
	st := b.store.Stats()
	out := metrics.StoreStats{DispatchBehindBytes: st.DispatchBehind}
	cl := b.store.CommitLog()
	out.FlushBehindBytes = max(cl.MaxOffset()-cl.FlushedOffset(), 0)
	if st.EarliestMessageTime > 0 {
		out.EarliestMessageMs = st.EarliestMessageTime
	}
	if u, err := vfs.OS().DiskUsage(b.cfg.Get().StorePathRootDir); err == nil {
		out.SizeBytes = int64(u.Total - u.Free)
	}
	return out
}

// metricsIn and metricsOut are the send and pull processors' counters (nil
// when metrics are off, so the hot path skips them).
func (b *Broker) metricsIn() func(string, metrics.MessageType, int, int64) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.MessagesIn
}

func (b *Broker) metricsOut() func(string, string, int, int64) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.MessagesOut
}

// metricsPopped counts popped messages with is_retry (Java's
// PopMessageProcessor); nil when metrics are off.
func (b *Broker) metricsPopped() func(string, string, bool, int, int64) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.PoppedOut
}

// metricsLitePopped counts lite pops under the parent topic, is_retry=false
// (lite topics have no retry topic); nil when metrics are off.
func (b *Broker) metricsLitePopped() func(string, string, int, int64) {
	m := b.metrics
	if m == nil {
		return nil
	}
	return func(topic, group string, msgs int, bytes int64) { m.PoppedOut(topic, group, false, msgs, bytes) }
}

// metricsDLQ and metricsTxEnded are the send-back, retry-send and
// transaction counters (nil when metrics are off).
func (b *Broker) metricsDLQ() func(topic, group string) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.SendToDLQ
}

func (b *Broker) metricsTxEnded() func(string, bool, int64) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.TransactionEnded
}
