package pop

import (
	"context"
	"errors"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"hash/fnv"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/client"
	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// FilterFactory compiles SQL92 (and other non-tag) expressions; the
// broker's filter.Factory implements it (the pull processor uses the same).
type FilterFactory interface {
	NewFilter(group string, sub client.SubscriptionData) (store.MessageFilter, error)
}

// RouteSource resolves a topic's route from the nameservers
// (QUERY_ASSIGNMENT allocates the queues of every broker of the topic).
type RouteSource func(ctx context.Context, topic string) (*protocol.TopicRouteData, error)

// Deps are the processor's collaborators. Config, Store, Topics, Groups and
// Consumers are required.
type Deps struct {
	Config    func() *config.Config
	Store     *store.Store
	Topics    *topic.Manager
	Groups    *subscription.Manager
	Consumers *client.ConsumerManager
	// Filters compiles SQL92 pop expressions (nil: SQL92 pops answer
	// SUBSCRIPTION_PARSE_FAILED).
	Filters FilterFactory
	// StoreHost is brokerIP1:port written into journal and retry records.
	StoreHost func() netip.AddrPort
	// TopicCreated runs after the revive service created a retry or DLQ
	// topic (the broker registers it with the nameservers at once).
	TopicCreated func(topic string)
	// Routes resolves topic routes for QUERY_ASSIGNMENT (nil: only this
	// broker's queues are assigned).
	Routes RouteSource
	// RequestModePath is where SET_MESSAGE_REQUEST_MODE settings persist
	// ("" keeps them in memory).
	RequestModePath string
	// HotBytes is how far behind the CommitLog's end a message still
	// counts as in memory for pop's MAX init mode (0: 40% of RAM).
	HotBytes int64
	// ReviveInterval is the longest pause of the revive service (0:
	// reviveInterval of the config).
	ReviveInterval time.Duration
	// Replicas, when set, waits until the slaves hold the CommitLog up to
	// end (what a SYNC_MASTER send waits for): a pop is answered only once
	// its checkpoint is replicated, as Apache's checkpoint messages are,
	// so that a promoted slave revives every message handed out and not
	// acked (replicated.go; acks do not wait). A failed wait is logged and
	// the record stands, as for Apache (FLUSH_SLAVE_TIMEOUT counts as
	// written). Nil: no wait.
	Replicas func(ctx context.Context, end int64) error
	// Resets holds the server-side offset resets no pull or pop has taken
	// yet (pull.ResetTable); nil: none.
	Resets ResetTaker
	// ReviveRound is told how long each revive round's scan of the due
	// checkpoints took (broker/metrics: rocketmq_pop_buffer_scan_time_consume);
	// nil: not told.
	ReviveRound func(took time.Duration)
	// Revive counts the checkpoints and acks written to and taken from
	// the revive topic and the messages revived into retry topics
	// (broker/metrics: rocketmq_pop_revive_*_total); nil: not counted.
	Revive ReviveCounter
	// MessagesOut counts popped messages (broker/metrics:
	// rocketmq_messages_out_total, throughput_out); nil: not counted.
	// retry says the messages came from the group's retry topic.
	MessagesOut func(topic, group string, retry bool, msgs int, bytes int64)
	// Resumed is told of each long-polling pop answered after it was
	// suspended (broker/metrics: rpc latency with is_long_polling);
	// nil: not told.
	Resumed func(req, resp *remoting.Command, err error)
	Now     func() time.Time
	Logger  *slog.Logger
}

// ReviveCounter is told of the revive traffic (Java's PopMetricsManager
// incPopRevive*): ck says checkpoint rather than ack; status is Java's
// PutMessageStatus name of the write (PutStatus).
type ReviveCounter interface {
	// RevivePut: a checkpoint or ack record was written to the journal
	// (a queue of the revive topic).
	RevivePut(group, topic string, ck bool, status string)
	// ReviveGot: a record was taken up on the revive side of journal
	// queue queueID — an ack as it is applied to its checkpoint, a
	// checkpoint as the revive service takes it when due.
	ReviveGot(group, topic string, queueID int32, ck bool)
	// ReviveRetry: an un-acked message was stored again in the group's
	// pop retry topic.
	ReviveRetry(group, topic, status string)
}

// ResetTaker hands out a queue's pending server-side reset once.
type ResetTaker interface {
	Take(group, topic string, qid int32) (int64, bool)
}

// Processor answers the pop family of requests and runs the revive
// service. Build it with New, Register it, Start it with the broker.
type Processor struct {
	d   Deps
	log *slog.Logger
	st  *store.Store
	j   *journal

	pops    *poller // suspended POP_MESSAGE
	notices *poller // suspended NOTIFICATION
	revive  *reviveService
	modes   *modeTable

	qlocks   sync.Map // pollKey → *sync.Mutex: one pop at a time per (topic, group, queue)
	rqNext   atomic.Uint32
	hotBytes int64

	orderTimers sync.Map // pollKey → *time.Timer: wake pollers when an orderly queue unblocks

	startOnce, closeOnce sync.Once
}

// New builds the processor and recovers the pop state from the journal:
// the store must be open (and re-dispatched), no request served yet.
func New(d Deps) (*Processor, error) {
	if d.Config == nil || d.Store == nil || d.Topics == nil || d.Groups == nil || d.Consumers == nil {
		return nil, errors.New("pop: Deps.Config, Store, Topics, Groups and Consumers are required")
	}
	defaults.Clock(&d.Now)
	defaults.Logger(&d.Logger)
	p := &Processor{d: d, log: d.Logger, st: d.Store, hotBytes: d.HotBytes}
	if p.hotBytes <= 0 {
		p.hotBytes = defaultHotBytes()
	}
	cfg := d.Config()
	p.j = newJournal(d.Store, topic.ReviveTopicPrefix+cfg.BrokerClusterName, d.StoreHost, d.Now, d.Logger.With("part", "journal"))
	p.j.events = d.Revive
	p.j.replicas = d.Replicas
	if err := p.j.recover(); err != nil {
		return nil, err
	}
	if err := p.recoverOffsets(); err != nil {
		return nil, err
	}
	var err error
	if p.modes, err = loadModeTable(d.RequestModePath); err != nil {
		return nil, err
	}
	maxPerKey := func() int { return max(p.d.Config().PopPollingSize, 1) }
	maxTotal := func() int { return int(max(p.d.Config().MaxPopPollingSize, 1)) }
	p.pops = newPoller("pop-hold", 8, p.resumePop, p.retryTopicsOf, maxPerKey, maxTotal, d.Now, d.Logger)
	p.notices = newPoller("pop-notify-hold", 2, p.resumeNotification, p.retryTopicsOf, maxPerKey, maxTotal, d.Now, d.Logger)
	p.revive = newReviveService(p)
	d.Store.AddArrivalListener(p.onArrival)
	d.Store.AddTruncateListener(func(int64) {
		if _, err := p.j.follow(); err != nil {
			p.log.Error("pop journal after a truncation", "err", err)
		}
	})
	return p, nil
}

// CatchUp applies the journal records a slave replicated and has not
// applied yet, then raises the consumer offsets to the pop offsets they
// record (the slave's copy of the offsets lags the master's by a sync
// interval: without this, messages popped meanwhile would be handed out
// again). A controller-mode broker calls it when it becomes master, before
// it takes pops: the old master's checkpoints are then revived here.
func (p *Processor) CatchUp() error {
	n, err := p.j.follow()
	if err != nil {
		return err
	}
	if n > 0 {
		p.log.Info("pop journal caught up", "ops", n)
	}
	if err := p.recoverOffsets(); err != nil {
		return fmt.Errorf("pop: raise offsets to the journal: %w", err)
	}
	p.revive.kick()
	return nil
}

// Handlers maps the request codes to their handlers and executors: pops
// wait on the pull executor like pulls; acks and invisible-time changes
// append to the CommitLog like sends; assignment queries run with the admin
// requests.
func (p *Processor) Handlers() map[int32]processor.PooledHandler {
	return map[int32]processor.PooledHandler{
		code.PopMessage:               {H: p.withReplicas(p.handlePop), Pool: processor.PoolPull},
		code.PeekMessage:              {H: p.handlePeek, Pool: processor.PoolPull},
		code.Notification:             {H: p.handleNotification, Pool: processor.PoolPull},
		code.PollingInfo:              {H: p.handlePollingInfo, Pool: processor.PoolPull},
		code.AckMessage:               {H: p.handleAck, Pool: processor.PoolSend},
		code.BatchAckMessage:          {H: p.handleBatchAck, Pool: processor.PoolSend},
		code.ChangeMessageInvisible:   {H: p.handleChangeInvisible, Pool: processor.PoolSend},
		code.QueryAssignment:          {H: p.handleQueryAssignment, Pool: processor.PoolAdmin},
		code.SetMessageRequestMode:    {H: p.handleSetRequestMode, Pool: processor.PoolAdmin},
		code.GetAllMessageRequestMode: {H: p.handleGetAllRequestModes, Pool: processor.PoolAdmin},
		code.GetPopStatus:             {H: p.handleStatus, Pool: processor.PoolAdmin},
	}
}

// withReplicas answers h's request once the slaves hold the journal
// records it wrote (replicated.go).
func (p *Processor) withReplicas(h remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return p.replicated(ctx, func(ctx context.Context) (*remoting.Command, error) { return h(ctx, ch, req) })
	}
}

// Register installs every handler.
func (p *Processor) Register(r processor.Registrar) {
	processor.RegisterPooled(r, p.Handlers())
}

// Start runs long polling and the revive service.
func (p *Processor) Start() {
	p.startOnce.Do(func() {
		p.pops.start()
		p.notices.start()
		p.revive.start()
	})
}

// Close stops the services. The consumer offsets are flushed and the pop
// offset shadows dropped: after a clean stop the offset table is the truth
// (so an offset reset done before the stop is kept).
func (p *Processor) Close() {
	p.closeOnce.Do(func() {
		p.revive.close()
		p.pops.close()
		p.notices.close()
		p.orderTimers.Range(func(k, v any) bool {
			v.(*time.Timer).Stop()
			return true
		})
		if err := p.dropShadows(); err != nil {
			p.log.Warn("drop pop offset shadows", "err", err)
		}
	})
}

// Stats are counters for tests and runtime info.
type Stats struct {
	JournalAppended int64
	JournalReplayed int64
	Revived         int64
	DeadLettered    int64
	ReviveFailed    int64
	SuspendedPops   int
}

// Stats reports the counters.
func (p *Processor) Stats() Stats {
	return Stats{
		JournalAppended: p.j.appended.Load(),
		JournalReplayed: p.j.replayed.Load(),
		Revived:         p.revive.revived.Load(),
		DeadLettered:    p.revive.dlq.Load(),
		ReviveFailed:    p.revive.failed.Load(),
		SuspendedPops:   p.pops.size(),
	}
}

// ReviveBehind reports how far the revive service is behind: the
// checkpoints already due and not yet revived (counted up to limit), and
// how long ago the earliest of them came due (Java's PopReviveService
// getReviveBehindMessages / getReviveBehindMillis, over the due index
// rather than per revive queue).
func (p *Processor) ReviveBehind(limit int) (due int64, behindMs int64) {
	now := p.d.Now().UnixMilli()
	it, err := p.st.DB().NewIter(&pebble.IterOptions{LowerBound: dueLowerBound(), UpperBound: dueUpperBound(now)})
	if err != nil {
		return 0, 0
	}
	defer it.Close()
	for it.First(); it.Valid() && due < int64(limit); it.Next() {
		if due == 0 {
			if d, _, ok := parseDueKey(it.Key()); ok {
				behindMs = max(now-d, 0)
			}
		}
		due++
	}
	return due, behindMs
}

// Revive runs one revive round now (tests).
func (p *Processor) Revive() int { return p.revive.round() }

// queueLock is the per (topic, group, queue) pop lock (Java's
// QueueLockManager): pops of one queue by one group do not overlap.
func (p *Processor) queueLock(topic, group string, qid int32) *sync.Mutex {
	k := pollKey{topic, group, qid}
	if m, ok := p.qlocks.Load(k); ok {
		return m.(*sync.Mutex)
	}
	m, _ := p.qlocks.LoadOrStore(k, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// reviveQueues is the number of journal queues (reviveQueueNum).
func (p *Processor) reviveQueues() int32 {
	return int32(max(p.d.Config().ReviveQueueNum, 1))
}

// orderJournalQueue is the journal queue of one orderly queue's ops: a
// fixed one, so they replay in order.
func (p *Processor) orderJournalQueue(topic, group string, qid int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(group))
	h.Write([]byte{0})
	h.Write([]byte(topic))
	fmt.Fprintf(h, "%d", qid)
	return int32(h.Sum32() % uint32(p.reviveQueues()))
}

// retryTopicsOf lists the pop retry topics whose arrivals wake a poll key.
func (p *Processor) retryTopicsOf(k pollKey) []string {
	if strings.HasPrefix(k.topic, protocol.RetryGroupTopicPrefix) {
		return nil
	}
	return []string{popcodec.RetryTopicV1(k.topic, k.group), popcodec.RetryTopicV2(k.topic, k.group)}
}

// onArrival is the store's arrival listener: wake pops and notifications
// waiting on the queue (it runs on the dispatcher: no I/O).
func (p *Processor) onArrival(topic string, qid int32, _ int64, _ int64, _ int64) {
	if topic == p.j.topic {
		return
	}
	p.pops.wakeArrival(topic, qid)
	p.notices.wakeArrival(topic, qid)
}

// wakeQueue wakes the pollers of one group's queue (ack, unblock).
func (p *Processor) wakeQueue(topic, group string, qid int32) {
	p.pops.wakeQueue(topic, group, qid)
	p.notices.wakeQueue(topic, group, qid)
}

// wakeWhenFree wakes the queue's pollers when an orderly lock expires
// (Java's ConsumerOrderInfoLockManager).
func (p *Processor) wakeWhenFree(topic, group string, qid int32, at int64) {
	if !p.d.Config().EnableNotifyAfterPopOrderLockRelease {
		return
	}
	d := time.Duration(at-p.d.Now().UnixMilli())*time.Millisecond + 10*time.Millisecond
	k := pollKey{topic, group, qid}
	t := time.AfterFunc(d, func() {
		p.orderTimers.Delete(k)
		p.wakeQueue(topic, group, qid)
	})
	if old, loaded := p.orderTimers.Swap(k, t); loaded {
		old.(*time.Timer).Stop()
	}
}

// recoverOffsets raises consumer offsets to the pop offsets recorded with
// the journal: a kill -9 can lose the last offset flush, and an offset
// that went back would hand out acked messages again.
func (p *Processor) recoverOffsets() error {
	it, err := p.st.DB().NewIter(prefixIter(tabShadow))
	if err != nil {
		return err
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		g, t, q, ok := parseQueueTail(it.Key()[2:])
		v := it.Value()
		if !ok || len(v) != 16 {
			continue
		}
		off, _ := readU64(v[8:])
		if cur, ok := p.st.QueryOffset(g, t, q); !ok || cur < off {
			p.st.CommitOffset(g, t, q, off)
			n++
		}
	}
	if n > 0 {
		p.log.Info("consumer offsets raised to the pop journal", "queues", n)
	}
	return it.Error()
}

// dropShadows flushes the consumer offsets and then deletes the shadows
// (in that order, so a crash in between keeps one or the other).
func (p *Processor) dropShadows() error {
	if err := p.st.Offsets().Flush(); err != nil {
		return err
	}
	lo := tablePrefix(tabShadow)
	return p.st.DB().DeleteRange(lo, endOf(lo), pebble.NoSync)
}

// writeResponse answers a resumed request.
func (p *Processor) writeResponse(ch *remoting.Channel, req, resp *remoting.Command, err error) {
	if p.d.Resumed != nil {
		p.d.Resumed(req, resp, err) // before the answer: whoever reads it sees the count
	}
	processor.WriteResumed(p.log, "pop", ch, req, resp, err)
}

// NotMaster refuses pop state changes on a slave: its CommitLog takes no
// writes, so nothing could be recorded (Java clients pop from the master).
// The lite processor (broker/lite/poplite) answers its pops and acks with
// it too.
func NotMaster(cfg *config.Config) error {
	if cfg.IsMaster() {
		return nil
	}
	return errorf(code.ServiceNotAvailable, "the broker[%s] is a slave: pop, ack and invisible-time changes are served by the master", cfg.BrokerIP1)
}
