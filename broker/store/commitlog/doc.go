// Package commitlog is the broker's CommitLog: every message of every topic,
// appended in arrival order to fixed-size segment files, in exactly Apache
// RocketMQ's stored record format (pkg/message), so a pull body is a run of
// stored bytes and a Java slave or tool can read our files.
//
// Files are named by the 20-digit offset of their first byte
// (00000000000000000000, 00000000001073741824, …). A record never spans two
// files: when the next one does not fit, the rest of the file is filled with
// a BLANK record (magic 0xCBD43194) and the record goes into the next file.
//
// Writes: one append path under a mutex assigns offsets (physical offset,
// store timestamp and, through a QueueOffsetAssigner, the consume-queue
// offset) and copies records into a shared buffer; whichever caller finds no
// write in flight writes everything buffered with one WriteAt (group commit).
// ASYNC_FLUSH acknowledges once bytes are in the page cache and a flusher
// fsyncs periodically; SYNC_FLUSH acknowledges after an fsync that covers
// the record, one fsync serving every waiter that arrived meanwhile.
//
// Failures: a failed write or fsync, or a full disk, puts the log into a
// sticky not-writable state; Append then returns errors matching
// ErrNotWritable and never acknowledges the failed bytes. A restart recovers.
//
// Recovery: a checkpoint file records the flushed offset; an "abort" marker
// exists while the log is open. On open the log scans from the segment
// holding the checkpointed offset, verifies each record (magic, size bounds,
// body CRC, physical offset), and cuts the tail at the first bad record.
package commitlog
