package ha

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/rmqgo/rmq/broker/store/epoch"
)

func TestAutoSwitchFrameLayout(t *testing.T) {
	hs := AppendSlaveHandshake(nil, SlaveHello{SyncFromLastFile: true, SlaveID: 3})
	want := []byte{0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}
	if !bytes.Equal(hs, want) {
		t.Fatalf("slave handshake % x", hs)
	}
	if ack := AppendAck(nil, 258); !bytes.Equal(ack, []byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 2}) {
		t.Fatalf("ack % x", ack)
	}
	mh := AppendMasterHandshake(nil, MasterHello{MaxOffset: 900, LastEpoch: 4, Epochs: []epoch.Entry{{Epoch: 1, Start: 0}, {Epoch: 4, Start: 800}}})
	if len(mh) != MasterHandshakeHeaderSize+2*EpochEntrySize {
		t.Fatalf("master handshake is %d bytes", len(mh))
	}
	tr := AppendTransferHeader(nil, TransferHeader{Start: 1, Epoch: 2, EpochStart: 3, Confirm: 4}, 5)
	wantTr := []byte{0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4}
	if !bytes.Equal(tr, wantTr) {
		t.Fatalf("transfer header % x", tr)
	}

	r := bytes.NewReader(slices.Concat(hs, AppendAck(nil, 7)))
	f, err := ReadSlaveFrame(r)
	if err != nil || f.State != StateHandshake || f.Hello != (SlaveHello{SyncFromLastFile: true, SlaveID: 3}) {
		t.Fatalf("handshake %+v, %v", f, err)
	}
	if f, err = ReadSlaveFrame(r); err != nil || f.State != StateTransfer || f.Ack != 7 {
		t.Fatalf("ack %+v, %v", f, err)
	}
	mr := NewMasterFrameReader(bytes.NewReader(slices.Concat(mh, tr, []byte("hello"))))
	m, err := mr.Next()
	if err != nil || m.Hello.MaxOffset != 900 || m.Hello.LastEpoch != 4 || len(m.Hello.Epochs) != 2 || m.Hello.Epochs[1] != (epoch.Entry{Epoch: 4, Start: 800}) {
		t.Fatalf("master handshake %+v, %v", m, err)
	}
	if m, err = mr.Next(); err != nil || m.Transfer != (TransferHeader{1, 2, 3, 4}) || string(m.Body) != "hello" {
		t.Fatalf("transfer %+v, %v", m, err)
	}

	// An Apache master with an empty CommitLog heartbeats with offset -1
	// and no body (bytes as Apache 5.5.0 sent them to our slave).
	hb := []byte{0, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if m, err := NewMasterFrameReader(bytes.NewReader(hb)).Next(); err != nil || m.Transfer != (TransferHeader{Start: -1, Epoch: 1}) || len(m.Body) != 0 {
		t.Fatalf("empty master's heartbeat %+v, %v", m, err)
	}
}

func TestAutoSwitchFrameRejects(t *testing.T) {
	bad := [][]byte{
		{0, 0, 0, 5, 0, 0, 0, 0},             // state > 4
		{0, 0, 0, 0, 0, 0, 0, 0},             // READY is never sent
		{0, 0, 0, 2, 0, 0x40, 0, 1},          // body > 4 MiB
		{0, 0, 0, 1, 0, 0, 0, 5},             // handshake body not whole entries
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, // negative state
		// offset -1 with a body (only an empty heartbeat may carry it)
		{0, 0, 0, 2, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		// offset -2
		{0, 0, 0, 2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
	}
	for i, b := range bad {
		b = append(b, make([]byte, 64)...)
		if _, err := NewMasterFrameReader(bytes.NewReader(b)).Next(); !errors.Is(err, ErrBadFrame) {
			t.Errorf("master frame %d: %v", i, err)
		}
	}
	for i, b := range [][]byte{
		{0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		{0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		{0, 0, 0, 2, 0x80, 0, 0, 0, 0, 0, 0, 0},
	} {
		if _, err := ReadSlaveFrame(bytes.NewReader(b)); !errors.Is(err, ErrBadFrame) {
			t.Errorf("slave frame %d: %v", i, err)
		}
	}
	// A 12-byte prefix of a handshake is not a frame (ours waits for 16).
	if _, err := ReadSlaveFrame(bytes.NewReader(AppendSlaveHandshake(nil, SlaveHello{SlaveID: 1})[:12])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short handshake: %v", err)
	}
}

// FuzzAutoSwitchMasterFrames: the slave's decoder never panics, and what
// it accepts re-encodes to exactly the bytes it consumed.
func FuzzAutoSwitchMasterFrames(f *testing.F) {
	f.Add(AppendMasterHandshake(nil, MasterHello{MaxOffset: 10, LastEpoch: 1, Epochs: []epoch.Entry{{Epoch: 1}}}))
	f.Add(append(AppendTransferHeader(nil, TransferHeader{Start: 5, Epoch: 1, Confirm: 5}, 2), 'h', 'i'))
	f.Add(AppendTransferHeader(nil, TransferHeader{}, MaxTransferBody+1))
	f.Add(AppendTransferHeader(nil, TransferHeader{Start: -1, Epoch: 1}, 0)) // an empty Apache master's heartbeat
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		mr := NewMasterFrameReader(r)
		checkReencoded(t, data, r, func(again []byte) ([]byte, error) {
			fr, err := mr.Next()
			if err != nil {
				return again, err
			}
			switch fr.State {
			case StateHandshake:
				return AppendMasterHandshake(again, fr.Hello), nil
			case StateTransfer:
				return append(AppendTransferHeader(again, fr.Transfer, len(fr.Body)), fr.Body...), nil
			}
			t.Fatalf("accepted state %d", fr.State)
			return nil, nil
		})
	})
}

// FuzzAutoSwitchSlaveFrames: the master's decoder of slave frames.
func FuzzAutoSwitchSlaveFrames(f *testing.F) {
	f.Add(slices.Concat(AppendSlaveHandshake(nil, SlaveHello{AsyncLearner: true, SlaveID: 2}), AppendAck(nil, 1<<20)))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		checkReencoded(t, data, r, func(again []byte) ([]byte, error) {
			fr, err := ReadSlaveFrame(r)
			if err != nil {
				return again, err
			}
			if fr.State == StateHandshake {
				return AppendSlaveHandshake(again, fr.Hello), nil
			}
			return AppendAck(again, fr.Ack), nil
		})
	})
}
