package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/rmqgo/rmq/broker/store/epoch"
)

// States of the auto-switch protocol (org/apache/rocketmq/store/ha/HAConnectionState.java):
// the int32 ordinal leads every frame.
const (
	StateReady     int32 = 0
	StateHandshake int32 = 1
	StateTransfer  int32 = 2
	StateSuspend   int32 = 3
	StateShutdown  int32 = 4
)

// Frame sizes of the auto-switch protocol (big-endian integers).
const (
	// SlaveHandshakeSize: state | int16 syncFromLastFile | int16
	// asyncLearner | int64 slave controller id.
	SlaveHandshakeSize = 16
	// AckSize: state | int64 slave max offset.
	AckSize = 12
	// MasterHandshakeHeaderSize: state | bodySize | int64 master max
	// offset | int32 last epoch; the body is 12 bytes per epoch entry.
	MasterHandshakeHeaderSize = 20
	// EpochEntrySize: int32 epoch | int64 start offset.
	EpochEntrySize = 12
	// TransferHeaderSize: state | bodySize | int64 start | int32 epoch |
	// int64 epoch start | int64 confirm offset.
	TransferHeaderSize = 36
)

// SlaveHello is a slave's handshake.
type SlaveHello struct {
	SyncFromLastFile bool
	AsyncLearner     bool
	SlaveID          int64
}

func flag(b bool) uint16 {
	if b {
		return 1
	}
	return 0
}

// AppendSlaveHandshake appends a slave's 16-byte handshake.
func AppendSlaveHandshake(dst []byte, h SlaveHello) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(StateHandshake))
	dst = binary.BigEndian.AppendUint16(dst, flag(h.SyncFromLastFile))
	dst = binary.BigEndian.AppendUint16(dst, flag(h.AsyncLearner))
	return binary.BigEndian.AppendUint64(dst, uint64(h.SlaveID))
}

// AppendAck appends a slave's 12-byte ack of offset.
func AppendAck(dst []byte, offset int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(StateTransfer))
	return binary.BigEndian.AppendUint64(dst, uint64(offset))
}

// SlaveFrame is one decoded slave→master frame: a handshake (State
// StateHandshake, Hello) or an ack (StateTransfer, Ack).
type SlaveFrame struct {
	State int32
	Hello SlaveHello
	Ack   int64
}

// ReadSlaveFrame reads one slave frame. Its length follows from its state,
// so any other state, a flag other than 0/1 or a negative offset is
// ErrBadFrame (the stream cannot be resynchronised: close).
func ReadSlaveFrame(r io.Reader) (SlaveFrame, error) {
	var buf [SlaveHandshakeSize]byte
	if _, err := io.ReadFull(r, buf[:4]); err != nil {
		return SlaveFrame{}, err
	}
	f := SlaveFrame{State: int32(binary.BigEndian.Uint32(buf[:4]))}
	switch f.State {
	case StateHandshake:
		if err := readRest(r, buf[4:SlaveHandshakeSize]); err != nil {
			return SlaveFrame{}, err
		}
		a, b := binary.BigEndian.Uint16(buf[4:]), binary.BigEndian.Uint16(buf[6:])
		f.Hello = SlaveHello{SyncFromLastFile: a == 1, AsyncLearner: b == 1, SlaveID: int64(binary.BigEndian.Uint64(buf[8:]))}
		if a > 1 || b > 1 {
			return SlaveFrame{}, fmt.Errorf("%w: handshake flags %d, %d", ErrBadFrame, a, b)
		}
	case StateTransfer:
		if err := readRest(r, buf[4:AckSize]); err != nil {
			return SlaveFrame{}, err
		}
		f.Ack = int64(binary.BigEndian.Uint64(buf[4:]))
		if f.Ack < 0 {
			return SlaveFrame{}, fmt.Errorf("%w: negative ack %d", ErrBadFrame, f.Ack)
		}
	default:
		return SlaveFrame{}, fmt.Errorf("%w: slave frame in state %d", ErrBadFrame, f.State)
	}
	return f, nil
}

// readRest reads the remainder of a frame whose first bytes arrived: EOF
// there is a truncated frame.
func readRest(r io.Reader, b []byte) error {
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// MasterHello is a master's handshake: its log end, last epoch and whole
// epoch list.
type MasterHello struct {
	MaxOffset int64
	LastEpoch int32
	Epochs    []epoch.Entry
}

// AppendMasterHandshake appends a master's handshake (20 + 12k bytes).
func AppendMasterHandshake(dst []byte, h MasterHello) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(StateHandshake))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(h.Epochs)*EpochEntrySize))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastEpoch))
	for _, e := range h.Epochs {
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.Epoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.Start))
	}
	return dst
}

// TransferHeader is the fixed part of a master's data or keep-alive frame.
type TransferHeader struct {
	Start      int64
	Epoch      int32
	EpochStart int64
	Confirm    int64
}

// AppendTransferHeader appends a transfer header for a body of n bytes.
func AppendTransferHeader(dst []byte, h TransferHeader, n int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(StateTransfer))
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.Start))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.Epoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.EpochStart))
	return binary.BigEndian.AppendUint64(dst, uint64(h.Confirm))
}

// MasterFrame is one decoded master→slave frame. Body aliases the
// reader's buffer: valid until the next Next.
type MasterFrame struct {
	State    int32
	Hello    MasterHello    // StateHandshake
	Transfer TransferHeader // StateTransfer
	Body     []byte         // StateTransfer
}

// MasterFrameReader decodes master frames from a stream.
type MasterFrameReader struct {
	bodyReader
	hdr [TransferHeaderSize]byte
}

// NewMasterFrameReader reads frames from r.
func NewMasterFrameReader(r io.Reader) *MasterFrameReader {
	return &MasterFrameReader{bodyReader: bodyReader{r: r}}
}

// Next reads one frame. A state other than HANDSHAKE or TRANSFER, a body
// size outside [0, MaxTransferBody], a handshake body that is not whole
// entries, or negative offsets are ErrBadFrame.
func (m *MasterFrameReader) Next() (MasterFrame, error) {
	if _, err := io.ReadFull(m.r, m.hdr[:8]); err != nil {
		return MasterFrame{}, err
	}
	f := MasterFrame{State: int32(binary.BigEndian.Uint32(m.hdr[:4]))}
	n := int32(binary.BigEndian.Uint32(m.hdr[4:8]))
	if n < 0 || n > MaxTransferBody {
		return MasterFrame{}, fmt.Errorf("%w: body of %d bytes", ErrBadFrame, n)
	}
	switch f.State {
	case StateHandshake:
		if n%EpochEntrySize != 0 {
			return MasterFrame{}, fmt.Errorf("%w: handshake body of %d bytes", ErrBadFrame, n)
		}
		if err := readRest(m.r, m.hdr[8:MasterHandshakeHeaderSize]); err != nil {
			return MasterFrame{}, err
		}
		f.Hello.MaxOffset = int64(binary.BigEndian.Uint64(m.hdr[8:]))
		f.Hello.LastEpoch = int32(binary.BigEndian.Uint32(m.hdr[16:]))
		body, err := m.body(n)
		if err != nil {
			return MasterFrame{}, err
		}
		f.Hello.Epochs = make([]epoch.Entry, 0, len(body)/EpochEntrySize)
		for p := 0; p < len(body); p += EpochEntrySize {
			e := epoch.Entry{Epoch: int32(binary.BigEndian.Uint32(body[p:])), Start: int64(binary.BigEndian.Uint64(body[p+4:]))}
			if e.Start < 0 {
				return MasterFrame{}, fmt.Errorf("%w: epoch %d starts at %d", ErrBadFrame, e.Epoch, e.Start)
			}
			f.Hello.Epochs = append(f.Hello.Epochs, e)
		}
		if f.Hello.MaxOffset < 0 {
			return MasterFrame{}, fmt.Errorf("%w: master max offset %d", ErrBadFrame, f.Hello.MaxOffset)
		}
	case StateTransfer:
		if err := readRest(m.r, m.hdr[8:TransferHeaderSize]); err != nil {
			return MasterFrame{}, err
		}
		h := &f.Transfer
		h.Start = int64(binary.BigEndian.Uint64(m.hdr[8:]))
		h.Epoch = int32(binary.BigEndian.Uint32(m.hdr[16:]))
		h.EpochStart = int64(binary.BigEndian.Uint64(m.hdr[20:]))
		h.Confirm = int64(binary.BigEndian.Uint64(m.hdr[28:]))
		// Start -1 is an empty master's heartbeat: Apache's
		// AutoSwitchHAConnection sends its nextTransferFromWhere, -1
		// while its CommitLog has no file, in a header without a body
		// (buildTransferHeaderBuffer). Its own slave checks the offset
		// only of frames with a body; only those may not carry -1 here.
		if h.Start < -1 || h.Start == -1 && n > 0 || h.EpochStart < 0 || h.Confirm < 0 {
			return MasterFrame{}, fmt.Errorf("%w: transfer header %+v", ErrBadFrame, *h)
		}
		body, err := m.body(n)
		if err != nil {
			return MasterFrame{}, err
		}
		f.Body = body
	default:
		return MasterFrame{}, fmt.Errorf("%w: master frame in state %d", ErrBadFrame, f.State)
	}
	return f, nil
}
