package commitlog

import (
	"fmt"
	"slices"
	"time"
)

// RetentionResult reports one retention round.
type RetentionResult struct {
	Deleted   []string // paths of deleted segments
	MinOffset int64    // MinOffset after the round
	DiskRatio float64  // used fraction of the disk holding Dir
}

// manualDeleteRounds is how many retention rounds DeleteFilesManually
// covers (Apache's MAX_MANUAL_DELETE_FILE_TIMES).
const manualDeleteRounds = 20

func (l *Log) retentionLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.CleanResourceInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		case <-l.retentionKick:
		}
		if _, err := l.RunRetention(l.clock()); err != nil {
			l.log.Warn("retention failed", "err", err)
		}
	}
}

// DeleteFilesManually makes the next retention rounds (Apache: 20) delete
// expired files (last write older than FileReservedTime) whatever the hour,
// as Apache's DefaultMessageStore.executeDeleteFilesManually (the broker's
// DELETE_EXPIRED_COMMITLOG), and starts a round now instead of at the next
// tick.
func (l *Log) DeleteFilesManually() {
	l.manualDeletes.Store(manualDeleteRounds)
	l.log.Info("executeDeleteFilesManually was invoked")
	select {
	case l.retentionKick <- struct{}{}:
	default:
	}
}

// RunRetention runs one round of Java's CleanCommitLogService at time now:
//
//   - disk usage above DiskSpaceWarningLevelRatio refuses writes
//     (ErrDiskFull) until it drops again, and allows forced deletion;
//   - above DiskSpaceCleanForciblyRatio, files are deleted even when not
//     expired (if CleanFileForcibly);
//   - above DiskMaxUsedSpaceRatio, at a DeleteWhen hour, or in the rounds
//     after DeleteFilesManually, expired files (last write older than
//     FileReservedTime) are deleted.
//
// Files go oldest first, at most DeleteFilesBatchMax per round; the
// segment being written and segments with unflushed bytes are never
// deleted. OnMinOffsetChange is called when the minimum offset moved.
func (l *Log) RunRetention(now time.Time) (RetentionResult, error) {
	usage, err := l.fs.DiskUsage(l.cfg.Dir)
	if err != nil {
		return RetentionResult{}, fmt.Errorf("commitlog: disk usage: %w", err)
	}
	ratio := usage.UsedRatio()
	res := RetentionResult{DiskRatio: ratio, MinOffset: l.MinOffset()}
	force := false
	switch {
	case ratio > l.cfg.DiskSpaceWarningLevelRatio:
		if !l.diskFull.Swap(true) {
			l.log.Error("disk nearly full, refusing writes", "usedRatio", ratio)
		}
		force = true
	case ratio > l.cfg.DiskSpaceCleanForciblyRatio:
		l.diskFull.Store(false)
		force = true
	default:
		if l.diskFull.Swap(false) {
			l.log.Info("disk usage back to normal, accepting writes", "usedRatio", ratio)
		}
	}
	spaceFull := ratio > float64(l.cfg.DiskMaxUsedSpaceRatio)/100
	timeUp := slices.Contains(l.hours, now.Hour())
	manual := l.manualDeletes.Load() > 0
	if !timeUp && !spaceFull && !force && !manual {
		return res, nil
	}
	if manual {
		l.manualDeletes.Add(-1)
	}
	force = force && l.cfg.CleanFileForcibly
	deadline := now.Add(-l.cfg.FileReservedTime).UnixNano()
	flushed := l.flushed.Load()

	var victims []*segment
	l.segMu.Lock()
	for i, s := range l.segs {
		if i == len(l.segs)-1 || len(victims) >= l.cfg.DeleteFilesBatchMax || s.end() > flushed {
			break
		}
		if !force && s.modTime.Load() > deadline {
			break // files are in write order: later ones are newer
		}
		victims = append(victims, s)
	}
	l.segs = l.segs[len(victims):]
	if len(victims) > 0 {
		l.minOffset.Store(l.segs[0].base)
	}
	l.segMu.Unlock()
	if len(victims) == 0 {
		return res, nil
	}

	var firstErr error
	for _, s := range victims {
		// Readers holding the segment keep its file open; unlinking is safe.
		if err := l.fs.Remove(s.path); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("commitlog: remove %s: %w", s.path, err)
		}
		s.release()
		res.Deleted = append(res.Deleted, s.path)
		l.log.Info("deleted segment", "file", s.path, "forced", force, "usedRatio", ratio)
	}
	if err := l.fs.SyncDir(l.cfg.Dir); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("commitlog: %w", err)
	}
	res.MinOffset = l.MinOffset()
	if l.cfg.OnMinOffsetChange != nil {
		l.cfg.OnMinOffsetChange(res.MinOffset)
	}
	return res, firstErr
}
