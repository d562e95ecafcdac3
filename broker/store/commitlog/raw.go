package commitlog

import (
	"context"
	"fmt"
)

// AppendRaw appends bytes copied verbatim from a master's log (HA
// replication, Apache's appendToCommitLog in
// org/apache/rocketmq/store/DefaultMessageStore.java): offset must equal
// MaxOffset (or, on an empty log, be a segment boundary, so a replica can
// start at the master's last file); data must not cross a segment boundary
// and may end inside a record. Records are not re-stamped. It returns once
// the bytes are in the page cache; call Flush for durability.
func (l *Log) AppendRaw(ctx context.Context, offset int64, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	l.appenders.Add(1)
	defer l.appenders.Add(-1)
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.writing {
		l.cond.Wait()
	}
	if err := l.writableLocked(); err != nil {
		return err
	}
	if l.active == nil && l.next == 0 && offset != 0 {
		if offset%l.cfg.FileSize != 0 {
			return fmt.Errorf("%w: first raw append at %d is not a segment boundary", ErrOffsetMismatch, offset)
		}
		l.next, l.pendStart = offset, offset
		l.written.Store(offset)
		l.flushed.Store(offset)
		l.minOffset.Store(offset)
	}
	if offset != l.next {
		return fmt.Errorf("%w: got %d, log ends at %d", ErrOffsetMismatch, offset, l.next)
	}
	segEnd := (offset/l.cfg.FileSize + 1) * l.cfg.FileSize
	if offset+int64(len(data)) > segEnd {
		return fmt.Errorf("%w: raw [%d, +%d)", ErrCrossesSegment, offset, len(data))
	}
	if err := l.reserveLocked(int64(len(data)), false); err != nil {
		return err
	}
	l.pend = append(l.pend, data...)
	l.next += int64(len(data))
	l.active.touch(l.clock())
	return l.waitWrittenLocked(l.next)
}
