package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/store/index"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/offset"
)

// Config configures the message store.
type Config struct {
	// RootDir is storePathRootDir; the CommitLog lives in CommitLog.Dir
	// (default <RootDir>/commitlog), Pebble in KV.Dir (<RootDir>/kv).
	RootDir   string
	CommitLog commitlog.Config
	// KV configures the Pebble database (consume queues, offsets, index,
	// other metadata); without a Dir it is kv.DefaultConfig under RootDir
	// on KV.FS.
	KV kv.Config
	// StoreHost is brokerIP1:listenPort, written into every record and
	// into offset message ids.
	StoreHost netip.AddrPort
	// MaxMessageSize bounds a stored body (maxMessageSize).
	MaxMessageSize int

	// Lite topics / LMQ (docs/lite-topics.md §3).
	EnableLmq             bool
	EnableMultiDispatch   bool
	EnableLmqQuota        bool
	MaxLmqConsumeQueueNum int
	// LmqDeleteWork / LmqDeleteRest pace a deletion of many LMQs (the lite
	// sweep): at its yield points, a few ms of work apart, it sleeps Rest
	// once Work has passed since its last rest (Rest 0: never sleeps), so
	// it does not hold a CPU the send path needs.
	LmqDeleteWork, LmqDeleteRest time.Duration

	// MessageIndexEnable turns the key index on (messageIndexEnable).
	MessageIndexEnable bool
	// DispatchBatch bounds records per dispatch round.
	DispatchBatch int
	// OffsetFlushInterval is how often consumer offsets are persisted
	// (flushConsumerOffsetInterval).
	OffsetFlushInterval time.Duration
	// TagsCode overrides the consume-queue tag code of a record (delay
	// queues store the delivery time there); nil uses the TAGS hash.
	TagsCode func(topic string, props []byte, storeTime int64) (int64, bool)

	Logger *slog.Logger
}

// DefaultConfig returns Apache's defaults for a store under root.
func DefaultConfig(root string) Config {
	cl := commitlog.DefaultConfig(filepath.Join(root, "commitlog"))
	return Config{
		RootDir:               root,
		CommitLog:             cl,
		KV:                    kv.DefaultConfig(filepath.Join(root, "kv")),
		StoreHost:             netip.MustParseAddrPort("127.0.0.1:10911"),
		MaxMessageSize:        4 << 20,
		EnableLmq:             true,
		EnableMultiDispatch:   true,
		EnableLmqQuota:        true,
		MaxLmqConsumeQueueNum: 20000000,
		LmqDeleteWork:         2 * time.Millisecond,
		LmqDeleteRest:         0,
		MessageIndexEnable:    true,
		DispatchBatch:         4096,
		OffsetFlushInterval:   5 * time.Second,
	}
}

// withDefaults fills the optional settings left zero: the CommitLog and
// Pebble directories below RootDir, the dispatch batch, the offset flush
// interval and the logger.
func (c Config) withDefaults() Config {
	if c.CommitLog.Dir == "" && c.RootDir != "" {
		c.CommitLog.Dir = filepath.Join(c.RootDir, "commitlog")
	}
	if c.KV.Dir == "" && c.RootDir != "" {
		// Pebble's settings come as a whole (DisableWAL's zero is not the
		// default): keep only an injected file system.
		kvc := kv.DefaultConfig(filepath.Join(c.RootDir, "kv"))
		if c.KV.FS != nil {
			kvc.FS = c.KV.FS
		}
		c.KV = kvc
	}
	if c.DispatchBatch <= 0 {
		c.DispatchBatch = 4096
	}
	if c.OffsetFlushInterval <= 0 {
		c.OffsetFlushInterval = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate checks the configuration; zero optional settings are valid (see
// withDefaults).
func (c *Config) Validate() error {
	if c.RootDir == "" {
		return errors.New("store: RootDir is empty")
	}
	if c.MaxMessageSize <= 0 {
		return fmt.Errorf("store: MaxMessageSize %d", c.MaxMessageSize)
	}
	if !c.StoreHost.IsValid() {
		return errors.New("store: StoreHost is not set")
	}
	return nil
}

// Store is the message store.
type Store struct {
	cfg Config
	// encBufs holds encode buffers of PutMessage(s) for reuse.
	encBufs sync.Pool
	log     *slog.Logger
	cl      *commitlog.Log
	db      *kv.DB
	cq      *consumequeue.Store
	offsets *offset.Store

	assign *assigner
	lmq    *lmqTable

	// dispatchMu is held by each dispatch round; lmqCreated counts the
	// LMQs the rounds created (both for DeleteLmqs' range deletes).
	dispatchMu sync.Mutex
	lmqCreated atomic.Int64
	// dispatchBuf is the rounds' CommitLog read buffer (under dispatchMu):
	// see commitlog.IteratorOptions.ReadBuffer.
	dispatchBuf     []byte
	dispatchScratch dispatchScratch
	// beforeGapCommit, a test hook, runs before each locked step of
	// deleteGaps.
	beforeGapCommit func()

	listenersMu  sync.RWMutex
	listeners    []ArrivalListener
	lmqListeners []LmqListener
	created      []QueueCreatedListener
	truncated    []func(off int64)

	dispatchWake chan struct{}
	stop         chan struct{}
	wg           sync.WaitGroup
	closed       atomic.Bool
	// replica refuses local puts: a SLAVE's CommitLog is the master's copy
	// (see SetReplica).
	replica atomic.Bool
	// dispatchLimit bounds the dispatcher (HA confirm offset); nil: the
	// CommitLog end (see SetDispatchLimit).
	dispatchLimit atomic.Pointer[func() int64]
	// minOffsetHook runs after old CommitLog files were deleted (see
	// SetMinOffsetHook).
	minOffsetHook atomic.Pointer[func(int64)]

	putCount atomic.Int64
	getCount atomic.Int64
	tps      *tpsMeter
}

var _ MessageStore = (*Store)(nil)

// Open recovers the CommitLog, opens the consume queues, re-dispatches what
// a crash lost, and starts the background services.
func Open(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger.With("component", "store"), dispatchWake: make(chan struct{}, 1), stop: make(chan struct{}), tps: newTPSMeter()}
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := kv.Open(cfg.KV, s.log)
	if err != nil {
		return nil, err
	}
	s.db = db
	if s.cq, err = consumequeue.Open(db, s.log); err != nil {
		db.Close()
		return nil, err
	}
	if s.offsets, err = offset.Open(db, s.log); err != nil {
		db.Close()
		return nil, err
	}
	s.assign = newAssigner(s.cq)
	s.lmq = newLMQTable(s.cq)

	clCfg := cfg.CommitLog
	clCfg.Assigner = s.assign
	clCfg.Logger = s.log
	clCfg.OnMinOffsetChange = s.onCommitLogMinChange
	if clCfg.MaxRecordSize < cfg.MaxMessageSize+64<<10 {
		// Room for the header, topic and properties around a maximal body,
		// and for batches of small messages.
		clCfg.MaxRecordSize = cfg.MaxMessageSize + 64<<10
	}
	if fs := clCfg.FileSize; fs > 0 && int64(clCfg.MaxRecordSize) > fs-8 {
		// Small segments (tests) bound a record by the segment instead.
		clCfg.MaxRecordSize = int(fs - 8)
	}
	if s.cl, err = commitlog.Open(clCfg); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open commitlog: %w", err)
	}
	if err := s.recoverDispatch(); err != nil {
		s.cl.Close()
		db.Close()
		return nil, err
	}
	s.wg.Add(2)
	go s.dispatchLoop()
	go s.offsetFlushLoop()
	return s, nil
}

// recoverDispatch makes the consume queues agree with the recovered
// CommitLog before any new message is accepted: queue offsets are handed
// out from the consume queues' max offsets.
func (s *Store) recoverDispatch() error {
	max := s.cl.MaxOffset()
	if d := s.cq.DispatchedOffset(); d > max {
		s.log.Warn("consume queue is ahead of the recovered CommitLog: truncating", "dispatched", d, "commitlogMax", max)
		if err := s.cq.TruncateAbove(max); err != nil {
			return fmt.Errorf("store: truncate consume queue: %w", err)
		}
	}
	if d := s.cq.DispatchedOffset(); d < s.cl.MinOffset() {
		s.log.Warn("dispatch checkpoint below the CommitLog's min offset", "dispatched", d, "commitlogMin", s.cl.MinOffset())
	}
	start := time.Now()
	from := s.cq.DispatchedOffset()
	for {
		progressed, _, err := s.dispatchOnce()
		if err != nil {
			return fmt.Errorf("store: re-dispatch: %w", err)
		}
		if !progressed {
			break
		}
	}
	if redone := s.cq.DispatchedOffset() - from; redone > 0 {
		s.log.Info("re-dispatched CommitLog tail", "bytes", redone, "took", time.Since(start))
	}
	return nil
}

// Close stops the services and closes the files.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stop)
	s.wg.Wait()
	var errs []error
	// Drain what is written so that a clean restart re-dispatches nothing.
	for {
		progressed, _, err := s.dispatchOnce()
		if err != nil {
			errs = append(errs, err)
			break
		}
		if !progressed {
			break
		}
	}
	if err := s.offsets.Flush(); err != nil {
		errs = append(errs, err)
	}
	if err := s.cl.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := s.db.Flush(); err != nil {
		errs = append(errs, err)
	}
	if err := s.db.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// SetReplica makes the store refuse local puts (ErrNotWritable), as
// Apache's DefaultMessageStore does for a SLAVE: only replication appends
// to a replica's CommitLog, and a local record would break the byte-for-byte
// copy (the next replicated frame would no longer start at its end).
func (s *Store) SetReplica(on bool) {
	s.replica.Store(on)
	s.wakeDispatcher() // it polls more often on a replica (dispatchPoll)
}

// CommitLog exposes the log (HA, admin, tests).
func (s *Store) CommitLog() *commitlog.Log { return s.cl }

// ConsumeQueue exposes the consume queues (lite topics, admin).
func (s *Store) ConsumeQueue() *consumequeue.Store { return s.cq }

// Offsets exposes the consumer offset table.
func (s *Store) Offsets() *offset.Store { return s.offsets }

// DB exposes the Pebble database for other key spaces (timers, pop state).
func (s *Store) DB() *pebble.DB { return s.db.DB }

func (s *Store) offsetFlushLoop() {
	defer s.wg.Done()
	flushed := s.cq.DispatchedOffset()
	loop.Tick(s.stop, s.cfg.OffsetFlushInterval, func() {
		if err := s.offsets.Flush(); err != nil {
			s.log.Error("flush consumer offsets", "err", err)
		}
		// Pebble's WAL is off: flushing the memtable bounds how much of
		// the CommitLog a crash makes us re-dispatch to one interval.
		if d := s.cq.DispatchedOffset(); d != flushed {
			if err := s.cq.Flush(); err != nil {
				s.log.Error("flush consume queue", "err", err)
			} else {
				flushed = d
			}
		}
	})
}

func (s *Store) onCommitLogMinChange(minOffset int64) {
	n, err := s.cq.CorrectMin(minOffset)
	if err != nil {
		s.log.Error("move consume queue min offsets", "minOffset", minOffset, "err", err)
		return
	}
	s.log.Info("CommitLog files deleted; consume queues moved", "minOffset", minOffset, "queues", n)
	if err := s.pruneIndex(minOffset); err != nil {
		s.log.Error("prune key index", "minOffset", minOffset, "err", err)
	}
	if h := s.minOffsetHook.Load(); h != nil {
		(*h)(minOffset)
	}
}

// pruneIndex range-deletes the key index's hours that end before the
// store time of the CommitLog's oldest message (at minOffset): their
// entries all name deleted messages, as Apache deletes index files that
// end below the CommitLog's min offset. Found by helper perf18cq: nothing
// pruned the index before, so it grew for ever. Pebble's WAL is off, so a
// crash may bring the pruned keys back until the next deletion of
// CommitLog files; their hits name deleted records and are skipped.
func (s *Store) pruneIndex(minOffset int64) error {
	if minOffset >= s.cl.MaxOffset() {
		return nil // no message left to date the boundary by
	}
	rec, err := s.cl.ReadRecord(minOffset)
	if err != nil {
		return fmt.Errorf("store: read the oldest message: %w", err)
	}
	ts := rec.View.StoreTimestamp()
	rec.Release()
	b := s.db.NewBatch()
	defer b.Close()
	if err := index.DeleteBefore(b, ts); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}

// AddArrivalListener registers l for every dispatched entry.
func (s *Store) AddArrivalListener(l ArrivalListener) {
	s.listenersMu.Lock()
	s.listeners = append(s.listeners, l)
	s.listenersMu.Unlock()
}

// AddTruncateListener registers l, called after TruncateTo cut the
// CommitLog and the consume queues to off.
func (s *Store) AddTruncateListener(l func(off int64)) {
	s.listenersMu.Lock()
	s.truncated = append(s.truncated, l)
	s.listenersMu.Unlock()
}

// AddQueueCreatedListener registers l for every queue dispatch creates.
func (s *Store) AddQueueCreatedListener(l QueueCreatedListener) {
	s.listenersMu.Lock()
	s.created = append(s.created, l)
	s.listenersMu.Unlock()
}

// CommitOffset records a consumer offset.
func (s *Store) CommitOffset(group, topic string, queueID int32, off int64) {
	s.offsets.Commit(offset.Key{Group: group, Topic: topic, QueueID: queueID}, off)
}

// AdvanceOffset commits off unless a larger offset is committed.
func (s *Store) AdvanceOffset(group, topic string, queueID int32, off int64) bool {
	return s.offsets.Advance(offset.Key{Group: group, Topic: topic, QueueID: queueID}, off)
}

// QueryOffset returns a committed consumer offset.
func (s *Store) QueryOffset(group, topic string, queueID int32) (int64, bool) {
	return s.offsets.Get(offset.Key{Group: group, Topic: topic, QueueID: queueID})
}

// DeleteTopic drops a topic's queues and consumer offsets. Its messages stay
// in the CommitLog until retention removes the files.
func (s *Store) DeleteTopic(topic string) error {
	if err := s.cq.DeleteTopic(topic); err != nil {
		return err
	}
	s.assign.forget(topic)
	s.offsets.DeleteWhere(func(k offset.Key) bool { return k.Topic == topic })
	return nil
}

// Queues returns the queue ids the store holds for a topic.
func (s *Store) Queues(topic string) []int32 { return s.cq.TopicQueues(topic) }

// Stats reports counters.
func (s *Store) Stats() Stats {
	st := Stats{
		CommitLogMinOffset:  s.cl.MinOffset(),
		CommitLogMaxOffset:  s.cl.MaxOffset(),
		DispatchBehind:      s.cl.MaxOffset() - s.cq.DispatchedOffset(),
		PutMessageCount:     s.putCount.Load(),
		GetMessageCount:     s.getCount.Load(),
		EarliestMessageTime: -1,
	}
	st.PutTps, st.GetTransferredTps = s.tps.rates()
	st.DiskRatio = diskRatio(s.cfg.RootDir)
	if rec, err := s.cl.ReadRecord(s.cl.MinOffset()); err == nil {
		st.EarliestMessageTime = rec.View.StoreTimestamp()
		rec.Release()
	}
	return st
}

func (s *Store) wakeDispatcher() {
	loop.Wake(s.dispatchWake)
}

// ctxDone reports a cancelled context without allocating.
func ctxDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
