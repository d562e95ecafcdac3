package commitlog

import (
	"fmt"
)

// Truncate cuts the log at offset (HA: a replica truncating to the common
// point with its new master, as Apache's
// org/apache/rocketmq/store/ha/autoswitch/AutoSwitchHAClient.java does).
// Crash-safe in this order: zero the bytes from offset to the end of its
// segment and fsync, delete later segments, fsync the directory; only then
// does MaxOffset drop. The checkpoint's flushed and confirm offsets are lowered too.
// Offset should be a record boundary; the HA layer guarantees it.
func (l *Log) Truncate(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A segment being made ahead must be in place (and is then removed
	// below) before the truncation decides anything.
	for l.writing || l.preparing {
		l.cond.Wait()
	}
	if l.err != nil {
		return l.err
	}
	if offset < l.MinOffset() || offset > l.next {
		return fmt.Errorf("%w: truncate to %d outside [%d, %d]", ErrOffsetOutOfRange, offset, l.MinOffset(), l.next)
	}
	if offset == l.next {
		return nil
	}
	// The segment made ahead would follow a gap once later segments go
	// (and Open refuses gaps): remove it first.
	if s := l.nextSeg; s != nil {
		l.nextSeg = nil
		l.discardSegment(s)
	}
	l.flushRun.Lock()
	defer l.flushRun.Unlock()
	// The tail is zeroed below, possibly as unwritten blocks: zero-ahead
	// starts over from the new end.
	l.zeroSeg = nil
	// Readers stop at the new end before its bytes disappear.
	l.written.Store(offset)

	l.segMu.RLock()
	segs := append([]*segment(nil), l.segs...)
	l.segMu.RUnlock()
	k := len(segs) - 1
	for k > 0 && segs[k].base > offset {
		k--
	}
	// An offset exactly at a segment end lands in the previous segment,
	// which stays full; the next append rolls.
	if k > 0 && segs[k].base == offset {
		k--
	}
	if err := l.zeroTail(segs[k], offset-segs[k].base); err != nil {
		l.failLocked(ErrWriteFailed, err)
		return l.err
	}
	if k+1 < len(segs) {
		l.segMu.Lock()
		l.segs = l.segs[:k+1]
		l.segMu.Unlock()
		for _, s := range segs[k+1:] {
			if err := l.fs.Remove(s.path); err != nil {
				l.failLocked(ErrWriteFailed, fmt.Errorf("remove %s: %w", s.path, err))
				return l.err
			}
			s.release()
		}
		if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
			l.failLocked(ErrFlushFailed, err)
			return l.err
		}
	}
	l.active = segs[k]
	l.next, l.pendStart = offset, offset
	l.pend = l.pend[:0]
	if l.flushed.Load() > offset {
		l.flushed.Store(offset)
	}
	if l.confirm.Load() > offset {
		l.confirm.Store(offset)
	}
	l.ckpt.Update(func(s *CheckpointState) {
		s.FlushedPhyOffset = min(s.FlushedPhyOffset, offset)
		s.ConfirmPhyOffset = min(s.ConfirmPhyOffset, offset)
		s.DispatchedPhyOffset = min(s.DispatchedPhyOffset, offset)
	})
	if err := l.ckpt.Flush(); err != nil {
		return fmt.Errorf("commitlog: truncate: %w", err)
	}
	l.log.Info("truncated", "offset", offset)
	return nil
}
