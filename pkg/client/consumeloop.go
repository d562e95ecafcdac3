package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ConsumeHandler processes the messages of one pull of mq, in queue order;
// calls for one queue never overlap. A returned error is logged: the
// messages are not redelivered (retry topics come with the push consumer).
type ConsumeHandler func(ctx context.Context, mq protocol.MessageQueue, msgs []*message.Message) error

// StartPosition returns the offset a queue's consumption starts at.
type StartPosition func(ctx context.Context, c *PullConsumer, mq protocol.MessageQueue) (int64, error)

// FromLastOffset starts at the group's committed offset, else at the end of
// the queue (Java's CONSUME_FROM_LAST_OFFSET; retry topics start at 0).
func FromLastOffset() StartPosition {
	return committedOr(func(ctx context.Context, c *PullConsumer, mq protocol.MessageQueue) (int64, error) {
		if strings.HasPrefix(mq.Topic, protocol.RetryGroupTopicPrefix) {
			return 0, nil
		}
		return c.GetMaxOffset(ctx, mq)
	})
}

// FromFirstOffset starts at the committed offset, else at the oldest
// message still stored.
func FromFirstOffset() StartPosition {
	return committedOr(func(ctx context.Context, c *PullConsumer, mq protocol.MessageQueue) (int64, error) {
		return c.GetMinOffset(ctx, mq)
	})
}

// FromTimestamp starts at the committed offset, else at the first message
// stored at or after t.
func FromTimestamp(t time.Time) StartPosition {
	return committedOr(func(ctx context.Context, c *PullConsumer, mq protocol.MessageQueue) (int64, error) {
		return c.SearchOffset(ctx, mq, t)
	})
}

// FromOffsets starts each queue listed in offsets there, and the others at
// fallback (FromLastOffset when nil). Committed offsets are ignored for the
// listed queues.
func FromOffsets(offsets map[protocol.MessageQueue]int64, fallback StartPosition) StartPosition {
	if fallback == nil {
		fallback = FromLastOffset()
	}
	return func(ctx context.Context, c *PullConsumer, mq protocol.MessageQueue) (int64, error) {
		if off, ok := offsets[mq]; ok {
			return off, nil
		}
		return fallback(ctx, c, mq)
	}
}

func committedOr(otherwise StartPosition) StartPosition {
	return func(ctx context.Context, c *PullConsumer, mq protocol.MessageQueue) (int64, error) {
		off, err := c.QueryOffset(ctx, mq)
		switch {
		case err == nil && off >= 0:
			return off, nil
		case err != nil && !errors.Is(err, ErrOffsetNotFound):
			return -1, err
		}
		return otherwise(ctx, c, mq)
	}
}

// ConsumeLoopConfig configures ConsumeLoop. Zero fields take their defaults.
type ConsumeLoopConfig struct {
	Topic          string
	Expression     string // default "*"
	ExpressionType string // ExpressionTypeTag (default) or ExpressionTypeSQL92
	// From positions each queue when its loop starts; default
	// FromLastOffset.
	From StartPosition
	// BatchSize is the most messages one pull returns; default 32.
	BatchSize int
	// CommitInterval: how often consumed offsets are stored on the brokers
	// (and once more at the end); default 5 s, negative never.
	CommitInterval time.Duration
	// MaxConcurrency caps handler calls running at once; 0 allows one per
	// queue.
	MaxConcurrency int
	// RescanInterval: how often the queue list is re-read from the route
	// cache to follow queues added or removed; default the route refresh
	// interval.
	RescanInterval time.Duration
	// ErrorBackoff is the pause after a failed pull; default 3 s (Java).
	ErrorBackoff time.Duration
}

// ConsumeLoop pulls every readable queue of cfg.Topic concurrently, one
// goroutine per queue with long polling, and passes what it gets to h. It
// returns when ctx ends or the consumer shuts down (nil then), after
// committing the offsets consumed, or at once if the topic has no route.
func (c *PullConsumer) ConsumeLoop(ctx context.Context, cfg ConsumeLoopConfig, h ConsumeHandler) error {
	if h == nil {
		return errors.New("client: ConsumeLoop needs a handler")
	}
	if err := protocol.ValidateTopic(cfg.Topic); err != nil {
		return fmt.Errorf("client: consume loop: %w", err)
	}
	if err := c.life.begin(); err != nil {
		return err
	}
	defer c.life.end()
	ctx, release := boundTo(ctx, c.core.ctx)
	defer release()

	cfg = cfg.withDefaults(c.cfg.RouteRefreshInterval)
	queues, err := c.queues(ctx, cfg.Topic)
	if err != nil {
		return fmt.Errorf("client: consume loop: %w", err)
	}
	if err := c.Subscribe(cfg.Topic, cfg.Expression, cfg.ExpressionType); err != nil {
		return err
	}
	c.core.wakeHeartbeat()

	l := &consumeLoop{c: c, cfg: cfg, h: h, workers: make(map[protocol.MessageQueue]*queueWorker)}
	if cfg.MaxConcurrency > 0 {
		l.sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	l.sync(ctx, queues)

	rescan := time.NewTicker(cfg.RescanInterval)
	defer rescan.Stop()
	var commitC <-chan time.Time
	if cfg.CommitInterval > 0 {
		t := time.NewTicker(cfg.CommitInterval)
		defer t.Stop()
		commitC = t.C
	}
	for {
		select {
		case <-ctx.Done():
			l.stopAll()
			return nil
		case <-rescan.C:
			if qs, err := c.queues(ctx, cfg.Topic); err == nil {
				l.sync(ctx, qs)
			}
		case <-commitC:
			l.commit(ctx)
		}
	}
}

func (cfg ConsumeLoopConfig) withDefaults(rescan time.Duration) ConsumeLoopConfig {
	if cfg.From == nil {
		cfg.From = FromLastOffset()
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultPullBatchSize
	}
	if cfg.CommitInterval == 0 {
		cfg.CommitInterval = 5 * time.Second
	}
	if cfg.RescanInterval <= 0 {
		cfg.RescanInterval = rescan
	}
	if cfg.ErrorBackoff <= 0 {
		cfg.ErrorBackoff = 3 * time.Second
	}
	return cfg
}

// consumeLoop is one ConsumeLoop call; workers is owned by its goroutine.
type consumeLoop struct {
	c       *PullConsumer
	cfg     ConsumeLoopConfig
	h       ConsumeHandler
	sem     chan struct{} // nil: no cap
	workers map[protocol.MessageQueue]*queueWorker
}

// queueWorker is the goroutine consuming one queue.
type queueWorker struct {
	mq        protocol.MessageQueue
	cancel    context.CancelFunc
	done      chan struct{}
	offset    atomic.Int64 // next offset to consume, -1 until positioned
	committed int64        // last offset stored on the broker (loop goroutine only)
}

// sync starts workers for new queues and stops those of vanished ones.
func (l *consumeLoop) sync(ctx context.Context, queues []protocol.MessageQueue) {
	want := make(map[protocol.MessageQueue]bool, len(queues))
	for _, mq := range queues {
		want[mq] = true
		if _, ok := l.workers[mq]; ok {
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		w := &queueWorker{mq: mq, cancel: cancel, done: make(chan struct{}), committed: -1}
		w.offset.Store(-1)
		l.workers[mq] = w
		go l.run(wctx, w)
	}
	for mq, w := range l.workers {
		if !want[mq] {
			w.cancel()
			<-w.done
			l.commitOne(context.WithoutCancel(ctx), w)
			delete(l.workers, mq)
		}
	}
}

// stopAll stops every worker and stores their final offsets.
func (l *consumeLoop) stopAll() {
	for _, w := range l.workers {
		w.cancel()
	}
	for _, w := range l.workers {
		<-w.done
	}
	if l.cfg.CommitInterval > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), l.c.cfg.RequestTimeout)
		defer cancel()
		l.commit(ctx)
	}
}

func (l *consumeLoop) commit(ctx context.Context) {
	for _, w := range l.workers {
		l.commitOne(ctx, w)
	}
}

// commitOne stores w's offset if it moved since the last commit.
func (l *consumeLoop) commitOne(ctx context.Context, w *queueWorker) {
	off := w.offset.Load()
	if l.cfg.CommitInterval <= 0 || off < 0 || off == w.committed || ctx.Err() != nil {
		return
	}
	if err := l.c.updateOffset(ctx, w.mq, off); err != nil {
		l.c.cfg.Logger.Warn("client: commit offset failed", "queue", w.mq.String(), "offset", off, "err", err)
		return
	}
	w.committed = off
}

// run positions the queue, then pulls with long polling until ctx ends.
func (l *consumeLoop) run(ctx context.Context, w *queueWorker) {
	defer close(w.done)
	log := l.c.cfg.Logger
	off := int64(-1)
	for off < 0 {
		o, err := l.cfg.From(ctx, l.c, w.mq)
		if err == nil && o >= 0 {
			off = o
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("client: cannot position queue", "queue", w.mq.String(), "err", err)
		if !sleepCtx(ctx, l.cfg.ErrorBackoff) {
			return
		}
	}
	w.offset.Store(off)
	for ctx.Err() == nil {
		res, err := l.c.pull(ctx, PullRequest{
			Queue: w.mq, Offset: off, MaxNums: l.cfg.BatchSize,
			Expression: l.cfg.Expression, ExpressionType: l.cfg.ExpressionType, LongPoll: true,
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("client: pull failed", "queue", w.mq.String(), "offset", off, "err", err)
			if !sleepCtx(ctx, l.cfg.ErrorBackoff) {
				return
			}
			continue
		}
		switch res.Status {
		case PullFound:
			if len(res.Messages) > 0 && !l.handle(ctx, w.mq, res.Messages) {
				return // stopped before handling: keep the offset before these
			}
		case PullOffsetIllegal:
			log.Info("client: offset moved", "queue", w.mq.String(), "from", off, "to", res.NextBeginOffset)
		}
		off = res.NextBeginOffset
		w.offset.Store(off)
	}
}

// handle runs the handler; it reports false if ctx ended before it could.
func (l *consumeLoop) handle(ctx context.Context, mq protocol.MessageQueue, msgs []*message.Message) bool {
	if l.sem != nil {
		select {
		case l.sem <- struct{}{}:
			defer func() { <-l.sem }()
		case <-ctx.Done():
			return false
		}
	}
	if err := l.h(ctx, mq, msgs); err != nil {
		l.c.cfg.Logger.Debug("client: handler failed", "queue", mq.String(), "messages", len(msgs), "err", err)
	}
	return true
}

// sleepCtx sleeps d unless ctx ends first; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
