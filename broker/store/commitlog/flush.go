package commitlog

import (
	"context"
	"fmt"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

const pageSize = 4096

// flushLoop is the flusher goroutine. Under SYNC_FLUSH it serves waiters
// (kicked through flushKick), one fsync for everyone who arrived while the
// previous one ran, like Java's GroupCommitService. Under both modes its
// ticker does the periodic flush (FlushCommitLogService) and writes the
// checkpoint.
func (l *Log) flushLoop() {
	defer l.wg.Done()
	ticker := time.NewTicker(l.cfg.FlushInterval)
	defer ticker.Stop()
	lastFull := l.clock()
	lastRelease := lastFull
	for {
		select {
		case <-l.stop:
			return
		case <-l.flushKick:
			if err := l.flush(); err != nil {
				l.log.Error("flush failed", "err", err)
			}
		case <-ticker.C:
			dirty := l.written.Load() - l.flushed.Load()
			now := l.clock()
			if dirty > 0 && (dirty >= int64(l.cfg.FlushLeastPages)*pageSize || now.Sub(lastFull) >= l.cfg.FlushThoroughInterval) {
				if err := l.flush(); err != nil {
					l.log.Error("flush failed", "err", err)
					continue
				}
				lastFull = now
			}
			if err := l.persistCheckpoint(); err != nil {
				l.log.Warn("checkpoint write failed", "err", err)
			}
			if l.cfg.MappedHotBytes > 0 && l.cfg.ReleaseInterval > 0 && now.Sub(lastRelease) >= l.cfg.ReleaseInterval {
				l.ReleaseCold()
				lastRelease = now
			}
		}
	}
}

// ReleaseCold gives back the resident mapped pages more than MappedHotBytes
// below the write position, and returns how many bytes of mappings it
// covered. Reads go on through the same mappings: they fault the pages in
// again from the page cache. Without this the mappings of everything the
// dispatcher and consumers ever read stay in the broker's RSS.
func (l *Log) ReleaseCold() int64 {
	keepFrom := l.written.Load() - l.cfg.MappedHotBytes
	var segs []*segment
	l.segMu.RLock()
	for _, s := range l.segs {
		if s.base < keepFrom && s.acquire() {
			segs = append(segs, s)
		}
	}
	l.segMu.RUnlock()
	var covered int64
	for _, s := range segs {
		if r, ok := s.mapping.(vfs.PageReleaser); ok {
			n := min(s.size, keepFrom-s.base) / pageSize * pageSize
			if err := r.ReleasePages(0, int(n)); err != nil {
				l.log.Debug("release mapped pages", "segment", s.path, "err", err)
			} else {
				covered += n
			}
		}
		if err := s.release(); err != nil {
			l.log.Warn("close segment", "segment", s.path, "err", err)
		}
	}
	return covered
}

// Flush fsyncs everything written so far and persists the checkpoint.
func (l *Log) Flush() error {
	if err := l.flush(); err != nil {
		return err
	}
	return l.persistCheckpoint()
}

// flush fsyncs every segment holding bytes in [flushed, written). An fsync
// error is fatal for writes: after a failed fsync the kernel may have
// dropped the dirty pages, so nothing written since the last good flush can
// be trusted (the "fsyncgate" lesson); a restart recovers from disk.
func (l *Log) flush() error {
	if l.failed.Load() {
		if err := l.Err(); err != nil && err != ErrClosed {
			return err
		}
	}
	if err := l.syncSegments(); err != nil {
		// fail takes mu; flushRun is released by now (Truncate takes mu
		// before flushRun).
		l.fail(ErrFlushFailed, err)
		return l.Err()
	}
	l.wakeFlushWaiters()
	return nil
}

// syncSegments does the fsyncs; flushRun keeps flushes from overlapping so
// the flushed offset only grows.
func (l *Log) syncSegments() error {
	l.flushRun.Lock()
	defer l.flushRun.Unlock()
	target := l.written.Load()
	from := l.flushed.Load()
	if target <= from {
		return nil
	}
	ts := l.lastTS.Load()
	var segs []*segment
	l.segMu.RLock()
	for _, s := range l.segs {
		if s.end() > from && s.base < target && s.acquire() {
			segs = append(segs, s)
		}
	}
	l.segMu.RUnlock()
	var err error
	for _, s := range segs {
		if err == nil {
			if serr := s.f.Sync(); serr != nil {
				err = fmt.Errorf("fsync %s: %w", s.path, serr)
			}
		}
		s.release()
	}
	if err != nil {
		return err
	}
	l.flushed.Store(target)
	l.ckpt.Update(func(s *CheckpointState) {
		s.FlushedPhyOffset = target
		if ts > s.PhysicMsgTimestamp {
			s.PhysicMsgTimestamp = ts
		}
	})
	return nil
}

// persistCheckpoint writes the checkpoint if it changed. Its flushed
// offset never runs ahead of the data: flush updates it only after fsync.
func (l *Log) persistCheckpoint() error {
	if err := l.ckpt.Flush(); err != nil {
		return fmt.Errorf("commitlog: %w", err)
	}
	return nil
}

// wakeFlushWaiters wakes everyone waiting for a flush to re-check.
func (l *Log) wakeFlushWaiters() {
	l.flushMu.Lock()
	close(l.notify)
	l.notify = make(chan struct{})
	l.flushMu.Unlock()
}

// waitFlushed blocks until bytes below end are fsynced, the log fails, ctx
// ends or SyncFlushTimeout passes (ErrFlushTimeout).
func (l *Log) waitFlushed(ctx context.Context, end int64) error {
	var timer *time.Timer
	for {
		l.flushMu.Lock()
		ch := l.notify
		l.flushMu.Unlock()
		if l.flushed.Load() >= end {
			return nil
		}
		if l.failed.Load() {
			if err := l.Err(); err != nil {
				return err
			}
		}
		select {
		case l.flushKick <- struct{}{}:
		default: // a flush is already requested; it will cover us or kick again
		}
		if timer == nil {
			timer = time.NewTimer(l.cfg.SyncFlushTimeout)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("commitlog: waiting for flush: %w", ctx.Err())
		case <-timer.C:
			return fmt.Errorf("%w: offset %d not flushed after %v", ErrFlushTimeout, end, l.cfg.SyncFlushTimeout)
		}
	}
}
