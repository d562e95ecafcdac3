// Package epoch holds a replica's epoch list: which controller-issued
// master epoch wrote which range of the CommitLog (Apache's EpochFileCache,
// org/apache/rocketmq/store/ha/autoswitch/EpochFileCache.java), persisted in
// the epoch file, and the common-point search a slave runs against its new
// master's list before it follows it (docs/replication.md).
//
// An entry (epoch, start) covers [start, next entry's start); the last one
// reaches the end of the log. Epochs strictly grow. A zero-length entry
// (start equal to the previous start: two elections with no write between
// them) is kept, unlike upstream, so every replica records every epoch it
// was told of.
package epoch
