package commitlog

import (
	"bytes"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// recover finds the end of the valid log and cuts everything after it.
//
// Where to start: the segment holding the checkpoint's flushed offset
// (bytes before it were fsynced and verified by an earlier run). Without a
// checkpoint, a clean shutdown scans the last three segments, as Java's
// normal recovery does, and a crash scans them all.
func (l *Log) recover() error {
	ck, valid := l.recovery.Checkpoint, l.recovery.CheckpointValid
	segs := l.segs
	if len(segs) == 0 {
		l.setRecovered(0, 0, -1, ck)
		return nil
	}
	start := 0
	switch {
	case valid:
		start = sort.Search(len(segs), func(i int) bool { return segs[i].end() > ck.FlushedPhyOffset })
		start = min(start, len(segs)-1)
	case !l.recovery.Abnormal:
		start = max(0, len(segs)-3)
	}
	verify := l.cfg.CheckCRCOnRecover || l.recovery.Abnormal
	l.recovery.ScanFrom = segs[start].base

	t0 := time.Now()
	end, k, lastTS, dirty, cause := l.scan(start, verify)
	l.recovery.End, l.recovery.ScanTook = end, time.Since(t0)
	if dirty {
		l.recovery.Truncated = true
		l.log.Warn("recovery cut the log tail", "offset", end, "cause", cause)
	}
	// Bytes after the end may hold old records; zero them so no later scan
	// can mistake them for log (a crash can keep a later write and lose an
	// earlier one, so a zero header alone proves nothing after a crash).
	if dirty || l.recovery.Abnormal {
		if err := l.zeroTail(segs[k], end-segs[k].base); err != nil {
			return err
		}
	}
	if k+1 < len(segs) {
		for _, s := range segs[k+1:] {
			l.log.Warn("deleting segment after the recovered end", "file", s.path)
			if err := l.fs.Remove(s.path); err != nil {
				return fmt.Errorf("remove %s: %w", s.path, err)
			}
			s.release()
			l.recovery.DeletedFiles++
		}
		l.segs = segs[:k+1]
		if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
			return err
		}
	}
	// What was scanned came from the page cache; make it durable before
	// calling it flushed.
	for _, s := range l.segs[start:] {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", s.path, err)
		}
	}
	l.setRecovered(end, lastTS, k, ck)
	l.recovery.Took = time.Since(t0)
	scanned := end - l.recovery.ScanFrom
	l.log.Info("recovery scanned the CommitLog", "from", l.recovery.ScanFrom, "bytes", scanned,
		"verifyCRC", verify, "scanTook", l.recovery.ScanTook, "scanMBps", mbps(scanned, l.recovery.ScanTook),
		"took", l.recovery.Took)
	return nil
}

// mbps is n bytes over d in MB/s (10^6 bytes), rounded to an integer.
func mbps(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds() / 1e6)
}

// scan verifies records from segs[start] on. It returns the end offset, the
// index of the segment holding it, the last store timestamp, and whether
// it stopped at garbage (dirty) rather than at zeros or a file end.
//
// Records never cross a segment boundary, so segments are verified in
// parallel (one worker per CPU, in offset order); the log ends in the first
// segment that does not end cleanly, and segments after it are not looked
// at once it is known.
func (l *Log) scan(start int, verify bool) (end int64, k int, lastTS int64, dirty bool, cause error) {
	segs := l.segs[start:]
	res := make([]segScan, len(segs))
	var next atomic.Int64
	var stop atomic.Int64 // index of the first segment known to end the log
	stop.Store(int64(len(segs)))
	work := func() {
		for {
			i := next.Add(1) - 1
			if i >= stop.Load() {
				return
			}
			res[i] = l.scanSegment(segs[i], verify)
			if !res[i].clean {
				for {
					cur := stop.Load()
					if i >= cur || stop.CompareAndSwap(cur, i) {
						break
					}
				}
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(segs)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	for i, r := range segs {
		sr := res[i]
		if sr.records {
			lastTS = sr.lastTS
		}
		switch {
		case !sr.clean:
			return r.base + sr.pos, start + i, lastTS, sr.dirty, sr.err
		case i+1 == len(segs):
			return r.end(), start + i, lastTS, false, nil
		}
	}
	panic("unreachable")
}

// segScan is what scanning one segment found: clean (it ends at its file
// end or a BLANK) or where and why it stopped, and its last record's store
// timestamp.
type segScan struct {
	pos     int64
	lastTS  int64
	records bool
	clean   bool
	dirty   bool
	err     error
}

// scanSegment verifies seg's records from its start.
func (l *Log) scanSegment(seg *segment, verify bool) segScan {
	r := &segReader{seg: seg}
	var out segScan
	for {
		v, kind, zero, err := l.step(r, out.pos, seg.size, verify)
		switch kind {
		case stepRecord:
			out.lastTS, out.records = v.StoreTimestamp(), true
			out.pos += int64(v.TotalSize())
		case stepEndOfFile:
			out.clean = true
			return out
		default:
			out.dirty, out.err = !zero, err
			return out
		}
	}
}

// zeroTail makes every byte of seg from pos to its end zero, then fsyncs.
// From the first block boundary on, the file system zeroes the range
// without reading or writing it where it can (vfs.ZeroRange:
// FALLOC_FL_ZERO_RANGE); elsewhere, and for the partial block at pos, only
// the file's data regions are read (vfs.DataRegion) and non-zero chunks
// overwritten. Either way a crash recovery does not read the never-written
// rest of a 1 GiB segment.
func (l *Log) zeroTail(seg *segment, pos int64) error {
	const block = 4096
	checkTo := seg.size
	zeroed := false
	if first := (pos + block - 1) / block * block; first < seg.size {
		ok, err := vfs.ZeroRange(seg.f, first, seg.size-first)
		if err != nil {
			return fmt.Errorf("zero %s from %d: %w", seg.path, first, err)
		}
		if ok {
			checkTo, zeroed = first, true
		}
	}
	wrote, err := l.zeroNonZero(seg, pos, checkTo)
	if err != nil {
		return err
	}
	if wrote || zeroed {
		if err := seg.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", seg.path, err)
		}
	}
	return nil
}

// zeroNonZero overwrites the non-zero 1 MiB chunks of seg's data regions
// in [from, to) with zeros; wrote tells whether it wrote any.
func (l *Log) zeroNonZero(seg *segment, from, to int64) (wrote bool, err error) {
	const chunk = 1 << 20
	var buf []byte
	zeros := make([]byte, min(chunk, max(to-from, 0)))
	for p := from; p < to; {
		start, end, err := vfs.DataRegion(seg.f, p, to)
		if err != nil {
			return wrote, fmt.Errorf("zero %s: %w", seg.path, err)
		}
		if start >= end {
			break
		}
		for q := start; q < end; {
			n := min(chunk, end-q)
			b := seg.slice(q, n)
			if b == nil {
				if buf == nil {
					buf = make([]byte, len(zeros))
				}
				if err := seg.readAt(buf[:n], q); err != nil {
					return wrote, err
				}
				b = buf[:n]
			}
			if !bytes.Equal(b, zeros[:n]) {
				if _, err := seg.f.WriteAt(zeros[:n], q); err != nil {
					return wrote, fmt.Errorf("zero %s at %d: %w", seg.path, q, err)
				}
				wrote = true
			}
			q += n
		}
		p = end
	}
	return wrote, nil
}

// setRecovered installs the recovered state. k is the active segment's
// index (-1: no segments).
func (l *Log) setRecovered(end, lastTS int64, k int, ck CheckpointState) {
	l.next, l.pendStart = end, end
	l.written.Store(end)
	l.flushed.Store(end)
	l.lastStoreTS = lastTS
	l.lastTS.Store(lastTS)
	minOff := int64(0)
	if k >= 0 {
		l.active = l.segs[k]
		minOff = l.segs[0].base
	}
	l.minOffset.Store(minOff)
	// The confirm offset can only be as high as what survived.
	conf := min(max(ck.ConfirmPhyOffset, minOff), end)
	l.confirm.Store(conf)
	l.ckpt.Update(func(s *CheckpointState) {
		s.FlushedPhyOffset = end
		s.ConfirmPhyOffset = conf
		if lastTS > s.PhysicMsgTimestamp {
			s.PhysicMsgTimestamp = lastTS
		}
	})
}
