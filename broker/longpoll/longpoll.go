// Package longpoll holds suspended pull requests (Java's
// PullRequestHoldService). A pull that finds no new message and allows
// suspension is parked per topic@queueId; it is re-run when the store
// reports a matching arrival for that queue, when a periodic check sees
// the queue grew, or once at its deadline (then it is answered whatever
// the outcome, normally PULL_NOT_FOUND).
//
// Parked requests cost one small struct each, indexed by queue and by
// deadline; one goroutine watches deadlines and a bounded worker pool
// re-runs woken requests, so no goroutine is held per request and the
// number of parked requests is capped.
package longpoll

import (
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/deadline"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/remoting"
)

// Errors of Park.
var (
	// ErrFull: MaxParked requests are already parked.
	ErrFull = errors.New("longpoll: too many suspended pull requests")
	// ErrClosed: the service is shut down.
	ErrClosed = errors.New("longpoll: closed")
)

// Defaults.
const (
	DefaultCheckInterval = 5 * time.Second // Java re-checks held requests every 5 s
	DefaultMaxParked     = 65536
	DefaultWorkers       = 8
	DefaultQueueSize     = 8192
)

// Config tunes a Service. Zero fields take the defaults.
type Config struct {
	// CheckInterval between re-checks of every parked queue's max offset.
	CheckInterval time.Duration
	// MaxParked caps the parked requests (bounded memory).
	MaxParked int
	// Workers and QueueSize size the pool that re-runs woken requests.
	Workers   int
	QueueSize int
	// Now is the clock deadlines are compared with (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Inherit returns c with the clock and logger of the processor that owns
// the service where c leaves them out.
func (c Config) Inherit(now func() time.Time, log *slog.Logger) Config {
	if c.Now == nil {
		c.Now = now
	}
	if c.Logger == nil {
		c.Logger = log
	}
	return c
}

func (c Config) withDefaults() Config {
	defaults.Positive(&c.CheckInterval, DefaultCheckInterval)
	defaults.Positive(&c.MaxParked, DefaultMaxParked)
	defaults.Positive(&c.Workers, DefaultWorkers)
	defaults.Positive(&c.QueueSize, DefaultQueueSize)
	defaults.Clock(&c.Now)
	defaults.Logger(&c.Logger)
	return c
}

// Request is one suspended pull.
type Request struct {
	Channel *remoting.Channel
	Command *remoting.Command
	Topic   string
	QueueID int32
	// Offset is the queue offset the pull asked for: a message at or
	// beyond it wakes the request.
	Offset int64
	// Filter decides by tag code whether an arrival may interest the
	// request (nil: every arrival does).
	Filter store.MessageFilter
	// Deadline is when the request is re-run and answered regardless.
	Deadline time.Time
}

// Resumer re-runs a woken request without allowing suspension and writes
// its response on ch. It runs on the service's worker pool.
type Resumer func(ctx context.Context, ch *remoting.Channel, req *remoting.Command)

// MaxOffsetFunc reads a queue's max offset (store.MessageStore.MaxOffset).
type MaxOffsetFunc func(topic string, queueID int32) int64

type qkey struct {
	topic string
	qid   int32
}

type entry struct {
	r    Request
	key  qkey
	qpos int // index in its queue's list
	hpos int // index in the deadline heap
}

// Deadline and SetIndex place entries in the deadline heap.
func (e *entry) Deadline() time.Time { return e.r.Deadline }
func (e *entry) SetIndex(i int)      { e.hpos = i }

// Service is the hold table. Park, OnArrival and Check are safe for
// concurrent use; OnArrival never blocks on I/O (it runs on the store's
// dispatcher).
type Service struct {
	cfg       Config
	resume    Resumer
	maxOffset MaxOffsetFunc
	log       *slog.Logger

	mu     sync.Mutex
	queues map[qkey][]*entry
	dl     deadline.Heap[*entry]
	closed bool

	exec   *remoting.Executor
	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{}

	looper loop.Runner
}

// New builds a service; Start runs its deadline and check loop.
func New(cfg Config, resume Resumer, maxOffset MaxOffsetFunc) *Service {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Service{
		cfg:       cfg,
		resume:    resume,
		maxOffset: maxOffset,
		log:       cfg.Logger,
		queues:    map[qkey][]*entry{},
		exec:      remoting.NewExecutor("pull-hold", cfg.Workers, cfg.QueueSize),
		ctx:       ctx,
		cancel:    cancel,
		kick:      make(chan struct{}, 1),
	}
	s.exec.SetLogger(cfg.Logger)
	return s
}

// Len is the number of parked requests.
func (s *Service) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dl)
}

// Park suspends r until an arrival, a check or its deadline wakes it.
func (s *Service) Park(r Request) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if len(s.dl) >= s.cfg.MaxParked {
		s.mu.Unlock()
		return ErrFull
	}
	e := &entry{r: r, key: qkey{r.Topic, r.QueueID}}
	s.insertLocked(e)
	first := e.hpos == 0
	s.mu.Unlock()
	if first {
		s.wake()
	}
	return nil
}

func (s *Service) insertLocked(e *entry) {
	list := s.queues[e.key]
	e.qpos = len(list)
	s.queues[e.key] = append(list, e)
	heap.Push(&s.dl, e)
}

func (s *Service) removeLocked(e *entry) {
	list := s.queues[e.key]
	last := len(list) - 1
	if e.qpos != last {
		list[e.qpos] = list[last]
		list[e.qpos].qpos = e.qpos
	}
	list[last] = nil
	if last == 0 {
		delete(s.queues, e.key)
	} else {
		s.queues[e.key] = list[:last]
	}
	if e.hpos >= 0 {
		heap.Remove(&s.dl, e.hpos)
	}
}

// removeWhereLocked removes the requests of queue k for which drop returns
// true; drop also records those to re-run.
func (s *Service) removeWhereLocked(k qkey, drop func(*entry) bool) {
	list := s.queues[k]
	for i := 0; i < len(list); {
		if e := list[i]; drop(e) {
			s.removeLocked(e)
			list = s.queues[k] // removal swaps the tail in at i
			continue
		}
		i++
	}
}

func (s *Service) wake() {
	loop.Wake(s.kick)
}

// OnArrival is the store.ArrivalListener: requests of the queue waiting
// for an offset ≤ queueOffset whose filter accepts tagsCode are re-run;
// expired ones are re-run too.
func (s *Service) OnArrival(topic string, queueID int32, queueOffset int64, tagsCode int64, _ int64) {
	k := qkey{topic, queueID}
	s.mu.Lock()
	if len(s.queues[k]) == 0 {
		s.mu.Unlock()
		return
	}
	now := s.cfg.Now()
	var due []*entry
	s.removeWhereLocked(k, func(e *entry) bool {
		match := queueOffset >= e.r.Offset && (e.r.Filter == nil || e.r.Filter.MatchTagsCode(tagsCode))
		if match || !now.Before(e.r.Deadline) {
			due = append(due, e)
			return true
		}
		return false
	})
	s.mu.Unlock()
	s.dispatch(due, false)
}

// WakeQueue re-runs the requests of one queue waiting below maxOffset,
// whatever their filter (no tag code is known). The pull processor calls it
// right after parking, when the queue grew between its read and the park,
// so that an arrival in that window is not left to the periodic check.
func (s *Service) WakeQueue(topic string, queueID int32, maxOffset int64) {
	k := qkey{topic, queueID}
	var due []*entry
	s.mu.Lock()
	s.removeWhereLocked(k, func(e *entry) bool {
		if maxOffset > e.r.Offset {
			due = append(due, e)
			return true
		}
		return false
	})
	s.mu.Unlock()
	s.dispatch(due, false)
}

// Check re-examines every parked queue: requests whose queue grew past
// their offset (a missed or filtered-out arrival), whose deadline passed,
// or whose connection closed leave the table. Start runs it every
// CheckInterval.
func (s *Service) Check() {
	s.mu.Lock()
	keys := make([]qkey, 0, len(s.queues))
	for k := range s.queues {
		keys = append(keys, k)
	}
	s.mu.Unlock()

	maxes := make(map[qkey]int64, len(keys))
	for _, k := range keys {
		maxes[k] = s.maxOffset(k.topic, k.qid)
	}

	now := s.cfg.Now()
	var due []*entry
	s.mu.Lock()
	for _, k := range keys {
		s.removeWhereLocked(k, func(e *entry) bool {
			gone := e.r.Channel != nil && !e.r.Channel.IsActive()
			if gone || maxes[k] > e.r.Offset || !now.Before(e.r.Deadline) {
				if !gone {
					due = append(due, e)
				}
				return true
			}
			return false
		})
	}
	s.mu.Unlock()
	s.dispatch(due, true)
}

// ExpireDue re-runs the requests whose deadline passed and returns the
// next deadline (zero when none is parked).
func (s *Service) ExpireDue() time.Time {
	now := s.cfg.Now()
	var due []*entry
	s.mu.Lock()
	for len(s.dl) > 0 && !now.Before(s.dl[0].r.Deadline) {
		e := s.dl[0]
		s.removeLocked(e)
		due = append(due, e)
	}
	var next time.Time
	if len(s.dl) > 0 {
		next = s.dl[0].r.Deadline
	}
	s.mu.Unlock()
	s.dispatch(due, true)
	return next
}

// dispatch hands woken requests to the workers. When the pool is full a
// request is parked again if the caller must not block (the store's
// dispatcher), else it is re-run on the calling goroutine.
func (s *Service) dispatch(due []*entry, mayBlock bool) {
	for _, e := range due {
		ch, cmd := e.r.Channel, e.r.Command
		if ch != nil && !ch.IsActive() {
			continue // nobody to answer
		}
		if s.exec.Submit(func() { s.resume(s.ctx, ch, cmd) }) {
			continue
		}
		if mayBlock {
			s.resume(s.ctx, ch, cmd)
			continue
		}
		s.mu.Lock()
		if !s.closed {
			e.hpos = -1
			s.insertLocked(e)
		}
		s.mu.Unlock()
	}
}

// Start runs the loop that answers expired requests at their deadline and
// calls Check every CheckInterval.
func (s *Service) Start() {
	s.looper.StartOnce(s.loop)
}

func (s *Service) loop(stop <-chan struct{}) {
	lastCheck := time.Now()
	loop.Rounds(stop, s.kick, func() time.Duration {
		next := s.ExpireDue()
		if time.Since(lastCheck) >= s.cfg.CheckInterval {
			s.Check()
			lastCheck = time.Now()
		}
		wait := s.cfg.CheckInterval - time.Since(lastCheck)
		if !next.IsZero() {
			wait = min(wait, next.Sub(s.cfg.Now()))
		}
		return wait
	})
}

// Close stops the loop, drops every parked request (their connections are
// closing with the server) and waits for running re-runs.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	n := len(s.dl)
	s.queues = map[qkey][]*entry{}
	s.dl = nil
	s.mu.Unlock()

	s.looper.Stop()
	s.exec.Close()
	s.cancel()
	if n > 0 {
		s.log.Info("long polling stopped, dropped suspended pulls", "count", n)
	}
}

// Drain answers every parked request now (each is re-run once without
// suspension, normally PULL_NOT_FOUND), while the connections are still
// open: a broker shutting down answers its long polls instead of leaving
// clients to wait for their own timeouts.
func (s *Service) Drain() int {
	s.mu.Lock()
	due := make([]*entry, len(s.dl))
	copy(due, s.dl)
	s.queues = map[qkey][]*entry{}
	s.dl = nil
	s.mu.Unlock()
	for _, e := range due {
		if ch := e.r.Channel; ch == nil || ch.IsActive() {
			s.resume(s.ctx, e.r.Channel, e.r.Command)
		}
	}
	return len(due)
}
