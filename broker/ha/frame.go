package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Sizes of the classic protocol's frames (all integers big-endian).
const (
	// ReportSize is a slave's report: int64 max offset.
	ReportSize = 8
	// HeaderSize is a transfer frame's header: int64 start | int32 n.
	HeaderSize = 12
	// MaxTransferBody bounds a frame body a slave accepts: Apache's slave
	// reads into a 4 MiB buffer, so no master sends more.
	MaxTransferBody = 4 << 20
)

// ErrBadFrame is a frame no correct peer sends.
var ErrBadFrame = errors.New("ha: bad frame")

// AppendReport appends a slave's report of offset to dst.
func AppendReport(dst []byte, offset int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(offset))
}

// ReadReport reads one report; a negative offset is ErrBadFrame.
func ReadReport(r io.Reader, buf *[ReportSize]byte) (int64, error) {
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return 0, err
	}
	off := int64(binary.BigEndian.Uint64(buf[:]))
	if off < 0 {
		return 0, fmt.Errorf("%w: negative report %d", ErrBadFrame, off)
	}
	return off, nil
}

// AppendHeader appends a transfer header (start offset, body length).
func AppendHeader(dst []byte, start int64, n int) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(start))
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// Transfer is one decoded master→slave frame. Body aliases the reader's
// buffer: valid until the next ReadTransfer.
type Transfer struct {
	Start int64
	Body  []byte
}

// TransferReader decodes transfer frames from a stream.
type TransferReader struct {
	bodyReader
	hdr [HeaderSize]byte
}

// NewTransferReader reads frames from r.
func NewTransferReader(r io.Reader) *TransferReader {
	return &TransferReader{bodyReader: bodyReader{r: r}}
}

// Next reads one frame. A negative start or a body length outside
// [0, MaxTransferBody] is ErrBadFrame; a stream ending inside a frame is
// io.ErrUnexpectedEOF.
func (t *TransferReader) Next() (Transfer, error) {
	if _, err := io.ReadFull(t.r, t.hdr[:]); err != nil {
		return Transfer{}, err
	}
	start := int64(binary.BigEndian.Uint64(t.hdr[:8]))
	n := int32(binary.BigEndian.Uint32(t.hdr[8:]))
	if start < 0 || n < 0 || n > MaxTransferBody {
		return Transfer{}, fmt.Errorf("%w: start %d, body %d bytes", ErrBadFrame, start, n)
	}
	body, err := t.body(n)
	if err != nil {
		return Transfer{}, err
	}
	return Transfer{Start: start, Body: body}, nil
}

// bodyReader is what the frame readers of both protocols share: the stream
// and the buffer frame bodies are read into, reused from frame to frame.
type bodyReader struct {
	r   io.Reader
	buf []byte
}

// body reads the n-byte body that follows a header (n already checked
// against MaxTransferBody). The result aliases the buffer until the next
// read; a stream ending inside the body is io.ErrUnexpectedEOF.
func (b *bodyReader) body(n int32) ([]byte, error) {
	if cap(b.buf) < int(n) {
		b.buf = make([]byte, n)
	}
	body := b.buf[:n]
	if err := readRest(b.r, body); err != nil {
		return nil, err
	}
	return body, nil
}
