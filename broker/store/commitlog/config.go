package commitlog

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/broker/store/vfs"
	"github.com/rmqgo/rmq/pkg/message"
)

// FlushDiskType is RocketMQ's flushDiskType.
type FlushDiskType int

const (
	// AsyncFlush acknowledges once bytes are in the page cache.
	AsyncFlush FlushDiskType = iota
	// SyncFlush acknowledges after an fsync covering the record.
	SyncFlush
)

func (t FlushDiskType) String() string {
	if t == SyncFlush {
		return "SYNC_FLUSH"
	}
	return "ASYNC_FLUSH"
}

// ParseFlushDiskType reads "ASYNC_FLUSH" or "SYNC_FLUSH".
func ParseFlushDiskType(s string) (FlushDiskType, error) {
	switch s {
	case "ASYNC_FLUSH":
		return AsyncFlush, nil
	case "SYNC_FLUSH":
		return SyncFlush, nil
	}
	return 0, fmt.Errorf("commitlog: unknown flushDiskType %q", s)
}

// QueueOffsetAssigner hands out consume-queue offsets. RocketMQ assigns them
// at append time so they follow physical order; the consume-queue layer
// implements this.
type QueueOffsetAssigner interface {
	// AssignQueueOffset is called under the append lock, in physical-offset
	// order, once per Append with the first record and the number of
	// records in the call. It returns the first record's queue offset; the
	// others get consecutive ones. It must be fast and must not call back
	// into the Log. An error fails the Append before anything is written.
	//
	// Offsets handed out for an Append whose write then fails are not given
	// back: the log stops accepting writes, and a restart rebuilds queue
	// offsets from the recovered log.
	AssignQueueOffset(first message.View, n int) (int64, error)
}

// Config configures a Log. Names in comments are Apache RocketMQ's
// MessageStoreConfig keys.
type Config struct {
	// Dir holds the segment files (storePathCommitLog).
	Dir string
	// CheckpointPath is the checkpoint file; default <Dir>/../checkpoint.
	CheckpointPath string
	// AbortPath is the crash marker; default <Dir>/../abort.
	AbortPath string

	// FileSize is the segment size (mappedFileSizeCommitLog). Must be the
	// same on every replica.
	FileSize int64
	// MaxRecordSize bounds one Append: Java allows maxMessageSize (4 MiB,
	// a body limit the broker checks) plus 64 KiB for headers and
	// properties.
	MaxRecordSize int
	// Contended reports whether more appends are probably on their way
	// (the broker: other requests are being served). An append then
	// yields once before writing so that they share its write (group
	// commit); a lone append writes at once. Nil: only appends already
	// inside the log count.
	Contended func() bool

	FlushDiskType FlushDiskType
	// FlushInterval is the async flusher's period (flushIntervalCommitLog).
	FlushInterval time.Duration
	// FlushLeastPages: the async flusher skips a round with fewer dirty 4 KiB
	// pages (flushCommitLogLeastPages)...
	FlushLeastPages int
	// ...unless FlushThoroughInterval passed since the last flush
	// (flushCommitLogThoroughInterval).
	FlushThoroughInterval time.Duration
	// SyncFlushTimeout bounds a SYNC_FLUSH wait (syncFlushTimeout).
	SyncFlushTimeout time.Duration
	// MaxBatchBytes caps bytes buffered behind an in-flight write.
	MaxBatchBytes int

	// CheckCRCOnRecover verifies body CRCs during recovery (checkCRCOnRecover).
	CheckCRCOnRecover bool
	// VerifyCRCOnRead verifies body CRCs in ReadRecord and iterators.
	VerifyCRCOnRead bool
	// UseMmap serves reads from read-only mappings when the FS allows.
	UseMmap bool
	// MappedHotBytes is how much of the mapped CommitLog below the write
	// position stays resident in the broker's memory; older mapped pages
	// are given back every ReleaseInterval (they stay in the page cache, and
	// a read of them faults them in again). 0 keeps everything.
	MappedHotBytes  int64
	ReleaseInterval time.Duration
	// Preallocate reserves each segment's blocks when it is created
	// (fallocate), so a full disk shows at roll time instead of mid-file
	// and writes skip block allocation. Segments then use FileSize on disk
	// at once.
	Preallocate bool
	// ZeroAhead keeps this many bytes after the write position written
	// with zeros by a background writer (zeroahead.go), so that the
	// fdatasync after an append finds plain blocks rather than preallocated
	// ones to convert. 0: off. Costs a second write of every byte.
	ZeroAhead int64
	// PrepareNext creates each next segment in the background as soon as
	// the previous one becomes active (Apache's AllocateMappedFileService),
	// so that a roll does not fsync a new file and the directory under the
	// append lock: under write-back load that took hundreds of
	// milliseconds, during which every send waited. After a crash the
	// spare, empty file is removed by recovery like any segment after
	// the end.
	PrepareNext bool

	// FileReservedTime is how long a segment is kept after its last write
	// (fileReservedTime, in hours upstream).
	FileReservedTime time.Duration
	// DeleteWhen lists the hours of day when expired files are deleted,
	// "04" or "04;05" (deleteWhen).
	DeleteWhen string
	// DiskMaxUsedSpaceRatio (percent): above it, expired files are deleted
	// at any hour (diskMaxUsedSpaceRatio).
	DiskMaxUsedSpaceRatio int
	// DiskSpaceCleanForciblyRatio: above it, files are deleted even if not
	// expired (diskSpaceCleanForciblyRatio).
	DiskSpaceCleanForciblyRatio float64
	// DiskSpaceWarningLevelRatio: above it, writes are refused with
	// ErrDiskFull until usage drops (diskSpaceWarningLevelRatio).
	DiskSpaceWarningLevelRatio float64
	// NoReadAhead maps segments MADV_RANDOM: the kernel's read-ahead off
	// (dataReadAheadEnable=false).
	NoReadAhead bool
	// CleanFileForcibly allows deleting unexpired files when the disk is
	// nearly full (cleanFileForciblyEnable).
	CleanFileForcibly bool
	// CleanResourceInterval is the retention check period
	// (cleanResourceInterval); 0 disables the background check.
	CleanResourceInterval time.Duration
	// DeleteFilesBatchMax bounds files deleted per round (deleteFileBatchMax).
	DeleteFilesBatchMax int

	// FS is the file system; default vfs.OS().
	FS vfs.FS
	// Logger receives operational logs; default slog.Default().
	Logger *slog.Logger
	// Clock stamps records and drives retention; default time.Now.
	Clock func() time.Time
	// Assigner assigns queue offsets; nil keeps the records' own values.
	Assigner QueueOffsetAssigner
	// OnMinOffsetChange is called (outside locks) after retention deleted
	// files, with the new minimum physical offset, so consume queues can
	// drop entries below it.
	OnMinOffsetChange func(minOffset int64)
}

// DefaultConfig returns Apache RocketMQ's defaults for a log in dir.
func DefaultConfig(dir string) Config {
	return Config{
		Dir:                         dir,
		FileSize:                    1 << 30,
		MaxRecordSize:               4<<20 + 64<<10,
		FlushDiskType:               AsyncFlush,
		FlushInterval:               500 * time.Millisecond,
		FlushLeastPages:             4,
		FlushThoroughInterval:       10 * time.Second,
		SyncFlushTimeout:            5 * time.Second,
		MaxBatchBytes:               8 << 20,
		CheckCRCOnRecover:           true,
		VerifyCRCOnRead:             true,
		UseMmap:                     true,
		MappedHotBytes:              128 << 20,
		ReleaseInterval:             10 * time.Second,
		Preallocate:                 true,
		FileReservedTime:            72 * time.Hour,
		DeleteWhen:                  "04",
		DiskMaxUsedSpaceRatio:       75,
		DiskSpaceCleanForciblyRatio: 0.85,
		DiskSpaceWarningLevelRatio:  0.90,
		CleanFileForcibly:           true,
		CleanResourceInterval:       10 * time.Second,
		DeleteFilesBatchMax:         10,
	}
}

// Validate checks the configuration; the optional paths and dependencies
// may be left zero (see withDefaults).
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Dir == "" {
		bad("Dir is empty")
	}
	if c.FileSize < 4096 {
		bad("FileSize %d < 4096", c.FileSize)
	}
	if c.MaxRecordSize < message.MinRecordSize || int64(c.MaxRecordSize) > c.FileSize-message.BlankMinSize {
		bad("MaxRecordSize %d not in [%d, FileSize-8]", c.MaxRecordSize, message.MinRecordSize)
	}
	if c.FlushDiskType != AsyncFlush && c.FlushDiskType != SyncFlush {
		bad("unknown FlushDiskType %d", c.FlushDiskType)
	}
	if c.FlushInterval <= 0 {
		bad("FlushInterval must be positive")
	}
	if c.FlushLeastPages < 0 {
		bad("FlushLeastPages must not be negative")
	}
	if c.SyncFlushTimeout <= 0 {
		bad("SyncFlushTimeout must be positive")
	}
	if c.MaxBatchBytes < c.MaxRecordSize {
		bad("MaxBatchBytes %d < MaxRecordSize %d", c.MaxBatchBytes, c.MaxRecordSize)
	}
	if c.FileReservedTime <= 0 {
		bad("FileReservedTime must be positive")
	}
	if _, err := parseDeleteWhen(c.DeleteWhen); err != nil {
		bad("DeleteWhen: %v", err)
	}
	if c.DiskMaxUsedSpaceRatio < 10 || c.DiskMaxUsedSpaceRatio > 95 {
		// Java clamps the same way (getDiskMaxUsedSpaceRatio).
		bad("DiskMaxUsedSpaceRatio %d not in [10, 95]", c.DiskMaxUsedSpaceRatio)
	}
	if c.DiskSpaceCleanForciblyRatio <= 0 || c.DiskSpaceCleanForciblyRatio > 1 ||
		c.DiskSpaceWarningLevelRatio <= 0 || c.DiskSpaceWarningLevelRatio > 1 {
		bad("disk space ratios must be in (0, 1]")
	}
	if c.CleanResourceInterval < 0 || c.DeleteFilesBatchMax <= 0 {
		bad("CleanResourceInterval must not be negative and DeleteFilesBatchMax must be positive")
	}
	if len(errs) > 0 {
		return fmt.Errorf("commitlog: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// withDefaults fills the optional paths (checkpoint and abort files next to
// Dir) and dependencies left zero.
func (c Config) withDefaults() Config {
	if c.CheckpointPath == "" {
		c.CheckpointPath = filepath.Join(filepath.Dir(filepath.Clean(c.Dir)), "checkpoint")
	}
	if c.AbortPath == "" {
		c.AbortPath = filepath.Join(filepath.Dir(filepath.Clean(c.Dir)), "abort")
	}
	if c.FS == nil {
		c.FS = vfs.OS()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// parseDeleteWhen reads "04" or "04;05" into hours.
func parseDeleteWhen(s string) ([]int, error) {
	var hours []int
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		h, err := strconv.Atoi(part)
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("bad hour %q", part)
		}
		hours = append(hours, h)
	}
	if len(hours) == 0 {
		return nil, fmt.Errorf("no hours in %q", s)
	}
	return hours, nil
}
