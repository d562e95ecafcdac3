package commitlog

import "errors"

// ErrNotWritable is matched (errors.Is) by every error that means the log
// refuses writes: the broker answers SERVICE_NOT_AVAILABLE.
var ErrNotWritable = errors.New("commitlog: not writable")

// Kinds of not-writable. Each matches ErrNotWritable too.
var (
	ErrDiskFull    error = &notWritable{"commitlog: disk full"}
	ErrWriteFailed error = &notWritable{"commitlog: write failed"}
	ErrFlushFailed error = &notWritable{"commitlog: flush failed"}
	ErrClosed      error = &notWritable{"commitlog: closed"}
)

type notWritable struct{ msg string }

func (e *notWritable) Error() string        { return e.msg }
func (e *notWritable) Is(target error) bool { return target == ErrNotWritable }

// Other errors.
var (
	// ErrFlushTimeout: the record was written but no fsync covered it within
	// SyncFlushTimeout (Java's FLUSH_DISK_TIMEOUT). The AppendResult is
	// still valid; the record may or may not be durable.
	ErrFlushTimeout = errors.New("commitlog: flush timeout")
	// ErrRecordTooLarge: a record (or batch) larger than MaxRecordSize or a
	// segment.
	ErrRecordTooLarge = errors.New("commitlog: record too large")
	// ErrBadRecord: Append was given bytes that are not stored records.
	ErrBadRecord = errors.New("commitlog: bad record")
	// ErrOffsetOutOfRange: a read or truncation outside [MinOffset, MaxOffset].
	ErrOffsetOutOfRange = errors.New("commitlog: offset out of range")
	// ErrCrossesSegment: a read or raw append that would span two files.
	ErrCrossesSegment = errors.New("commitlog: range crosses a segment boundary")
	// ErrOffsetMismatch: AppendRaw at an offset other than MaxOffset.
	ErrOffsetMismatch = errors.New("commitlog: raw append offset mismatch")
	// ErrCorrupt: a record failed verification while reading.
	ErrCorrupt = errors.New("commitlog: corrupt record")
)
