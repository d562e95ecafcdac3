package commitlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// Log is a CommitLog. All methods are safe for concurrent use.
type Log struct {
	cfg   Config
	fs    vfs.FS
	log   *slog.Logger
	clock func() time.Time

	// segMu guards segs (readers, flusher, retention). Lock order: mu, then
	// segMu.
	segMu sync.RWMutex
	segs  []*segment

	// mu guards the append state below; cond (on mu) is signalled whenever a
	// write completes or the log fails.
	mu        sync.Mutex
	cond      sync.Cond
	appenders atomic.Int32 // callers inside AppendWith / AppendRaw, waiting for mu included
	nextSeg   *segment     // the next segment, made ahead (Config.PrepareNext); not in segs
	preparing bool         // a goroutine is making spare
	active    *segment     // last segment; nil before the first append
	next      int64        // next offset to hand out (end of pend, or segment end while rolling)
	pend      []byte       // records for [pendStart, pendStart+len(pend)), not yet written
	pendStart int64
	spare     []byte // the other half of the double buffer
	writing   bool   // a caller is writing a batch with mu released
	// Zero-ahead (zeroahead.go): [.., zeroedTo) of zeroSeg is written; a
	// writer goroutine runs (zeroRun) and is writing the chunk at zeroFrom
	// (zeroing).
	zeroSeg  *segment
	zeroedTo int64
	zeroRun  bool
	zeroing  bool
	zeroFrom int64
	// zeros is the zero-ahead writer's source, made on its first run and
	// only ever read (it runs about once per chunk appended).
	zeros []byte
	// zeroWritten counts the bytes the zero-ahead writer wrote.
	zeroWritten atomic.Int64
	lastStoreTS int64
	err         error // sticky failure; nil while writable

	written   atomic.Int64 // MaxOffset: bytes below are in the page cache
	flushed   atomic.Int64 // bytes below are fsynced
	confirm   atomic.Int64
	minOffset atomic.Int64
	diskFull  atomic.Bool  // usage above DiskSpaceWarningLevelRatio (not sticky)
	failed    atomic.Bool  // mirrors err != nil for lock-free checks
	lastTS    atomic.Int64 // store timestamp of the last written record
	// writeSince is when the batch being written started (unix nanos of
	// l.clock), 0 while none is: WriteStalledFor reads it.
	writeSince atomic.Int64

	// flushRun serialises flushes (and truncation against them).
	flushRun sync.Mutex
	// Flush notification: waiters grab notify, then wait for it to close.
	flushMu   sync.Mutex
	notify    chan struct{}
	flushKick chan struct{}

	pool     sync.Pool // *[]byte copies for unmapped reads
	ckpt     *Checkpoint
	recovery RecoveryInfo
	hours    []int
	// manualDeletes is how many retention rounds still delete expired
	// files outside the DeleteWhen hours (DeleteFilesManually); retentionKick
	// starts a round early.
	manualDeletes atomic.Int32
	retentionKick chan struct{}
	// readRandom: segments are mapped with read-ahead off (MADV_RANDOM).
	readRandom atomic.Bool

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// RecoveryInfo describes what Open found.
type RecoveryInfo struct {
	// Abnormal is true when the abort marker was present: the previous run
	// did not close cleanly, so the store layer must re-dispatch from the
	// checkpoint.
	Abnormal bool
	// CheckpointValid reports whether the checkpoint file was intact.
	CheckpointValid bool
	// Checkpoint is the state read at open.
	Checkpoint CheckpointState
	// ScanFrom is the offset verification started at; End is the recovered
	// MaxOffset.
	ScanFrom, End int64
	// Truncated is the number of bytes cut from the tail of the scanned
	// segment (0 when the log ended cleanly); DeletedFiles counts later
	// segments removed because they followed a bad record.
	Truncated    bool
	DeletedFiles int
	// ScanTook is how long verifying [ScanFrom, End) took; Took covers
	// the whole recovery (scan, zeroing the tail, removing later files,
	// fsyncs).
	ScanTook, Took time.Duration
}

// Open opens (creating if needed) the log in cfg.Dir, recovers it and starts
// its flusher and retention goroutines.
func Open(cfg Config) (*Log, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hours, _ := parseDeleteWhen(cfg.DeleteWhen)
	l := &Log{
		cfg: cfg, fs: cfg.FS, clock: cfg.Clock, hours: hours,
		log:       cfg.Logger.With("component", "commitlog"),
		notify:    make(chan struct{}),
		flushKick: make(chan struct{}, 1),
		stop:      make(chan struct{}),

		retentionKick: make(chan struct{}, 1),
	}
	l.readRandom.Store(cfg.NoReadAhead)
	l.cond.L = &l.mu
	for _, d := range []string{cfg.Dir, filepath.Dir(cfg.CheckpointPath), filepath.Dir(cfg.AbortPath)} {
		if err := l.fs.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("commitlog: mkdir %s: %w", d, err)
		}
	}
	_, err := l.fs.Stat(cfg.AbortPath)
	switch {
	case err == nil:
		l.recovery.Abnormal = true
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("commitlog: stat abort marker: %w", err)
	}
	ckpt, valid, err := OpenCheckpoint(l.fs, cfg.CheckpointPath)
	if err != nil {
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	l.ckpt = ckpt
	l.recovery.CheckpointValid, l.recovery.Checkpoint = valid, ckpt.State()
	if err := l.loadSegments(); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("commitlog: load: %w", err)
	}
	if err := l.recover(); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("commitlog: recover: %w", err)
	}
	if err := l.createAbortMarker(); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	l.log.Info("opened", "dir", cfg.Dir, "min", l.MinOffset(), "max", l.MaxOffset(),
		"abnormal", l.recovery.Abnormal, "flush", cfg.FlushDiskType.String())
	l.wg.Add(1)
	go l.flushLoop()
	if cfg.CleanResourceInterval > 0 {
		l.wg.Add(1)
		go l.retentionLoop()
	}
	l.mu.Lock()
	l.prepareNextLocked()
	l.mu.Unlock()
	return l, nil
}

// loadSegments opens every segment file, checking names, sizes and
// contiguity. A short last file (a crash while creating it) is extended.
func (l *Log) loadSegments() error {
	names, err := l.fs.List(l.cfg.Dir)
	if err != nil {
		return err
	}
	var bases []int64
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
		} else {
			l.log.Warn("ignoring unexpected file", "name", n)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for i, base := range bases {
		path := filepath.Join(l.cfg.Dir, segmentName(base))
		if base%l.cfg.FileSize != 0 {
			return fmt.Errorf("%s: offset not a multiple of FileSize %d", path, l.cfg.FileSize)
		}
		if i > 0 && base != bases[i-1]+l.cfg.FileSize {
			// Empty files after a gap hold nothing (a segment made ahead,
			// Config.PrepareNext, whose predecessor's creation a crash
			// undid): they go. Anything else is a missing file.
			if empty, err := l.allEmpty(bases[i:]); err != nil || !empty {
				return fmt.Errorf("%s: gap after %s (missing files?)", path, segmentName(bases[i-1]))
			}
			for _, b := range bases[i:] {
				p := filepath.Join(l.cfg.Dir, segmentName(b))
				l.log.Warn("removing an empty segment after a gap", "file", p)
				if err := l.fs.Remove(p); err != nil {
					return fmt.Errorf("remove %s: %w", p, err)
				}
			}
			if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
				return err
			}
			break
		}
		f, err := l.fs.OpenReadWrite(path)
		if err != nil {
			return err
		}
		size, err := f.Size()
		if err == nil && size != l.cfg.FileSize {
			if i == len(bases)-1 && size < l.cfg.FileSize {
				l.log.Warn("extending short last segment", "file", path, "size", size)
				if err = f.Truncate(l.cfg.FileSize); err == nil {
					err = f.Sync()
				}
			} else {
				err = fmt.Errorf("size %d, FileSize is %d", size, l.cfg.FileSize)
			}
		}
		var mod time.Time
		if err == nil {
			var fi fs.FileInfo
			if fi, err = l.fs.Stat(path); err == nil {
				mod = fi.ModTime()
			}
		}
		var seg *segment
		if err == nil {
			seg, err = newSegment(f, l.cfg.Dir, base, l.cfg.FileSize, l.cfg.UseMmap, l.readRandom.Load(), mod)
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		l.segs = append(l.segs, seg)
	}
	return nil
}

// allEmpty reports whether the segment files at bases hold only zeros.
func (l *Log) allEmpty(bases []int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for _, b := range bases {
		f, err := l.fs.OpenReadWrite(filepath.Join(l.cfg.Dir, segmentName(b)))
		if err != nil {
			return false, err
		}
		for off := int64(0); ; off += int64(len(buf)) {
			n, err := f.ReadAt(buf, off)
			if slices.ContainsFunc(buf[:n], func(c byte) bool { return c != 0 }) {
				f.Close()
				return false, nil
			}
			if err != nil {
				f.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return false, err
			}
		}
	}
	return true, nil
}

func (l *Log) createAbortMarker() error {
	f, err := l.fs.Create(l.cfg.AbortPath)
	if err != nil {
		return fmt.Errorf("create abort marker: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create abort marker: %w", err)
	}
	if err := l.fs.SyncDir(filepath.Dir(l.cfg.AbortPath)); err != nil {
		return fmt.Errorf("create abort marker: %w", err)
	}
	return nil
}

// Close flushes, persists the checkpoint, removes the abort marker (only if
// everything succeeded, so a failed log recovers as after a crash) and
// closes the files. Appends after Close fail with ErrClosed.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		for l.writing {
			l.cond.Wait()
		}
		if l.err == nil && len(l.pend) > 0 {
			l.writeBatchLocked()
		}
		healthy := l.err == nil
		if healthy {
			l.err = ErrClosed
			l.failed.Store(true)
		}
		l.cond.Broadcast()
		l.mu.Unlock()

		close(l.stop)
		l.wg.Wait()
		l.mu.Lock()
		next := l.nextSeg
		l.nextSeg = nil
		l.mu.Unlock()
		if next != nil {
			// A clean shutdown leaves no empty segment behind.
			l.discardSegment(next)
		}
		var errs []error
		if healthy {
			if err := l.flush(); err != nil {
				errs = append(errs, err)
			}
			if err := l.persistCheckpoint(); err != nil {
				errs = append(errs, err)
			}
		}
		if healthy && len(errs) == 0 {
			if err := l.fs.Remove(l.cfg.AbortPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove abort marker: %w", err))
			} else if err := l.fs.SyncDir(filepath.Dir(l.cfg.AbortPath)); err != nil {
				errs = append(errs, err)
			}
		}
		l.wakeFlushWaiters()
		errs = append(errs, l.closeFiles())
		l.closeErr = errors.Join(errs...)
		if l.closeErr != nil {
			l.closeErr = fmt.Errorf("commitlog: close: %w", l.closeErr)
		}
	})
	return l.closeErr
}

func (l *Log) closeFiles() error {
	var errs []error
	l.segMu.Lock()
	for _, s := range l.segs {
		errs = append(errs, s.release())
	}
	l.segs = nil
	l.segMu.Unlock()
	if l.ckpt != nil {
		errs = append(errs, l.ckpt.Close())
	}
	return errors.Join(errs...)
}

// MinOffset is the first offset still on disk.
func (l *Log) MinOffset() int64 { return l.minOffset.Load() }

// MaxOffset is the offset just past the last byte written (maxPhyOffset);
// every byte below it is readable.
func (l *Log) MaxOffset() int64 { return l.written.Load() }

// FlushedOffset is the offset below which every byte was fsynced.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// ConfirmOffset is the HA confirm offset (Apache's getConfirmOffset in
// org/apache/rocketmq/store/CommitLog.java).
func (l *Log) ConfirmOffset() int64 { return l.confirm.Load() }

// SetConfirmOffset records the HA confirm offset; it is persisted with the
// next checkpoint write.
func (l *Log) SetConfirmOffset(off int64) {
	l.confirm.Store(off)
	l.ckpt.Update(func(s *CheckpointState) { s.ConfirmPhyOffset = off })
}

// SetReadAhead turns the kernel's read-ahead on every mapped segment on
// (Apache's MADV_NORMAL) or off (MADV_RANDOM), and on the segments created
// after: Apache's dataReadAheadEnable and CommitLog.scanFileAndSetReadMode
// (SET_COMMITLOG_READ_MODE). Unmapped segments (useMmap off) have nothing
// to advise.
func (l *Log) SetReadAhead(on bool) error {
	l.readRandom.Store(!on)
	l.segMu.Lock()
	segs := slices.Clone(l.segs)
	l.segMu.Unlock()
	var firstErr error
	for _, s := range segs {
		if !s.acquire() {
			continue
		}
		if err := s.adviseRandom(!on); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("commitlog: madvise %s: %w", s.path, err)
		}
		s.release()
	}
	l.log.Info("CommitLog read-ahead set", "readAhead", on, "files", len(segs))
	return firstErr
}

// ReadAhead reports whether segments are mapped with read-ahead on.
func (l *Log) ReadAhead() bool { return !l.readRandom.Load() }

// MasterFlushedOffset is the master's flushed offset a slave recorded
// (Apache's StoreCheckpoint masterFlushedOffset).
func (l *Log) MasterFlushedOffset() int64 { return l.ckpt.State().MasterFlushedOffset }

// SetMasterFlushedOffset records the master's flushed offset in the
// checkpoint (Apache's DefaultMessageStore.setMasterFlushedOffset); it is
// persisted with the next checkpoint write.
func (l *Log) SetMasterFlushedOffset(off int64) {
	l.ckpt.Update(func(s *CheckpointState) { s.MasterFlushedOffset = off })
}

// FileSize is the segment size.
func (l *Log) FileSize() int64 { return l.cfg.FileSize }

// Recovery tells what Open found.
func (l *Log) Recovery() RecoveryInfo { return l.recovery }

// Checkpoint gives the store layer access to the shared checkpoint (logics
// and index timestamps, dispatched offset).
func (l *Log) Checkpoint() *Checkpoint { return l.ckpt }

// Err returns the error that made the log not writable, or nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Writable reports whether appends are accepted now.
func (l *Log) Writable() bool { return !l.failed.Load() && !l.diskFull.Load() }

// SegmentBases lists the start offsets of the segment files.
func (l *Log) SegmentBases() []int64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	out := make([]int64, len(l.segs))
	for i, s := range l.segs {
		out[i] = s.base
	}
	return out
}

// segmentFor returns the segment holding off, with a reference taken.
func (l *Log) segmentFor(off int64) (*segment, bool) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].end() > off })
	if i == len(l.segs) || l.segs[i].base > off {
		return nil, false
	}
	s := l.segs[i]
	return s, s.acquire()
}

// failLocked makes the log not writable; kind is one of the not-writable
// sentinels. Callers hold mu.
func (l *Log) failLocked(kind error, err error) {
	if l.err != nil {
		return
	}
	l.err = fmt.Errorf("%w: %w", kind, err)
	l.failed.Store(true)
	l.log.Error("commitlog stops accepting writes", "err", err)
	l.cond.Broadcast()
}

func (l *Log) fail(kind error, err error) {
	l.mu.Lock()
	l.failLocked(kind, err)
	l.mu.Unlock()
	l.wakeFlushWaiters()
}
