package commitlog

import (
	"github.com/rmqgo/rmq/broker/store/vfs"
)

// zeroChunk is the most the zero-ahead writer writes at a time (an eighth
// of ZeroAhead when smaller, at least a page): an append that reaches the
// chunk being written waits for it (about a millisecond at most).
const zeroChunk = 1 << 20

func (l *Log) zeroChunkSize() int64 {
	return max(pageSize, min(zeroChunk, l.cfg.ZeroAhead/8))
}

// Zero-ahead (Config.ZeroAhead): segments are preallocated, and on ext4 a
// preallocated block is "unwritten" until data reaches it; the fdatasync
// after the first write to such blocks must also commit the extent change
// to the journal. Blocks already written (with zeros) need no metadata at
// sync time: measured here, fdatasync after a 22 KB append took a third of
// the time and half the CPU. A background writer keeps the next ZeroAhead
// bytes after the write position written with zeros and written back, so
// that SYNC_FLUSH syncs find plain blocks. Apache's
// warmMapedFileEnable fills a whole new file with zeros at creation for the
// same reason.
//
// Pacing: the writer tops the window up one chunk at a time and waits for
// each chunk's write-back before it writes the next, so that at most a
// chunk of zeros is ever queued at the device ahead of the flusher's
// fdatasync. It used to refill half the window at once and start its
// write-back in one call: measured here under SYNC_FLUSH at 20k sends/s,
// the 32 MiB of zeros queued that way put send p99 at 8 ms on a fresh
// store and 53-62 ms after a 6 GB ingest; paced, 4-7 ms in most runs
// (docs/operations.md, "The SYNC p99 at half peak", has the spread).
//
// Safety: the writer only ever writes at or after the reserved end (next),
// claimed chunk by chunk under mu; an append whose bytes reach the chunk
// being written waits for it (writeBatchLocked), so zeros never land on
// records. It never reports errors to the flusher (it does not fsync): an
// I/O error on its pages shows up in the flusher's next fdatasync like any
// other.

// maybeZeroAheadLocked starts the zero-ahead writer when a whole chunk of
// the ZeroAhead window after the write position is not zeroed yet.
func (l *Log) maybeZeroAheadLocked() {
	if l.cfg.ZeroAhead <= 0 || l.zeroRun || l.err != nil || l.active == nil {
		return
	}
	seg := l.active
	if l.zeroSeg != seg {
		l.zeroSeg, l.zeroedTo = seg, seg.base
	}
	start := (l.next + pageSize - 1) &^ (pageSize - 1)
	from := max(l.zeroedTo, start)
	to := min(seg.end(), start+l.cfg.ZeroAhead)
	if from >= to || from-start > l.cfg.ZeroAhead-l.zeroChunkSize() || !seg.acquire() {
		return
	}
	if l.zeros == nil {
		l.zeros = make([]byte, l.zeroChunkSize())
	}
	l.zeroRun = true
	l.wg.Add(1)
	go l.zeroAhead(seg, from, to)
}

// zeroAhead writes zeros over [from, to) of seg, chunk by chunk, each one
// written back before the next, stopping as soon as the log fails or
// closes, seg stops being the active segment, or appends have reached the
// next chunk.
func (l *Log) zeroAhead(seg *segment, from, to int64) {
	defer l.wg.Done()
	defer seg.release()
	chunk, zeros := l.zeroChunkSize(), l.zeros
	for cs := from; cs < to; cs += chunk {
		n := min(chunk, to-cs)
		l.mu.Lock()
		ok := l.err == nil && l.active == seg && l.next <= cs
		if ok {
			l.zeroing, l.zeroFrom = true, cs
		}
		l.mu.Unlock()
		if !ok {
			break
		}
		_, err := seg.f.WriteAt(zeros[:n], cs-seg.base)
		l.mu.Lock()
		l.zeroing = false
		if err == nil && l.zeroSeg == seg {
			l.zeroedTo = cs + n
		}
		if err == nil {
			l.zeroWritten.Add(n)
		}
		l.cond.Broadcast()
		l.mu.Unlock()
		if err != nil {
			l.log.Warn("zero-ahead write failed; appends go on without it", "file", seg.path, "offset", cs-seg.base, "err", err)
			break
		}
		if err := vfs.WriteBack(seg.f, cs-seg.base, n); err != nil {
			l.log.Debug("zero-ahead write-back", "file", seg.path, "err", err)
		}
	}
	l.mu.Lock()
	l.zeroRun = false
	l.mu.Unlock()
}
