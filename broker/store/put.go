package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/pkg/message"
)

// PutMessage stores one message.
func (s *Store) PutMessage(ctx context.Context, msg *message.Message) (PutResult, error) {
	return s.put(ctx, []*message.Message{msg})
}

// PutMessages stores messages of one topic and queue as one unit with
// consecutive queue offsets (SEND_BATCH_MESSAGE).
func (s *Store) PutMessages(ctx context.Context, msgs []*message.Message) (PutResult, error) {
	if len(msgs) == 0 {
		return PutResult{}, fmt.Errorf("%w: empty batch", ErrMessageIllegal)
	}
	for _, m := range msgs[1:] {
		if m.Topic != msgs[0].Topic || m.QueueID != msgs[0].QueueID {
			return PutResult{}, fmt.Errorf("%w: batch spans queues", ErrMessageIllegal)
		}
	}
	return s.put(ctx, msgs)
}

func (s *Store) put(ctx context.Context, msgs []*message.Message) (PutResult, error) {
	if s.closed.Load() {
		return PutResult{}, ErrShutdown
	}
	if s.replica.Load() {
		return PutResult{}, fmt.Errorf("%w: the message store is a slave's replica", ErrNotWritable)
	}
	if !s.cl.Writable() {
		err := s.cl.Err()
		if err == nil {
			// Not failed, so refused because disk usage is above
			// diskSpaceWarningLevelRatio: that state carries no error of
			// its own, and a nil here would acknowledge a message that was
			// never stored.
			err = fmt.Errorf("%w: disk usage above the warning level", commitlog.ErrDiskFull)
		}
		return PutResult{}, mapAppendError(err)
	}
	if err := s.kvErr(); err != nil {
		return PutResult{}, err
	}
	for _, m := range msgs {
		if len(m.Body) > s.cfg.MaxMessageSize {
			return PutResult{}, fmt.Errorf("%w: body of %d bytes exceeds maxMessageSize %d", ErrMessageIllegal, len(m.Body), s.cfg.MaxMessageSize)
		}
		if !m.StoreHost.IsValid() {
			m.StoreHost = s.cfg.StoreHost
		}
	}
	targets := s.multiDispatchTargets(msgs)
	var (
		res commitlog.AppendResult
		err error
	)
	if targets == nil {
		buf := s.encodeBuf()
		rec, eerr := encodeAll((*buf)[:0], msgs)
		if eerr != nil {
			s.releaseEncodeBuf(buf, rec)
			return PutResult{}, eerr
		}
		// The CommitLog copies the records into its write batch, so the
		// buffer is free again once Append returns.
		res, err = s.cl.Append(ctx, rec)
		s.releaseEncodeBuf(buf, rec)
	} else {
		res, err = s.putMultiDispatch(ctx, msgs, targets)
	}
	flushTimedOut := false
	if err != nil {
		if !errors.Is(err, commitlog.ErrFlushTimeout) {
			return PutResult{}, mapAppendError(err)
		}
		flushTimedOut = true
	}
	s.putCount.Add(int64(len(msgs)))
	if res.StoreTimestamp > 0 {
		s.tps.putAt(len(msgs), res.StoreTimestamp/1000)
	} else {
		s.tps.put(len(msgs))
	}
	s.wakeDispatcher()
	out := PutResult{
		PhysicalOffset: res.PhysicalOffset,
		End:            res.End(),
		QueueID:        msgs[0].QueueID,
		QueueOffset:    res.QueueOffset,
		StoreTimestamp: res.StoreTimestamp,
		FlushTimedOut:  flushTimedOut,
	}
	if len(msgs) == 1 {
		out.MsgIDs = []string{res.MsgID}
	} else {
		out.MsgIDs = strings.Split(res.MsgID, ",")
	}
	if flushTimedOut {
		return out, ErrFlushTimeout
	}
	return out, nil
}

// encodeAll appends the messages' records to rec, grown once to their size.
func encodeAll(rec []byte, msgs []*message.Message) ([]byte, error) {
	need := 0
	for _, m := range msgs {
		need += message.StoredCap(m)
	}
	rec = slices.Grow(rec, need)
	for _, m := range msgs {
		var err error
		if rec, err = message.AppendStored(rec, m); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMessageIllegal, err)
		}
	}
	return rec, nil
}

// maxPooledEncode bounds the encode buffers kept for reuse: a rare large
// batch should not pin its buffer.
const maxPooledEncode = 1 << 20

// encodeBuf returns a buffer for encodeAll: reused, so a send does not
// allocate (and clear) a record-sized buffer each time.
func (s *Store) encodeBuf() *[]byte {
	if b, ok := s.encBufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

func (s *Store) releaseEncodeBuf(b *[]byte, used []byte) {
	if cap(used) > maxPooledEncode {
		return
	}
	*b = used[:0]
	s.encBufs.Put(b)
}

// multiDispatchTargets returns, per message, the LMQ names it is also
// indexed in (docs/lite-topics.md §3.1 step 3), or nil when no message has any.
// Every message of a batch may name its own LMQs.
func (s *Store) multiDispatchTargets(msgs []*message.Message) [][]string {
	if !s.cfg.EnableLmq || !s.cfg.EnableMultiDispatch {
		return nil
	}
	var out [][]string
	for i, m := range msgs {
		v := strings.TrimSpace(m.Properties[message.PropertyInnerMultiDispatch])
		if v == "" || !multiDispatchAllowed(m.Topic) {
			continue
		}
		var names []string
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			continue
		}
		if out == nil {
			out = make([][]string, len(msgs))
		}
		out[i] = names
	}
	return out
}

func multiDispatchAllowed(topic string) bool {
	return !strings.HasPrefix(topic, "%RETRY%") && !strings.HasPrefix(topic, "rmq_sys_") && topic != "SCHEDULE_TOPIC_XXXX"
}

// putMultiDispatch assigns LMQ offsets, writes them into the messages and
// appends them, all under the LMQ lock so offsets follow physical order
// (an LMQ named by several messages of a batch gets consecutive offsets).
// The fsync wait of SYNC_FLUSH happens after the lock is released, so lite
// sends still share group commits.
func (s *Store) putMultiDispatch(ctx context.Context, msgs []*message.Message, targets [][]string) (commitlog.AppendResult, error) {
	// One message (a lite send) is encoded before the lock, without its
	// LMQ offsets, which are appended to the record under it: the body
	// copy, the CRC and the properties then stay out of the section that
	// every lite send goes through in turn.
	var pre []byte
	if len(msgs) == 1 {
		m := msgs[0]
		delete(m.Properties, message.PropertyInnerMultiQueueOffset)
		var err error
		if pre, err = message.AppendStored(make([]byte, 0, len(m.Body)+len(m.Topic)+512), m); err != nil {
			return commitlog.AppendResult{}, fmt.Errorf("%w: %v", ErrMessageIllegal, err)
		}
	}
	t := s.lmq
	t.mu.Lock()
	next := make(map[string]int64, len(targets))
	newCount := 0
	offsets := make([][]int64, len(msgs))
	for i, names := range targets {
		if len(names) == 0 {
			continue
		}
		offs := make([]int64, len(names))
		for j, n := range names {
			o, ok := next[n]
			if !ok {
				var isNew bool
				o, isNew = t.nextOf(n)
				if isNew {
					newCount++
				}
			}
			offs[j] = o
			next[n] = o + 1
		}
		offsets[i] = offs
	}
	if s.cfg.EnableLmqQuota && newCount > 0 && t.count+newCount > s.cfg.MaxLmqConsumeQueueNum {
		count := t.count // read under the lock (another send may change it)
		t.mu.Unlock()
		return commitlog.AppendResult{}, fmt.Errorf("%w: %d LMQs, max %d", ErrLMQQuota, count, s.cfg.MaxLmqConsumeQueueNum)
	}
	var rec []byte
	var err error
	if pre != nil {
		offs := joinOffsets(offsets[0])
		msgs[0].SetProperty(message.PropertyInnerMultiQueueOffset, offs)
		if rec, err = message.AppendRecordProperty(pre, 0, message.PropertyInnerMultiQueueOffset, offs); err != nil {
			err = fmt.Errorf("%w: %v", ErrMessageIllegal, err)
		}
	} else {
		for i, m := range msgs {
			if offsets[i] != nil {
				m.SetProperty(message.PropertyInnerMultiQueueOffset, joinOffsets(offsets[i]))
			}
		}
		rec, err = encodeAll(nil, msgs)
	}
	if err != nil {
		t.mu.Unlock()
		return commitlog.AppendResult{}, err
	}
	// The LMQ lock is held until the records have their place in the log
	// (offsets follow physical order), not until they are written: lite
	// sends then share the CommitLog's batched writes as plain ones do. A
	// write that fails after that leaves the log not writable; the offsets
	// it took are rebuilt from the consume queue on restart.
	locked := true
	res, err := s.cl.AppendWith(ctx, rec, commitlog.AppendOptions{NoFlushWait: true, Positioned: func(_, end int64) {
		for n, o := range next {
			t.next[n] = o
		}
		t.peak = max(t.peak, len(t.next))
		t.count += newCount
		t.appends++
		t.lastEnd = end
		t.mu.Unlock()
		locked = false
	}})
	if locked {
		t.mu.Unlock()
	}
	if err != nil {
		return res, err
	}
	if s.cl.Config().FlushDiskType == commitlog.SyncFlush {
		if err := s.cl.WaitFlushed(ctx, res.End()); err != nil {
			return res, err
		}
	}
	return res, nil
}

// kvErr refuses writes while Pebble cannot persist (a flush failing, or a
// fatal error): the message would be safe in the CommitLog, but it could
// not be dispatched (the dispatcher pauses) and so not be consumed, and a
// broker that refuses sends makes producers go to another one — as
// Apache's store stops being writable after a consume-queue write error.
func (s *Store) kvErr() error {
	err := s.db.Err()
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: consume queue store: %v", ErrDiskFull, err)
	}
	return fmt.Errorf("%w: consume queue store: %v", ErrNotWritable, err)
}

// mapAppendError turns CommitLog errors into the store's sentinel errors.
func mapAppendError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrLMQQuota), errors.Is(err, ErrMessageIllegal), errors.Is(err, ErrShutdown):
		return err
	case errors.Is(err, commitlog.ErrDiskFull):
		return fmt.Errorf("%w: %v", ErrDiskFull, err)
	case errors.Is(err, commitlog.ErrNotWritable):
		return fmt.Errorf("%w: %v", ErrNotWritable, err)
	case errors.Is(err, commitlog.ErrRecordTooLarge), errors.Is(err, commitlog.ErrBadRecord):
		return fmt.Errorf("%w: %v", ErrMessageIllegal, err)
	case errors.Is(err, commitlog.ErrFlushTimeout):
		return fmt.Errorf("%w: %v", ErrFlushTimeout, err)
	}
	return fmt.Errorf("%w: %v", ErrNotWritable, err)
}
