package schedule

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/pkg/message"
)

// job is one due key on its way to the store.
type job struct {
	key  []byte
	ms   int64 // key time
	phy  int64
	size int32 // record size the key holds
	due  int64 // the message's delivery time
	msg  *message.Message
	roll bool  // re-store in the timer topic: not due yet (far timer)
	drop bool  // nothing to deliver: delete the key
	err  error // the store failed: keep the key, retry
	// cancelled: dropped because a marker cancelled it; marker: a
	// cancellation marker came due (its cancellation key, uncancel, goes
	// with its key).
	cancelled, marker bool
	uncancel          []byte
	// timer: a timer-topic record (Observer), of REAL_TOPIC realTopic;
	// isMarker: a cancellation marker. delay: a delay-level record on its
	// way to realTopic.
	timer, isMarker, delay bool
	realTopic              string
}

// deliverOnce delivers up to RoundSize due keys from the cursor; full
// reports a full round (more may be due).
func (s *Service) deliverOnce() (full bool, err error) {
	now := s.now().UnixMilli()
	jobs, last, err := s.dueKeys(now)
	if err != nil {
		return false, err
	}
	if len(jobs) == 0 {
		if last != nil {
			s.cursor = successor(last)
		}
		return false, s.peekNextDue()
	}
	full = len(jobs) >= s.o.RoundSize
	mark := s.cl.MaxOffset()
	for i := range jobs {
		if err := s.prepare(&jobs[i], now); err != nil {
			jobs[i].err = err
		}
	}
	s.storeAll(jobs)

	var done [][]byte
	timing := map[string]int64{}
	var failedKey []byte
	var firstErr error
	cancels := false
	putAt := s.now().UnixMilli()
	for i := range jobs {
		j := &jobs[i]
		switch {
		case j.err != nil:
			s.failed.Add(1)
			if failedKey == nil || bytes.Compare(j.key, failedKey) < 0 {
				failedKey = j.key
			}
			if firstErr == nil {
				firstErr = j.err
			}
			continue
		case j.marker:
			s.markers.Add(1)
			done = append(done, j.uncancel)
			cancels = true
		case j.cancelled:
			s.cancelled.Add(1)
		case j.drop:
			s.dropped.Add(1)
		case j.roll:
			s.rolled.Add(1)
		default:
			s.delivered.Add(1)
			s.hist.observe(putAt - j.due)
		}
		if o := s.o.Observer; o != nil && j.timer {
			o.TimerDequeued(j.realTopic, j.isMarker)
		}
		if j.timer && !j.isMarker {
			timing[j.realTopic]--
		}
		done = append(done, j.key)
	}
	if failedKey != nil {
		s.cursor = failedKey
	} else {
		s.cursor = successor(last)
	}
	if len(done) > 0 {
		for _, k := range done {
			s.inflight[string(k)] = struct{}{}
		}
		s.pending = append(s.pending, round{keys: done, mark: mark, end: s.cl.MaxOffset(), at: time.Now(), cancels: cancels, timing: timing})
		s.roundTiming(timing, 1)
	}
	if !full {
		if err := s.peekNextDue(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return full, firstErr
}

// dueKeys reads up to RoundSize keys due at now from the cursor, skipping
// keys delivered but not yet deleted; last is the last key looked at.
func (s *Service) dueKeys(now int64) (jobs []job, last []byte, err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.cursor, UpperBound: timerKey(now+1, 0)})
	if err != nil {
		return nil, nil, fmt.Errorf("schedule: scan due timers: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok && len(jobs) < s.o.RoundSize; ok = it.Next() {
		k := it.Key()
		last = append(last[:0], k...)
		if _, busy := s.inflight[string(k)]; busy {
			continue
		}
		key := bytes.Clone(k)
		ms, phy, ok := parseTimerKey(key)
		if !ok {
			jobs = append(jobs, job{key: key, drop: true})
			continue
		}
		var size int32
		if v := it.Value(); len(v) == 4 {
			size = int32(binary.BigEndian.Uint32(v))
		}
		jobs = append(jobs, job{key: key, ms: ms, phy: phy, size: size})
	}
	return jobs, last, it.Error()
}

// peekNextDue finds the earliest key at or past the cursor.
func (s *Service) peekNextDue() error {
	s.nextDue = -1
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: s.cursor, UpperBound: kv.PrefixEnd(pendingPrefix())})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if _, busy := s.inflight[string(it.Key())]; busy {
			continue
		}
		if ms, _, ok := parseTimerKey(it.Key()); ok {
			s.nextDue = ms
		}
		break
	}
	return it.Error()
}

// prepare reads a due key's record and builds what to store: the message
// restored to its real topic and queue, or, for a far timer met at its roll
// key, the same message re-parked in the timer topic; nothing for a
// cancelled message or a cancellation marker (cancel.go). An error (the
// cancellation lookup failed) keeps the key for a retry.
func (s *Service) prepare(j *job, now int64) error {
	if j.drop {
		return nil
	}
	rec, err := s.cl.ReadRecord(j.phy)
	if err != nil {
		s.log.Error("timer delivery: parked record unreadable; timer lost", "phyOffset", j.phy, "dueMs", j.ms, "err", err)
		j.drop = true
		return nil
	}
	defer rec.Release()
	v := rec.View
	topic := string(v.Topic())
	if (topic != ScheduleTopic && topic != TimerTopic) || (j.size > 0 && j.size != v.TotalSize()) {
		s.log.Error("timer delivery: key points at another record; dropped", "phyOffset", j.phy, "topic", topic,
			"size", v.TotalSize(), "keySize", j.size)
		j.drop = true
		return nil
	}
	m, err := v.Message(false)
	if err != nil {
		s.log.Error("timer delivery: parked record undecodable; timer lost", "phyOffset", j.phy, "err", err)
		j.drop = true
		return nil
	}
	j.due = s.deliverTime(topic, v.QueueID(), v.StoreTimestamp(), v.Properties)
	props := m.Properties
	if props == nil {
		props = map[string]string{}
		m.Properties = props
	}
	props[PropertyTimerKey] = formatMarker(j.ms, j.phy)
	del, isMarker := markerOf(topic, props)
	if topic == TimerTopic {
		j.timer, j.isMarker, j.realTopic = true, isMarker, props[message.PropertyRealTopic]
	}
	if isMarker && j.due <= now {
		j.drop, j.marker, j.uncancel = true, true, cancelKey(del)
		return nil
	}
	if !isMarker && topic == TimerTopic {
		cancelled, err := s.isCancelled(props[message.PropertyRealTopic], m.UniqKey(), j.due)
		if err != nil {
			return err
		}
		if cancelled {
			j.drop, j.cancelled = true, true
			return nil
		}
	}
	if j.due > now {
		rolls, _ := strconv.Atoi(props[message.PropertyTimerRollTimes])
		props[message.PropertyTimerRollTimes] = strconv.Itoa(rolls + 1)
		props[message.PropertyTimerOutMS] = strconv.FormatInt(j.due, 10)
		m.Topic, m.QueueID = TimerTopic, 0
		j.roll = true
	} else {
		real := props[message.PropertyRealTopic]
		qid, err := strconv.Atoi(props[message.PropertyRealQueueID])
		if real == "" || err != nil || qid < 0 || real == ScheduleTopic || real == TimerTopic {
			s.log.Error("timer delivery: parked message without a valid REAL_TOPIC/REAL_QID; dropped", "phyOffset", j.phy,
				"realTopic", real, "realQueueId", props[message.PropertyRealQueueID])
			j.drop = true
			return nil
		}
		delete(props, message.PropertyDelayTimeLevel)
		for _, k := range timerProps() {
			delete(props, k)
		}
		delete(props, message.PropertyTimerRollTimes)
		m.Topic, m.QueueID = real, int32(qid)
		if topic == ScheduleTopic {
			j.delay, j.realTopic = true, real
		}
	}
	m.QueueOffset, m.CommitLogOffset, m.StoreTimestamp, m.BodyCRC, m.StoreSize = 0, 0, 0, 0, 0
	j.msg = m
	return nil
}

// storeAll stores the prepared jobs: per destination queue in key order,
// in batches, different queues in parallel.
func (s *Service) storeAll(jobs []job) {
	type qref struct {
		topic string
		qid   int32
	}
	var order []qref
	groups := map[qref][]*job{}
	var singles []*job
	for i := range jobs {
		j := &jobs[i]
		if j.drop || j.err != nil || j.msg == nil {
			continue
		}
		if _, ok := j.msg.Properties[message.PropertyInnerMultiDispatch]; ok {
			singles = append(singles, j)
			continue
		}
		q := qref{j.msg.Topic, j.msg.QueueID}
		if _, ok := groups[q]; !ok {
			order = append(order, q)
		}
		groups[q] = append(groups[q], j)
	}
	work := make(chan []*job, len(order)+len(singles))
	for _, q := range order {
		work <- groups[q]
	}
	for _, j := range singles {
		work <- []*job{j}
	}
	close(work)
	var wg sync.WaitGroup
	for w := 0; w < min(s.o.Workers, len(order)+len(singles)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				s.storeQueue(g)
			}
		}()
	}
	wg.Wait()
}

// storeQueue stores one queue's jobs in order, in batches.
func (s *Service) storeQueue(g []*job) {
	ctx := context.Background()
	for len(g) > 0 {
		n, size := 0, 0
		for n < len(g) && n < maxBatchMsgs {
			est := estimate(g[n].msg)
			if n > 0 && size+est > maxBatchBytes {
				break
			}
			size += est
			n++
		}
		chunk := g[:n]
		g = g[n:]
		var err error
		var res store.PutResult
		if len(chunk) == 1 {
			res, err = s.st.PutMessage(ctx, chunk[0].msg)
		} else {
			msgs := make([]*message.Message, len(chunk))
			for i, j := range chunk {
				msgs[i] = j.msg
			}
			res, err = s.st.PutMessages(ctx, msgs)
			if err != nil && errors.Is(err, store.ErrMessageIllegal) {
				// One of them is refused: store them one by one.
				for _, j := range chunk {
					s.finish(j, s.putOne(ctx, j))
				}
				continue
			}
		}
		for _, j := range chunk {
			s.finish(j, err)
		}
		s.delayDelivered(chunk, res.End-res.PhysicalOffset)
	}
}

func (s *Service) putOne(ctx context.Context, j *job) error {
	res, err := s.st.PutMessage(ctx, j.msg)
	if err == nil || errors.Is(err, store.ErrFlushTimeout) {
		s.delayDelivered([]*job{j}, res.End-res.PhysicalOffset)
	}
	return err
}

// delayDelivered tells the Observer of the delay-level messages of a
// stored chunk (one destination queue), bytes the chunk's.
func (s *Service) delayDelivered(chunk []*job, bytes int64) {
	o := s.o.Observer
	if o == nil || len(chunk) == 0 {
		return
	}
	n := 0
	for _, j := range chunk {
		if j.delay && !j.drop && j.err == nil {
			n++
		}
	}
	if n > 0 {
		o.DelayDelivered(chunk[0].msg.Topic, n, bytes*int64(n)/int64(len(chunk)))
	}
}

// finish records a store outcome: a flush timeout stored the message, a
// refused message is dropped (it can never be stored), anything else is
// retried.
func (s *Service) finish(j *job, err error) {
	switch {
	case err == nil, errors.Is(err, store.ErrFlushTimeout):
	case errors.Is(err, store.ErrMessageIllegal):
		s.log.Error("timer delivery: message refused by the store; dropped", "topic", j.msg.Topic, "queue", j.msg.QueueID,
			"uniqKey", j.msg.UniqKey(), "err", err)
		j.drop = true
	default:
		j.err = err
	}
}

// estimate approximates a message's stored size.
func estimate(m *message.Message) int {
	n := 128 + len(m.Body) + len(m.Topic)
	for k, v := range m.Properties {
		n += len(k) + len(v) + 2
	}
	return n
}

// histogram counts lateness in milliseconds, log-linear: exact below 64 ms,
// then 32 sub-buckets per power of two (about 3 % wide).
type histogram struct {
	mu     sync.Mutex
	counts [64 + 48*32]uint64
	total  uint64
	max    int64
}

func bucketOf(v int64) int {
	if v < 64 {
		return int(v)
	}
	shift := 0
	for x := v; x >= 64; x >>= 1 {
		shift++
	}
	top := v >> shift // 32..63
	return 64 + (shift-1)*32 + int(top-32)
}

func bucketLow(i int) int64 {
	if i < 64 {
		return int64(i)
	}
	i -= 64
	shift := i/32 + 1
	return (int64(i%32) + 32) << shift
}

func (h *histogram) observe(ms int64) {
	if ms < 0 {
		ms = 0
	}
	b := bucketOf(ms)
	h.mu.Lock()
	if b >= len(h.counts) {
		b = len(h.counts) - 1
	}
	h.counts[b]++
	h.total++
	if ms > h.max {
		h.max = ms
	}
	h.mu.Unlock()
}

func (h *histogram) quantiles(a, b float64) (qa, qb, mx time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.total == 0 {
		return 0, 0, 0
	}
	q := func(p float64) time.Duration {
		want := uint64(p*float64(h.total) + 0.5)
		if want == 0 {
			want = 1
		}
		var seen uint64
		for i, c := range h.counts {
			seen += c
			if seen >= want {
				return time.Duration(bucketLow(i)) * time.Millisecond
			}
		}
		return time.Duration(h.max) * time.Millisecond
	}
	return q(a), q(b), time.Duration(h.max) * time.Millisecond
}

func (h *histogram) reset() {
	h.mu.Lock()
	clear(h.counts[:])
	h.total, h.max = 0, 0
	h.mu.Unlock()
}
