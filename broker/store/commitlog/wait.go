package commitlog

import "context"

// WaitFlushed blocks until every byte below end is fsynced, as a
// SYNC_FLUSH Append does. Callers that appended with NoFlushWait (to keep a
// lock short) wait here afterwards; the wait joins the same group commit.
func (l *Log) WaitFlushed(ctx context.Context, end int64) error {
	return l.waitFlushed(ctx, end)
}

// Config returns the log's configuration (after defaults were applied).
func (l *Log) Config() Config { return l.cfg }
