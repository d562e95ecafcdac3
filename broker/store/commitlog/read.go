package commitlog

import (
	"fmt"
	"sync"

	"github.com/rmqgo/rmq/pkg/message"
)

// Buffer holds bytes read from the log. For mapped segments it aliases the
// mapping (no copy) and pins the segment; otherwise it owns a pooled copy.
// Call Release exactly once when done; Bytes must not be used afterwards.
type Buffer struct {
	b      []byte
	seg    *segment
	pooled *[]byte
	pool   *sync.Pool
}

// Bytes returns the data.
func (b *Buffer) Bytes() []byte { return b.b }

// Release gives the bytes back.
func (b *Buffer) Release() {
	if b.seg != nil {
		b.seg.release()
		b.seg = nil
	}
	if b.pooled != nil {
		b.pool.Put(b.pooled)
		b.pooled = nil
	}
	b.b = nil
}

// Read returns size bytes at offset. The range must lie below MaxOffset and
// inside one segment (a record never spans segments).
func (l *Log) Read(offset int64, size int) (Buffer, error) {
	if size < 0 || offset < l.MinOffset() || offset+int64(size) > l.MaxOffset() {
		return Buffer{}, fmt.Errorf("%w: [%d, +%d) outside [%d, %d)", ErrOffsetOutOfRange, offset, size, l.MinOffset(), l.MaxOffset())
	}
	seg, ok := l.segmentFor(offset)
	if !ok {
		return Buffer{}, fmt.Errorf("%w: offset %d (segment deleted)", ErrOffsetOutOfRange, offset)
	}
	pos := offset - seg.base
	if pos+int64(size) > seg.size {
		seg.release()
		return Buffer{}, fmt.Errorf("%w: [%d, +%d)", ErrCrossesSegment, offset, size)
	}
	if b := seg.slice(pos, int64(size)); b != nil {
		return Buffer{b: b, seg: seg}, nil
	}
	defer seg.release()
	pb := l.getBuf(size)
	if err := seg.readAt((*pb)[:size], pos); err != nil {
		l.pool.Put(pb)
		return Buffer{}, fmt.Errorf("commitlog: %w", err)
	}
	return Buffer{b: (*pb)[:size], pooled: pb, pool: &l.pool}, nil
}

func (l *Log) getBuf(size int) *[]byte {
	if p, ok := l.pool.Get().(*[]byte); ok && cap(*p) >= size {
		return p
	}
	b := make([]byte, max(size, 4096))
	return &b
}

// ReadChunk returns up to max contiguous bytes from offset, stopping at the
// end of the segment and at limit (MaxOffset when limit ≤ 0): what an HA
// master sends in one TRANSFER frame. It may end inside a record.
func (l *Log) ReadChunk(offset int64, max int, limit int64) (Buffer, error) {
	end := l.MaxOffset()
	if limit > 0 && limit < end {
		end = limit
	}
	if offset < l.MinOffset() || offset > end {
		return Buffer{}, fmt.Errorf("%w: %d outside [%d, %d]", ErrOffsetOutOfRange, offset, l.MinOffset(), end)
	}
	segEnd := (offset/l.cfg.FileSize + 1) * l.cfg.FileSize
	n := min(int64(max), end-offset, segEnd-offset)
	if n == 0 {
		return Buffer{}, nil
	}
	return l.Read(offset, int(n))
}

// Record is one verified record read from the log.
type Record struct {
	Offset int64
	View   message.View
	buf    Buffer
}

// Release frees the record's bytes (ReadRecord results only).
func (r *Record) Release() { r.buf.Release() }

// ReadRecord reads and verifies (magic, bounds, physical offset, and the
// body CRC when VerifyCRCOnRead) the record at offset. A BLANK record
// yields message.ErrBlank.
func (l *Log) ReadRecord(offset int64) (Record, error) {
	hdr, err := l.Read(offset, message.BlankMinSize)
	if err != nil {
		return Record{}, err
	}
	size, magic, _ := message.RecordHeader(hdr.Bytes())
	hdr.Release()
	if magic == message.BlankMagic {
		return Record{}, fmt.Errorf("commitlog: offset %d: %w", offset, message.ErrBlank)
	}
	if size < message.MinRecordSize || int(size) > l.cfg.MaxRecordSize {
		return Record{}, fmt.Errorf("%w: size %d at %d", ErrCorrupt, size, offset)
	}
	buf, err := l.Read(offset, int(size))
	if err != nil {
		return Record{}, err
	}
	v, err := message.ParseView(buf.Bytes(), message.ParseOptions{VerifyCRC: l.cfg.VerifyCRCOnRead})
	if err != nil {
		buf.Release()
		return Record{}, fmt.Errorf("%w at %d: %w", ErrCorrupt, offset, err)
	}
	if err := checkView(v, offset); err != nil {
		buf.Release()
		return Record{}, err
	}
	return Record{Offset: offset, View: v, buf: buf}, nil
}
