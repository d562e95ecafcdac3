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
	r   io.Reader
	hdr [HeaderSize]byte
	buf []byte
}

// NewTransferReader reads frames from r.
func NewTransferReader(r io.Reader) *TransferReader { return &TransferReader{r: r} }

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
	if cap(t.buf) < int(n) {
		t.buf = make([]byte, n)
	}
	body := t.buf[:n]
	if _, err := io.ReadFull(t.r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Transfer{}, err
	}
	return Transfer{Start: start, Body: body}, nil
}
