package commitlog

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
)

// AppendResult describes an acknowledged append.
type AppendResult struct {
	PhysicalOffset int64 // offset of the first record
	Size           int   // bytes written (all records)
	Records        int
	StoreTimestamp int64 // ms, the same for every record of the call
	QueueOffset    int64 // queue offset of the first record
	// MsgID is the offset message id; comma-joined for batches, as the send
	// response wants it.
	MsgID string
}

// End is the offset just past the appended bytes.
func (r AppendResult) End() int64 { return r.PhysicalOffset + int64(r.Size) }

// AppendOptions tune one append.
type AppendOptions struct {
	// NoFlushWait returns once bytes are in the page cache even under
	// SYNC_FLUSH (a producer that sent WAIT=false).
	NoFlushWait bool
	// Positioned, when set, is called once the records have their place
	// in the log ([start, end)), before they are written, under the log's
	// lock (it must not call back into the log). A caller that orders
	// state of its own by physical position (LMQ offsets) releases its
	// own lock there, so the next append can join the same write instead
	// of waiting for this one's.
	Positioned func(start, end int64)
}

// Append appends one or more stored records (pkg/message encoded,
// concatenated, all for the same topic and queue) as one contiguous unit
// and returns once they are durable per the flush mode. The log fills in
// each record's physical offset, store timestamp and queue offset; recs is
// not modified. Errors matching ErrNotWritable mean nothing was
// acknowledged; ErrFlushTimeout comes with a valid result.
func (l *Log) Append(ctx context.Context, recs []byte) (AppendResult, error) {
	return l.AppendWith(ctx, recs, AppendOptions{})
}

// AppendWith is Append with options.
func (l *Log) AppendWith(ctx context.Context, recs []byte, opts AppendOptions) (AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return AppendResult{}, err
	}
	first, n, err := l.checkRecords(recs)
	if err != nil {
		return AppendResult{}, err
	}
	total := int64(len(recs))

	l.appenders.Add(1)
	defer l.appenders.Add(-1)
	l.mu.Lock()
	if err := l.reserveLocked(total, true); err != nil {
		l.mu.Unlock()
		return AppendResult{}, err
	}
	qoff := first.QueueOffset()
	if l.cfg.Assigner != nil {
		if qoff, err = l.cfg.Assigner.AssignQueueOffset(first, n); err != nil {
			l.mu.Unlock()
			return AppendResult{}, fmt.Errorf("commitlog: assign queue offset: %w", err)
		}
	}
	now := l.clock()
	ts := now.UnixMilli()
	if ts < l.lastStoreTS {
		ts = l.lastStoreTS // keep store timestamps monotonic in offset order
	}
	l.lastStoreTS = ts
	start := l.next
	p := len(l.pend)
	l.pend = append(l.pend, recs...)
	for i, pos := 0, 0; pos < len(recs); i++ {
		size := int(message.RecordSizeAt(recs[pos:]))
		message.PatchStored(l.pend[p+pos:], qoff+int64(i), start+int64(pos), ts)
		pos += size
	}
	l.next += total
	l.active.touch(now)
	if opts.Positioned != nil {
		opts.Positioned(start, l.next)
	}
	err = l.waitWrittenLocked(l.next)
	l.mu.Unlock()
	if err != nil {
		return AppendResult{}, err
	}
	l.lastTS.Store(ts)

	res := AppendResult{PhysicalOffset: start, Size: len(recs), Records: n, StoreTimestamp: ts, QueueOffset: qoff}
	res.MsgID = msgIDs(first, recs, start)
	if l.cfg.FlushDiskType == SyncFlush && !opts.NoFlushWait {
		if err := l.waitFlushed(ctx, start+total); err != nil {
			if errors.Is(err, ErrFlushTimeout) {
				return res, err
			}
			return AppendResult{}, err
		}
	}
	return res, nil
}

// checkRecords validates the records' framing (not their CRCs: the encoder
// just computed them) and returns the first one and the count.
func (l *Log) checkRecords(recs []byte) (message.View, int, error) {
	if len(recs) == 0 {
		return message.View{}, 0, fmt.Errorf("%w: empty", ErrBadRecord)
	}
	if len(recs) > l.cfg.MaxRecordSize {
		return message.View{}, 0, fmt.Errorf("%w: %d bytes, max %d", ErrRecordTooLarge, len(recs), l.cfg.MaxRecordSize)
	}
	var first message.View
	n := 0
	for pos := 0; pos < len(recs); n++ {
		v, err := message.ParseView(recs[pos:], message.ParseOptions{})
		if err != nil {
			return message.View{}, 0, fmt.Errorf("%w: record %d: %w", ErrBadRecord, n, err)
		}
		if p := v.Properties(); len(p) > 0 && p[len(p)-1] == 0 {
			// Recovery reads a zero last byte as a torn write.
			return message.View{}, 0, fmt.Errorf("%w: record %d: properties end in a zero byte", ErrBadRecord, n)
		}
		if n == 0 {
			first = v
		}
		pos += int(v.TotalSize())
	}
	return first, n, nil
}

func msgIDs(first message.View, recs []byte, start int64) string {
	host := first.StoreHostBytes()
	if int(first.TotalSize()) == len(recs) {
		return string(message.AppendOffsetMsgIDRaw(make([]byte, 0, message.OffsetMsgIDLenV6), host, start))
	}
	var b []byte
	for pos := 0; pos < len(recs); {
		if pos > 0 {
			b = append(b, ',')
		}
		b = message.AppendOffsetMsgIDRaw(b, host, start+int64(pos))
		pos += int(message.RecordSizeAt(recs[pos:]))
	}
	return string(b)
}

// reserveLocked makes room for total bytes in the active segment, rolling
// to a new one if needed. withBlank: a record needs BlankMinSize to spare
// so the file can end with a BLANK record (Java's rule); raw HA appends
// carry the master's bytes, BLANK included, and need only to fit.
func (l *Log) reserveLocked(total int64, withBlank bool) error {
	reserve := total
	if withBlank {
		reserve += int64(message.BlankMinSize)
	}
	if reserve > l.cfg.FileSize {
		return fmt.Errorf("%w: %d bytes do not fit a %d-byte segment", ErrRecordTooLarge, total, l.cfg.FileSize)
	}
	for {
		if err := l.writableLocked(); err != nil {
			return err
		}
		// Bound memory: wait for the in-flight write when the buffer is full.
		if l.writing && len(l.pend) > 0 && len(l.pend)+int(total) > l.cfg.MaxBatchBytes {
			l.cond.Wait()
			continue
		}
		if l.active != nil && l.next+reserve <= l.active.end() {
			return nil
		}
		if l.writing {
			l.cond.Wait()
			continue
		}
		if err := l.rollLocked(withBlank); err != nil {
			return err
		}
	}
}

func (l *Log) writableLocked() error {
	if l.err != nil {
		return l.err
	}
	if l.diskFull.Load() {
		return fmt.Errorf("%w: disk usage above %.0f%%", ErrDiskFull, l.cfg.DiskSpaceWarningLevelRatio*100)
	}
	return nil
}

// rollLocked finishes the active segment with a BLANK record and creates
// the next one. Called with no write in flight.
func (l *Log) rollLocked(withBlank bool) error {
	if l.active != nil {
		if rest := l.active.end() - l.next; withBlank && rest >= int64(message.BlankMinSize) {
			// Only the BLANK header is written: the rest of the file is
			// already zeros.
			l.pend = message.AppendBlank(l.pend, message.BlankMinSize)
			message.PatchBlankSize(l.pend[len(l.pend)-message.BlankMinSize:], int32(rest))
		}
		// Nothing fits any more, so nobody appends while mu is released
		// for the write below.
		l.next = l.active.end()
		if len(l.pend) > 0 {
			l.writeBatchLocked()
			if l.err != nil {
				return l.err
			}
		}
		l.pendStart = l.next
		l.written.Store(l.next)
	}
	if l.preparing {
		// The next segment is being made: wait for it rather than make
		// the same file twice. Others wait as for a write meanwhile.
		l.writing = true
		for l.preparing {
			l.cond.Wait()
		}
		l.writing = false
		l.cond.Broadcast()
	}
	seg, err := l.takeSpareLocked(l.next), error(nil)
	if seg == nil {
		seg, err = l.createSegment(l.next)
	}
	if err != nil {
		kind := ErrWriteFailed
		if errors.Is(err, syscall.ENOSPC) {
			kind = ErrDiskFull
		}
		l.failLocked(kind, err)
		return l.err
	}
	l.segMu.Lock()
	l.segs = append(l.segs, seg)
	if len(l.segs) == 1 {
		l.minOffset.Store(seg.base)
	}
	l.segMu.Unlock()
	l.active = seg
	l.pendStart = l.next
	l.prepareNextLocked()
	return nil
}

// takeSpareLocked returns the segment made ahead when it starts at base
// (a truncation can have moved the end since it was made), else nil; one
// that does not fit is discarded.
func (l *Log) takeSpareLocked(base int64) *segment {
	s := l.nextSeg
	l.nextSeg = nil
	if s == nil || s.base == base {
		return s
	}
	l.discardSegment(s)
	return nil
}

// prepareNextLocked starts making the segment after the active one in
// the background (Config.PrepareNext). A failure is only logged: the roll
// then creates the segment itself and reports the error.
func (l *Log) prepareNextLocked() {
	if !l.cfg.PrepareNext || l.preparing || l.nextSeg != nil || l.err != nil || l.active == nil {
		return
	}
	base := l.active.end()
	l.preparing = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		seg, err := l.createSegment(base)
		l.mu.Lock()
		l.preparing = false
		l.cond.Broadcast() // Truncate waits for this
		if err == nil && l.err == nil && l.active != nil && l.active.end() == base {
			l.nextSeg, seg = seg, nil
		}
		l.mu.Unlock()
		if err != nil {
			l.log.Warn("preparing the next segment failed; the roll will create it", "base", base, "err", err)
		}
		if seg != nil {
			l.discardSegment(seg)
		}
	}()
}

// discardSegment closes and removes a segment that never joined the log.
func (l *Log) discardSegment(s *segment) {
	_ = s.release()
	if err := l.fs.Remove(s.path); err != nil {
		l.log.Warn("removing an unused segment", "file", s.path, "err", err)
	}
}

// createSegment makes a new, full-size (sparse) file and makes its
// existence durable before anything is acknowledged in it.
func (l *Log) createSegment(base int64) (*segment, error) {
	path := l.cfg.Dir + "/" + segmentName(base)
	f, err := l.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	if l.cfg.Preallocate {
		err = f.Allocate(l.cfg.FileSize)
	} else {
		err = f.Truncate(l.cfg.FileSize)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = l.fs.SyncDir(l.cfg.Dir)
	}
	var seg *segment
	if err == nil {
		seg, err = newSegment(f, l.cfg.Dir, base, l.cfg.FileSize, l.cfg.UseMmap, l.readRandom.Load(), l.clock())
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	l.log.Info("new segment", "file", path)
	return seg, nil
}

// WriteStalledFor is how long the write in progress has been running (0
// when none is): a write into the page cache that takes long means the
// disk cannot keep up, Apache's "OS page cache busy".
func (l *Log) WriteStalledFor() time.Duration {
	since := l.writeSince.Load()
	if since == 0 {
		return 0
	}
	return max(l.clock().Sub(time.Unix(0, since)), 0)
}

// waitWrittenLocked returns once bytes below end are written, writing the
// buffered batch itself when nobody else is.
func (l *Log) waitWrittenLocked(end int64) error {
	yielded := false
	for l.written.Load() < end {
		if l.err != nil {
			return l.err
		}
		if l.writing {
			l.cond.Wait()
			continue
		}
		if !yielded && (l.appenders.Load() > 1 || l.cfg.Contended != nil && l.cfg.Contended()) {
			// Group commit: the other appenders, runnable or waiting for
			// mu, add their records first, so that one write carries them
			// all (one pwrite for a batch of sends, not one each).
			yielded = true
			l.mu.Unlock()
			runtime.Gosched()
			l.mu.Lock()
			continue
		}
		l.writeBatchLocked()
	}
	return nil
}

// writeBatchLocked writes everything buffered with one WriteAt. mu is
// released during the write; writing keeps others from starting another.
func (l *Log) writeBatchLocked() {
	for l.zeroing && l.pendStart+int64(len(l.pend)) > l.zeroFrom {
		// The zero-ahead writer is writing where these records go: let
		// it finish first. writing keeps other writers out meanwhile.
		l.writing = true
		l.cond.Wait()
	}
	buf := l.pend
	start := l.pendStart
	seg := l.active
	l.pend, l.spare = l.spare[:0], nil
	l.pendStart = start + int64(len(buf))
	l.writing = true
	l.writeSince.Store(l.clock().UnixNano())
	l.mu.Unlock()

	_, err := seg.f.WriteAt(buf, start-seg.base)

	l.mu.Lock()
	l.writeSince.Store(0)
	l.writing = false
	l.spare = buf[:0]
	if err != nil {
		kind := ErrWriteFailed
		if errors.Is(err, syscall.ENOSPC) {
			kind = ErrDiskFull
		}
		l.failLocked(kind, fmt.Errorf("write %s at %d: %w", seg.path, start-seg.base, err))
		l.wakeFlushWaiters()
	} else {
		l.written.Store(start + int64(len(buf)))
		l.maybeZeroAheadLocked()
	}
	l.cond.Broadcast()
}
