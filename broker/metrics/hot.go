package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// The hot path (a send, a pull, a request answered) updates plain atomics
// found through read-only maps: no lock, no allocation once a topic, group
// or request code has been seen. The exporters read them at collection time
// (observable counters, and histograms built by the producer in
// producer.go).

// histogram is a fixed-bucket cumulative histogram of int64 observations.
type histogram struct {
	bounds []float64
	counts []atomic.Uint64 // len(bounds)+1
	sum    atomic.Int64
	count  atomic.Uint64
	min    atomic.Int64
	max    atomic.Int64
}

func newHistogram(bounds []float64) *histogram {
	h := &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1)}
	h.min.Store(1<<63 - 1)
	h.max.Store(-1 << 63)
	return h
}

func (h *histogram) observe(v int64) {
	i := 0
	for i < len(h.bounds) && float64(v) > h.bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
	h.count.Add(1)
	for {
		m := h.min.Load()
		if v >= m || h.min.CompareAndSwap(m, v) {
			break
		}
	}
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// cowMap is a map read without locking: readers load an immutable map; a
// miss takes the lock and looks in the dirty map, which holds every entry.
// After as many misses as the dirty map has entries it is published as the
// new read map (sync.Map's amortisation, with typed keys, so a lookup does
// not box its key).
type cowMap[K comparable, V any] struct {
	read   atomic.Pointer[map[K]*V]
	mu     sync.Mutex
	dirty  map[K]*V
	misses int
	limit  int // most entries; 0: no limit
}

// get returns the entry of k, creating it with mk; nil once the map holds
// limit entries and k is not among them.
func (c *cowMap[K, V]) get(k K, mk func() *V) *V {
	if r := c.read.Load(); r != nil {
		if v, ok := (*r)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirty == nil {
		c.dirty = make(map[K]*V)
	}
	v, ok := c.dirty[k]
	if !ok {
		if c.limit > 0 && len(c.dirty) >= c.limit {
			return nil
		}
		v = mk()
		c.dirty[k] = v
	}
	c.misses++
	if c.misses >= len(c.dirty) {
		m := make(map[K]*V, len(c.dirty))
		for k, v := range c.dirty {
			m[k] = v
		}
		c.read.Store(&m)
		c.misses = 0
	}
	return v
}

// load returns the entry of k, nil when there is none.
func (c *cowMap[K, V]) load(k K) *V {
	if r := c.read.Load(); r != nil {
		if v, ok := (*r)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dirty[k]
}

// each calls f for every entry (collection time).
func (c *cowMap[K, V]) each(f func(K, *V)) {
	c.mu.Lock()
	snap := make([]struct {
		k K
		v *V
	}, 0, len(c.dirty))
	for k, v := range c.dirty {
		snap = append(snap, struct {
			k K
			v *V
		}{k, v})
	}
	c.mu.Unlock()
	for _, e := range snap {
		f(e.k, e.v)
	}
}

// inStats are one topic's incoming counters by message type.
type inStats struct {
	attrs [numMessageTypes]attribute.Set
	msgs  [numMessageTypes]atomic.Int64
	bytes [numMessageTypes]atomic.Int64
	size  [numMessageTypes]*histogram
}

// outKey is a (topic, group) pair of messages_out.
type outKey struct{ topic, group string }

// popOutKey is one series of popped messages: Java labels pops, not pulls,
// with is_retry.
type popOutKey struct {
	topic, group string
	retry        bool
}

type outStats struct {
	attrs attribute.Set
	msgs  atomic.Int64
	bytes atomic.Int64
}

// rpcKey is one series of rpc latency.
type rpcKey struct {
	code, resp  int32
	longPolling bool
	oneway      bool
	grpc        bool
}

type rpcStats struct {
	attrs attribute.Set
	hist  *histogram
}

// MessagesIn counts msgs stored to topic (bytes as written to the
// CommitLog), as Java's SendMessageProcessor does after a put: retry and
// DLQ topics are not counted; message_size gets the average record size.
// A lite (LMQ) name counts under its parent topic.
func (m *Metrics) MessagesIn(topic string, t MessageType, msgs int, bytes int64) {
	if m == nil {
		return
	}
	if t == Transaction {
		// A stored prepared message is a half message of its real topic;
		// Java counts it in under the topic it is stored in.
		m.halfAdd(topic, int64(msgs))
		topic = protocol.TransHalfTopic
	}
	if !m.cfg.EnableRequestMetrics || msgs <= 0 || isRetryOrDLQ(topic) {
		return
	}
	if t >= numMessageTypes {
		t = Normal
	}
	topic = parentOfLmq(topic)
	s := m.in.get(topic, func() *inStats { return m.newInStats(topic) })
	if s == nil {
		s = m.inOverflow
	}
	s.msgs[t].Add(int64(msgs))
	s.bytes[t].Add(bytes)
	s.size[t].observe(bytes / int64(msgs))
}

// MessagesOut counts msgs (bytes as read) delivered to group from topic
// (pull, pop, gRPC receive), as Java's pull result handler does; retry and
// DLQ topics are not counted.
func (m *Metrics) MessagesOut(topic, group string, msgs int, bytes int64) {
	if m == nil || !m.cfg.EnableRequestMetrics || msgs <= 0 || isRetryOrDLQ(topic) {
		return
	}
	topic = parentOfLmq(topic)
	k := outKey{topic, group}
	s := m.out.get(k, func() *outStats { return m.newOutStats(k) })
	if s == nil {
		s = m.outOverflow
	}
	s.msgs.Add(int64(msgs))
	s.bytes.Add(bytes)
}

// PoppedOut counts msgs (bytes) popped by group from topic; retry: they
// came from the group's retry topic (Java's PopMessageProcessor labels
// them is_retry).
func (m *Metrics) PoppedOut(topic, group string, retry bool, msgs int, bytes int64) {
	if m == nil || !m.cfg.EnableRequestMetrics || msgs <= 0 || isRetryOrDLQ(topic) {
		return
	}
	k := popOutKey{parentOfLmq(topic), group, retry}
	s := m.popOut.get(k, func() *outStats {
		return m.newOutStats(outKey{k.topic, k.group}, attribute.Bool(labelIsRetry, k.retry))
	})
	if s == nil {
		s = m.outOverflow
	}
	s.msgs.Add(int64(msgs))
	s.bytes.Add(bytes)
}

// RPC records one answered request: its code, the response code, how long
// it took from being read to being answered, and whether it was a long
// polling request answered later, or one-way.
func (m *Metrics) RPC(code, resp int32, d time.Duration, longPolling, oneway, grpc bool) {
	if m == nil || !m.cfg.EnableRemotingMetrics {
		return
	}
	k := rpcKey{code: code, resp: resp, longPolling: longPolling, oneway: oneway, grpc: grpc}
	s := m.rpc.get(k, func() *rpcStats { return m.newRPCStats(k) })
	if s == nil {
		return // past the cardinality limit
	}
	s.hist.observe(d.Milliseconds())
}

// TopicCreated records how long a topic creation took (admin
// UPDATE_AND_CREATE_TOPIC), as Java's AdminBrokerProcessor does.
func (m *Metrics) TopicCreated(topic string, ok bool, d time.Duration) {
	if m == nil || !m.cfg.EnableRequestMetrics {
		return
	}
	i := 0
	if !ok {
		i = 1
	}
	if isSystemTopic(topic) {
		i += 2
	}
	m.topicCreate[i].observe(d.Milliseconds())
}

// PopBufferScan records one scan of the pop buffers.
func (m *Metrics) PopBufferScan(d time.Duration) {
	if m == nil || !m.cfg.EnablePopMetrics {
		return
	}
	m.popScan.observe(d.Milliseconds())
}

// counterStats is one series of an event counter.
type counterStats struct {
	attrs attribute.Set
	n     atomic.Int64
}

// txStats are one topic's transaction ends.
type txStats struct {
	commitAttrs attribute.Set
	commits     atomic.Int64
	rollbacks   atomic.Int64
	finish      *histogram // seconds from the half message's birth to its commit
}

// SendToDLQ counts a message of group that went to its DLQ instead of
// being retried (Java: consumer send-back past maxReconsumeTimes, or a
// %RETRY% send past it), by its original topic.
func (m *Metrics) SendToDLQ(topic, group string) {
	if m == nil || !m.cfg.EnableLagAndDlqMetrics {
		return
	}
	k := outKey{parentOfLmq(topic), group}
	s := m.dlq.get(k, func() *counterStats {
		return &counterStats{attrs: m.attrs(attribute.String(labelGroup, k.group), attribute.String(labelTopic, k.topic),
			attribute.Bool(labelIsSystem, isSystemTopic(k.topic) || isSystemGroup(k.group)))}
	})
	if s != nil {
		s.n.Add(1)
	}
}

// TransactionEnded counts a committed or rolled back transaction message of
// topic (its real topic); a commit also records the seconds since the half
// message was born (Java's EndTransactionProcessor).
func (m *Metrics) TransactionEnded(topic string, commit bool, bornMs int64) {
	if m == nil || !m.cfg.EnableTransactionMetrics {
		return
	}
	s := m.tx.get(topic, func() *txStats {
		return &txStats{commitAttrs: m.attrs(attribute.String(labelTopic, topic)), finish: newHistogram(finishBounds)}
	})
	m.halfAdd(topic, -1)
	if s == nil {
		return
	}
	if !commit {
		s.rollbacks.Add(1)
		return
	}
	s.commits.Add(1)
	s.finish.observe(max(m.now().UnixMilli()-bornMs, 0) / 1000)
}

// GroupCreated records how long UPDATE_AND_CREATE_SUBSCRIPTIONGROUP took.
func (m *Metrics) GroupCreated(ok bool, d time.Duration) {
	if m == nil || !m.cfg.EnableRequestMetrics {
		return
	}
	i := 0
	if !ok {
		i = 1
	}
	m.groupCreate[i].observe(d.Milliseconds())
}

// halfAdd moves topic's count of half messages waiting for their
// END_TRANSACTION (Java's TransactionMetrics.addAndGet: +1 when a prepared
// message is stored, −1 when it is committed, rolled back or discarded).
func (m *Metrics) halfAdd(topic string, n int64) {
	if !m.cfg.EnableTransactionMetrics {
		return
	}
	s := m.half.get(topic, func() *counterStats { return &counterStats{attrs: m.attrs(attribute.String(labelTopic, topic))} })
	if s != nil {
		s.n.Add(n)
	}
}

// TransactionDiscarded counts a transaction of topic (its real topic) the
// check scan gave up on: its half message no longer waits.
func (m *Metrics) TransactionDiscarded(topic string) {
	if m == nil {
		return
	}
	m.halfAdd(topic, -1)
}

// SeedHalfMessages adds the half messages found waiting at start, by real
// topic (the broker's transaction service counts them).
func (m *Metrics) SeedHalfMessages(pending map[string]int64) {
	if m == nil {
		return
	}
	for topic, n := range pending {
		m.halfAdd(topic, n)
	}
}
