package store

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/store/index"
	"github.com/rmqgo/rmq/pkg/message"
)

// The dispatcher ("reput") follows the CommitLog and, per round, writes the
// consume-queue entries, LMQ entries, index entries and the dispatched
// offset in one Pebble batch. After the batch commits it tells the arrival
// listeners (long polling, lite events).

type arrival struct {
	topic     string
	queueID   int32
	offset    int64
	tagsCode  int64
	storeTime int64
}

// dispatchErrorLogEvery spaces the log lines of a lasting dispatch failure.
const dispatchErrorLogEvery = 30 * time.Second

// dispatchRoundGap is the least time from one round's start to the next
// when the first caught up with the CommitLog, once sends keep coming
// (more than dispatchGapAfter wakes in a row each within the gap of the
// last round): under a steady stream a round then carries what a
// millisecond brought (a batch send's worth or more) instead of one
// send's, and its fixed cost — the Pebble commit, the checkpoint and the
// queues' meta records, publishing the queues' offsets — is paid once per
// millisecond, not once per send. A few sends, or one after a quiet gap,
// are dispatched at once, as before. Apache's reput sleeps 1 ms before
// every pass (DefaultMessageStore.ReputMessageService).
const (
	dispatchRoundGap = time.Millisecond
	dispatchGapAfter = 8
)

// dispatchPoll is how often the dispatcher looks at the CommitLog
// unasked while appends reach it that do not wake it: a replica's (HA
// replication appends to the log directly) and, with a dispatch limit
// (controller mode), the limit moving as slaves acknowledge. A store
// appended to only through PutMessage(s), which wakes the dispatcher, polls
// every dispatchIdlePoll, a safety net: an idle broker then does not wake
// up 100 times a second for nothing.
const (
	dispatchPoll     = 10 * time.Millisecond
	dispatchIdlePoll = time.Second
)

func (s *Store) dispatchPollPeriod() time.Duration {
	if s.replica.Load() || s.dispatchLimit.Load() != nil {
		return dispatchPoll
	}
	return dispatchIdlePoll
}

func (s *Store) dispatchLoop() {
	defer s.wg.Done()
	period := s.dispatchPollPeriod()
	tick := time.NewTicker(period)
	defer tick.Stop()
	gap := time.NewTimer(time.Hour)
	gap.Stop()
	defer gap.Stop()
	// A failing round is retried every second; a fault that lasts (a
	// Pebble that cannot flush) is logged every dispatchErrorLogEvery.
	var lastLog time.Time
	failed := 0
	var caughtUpAt time.Time // start of the last round that caught up
	streak := 0              // wakes in a row within the gap
	for {
		start := time.Now()
		progressed, full, err := s.dispatchOnce()
		if err != nil {
			failed++
			if now := time.Now(); now.Sub(lastLog) >= dispatchErrorLogEvery {
				s.log.Error("dispatch", "offset", s.cq.DispatchedOffset(), "failedRounds", failed, "err", err)
				lastLog = now
			}
			select {
			case <-s.stop:
				return
			case <-time.After(time.Second):
			}
			continue
		}
		if failed > 0 {
			s.log.Info("dispatch resumed", "failedRounds", failed)
			failed, lastLog = 0, time.Time{}
		}
		if p := s.dispatchPollPeriod(); p != period {
			period = p
			tick.Reset(p)
		}
		if progressed && full {
			continue // a backlog: the next round at once
		}
		if progressed {
			caughtUpAt = start
		}
		select {
		case <-s.stop:
			return
		case <-s.dispatchWake:
			wait := dispatchRoundGap - time.Since(caughtUpAt)
			if wait <= 0 {
				streak = 0
			} else if streak++; streak > dispatchGapAfter {
				gap.Reset(wait)
				select {
				case <-s.stop:
					return
				case <-gap.C:
				}
			}
		case <-tick.C: // see dispatchPoll
		}
	}
}

// dispatchOnce runs one round; progressed reports whether the dispatched
// offset moved.
func (s *Store) dispatchOnce() (progressed, full bool, err error) {
	arrivals, progressed, full, err := s.dispatchRound()
	if progressed {
		s.lmq.prune(arrivals)
	}
	return progressed, full, err
}

// dispatchRound writes one round and returns its arrivals; full reports a
// round that stopped at DispatchBatch records (more may be waiting).
func (s *Store) dispatchRound() (arrivals []arrival, progressed, full bool, err error) {
	// DeleteLmqs range-deletes runs of LMQs: no round may be half-committed
	// meanwhile (see lmqCreated).
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	from := s.cq.DispatchedOffset()
	if from >= s.cl.MaxOffset() {
		return nil, false, false, nil
	}
	if err := s.db.Err(); err != nil {
		// Rounds would pile up in memtables Pebble cannot flush until it
		// stalls every writer (this one holding dispatchMu, which Close
		// needs); the CommitLog keeps the records, dispatched once Pebble
		// flushes again or after a restart.
		return nil, false, false, fmt.Errorf("store: dispatch paused: %w", err)
	}
	if min := s.cl.MinOffset(); from < min {
		// Files below the checkpoint were deleted while we were behind:
		// nothing to index there any more.
		from = min
	}
	opts := commitlog.IteratorOptions{ReadBuffer: &s.dispatchBuf}
	if lim := s.dispatchLimit.Load(); lim != nil {
		opts.Limit = *lim
	}
	it := s.cl.NewIterator(from, opts)
	defer it.Close()
	// The arrivals are handed to the listeners before the next round and
	// kept by none: their slice is reused.
	arrivals = s.dispatchScratch.arrivals[:0]
	defer func() {
		if cap(arrivals) <= maxSpareArrivals {
			s.dispatchScratch.arrivals = arrivals[:0]
		}
	}()
	b := s.cq.NewBatch()
	n := 0
	for n < s.cfg.DispatchBatch {
		rec, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Abort()
			return nil, false, false, err
		}
		n++
		if err := s.dispatchRecord(b, rec.Offset, rec.View, &arrivals); err != nil {
			b.Abort()
			return nil, false, false, err
		}
	}
	end := it.Offset()
	if end <= s.cq.DispatchedOffset() {
		b.Abort()
		return nil, false, false, nil
	}
	b.SetDispatched(end)
	if err := b.Commit(); err != nil {
		return nil, false, false, err
	}
	s.listenersMu.RLock()
	created := s.created
	s.listenersMu.RUnlock()
	for _, id := range b.Created() {
		if isLmq(id.Topic) {
			s.lmqCreated.Add(1)
			continue
		}
		for _, l := range created {
			l(id.Topic, id.QueueID)
		}
	}
	s.notifyLmq(b.Created(), arrivals)
	s.notify(arrivals)
	return arrivals, true, n == s.cfg.DispatchBatch, nil
}

// dispatchProps are the properties the dispatcher reads, looked up in
// one walk of a record's properties (message.PropertyValues).
var dispatchProps = []string{message.PropertyTags, message.PropertyKeys, message.PropertyUniqClientMessageIDKeyIdx,
	message.PropertyInnerMultiDispatch, message.PropertyInnerMultiQueueOffset}

const (
	dpTags = iota
	dpKeys
	dpUniqKey
	dpMultiDispatch
	dpMultiQueueOffset
)

// dispatchScratch is the dispatcher's working memory across records and
// rounds (used under dispatchMu).
type dispatchScratch struct {
	topic    string // the last record's topic: consecutive records share it
	props    [5][]byte
	key      []byte // index entry keys
	arrivals []arrival
}

// maxSpareArrivals bounds the arrivals slice kept between rounds (a full
// round of plain messages fits).
const maxSpareArrivals = 8192

func (s *Store) dispatchRecord(b *consumequeue.Batch, phy int64, v message.View, arrivals *[]arrival) error {
	switch message.TransactionType(v.SysFlag()) {
	case message.TransactionPreparedType, message.TransactionRollbackType:
		return nil
	}
	sc := &s.dispatchScratch
	if t := v.Topic(); string(t) != sc.topic {
		sc.topic = string(t)
	}
	topic := sc.topic
	qid := v.QueueID()
	storeTime := v.StoreTimestamp()
	props := v.Properties()
	pv := sc.props[:]
	message.PropertyValues(props, dispatchProps, pv)
	tagsCode := int64(0)
	if s.cfg.TagsCode != nil {
		if c, ok := s.cfg.TagsCode(topic, props, storeTime); ok {
			tagsCode = c
		} else if tags := pv[dpTags]; len(tags) > 0 {
			tagsCode = int64(message.TagHashCode(string(tags)))
		}
	} else if tags := pv[dpTags]; len(tags) > 0 {
		tagsCode = int64(message.TagHashCode(string(tags)))
	}
	e := consumequeue.Entry{Offset: v.QueueOffset(), CommitLogOffset: phy, Size: v.TotalSize(), TagsCode: tagsCode, StoreTimestamp: storeTime}
	if err := b.Put(topic, qid, e); err != nil {
		return err
	}
	*arrivals = append(*arrivals, arrival{topic, qid, e.Offset, tagsCode, storeTime})

	if s.cfg.EnableLmq && s.cfg.EnableMultiDispatch && multiDispatchAllowed(topic) {
		if names := pv[dpMultiDispatch]; len(names) > 0 {
			if offs := pv[dpMultiQueueOffset]; offs != nil {
				ns, os := strings.Split(string(names), ","), strings.Split(string(offs), ",")
				if len(ns) == len(os) {
					for i, name := range ns {
						off, err := strconv.ParseInt(strings.TrimSpace(os[i]), 10, 64)
						if err != nil || name == "" {
							continue
						}
						le := e
						le.Offset = off
						if err := b.Put(name, 0, le); err != nil {
							return err
						}
						*arrivals = append(*arrivals, arrival{name, 0, off, tagsCode, storeTime})
					}
				}
			}
		}
	}

	if s.cfg.MessageIndexEnable {
		var err error
		if keys := pv[dpKeys]; len(keys) > 0 {
			for _, k := range strings.Fields(string(keys)) {
				if sc.key, err = index.AddTo(b, sc.key, topic, index.KindKey, k, storeTime, phy); err != nil {
					return err
				}
			}
		}
		if uk := pv[dpUniqKey]; len(uk) > 0 {
			if sc.key, err = index.AddTo(b, sc.key, topic, index.KindUniqKey, uk, storeTime, phy); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) notify(arrivals []arrival) {
	if len(arrivals) == 0 {
		return
	}
	s.listenersMu.RLock()
	ls := s.listeners
	s.listenersMu.RUnlock()
	for _, l := range ls {
		for i, a := range arrivals {
			// Of a run of entries of one queue with one tag code (a batch
			// send's), the last stands for the run (ArrivalListener).
			if n := i + 1; n < len(arrivals) && arrivals[n].queueID == a.queueID && arrivals[n].tagsCode == a.tagsCode &&
				arrivals[n].offset == a.offset+1 && arrivals[n].topic == a.topic {
				continue
			}
			l(a.topic, a.queueID, a.offset, a.tagsCode, a.storeTime)
		}
	}
}
