package commitlog

import (
	"fmt"

	"github.com/rmqgo/rmq/pkg/message"
)

// readAhead is how much an unmapped segment reader fetches at a time.
const readAhead = 1 << 20

// segReader hands out byte ranges of one segment: straight from the mapping
// when there is one (and no bufp), else from a read-ahead buffer filled by
// ReadAt.
type segReader struct {
	seg    *segment
	buf    []byte
	bufp   *[]byte // where buf comes from and goes back to; nil: buf is its own
	bufPos int64   // segment position of buf[0]
	bufLen int64   // valid bytes in buf
}

// bytes returns n bytes at segment position pos, valid until the next call.
// limit (a segment position ≥ pos+n) caps what may be cached: bytes beyond
// the log's end can still change.
func (r *segReader) bytes(pos, n, limit int64) ([]byte, error) {
	if r.bufp == nil {
		if b := r.seg.slice(pos, n); b != nil {
			return b, nil
		}
	}
	if pos >= r.bufPos && pos+n <= r.bufPos+r.bufLen {
		return r.buf[pos-r.bufPos : pos-r.bufPos+n], nil
	}
	want := min(max(n, readAhead), limit-pos)
	if r.buf == nil && r.bufp != nil {
		r.buf = *r.bufp
	}
	if int64(cap(r.buf)) < want {
		r.buf = make([]byte, want)
		if r.bufp != nil {
			*r.bufp = r.buf
		}
	}
	r.buf = r.buf[:want]
	read := r.seg.readAt
	if r.bufp != nil {
		read = r.seg.readFile
	}
	if err := read(r.buf, pos); err != nil {
		r.bufLen = 0
		return nil, err
	}
	r.bufPos, r.bufLen = pos, want
	return r.buf[:n], nil
}

// stepKind says what sits at a position.
type stepKind int

const (
	stepRecord     stepKind = iota // a verified record
	stepEndOfFile                  // BLANK record or too little room left: go to the next segment
	stepIncomplete                 // the record extends past the readable limit
	stepCorrupt                    // garbage: the log ends here
)

// step examines the record at segment position pos with bytes readable up
// to limit (a segment position). zeroHeader is true for a corrupt step whose
// header is all zeros (the normal, never-written end of a log).
func (l *Log) step(r *segReader, pos, limit int64, verifyCRC bool) (v message.View, kind stepKind, zeroHeader bool, err error) {
	seg := r.seg
	rest := seg.size - pos
	if rest < message.BlankMinSize {
		return v, stepEndOfFile, false, nil
	}
	if pos+message.BlankMinSize > limit {
		return v, stepIncomplete, false, nil
	}
	hdr, err := r.bytes(pos, message.BlankMinSize, limit)
	if err != nil {
		return v, stepCorrupt, false, err
	}
	size, magic, _ := message.RecordHeader(hdr)
	zero := size == 0 && magic == 0
	if magic == message.BlankMagic {
		if int64(size) != rest {
			return v, stepCorrupt, false, fmt.Errorf("%w: BLANK of %d bytes at %d, %d left in file", ErrCorrupt, size, seg.base+pos, rest)
		}
		return v, stepEndOfFile, false, nil
	}
	if magic != message.MagicV1 && magic != message.MagicV2 ||
		size < message.MinRecordSize || int(size) > l.cfg.MaxRecordSize || int64(size) > rest {
		return v, stepCorrupt, zero, fmt.Errorf("%w: header size %d magic %#x at %d", ErrCorrupt, size, uint32(magic), seg.base+pos)
	}
	if pos+int64(size) > limit {
		return v, stepIncomplete, false, nil
	}
	b, err := r.bytes(pos, int64(size), limit)
	if err != nil {
		return v, stepCorrupt, false, err
	}
	v, err = message.ParseView(b, message.ParseOptions{VerifyCRC: verifyCRC})
	if err != nil {
		return v, stepCorrupt, false, fmt.Errorf("%w at %d: %w", ErrCorrupt, seg.base+pos, err)
	}
	if err := checkView(v, seg.base+pos); err != nil {
		return v, stepCorrupt, false, err
	}
	return v, stepRecord, false, nil
}

// checkView adds the log's own checks to a parsed record at offset off.
func checkView(v message.View, off int64) error {
	// The body CRC leaves topic and properties unprotected. Segments are
	// zero-filled ahead of the writer, so a torn write leaves zeros at the
	// record's end; a properties string never ends in a zero byte (writers
	// end it with 0x02, and Append refuses records that do not).
	if p := v.Properties(); len(p) > 0 && p[len(p)-1] == 0 {
		return fmt.Errorf("%w: torn record at %d (properties end in zeros)", ErrCorrupt, off)
	}
	// A record always names its own position; this rejects stale records
	// left behind a truncation even when their bytes are intact.
	if v.PhysicalOffset() != off {
		return fmt.Errorf("%w: record at %d claims offset %d", ErrCorrupt, off, v.PhysicalOffset())
	}
	return nil
}
