package store

import (
	"errors"
	"fmt"
	"io"

	"github.com/rmqgo/rmq/broker/store/commitlog"
)

// SetDispatchLimit bounds the dispatcher at limit() (controller mode: the
// HA confirm offset, so consumers never see bytes a future master may not
// have); nil dispatches up to the CommitLog end (readUnCommitted).
func (s *Store) SetDispatchLimit(limit func() int64) {
	if limit == nil {
		s.dispatchLimit.Store(nil)
	} else {
		s.dispatchLimit.Store(&limit)
	}
	s.wakeDispatcher()
}

// DispatchedOffset is the CommitLog offset up to which consume queues are
// built.
func (s *Store) DispatchedOffset() int64 { return s.cq.DispatchedOffset() }

// TruncateTo cuts the CommitLog to off, then the consume queues above it,
// in that order: the log's bytes at off are zeroed and fsynced before
// anything else changes (commitlog.Log.Truncate), so a crash in between
// leaves queues pointing past the end, which recovery trims. Queue offsets
// handed out next are re-read from the truncated queues. The truncate
// listeners run last, outside the dispatch lock.
func (s *Store) TruncateTo(off int64) error {
	if err := s.truncateTo(off); err != nil {
		return err
	}
	s.listenersMu.RLock()
	ls := s.truncated
	s.listenersMu.RUnlock()
	for _, l := range ls {
		l(off)
	}
	return nil
}

func (s *Store) truncateTo(off int64) error {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	if err := s.cl.Truncate(off); err != nil {
		return fmt.Errorf("store: truncate commitlog to %d: %w", off, err)
	}
	if err := s.cq.TruncateAbove(off); err != nil {
		return fmt.Errorf("store: truncate consume queues above %d: %w", off, err)
	}
	s.assign.reset()
	return nil
}

// CutPartialTail truncates an incomplete or invalid trailing record (a
// replicated frame may end inside a message) and returns the new end.
// The scan starts at the dispatched offset: everything below it was read
// as whole records already.
func (s *Store) CutPartialTail() (int64, error) {
	from := max(s.cq.DispatchedOffset(), s.cl.MinOffset())
	it := s.cl.NewIterator(from, commitlog.IteratorOptions{})
	var end int64
	for {
		_, err := it.Next()
		if err == nil {
			continue
		}
		end = it.Offset()
		if !errors.Is(err, io.EOF) && !errors.Is(err, commitlog.ErrCorrupt) {
			it.Close()
			return 0, fmt.Errorf("store: scan tail from %d: %w", from, err)
		}
		break
	}
	it.Close()
	if end >= s.cl.MaxOffset() {
		return s.cl.MaxOffset(), nil
	}
	s.log.Warn("cutting an incomplete trailing record", "at", end, "commitlogMax", s.cl.MaxOffset())
	if err := s.TruncateTo(end); err != nil {
		return 0, err
	}
	return end, nil
}

// ResetQueueOffsets makes the next appends take their queue offsets from
// the consume queues again (a new master, once they are dispatched to the
// CommitLog tail).
func (s *Store) ResetQueueOffsets() { s.assign.reset() }

// SetMinOffsetHook runs f with the new min offset whenever old CommitLog
// files are deleted (controller mode drops epoch entries that lie wholly
// below it).
func (s *Store) SetMinOffsetHook(f func(minOffset int64)) { s.minOffsetHook.Store(&f) }
