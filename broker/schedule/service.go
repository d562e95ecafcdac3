// Package schedule parks delay-level and timer messages and delivers them
// when due (Java's ScheduleMessageService and 5.x TimerMessageStore, built
// differently).
//
// Parking (Service.Schedule, the send path's ScheduleHook): a message with
// DELAY is rewritten to SCHEDULE_TOPIC_XXXX queue level−1, a timer message
// to rmq_sys_wheel_timer queue 0 with TIMER_OUT_MS, both with
// REAL_TOPIC/REAL_QID, and stored in the CommitLog like any message: it is
// as durable as the flush mode makes any message.
//
// Index: the service follows those queues (their consume queues, from a
// checkpoint per queue) and writes one Pebble key per parked message under
// kv.PrefixTimer, (deliverMs u64, commitLogOffset u64) → record size, in the
// same batch as the checkpoint. A delay-level message is due at its store
// time plus the level's delay; a timer at TIMER_OUT_MS. A key that would lie
// further than the roll window past the record's store time is written at
// store time + window instead: when that comes, the message is re-stored in
// the timer topic ("rolled"), so a 40-day timer never relies on a
// CommitLog file older than the window (retention deletes old files).
//
// Delivery: every ScanInterval (sooner when the next key is nearer, and on
// new arrivals) the service reads the due key range from a cursor, reads
// each record, restores topic and queue (REAL_TOPIC/REAL_QID; DELAY and the
// producer's timer properties removed, UNIQ_KEY kept so clients see the
// same message id), stores it, and deletes the keys once the CommitLog is
// flushed past the delivered copies: a key never disappears before its
// delivery is durable.
//
// Restarts. Pebble runs without its WAL, so a crash loses its recent
// writes: index keys and checkpoints (rebuilt by re-indexing from the
// checkpoint, deterministically) and key deletions. Every delivered copy
// carries PropertyTimerKey, the key it came from; each deletion batch also
// records the CommitLog offset where its round began. After a crash,
// recovery re-indexes, then scans the CommitLog from that offset and deletes
// the keys named by delivered copies: a delivery that reached the CommitLog
// is not repeated even if its key deletion was lost. What remains is
// at-least-once around a crash (a delivery whose PutMessage was acknowledged
// by the page cache but not flushed before a power loss, for example); a
// clean shutdown flushes and repeats nothing.
//
// Slaves. A slave indexes what it replicates and delivers nothing; the
// master's deliveries reach its CommitLog, their keys stay in its index.
// Promoted, it runs the same marker scan over what it replicated since it
// opened before it delivers (catchUpMarkers). A master that marks nothing
// (Apache's) is covered by a second scan, at promotion and at a start as
// master: a copy in another topic with the parked message's UNIQ_KEY,
// stored after it, is its delivery (removeUnmarkedDeliveries).
package schedule

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Topics the service parks messages in.
const (
	ScheduleTopic = protocol.ScheduleTopic
	TimerTopic    = topic.TimerTopic
)

// Defaults.
const (
	// DefaultMaxDelay bounds a timer's delivery time (our choice: 40 days;
	// Java's timerMaxDelaySec defaults to 3 days).
	DefaultMaxDelay = 40 * 24 * time.Hour
	// DefaultRollWindow is Java's timerRollWindowSlot × timerPrecisionMs.
	DefaultRollWindow   = 48 * time.Hour
	DefaultScanInterval = 100 * time.Millisecond
	DefaultRoundSize    = 8192
	DefaultWorkers      = 4
)

const (
	indexChunk  = 512
	indexBudget = 16384 // consume-queue entries indexed per loop turn
	// A delete round waits for the CommitLog flush; past these the service
	// flushes the CommitLog itself.
	flushAfter  = time.Second
	maxInflight = 1 << 18
	// retryBackoff is the pause after a failed store.
	retryBackoff = time.Second
	// Deliveries to one queue are stored in batches of at most this size.
	maxBatchBytes = 256 << 10
	maxBatchMsgs  = 256
)

// Options configure a Service.
type Options struct {
	// Config is the live broker configuration (messageDelayLevel,
	// timerWheelEnable). Required.
	Config func() *config.Config
	// Store is the message store. Required.
	Store *store.Store
	// MaxDelay bounds timers (0: DefaultMaxDelay).
	MaxDelay time.Duration
	// RollWindow is how far past its store time a key may lie (0:
	// DefaultRollWindow; negative: never roll).
	RollWindow time.Duration
	// ScanInterval is the longest pause between two looks at the due
	// range (0: DefaultScanInterval).
	ScanInterval time.Duration
	// RoundSize bounds the timers delivered per round (0: DefaultRoundSize).
	RoundSize int
	// Workers store deliveries to different queues in parallel (0:
	// DefaultWorkers).
	Workers int
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Observer is told of timer-topic messages entering and leaving the
	// index (nil: nobody; broker/metrics' timer families).
	Observer Observer
}

// Observer receives the timer index's events for timer-topic messages
// (rmq_sys_wheel_timer, by REAL_TOPIC; delay-level messages are not timer
// messages, as in Java's TimerMessageStore). marker is a TIMER_DEL_UNIQKEY
// cancellation marker. The Timer calls come from the service's goroutine.
type Observer interface {
	// TimerEnqueued: the message was indexed (parked, re-parked after a
	// roll, or re-indexed after a crash).
	TimerEnqueued(realTopic string, marker bool, bornMs, deliverMs int64)
	// TimerDequeued: a due key was taken out: delivered, rolled, cancelled.
	TimerDequeued(realTopic string, marker bool)
	// DelayDelivered: msgs delay-level messages (SCHEDULE_TOPIC_XXXX) were
	// stored to realTopic, bytes as written (a batch's bytes shared out
	// evenly). Calls come from the delivery workers.
	DelayDelivered(realTopic string, msgs int, bytes int64)
}

// Stats are the service's counters since Open.
type Stats struct {
	Indexed   int64 // keys written by the indexer
	Delivered int64 // messages stored to their real topic
	Rolled    int64 // far timers re-stored in the timer topic
	Dropped   int64 // keys whose record was gone or invalid
	Failed    int64 // failed store attempts (retried)
	Recovered int64 // keys removed by the crash-recovery marker scan
	Cancelled int64 // due messages dropped: a TIMER_DEL_UNIQKEY marker cancelled them
	Markers   int64 // cancellation markers that came due (never delivered)
	// Lateness of deliveries: store time minus due time.
	LatenessP50 time.Duration
	LatenessP99 time.Duration
	LatenessMax time.Duration
}

type queueRef struct {
	topic string
	qid   int32
}

// round is one delivery round whose key deletions wait for the CommitLog
// flush to pass end.
type round struct {
	keys [][]byte
	mark int64 // CommitLog max offset before the round's first store
	// cancels: keys holds cancellation keys too.
	cancels bool
	end     int64 // CommitLog max offset after its last store
	at      time.Time
	// timing: the timing count changes of its key deletions.
	timing map[string]int64
}

// Service indexes and delivers parked messages. Schedule may be called
// concurrently; everything else runs on the service's goroutine.
type Service struct {
	o      Options
	log    *slog.Logger
	st     *store.Store
	cl     *commitlog.Log
	cq     *consumequeue.Store
	db     *pebble.DB
	levels levelTable

	// Loop state: owned by Open, then by the loop goroutine, then by Close.
	ckpt     map[queueRef]int64
	extra    []queueRef // schedule queues found at open beyond the level table
	cursor   []byte
	inflight map[string]struct{}
	pending  []round
	nextDue  int64 // earliest known key time at or past the cursor; -1: none
	// mayCancel: a cancellation key may exist (deliveries look them up).
	mayCancel bool

	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
	started   atomic.Bool

	indexed, delivered, rolled, dropped, failed, recovered atomic.Int64
	cancelled, markers                                     atomic.Int64
	hist                                                   histogram

	// keepKeys (tests) never commits key deletions: a crash after delivery.
	keepKeys bool

	// timing: the timing counts (timing.go), written by the loop, read by
	// TimingCounts.
	timingMu      sync.Mutex
	timing        map[string]Timing
	timingVersion int64
	// timingDelivered: the changes of delivery rounds not committed yet.
	timingDelivered   map[string]int64
	timingDeliveredAt int64

	// progressMu: one DelayOffsets walk at a time (progress.go).
	progressMu sync.Mutex
}

// Open recovers the index (re-indexing what a crash lost and removing the
// keys of deliveries that reached the CommitLog) and returns a Service that
// delivers once started. The store must be open and idle (no sends yet).
func Open(o Options) (*Service, error) {
	if o.Config == nil || o.Store == nil {
		return nil, errors.New("schedule: Options.Config and Options.Store are required")
	}
	defaults.Positive(&o.MaxDelay, DefaultMaxDelay)
	if o.RollWindow == 0 {
		o.RollWindow = DefaultRollWindow
	}
	defaults.Positive(&o.ScanInterval, DefaultScanInterval)
	defaults.Positive(&o.RoundSize, DefaultRoundSize)
	defaults.Positive(&o.Workers, DefaultWorkers)
	defaults.Clock(&o.Now)
	defaults.Logger(&o.Logger)
	s := &Service{
		o:        o,
		log:      o.Logger,
		st:       o.Store,
		cl:       o.Store.CommitLog(),
		cq:       o.Store.ConsumeQueue(),
		db:       o.Store.DB(),
		ckpt:     map[queueRef]int64{},
		cursor:   pendingPrefix(),
		inflight: map[string]struct{}{},
		nextDue:  -1,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	start := time.Now()
	if err := s.loadCheckpoints(); err != nil {
		return nil, err
	}
	if err := s.loadTiming(); err != nil {
		return nil, err
	}
	nLevels := len(s.levelsNow())
	for _, q := range s.cq.TopicQueues(ScheduleTopic) {
		if int(q) >= nLevels {
			s.extra = append(s.extra, queueRef{ScheduleTopic, q})
		}
	}
	mark, hasMark, err := s.getInt(markScanKey())
	if err != nil {
		return nil, err
	}
	reindexed := 0
	for {
		n, err := s.indexOnce(indexBudget)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		reindexed += n
	}
	// Without a mark nothing was ever delivered durably; without
	// checkpoints nothing was ever indexed: no marker can matter.
	if !hasMark && len(s.ckpt) > 0 {
		mark = s.cl.MinOffset()
	}
	removed, scanned, err := s.recoverMarkers(mark)
	if err != nil {
		return nil, err
	}
	if _, ok, err := s.getInt(unmarkedScanKey()); err != nil {
		return nil, err
	} else if !ok {
		// A new store (or one from before the scan existed): nothing
		// below its end is looked at again.
		if err := s.db.Set(unmarkedScanKey(), u64(s.cl.MaxOffset()), pebble.NoSync); err != nil {
			return nil, err
		}
	}
	if wasSlave, err := has(s.db.Get, wasSlaveKey()); err != nil {
		return nil, err
	} else if wasSlave && o.Config().IsMaster() {
		// A master that was a slave before this start may hold unmarked
		// deliveries it replicated (an Apache master's).
		unmarked, n, err := s.removeUnmarkedDeliveries()
		if err != nil {
			return nil, err
		}
		removed += unmarked
		scanned += n
	}
	if err := s.refreshMayCancel(); err != nil {
		return nil, err
	}
	s.recovered.Add(int64(removed))
	o.Store.AddArrivalListener(s.onArrival)
	if reindexed > 0 || removed > 0 {
		s.log.Info("timer index recovered", "reindexed", reindexed, "deliveredKeysRemoved", removed,
			"scannedBytes", scanned, "took", time.Since(start))
	}
	return s, nil
}

// Start starts delivering.
func (s *Service) Start() {
	s.startOnce.Do(func() {
		s.started.Store(true)
		go s.run()
	})
}

// Close stops delivering, flushes the CommitLog and commits the pending key
// deletions, so that a clean restart repeats no delivery. Close the
// service before the store.
func (s *Service) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		if s.started.Load() {
			<-s.done
		}
		if err := s.commitRounds(true); err != nil {
			s.log.Warn("timer index: final key deletion", "err", err)
		}
	})
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	p50, p99, mx := s.hist.quantiles(0.5, 0.99)
	return Stats{
		Indexed: s.indexed.Load(), Delivered: s.delivered.Load(), Rolled: s.rolled.Load(),
		Dropped: s.dropped.Load(), Failed: s.failed.Load(), Recovered: s.recovered.Load(),
		Cancelled: s.cancelled.Load(), Markers: s.markers.Load(),
		LatenessP50: p50, LatenessP99: p99, LatenessMax: mx,
	}
}

// ResetLateness clears the lateness histogram (benchmarks).
func (s *Service) ResetLateness() { s.hist.reset() }

func (s *Service) now() time.Time { return s.o.Now() }

func (s *Service) levelsNow() []time.Duration {
	return s.levels.get(s.o.Config().MessageDelayLevel)
}

// onArrival wakes the loop when a parked message was dispatched.
func (s *Service) onArrival(topic string, _ int32, _ int64, _ int64, _ int64) {
	if topic == ScheduleTopic || topic == TimerTopic {
		loop.Wake(s.wake)
	}
}

func (s *Service) run() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// wasSlave: the keys of deliveries made by a master since the last
	// marker scan may still be here (Open scanned up to its start).
	wasSlave := false
	var unmarkedSaved time.Time
	for {
		n, ierr := s.indexOnce(indexBudget)
		if ierr != nil {
			s.log.Error("timer index", "err", ierr)
		}
		busy := n >= indexBudget
		// Only a master delivers (Java starts the schedule and timer
		// dequeue services on masters; a slave's CommitLog is the
		// master's copy); a slave keeps its index current.
		var full bool
		var derr error
		if s.o.Config().IsMaster() {
			if wasSlave {
				// Promoted: the master's deliveries reached this
				// CommitLog by replication, their keys did not leave
				// this index. Remove them before delivering.
				if derr = s.catchUpMarkers(); derr == nil {
					wasSlave = false
				}
			}
			if derr == nil {
				full, derr = s.deliverOnce()
			}
			if derr == nil && time.Since(unmarkedSaved) >= unmarkedMarkPeriod {
				// What a master appends is its own: the next start as
				// master looks for unmarked deliveries only after this.
				if err := s.db.Set(unmarkedScanKey(), u64(s.cl.MaxOffset()), pebble.NoSync); err != nil {
					s.log.Warn("timer index: unmarked-delivery mark", "err", err)
				}
				unmarkedSaved = time.Now()
			}
		} else {
			if !wasSlave {
				// Remembered across a restart: a start as master then
				// looks for the deliveries replicated meanwhile.
				if err := s.db.Set(wasSlaveKey(), u64(1), pebble.NoSync); err != nil {
					s.log.Warn("timer index: slave flag", "err", err)
				}
			}
			wasSlave = true
			s.nextDue = -1
		}
		if derr != nil {
			s.log.Warn("timer delivery failed; retrying", "err", derr)
		}
		busy = busy || full
		if err := s.commitRounds(false); err != nil {
			s.log.Warn("timer index: key deletion", "err", err)
		}
		wait := s.o.ScanInterval
		if s.nextDue >= 0 {
			if d := time.Duration(s.nextDue-s.now().UnixMilli()) * time.Millisecond; d < wait {
				wait = d
			}
		}
		if busy {
			wait = 0
		}
		if ierr != nil || derr != nil {
			wait = retryBackoff
		}
		if wait <= 0 {
			select {
			case <-s.stop:
				return
			default:
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// followed lists the queues the indexer follows: one per delay level, the
// timer queue, and any other queue it has followed before or found at open
// (a longer level table in an earlier run).
func (s *Service) followed() []queueRef {
	n := len(s.levelsNow())
	qs := make([]queueRef, 0, n+1+len(s.extra))
	for i := 0; i < n; i++ {
		qs = append(qs, queueRef{ScheduleTopic, int32(i)})
	}
	qs = append(qs, queueRef{TimerTopic, 0})
	for _, q := range s.extra {
		if q.topic != ScheduleTopic || int(q.qid) >= n {
			qs = append(qs, q)
		}
	}
	for q := range s.ckpt {
		if q.topic == ScheduleTopic && int(q.qid) >= n && !slices.Contains(s.extra, q) {
			qs = append(qs, q)
		}
	}
	return qs
}

func (s *Service) loadCheckpoints() error {
	lo := []byte{kv.PrefixTimer, subCheckpoint}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: kv.PrefixEnd(lo)})
	if err != nil {
		return fmt.Errorf("schedule: load checkpoints: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()[2:]
		sep := bytes.IndexByte(k, 0)
		off, okv := readU64(it.Value())
		if sep < 0 || len(k) != sep+5 || !okv {
			continue
		}
		qid := int32(uint32(k[sep+1])<<24 | uint32(k[sep+2])<<16 | uint32(k[sep+3])<<8 | uint32(k[sep+4]))
		s.ckpt[queueRef{string(k[:sep]), qid}] = off
	}
	return it.Error()
}

// exists reports whether key is in the index (a read error counts as
// absent).
func (s *Service) exists(key []byte) bool {
	ok, err := has(s.db.Get, key)
	return ok && err == nil
}

func (s *Service) getInt(key []byte) (int64, bool, error) { return readInt(s.db.Get, key) }

// getter is a Pebble point read (DB.Get, Snapshot.Get).
type getter func(key []byte) ([]byte, io.Closer, error)

// readInt reads a u64 value; found is false when key is absent.
func readInt(get getter, key []byte) (n int64, found bool, err error) {
	v, closer, err := get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("schedule: read %q: %w", key, err)
	}
	defer closer.Close()
	n, ok := readU64(v)
	return n, ok, nil
}

// has reports whether key is present.
func has(get getter, key []byte) (bool, error) {
	_, closer, err := get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("schedule: read %q: %w", key, err)
	}
	closer.Close()
	return true, nil
}

// deliverTime is when a parked record is due: store time plus the level's
// delay for SCHEDULE_TOPIC_XXXX queue level−1, TIMER_OUT_MS for the timer
// topic (store time when missing or malformed: due at once).
func (s *Service) deliverTime(topic string, qid int32, storeTime int64, props func() []byte) int64 {
	if topic == ScheduleTopic {
		return storeTime + levelDelay(s.levelsNow(), int(qid)+1).Milliseconds()
	}
	v, ok := message.PropertyValue(props(), message.PropertyTimerOutMS)
	if !ok {
		return storeTime
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return storeTime
	}
	return n
}

// keyTime is the key's time for a record due at deliverMs: at most the roll
// window past its store time.
func (s *Service) keyTime(deliverMs, storeTime int64) int64 {
	if w := s.o.RollWindow.Milliseconds(); w > 0 && deliverMs-storeTime > w {
		return storeTime + w
	}
	return deliverMs
}

// indexOnce indexes up to budget new entries of the followed queues and
// returns how many it examined.
func (s *Service) indexOnce(budget int) (int, error) {
	b := s.db.NewBatch()
	defer b.Close()
	n := 0
	ckpts := map[queueRef]int64{}
	var keys [][]byte
	var firstErr error
	cancels := 0
	deltas := map[string]int64{}
	for _, q := range s.followed() {
		if n >= budget {
			break
		}
		st, ok := s.cq.State(q.topic, q.qid)
		if !ok {
			continue
		}
		from, seen := s.ckpt[q]
		orig := from
		switch {
		case !seen:
			from = st.Min
		case from > st.Max:
			s.log.Warn("timer index: checkpoint past the queue's end (consume queue truncated)", "topic", q.topic, "queue", q.qid, "checkpoint", from, "max", st.Max)
			from = st.Max
		case from < st.Min:
			s.log.Warn("timer index: entries removed before they were indexed", "topic", q.topic, "queue", q.qid, "checkpoint", from, "min", st.Min)
			from = st.Min
		}
		for from < st.Max && n < budget {
			// Never past the state's max: the dispatcher commits entries
			// before it publishes the new max, and a checkpoint ahead of
			// the max would read as a truncated queue next time.
			es, err := s.cq.Entries(q.topic, q.qid, from, int(min(int64(indexChunk), int64(budget-n), st.Max-from)))
			if err != nil {
				firstErr = err
				break
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				if e.Offset >= st.Max {
					break
				}
				from = e.Offset + 1
				n++
				ms, c, timing, ok := s.entryKeyTime(q, e)
				if !ok {
					continue
				}
				if timing != nil {
					deltas[*timing]++
				}
				k := timerKey(ms, e.CommitLogOffset)
				if err := b.Set(k, u32(e.Size), nil); err != nil {
					return 0, err
				}
				keys = append(keys, k)
				if c != nil {
					if err := b.Set(cancelKey(c.deleteKey), u64(c.slot), nil); err != nil {
						return 0, err
					}
					cancels++
				}
			}
		}
		if from != orig || !seen {
			ckpts[q] = from
			if err := b.Set(checkpointKey(q.topic, q.qid), u64(from), nil); err != nil {
				return 0, err
			}
		}
		if firstErr != nil {
			break
		}
	}
	if b.Empty() {
		return n, firstErr
	}
	vals, err := s.applyTiming(b, deltas)
	if err != nil {
		return 0, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, fmt.Errorf("schedule: commit index batch: %w", err)
	}
	s.commitTiming(vals)
	for q, off := range ckpts {
		s.ckpt[q] = off
	}
	s.indexed.Add(int64(len(keys)))
	if cancels > 0 {
		s.mayCancel = true
	}
	for _, k := range keys {
		if bytes.Compare(k, s.cursor) < 0 {
			// Due before the cursor (indexed late): scan from it again;
			// deliveries still awaiting their deletion are skipped.
			s.cursor = k
		}
		if ms, _, _ := parseTimerKey(k); s.nextDue < 0 || ms < s.nextDue {
			s.nextDue = ms
		}
	}
	return n, firstErr
}

// entryKeyTime computes the key time of one consume-queue entry; c is set
// for a cancellation marker (its key lies at the end of its slot,
// cancel.go), timing (the REAL_TOPIC) for a timer message that counts as
// timing.
func (s *Service) entryKeyTime(q queueRef, e consumequeue.Entry) (ms int64, c *cancellation, timing *string, ok bool) {
	if q.topic == ScheduleTopic {
		due := s.deliverTime(q.topic, q.qid, e.StoreTimestamp, nil)
		return s.keyTime(due, e.StoreTimestamp), nil, nil, true
	}
	rec, err := s.cl.ReadRecord(e.CommitLogOffset)
	if err != nil {
		s.dropped.Add(1)
		s.log.Error("timer index: parked record unreadable; timer lost", "topic", q.topic, "queue", q.qid, "offset", e.Offset, "phyOffset", e.CommitLogOffset, "err", err)
		return 0, nil, nil, false
	}
	defer rec.Release()
	v := rec.View
	due := s.deliverTime(q.topic, q.qid, v.StoreTimestamp(), v.Properties)
	if q.topic == TimerTopic {
		dk, isMarker := message.PropertyValue(v.Properties(), message.PropertyTimerDelUniqKey)
		real, _ := message.PropertyValue(v.Properties(), message.PropertyRealTopic)
		if o := s.o.Observer; o != nil {
			o.TimerEnqueued(real, isMarker, v.BornTimestamp(), due)
		}
		if isMarker {
			end := slotEnd(due, s.precision())
			return s.keyTime(end, v.StoreTimestamp()), &cancellation{deleteKey: dk, slot: end}, nil, true
		}
		return s.keyTime(due, v.StoreTimestamp()), nil, &real, true
	}
	return s.keyTime(due, v.StoreTimestamp()), nil, nil, true
}

// catchUpMarkers runs the marker scan from the recorded mark to the
// CommitLog's end: on a promoted slave, it removes the keys of what the
// old master delivered while this broker replicated.
func (s *Service) catchUpMarkers() error {
	// Every parked message replicated so far is indexed first: the
	// delivery scan below passes their copies once.
	for {
		n, err := s.indexOnce(indexBudget)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	mark, ok, err := s.getInt(markScanKey())
	if err != nil {
		return err
	}
	if !ok {
		mark = s.cl.MinOffset()
	}
	start := time.Now()
	removed, scanned, err := s.recoverMarkers(mark)
	if err != nil {
		return fmt.Errorf("schedule: marker scan after promotion: %w", err)
	}
	unmarked, scannedU, err := s.removeUnmarkedDeliveries()
	if err != nil {
		return fmt.Errorf("schedule: delivery scan after promotion: %w", err)
	}
	s.recovered.Add(int64(removed + unmarked))
	if err := s.refreshMayCancel(); err != nil {
		return err
	}
	s.cursor = pendingPrefix()
	s.log.Info("timer index: promoted, keys of the old master's deliveries removed", "removed", removed,
		"unmarked", unmarked, "scannedBytes", scanned+scannedU, "took", time.Since(start))
	return nil
}

// unmarkedMarkPeriod is how often a master moves unmarkedScanKey to its
// CommitLog's end.
const unmarkedMarkPeriod = 10 * time.Second

// unmarkedClockSlack is how far past this broker's clock a key may be due
// and still have been delivered by the old master (its clock ahead).
const unmarkedClockSlack = time.Minute

// maxUnmarkedKeys bounds the pending keys removeUnmarkedDeliveries holds
// in memory; above it the scan is skipped (the old master's deliveries
// are then delivered again: at least once).
const maxUnmarkedKeys = 1 << 20

// unmarkedKey is a pending key whose parked message removeUnmarkedDeliveries
// looks for a delivered copy of.
type unmarkedKey struct {
	key   []byte
	phy   int64  // the parked message
	timer string // its real topic when it is a timer-topic message
}

// removeUnmarkedDeliveries removes the keys whose delivered copy reached
// this CommitLog without a PropertyTimerKey marker: a master that writes
// none (Apache's ScheduleMessageService and TimerMessageStore) delivered
// them while this broker replicated. A delivered copy keeps its message's
// UNIQ_KEY and is stored after it, outside the schedule and timer topics.
// Only copies in this CommitLog count, so nothing is removed whose
// delivery this broker does not hold.
//
// It looks only at keys already due, and scans from its mark
// (unmarkedScanKey), or from the oldest of their parked messages when
// that is later, to the CommitLog's end, then moves the mark there. While
// this broker is master its own deliveries are marked, so the mark moves
// along (run, commitRounds), and a start as master runs the scan only if
// the broker was a slave since the last one (wasSlaveKey).
func (s *Service) removeUnmarkedDeliveries() (removed int, scanned int64, err error) {
	end := s.cl.MaxOffset()
	mark, ok, err := s.getInt(unmarkedScanKey())
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		mark = s.cl.MinOffset()
	}
	byUniq := map[string][]unmarkedKey{}
	n, from := 0, int64(-1)
	// Only a key already due can have been delivered: the pending keys
	// sort by delivery time, so the ones due by now (plus a minute of
	// clock difference between the brokers) are a prefix, and a start
	// with timers due far ahead reads none of them.
	upTo := timerKey(s.now().Add(unmarkedClockSlack).UnixMilli(), 0)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: pendingPrefix(), UpperBound: upTo})
	if err != nil {
		return 0, 0, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		_, phy, valid := parseTimerKey(it.Key())
		if !valid {
			continue
		}
		rec, rerr := s.cl.ReadRecord(phy)
		if rerr != nil {
			continue
		}
		props := rec.View.Properties()
		uniq, has := message.PropertyValue(props, message.PropertyUniqClientMessageIDKeyIdx)
		_, marker := message.PropertyValue(props, message.PropertyTimerDelUniqKey)
		var timer string
		if string(rec.View.Topic()) == TimerTopic {
			timer, _ = message.PropertyValue(props, message.PropertyRealTopic)
		}
		rec.Release()
		if !has || uniq == "" || marker {
			continue
		}
		if n++; n > maxUnmarkedKeys {
			_ = it.Close()
			s.log.Warn("timer index: too many pending timers to look for unmarked deliveries; they may be delivered again", "pending", n)
			return 0, 0, nil
		}
		byUniq[uniq] = append(byUniq[uniq], unmarkedKey{key: slices.Clone(it.Key()), phy: phy, timer: timer})
		if from < 0 || phy < from {
			from = phy
		}
	}
	if err := it.Close(); err != nil {
		return 0, 0, err
	}
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	deltas := map[string]int64{}
	from = max(from, mark, s.cl.MinOffset())
	if len(byUniq) == 0 {
		from = end
	}
	ci := s.cl.NewIterator(from, commitlog.IteratorOptions{Limit: func() int64 { return end }})
	for {
		rec, ierr := ci.Next()
		if errors.Is(ierr, io.EOF) {
			break
		}
		if ierr != nil {
			s.log.Warn("timer index: delivery scan stopped", "offset", ci.Offset(), "err", ierr)
			break
		}
		if t := string(rec.View.Topic()); t == ScheduleTopic || t == TimerTopic {
			continue
		}
		uniq, ok := rec.View.Property(message.PropertyUniqClientMessageIDKeyIdx)
		if !ok {
			continue
		}
		keys := byUniq[string(uniq)]
		kept := keys[:0]
		for _, k := range keys {
			if k.phy >= rec.Offset {
				kept = append(kept, k)
				continue
			}
			if err := b.Delete(k.key, nil); err != nil {
				ci.Close()
				return 0, 0, err
			}
			if k.timer != "" {
				deltas[k.timer]--
			}
			removed++
		}
		if len(kept) == 0 {
			delete(byUniq, string(uniq))
		} else if len(kept) != len(keys) {
			byUniq[string(uniq)] = kept
		}
	}
	scanned = ci.Offset() - from
	ci.Close()
	if err := b.Set(unmarkedScanKey(), u64(end), nil); err != nil {
		return 0, 0, err
	}
	if err := b.Delete(wasSlaveKey(), nil); err != nil {
		return 0, 0, err
	}
	vals, err := s.applyTiming(b, deltas)
	if err != nil {
		return 0, 0, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, 0, fmt.Errorf("schedule: commit delivery scan: %w", err)
	}
	s.commitTiming(vals)
	return removed, scanned, nil
}

// recoverMarkers scans the CommitLog from mark and deletes the keys named by
// delivered copies (PropertyTimerKey), then records the new mark. With no
// pending timer a marker has nothing to delete: the scan is skipped. (The
// mark is written without sync and Pebble runs without its WAL, so after a
// kill -9 it is often lost: without this, a broker that never had a timer
// re-read its whole CommitLog at every start after a crash.)
func (s *Service) recoverMarkers(mark int64) (removed int, scanned int64, err error) {
	max, min := s.cl.MaxOffset(), s.cl.MinOffset()
	from := mark
	if from < min {
		from = min
	}
	if from < max {
		pending, err := s.anyPending()
		if err != nil {
			return 0, 0, err
		}
		if !pending {
			from = max
		}
	}
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	// The timing counts of the keys removed (each key once), written in
	// the batch that removes them.
	deltas := map[string]int64{}
	gone := map[string]struct{}{}
	if from < max {
		it := s.cl.NewIterator(from, commitlog.IteratorOptions{Limit: func() int64 { return max }})
		for {
			rec, ierr := it.Next()
			if errors.Is(ierr, io.EOF) {
				break
			}
			if ierr != nil {
				s.log.Warn("timer recovery: CommitLog scan stopped", "offset", it.Offset(), "err", ierr)
				break
			}
			if v, ok := rec.View.Property(PropertyTimerKey); ok {
				if ms, phy, ok := parseMarker(v); ok {
					k := timerKey(ms, phy)
					if _, seen := gone[string(k)]; !seen && s.exists(k) {
						gone[string(k)] = struct{}{}
						if topic, timer := s.timerTopicAt(phy); timer {
							deltas[topic]--
						}
					}
					if err := b.Delete(k, nil); err != nil {
						it.Close()
						return 0, 0, err
					}
					removed++
				}
			}
			if b.Len() > 4<<20 {
				vals, err := s.applyTiming(b, deltas)
				if err != nil {
					it.Close()
					return 0, 0, err
				}
				if err := b.Commit(pebble.NoSync); err != nil {
					it.Close()
					return 0, 0, err
				}
				s.commitTiming(vals)
				deltas = map[string]int64{}
				b.Close()
				b = s.db.NewBatch()
			}
		}
		scanned = it.Offset() - from
		it.Close()
	}
	if err := b.Set(markScanKey(), u64(max), nil); err != nil {
		return 0, 0, err
	}
	vals, err := s.applyTiming(b, deltas)
	if err != nil {
		return 0, 0, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, 0, fmt.Errorf("schedule: commit recovery: %w", err)
	}
	s.commitTiming(vals)
	return removed, scanned, nil
}

// anyPending reports whether the index holds a pending timer.
func (s *Service) anyPending() (bool, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: pendingPrefix(), UpperBound: kv.PrefixEnd(pendingPrefix())})
	if err != nil {
		return false, fmt.Errorf("schedule: pending timers: %w", err)
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("schedule: pending timers: %w", err)
	}
	return found, nil
}

func formatMarker(ms, phy int64) string {
	return strconv.FormatInt(ms, 10) + "," + strconv.FormatInt(phy, 10)
}

func parseMarker(v string) (ms, phy int64, ok bool) {
	a, b, found := strings.Cut(v, ",")
	if !found {
		return 0, 0, false
	}
	ms, err1 := strconv.ParseInt(a, 10, 64)
	phy, err2 := strconv.ParseInt(b, 10, 64)
	return ms, phy, err1 == nil && err2 == nil
}

// commitRounds deletes the keys of delivery rounds the CommitLog flush has
// passed (all of them, flushing first, when force).
func (s *Service) commitRounds(force bool) error {
	if len(s.pending) == 0 || s.keepKeys {
		return nil
	}
	flushed := s.cl.FlushedOffset()
	if s.pending[0].end > flushed && (force || time.Since(s.pending[0].at) > flushAfter || len(s.inflight) > maxInflight) {
		if err := s.cl.Flush(); err != nil {
			return fmt.Errorf("flush CommitLog: %w", err)
		}
		flushed = s.cl.FlushedOffset()
	}
	i := 0
	for i < len(s.pending) && s.pending[i].end <= flushed {
		i++
	}
	if i == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	deltas := map[string]int64{}
	for _, r := range s.pending[:i] {
		for _, k := range r.keys {
			if err := b.Delete(k, nil); err != nil {
				return err
			}
		}
		for topic, d := range r.timing {
			deltas[topic] += d
		}
	}
	if err := b.Set(markScanKey(), u64(s.pending[i-1].mark), nil); err != nil {
		return err
	}
	// Rounds run on a master only, after its promotion scan: what it
	// appended since is its own, marked (removeUnmarkedDeliveries).
	if err := b.Set(unmarkedScanKey(), u64(s.pending[i-1].mark), nil); err != nil {
		return err
	}
	vals, err := s.applyTiming(b, deltas)
	if err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("commit key deletions: %w", err)
	}
	s.commitTiming(vals)
	s.roundTiming(deltas, -1)
	for _, r := range s.pending[:i] {
		for _, k := range r.keys {
			delete(s.inflight, string(k))
		}
	}
	cancels := false
	for _, r := range s.pending[:i] {
		cancels = cancels || r.cancels
	}
	s.pending = append(s.pending[:0], s.pending[i:]...)
	if cancels {
		return s.refreshMayCancel()
	}
	return nil
}
