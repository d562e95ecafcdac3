package commitlog

import (
	"fmt"
	"io"
)

// Iterator walks records in offset order from a starting offset, skipping
// BLANK file tails: the dispatcher ("reput") feeds consume queues with it.
// Not safe for concurrent use.
type Iterator struct {
	l      *Log
	off    int64
	limit  func() int64
	verify bool
	r      *segReader
	buf    *[]byte // IteratorOptions.ReadBuffer
}

// IteratorOptions tune NewIterator.
type IteratorOptions struct {
	// Limit returns the offset iteration must not pass (e.g. the HA
	// confirm offset); nil means MaxOffset.
	Limit func() int64
	// ReadBuffer, when not nil, makes the iterator read with ReadAt into
	// *ReadBuffer (grown as needed, and left there for the next iterator)
	// even where the segment is mapped. The dispatcher reads every record
	// once: through the mapping, each page it touches would stay in the
	// broker's resident set (RssFile) until the segment is unmapped, which
	// with a 1 GiB CommitLog file is up to 1 GiB of RSS; read into a
	// buffer, the pages stay in the kernel's page cache only.
	ReadBuffer *[]byte
}

// NewIterator starts at offset from, which must be a record boundary
// (normally a previous Iterator.Offset or a segment start).
func (l *Log) NewIterator(from int64, opts IteratorOptions) *Iterator {
	lim := opts.Limit
	if lim == nil {
		lim = l.MaxOffset
	}
	return &Iterator{l: l, off: from, limit: lim, verify: l.cfg.VerifyCRCOnRead, buf: opts.ReadBuffer}
}

// Offset is where the next record starts.
func (it *Iterator) Offset() int64 { return it.off }

// Next returns the next record. Its View is valid until the next call to
// Next or Close. io.EOF means no complete record is available yet (caught
// up with the limit, or a record still arriving); call again later.
// ErrCorrupt means the log is damaged at Offset.
func (it *Iterator) Next() (Record, error) {
	for {
		limit := min(it.limit(), it.l.MaxOffset())
		if it.off >= limit {
			return Record{}, io.EOF
		}
		if it.r == nil || it.off < it.r.seg.base || it.off >= it.r.seg.end() {
			if err := it.switchSegment(); err != nil {
				return Record{}, err
			}
		}
		seg := it.r.seg
		pos := it.off - seg.base
		v, kind, _, err := it.l.step(it.r, pos, min(limit-seg.base, seg.size), it.verify)
		switch kind {
		case stepRecord:
			rec := Record{Offset: it.off, View: v}
			it.off += int64(v.TotalSize())
			return rec, nil
		case stepEndOfFile:
			it.off = seg.end()
		case stepIncomplete:
			return Record{}, io.EOF
		default:
			return Record{}, err
		}
	}
}

func (it *Iterator) switchSegment() error {
	it.Close()
	seg, ok := it.l.segmentFor(it.off)
	if !ok {
		return fmt.Errorf("%w: offset %d (min %d)", ErrOffsetOutOfRange, it.off, it.l.MinOffset())
	}
	it.r = &segReader{seg: seg, bufp: it.buf}
	return nil
}

// Close releases the segment the iterator holds.
func (it *Iterator) Close() {
	if it.r != nil {
		it.r.seg.release()
		it.r = nil
	}
}
