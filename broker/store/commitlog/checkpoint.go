package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"sync"

	"github.com/rmqgo/rmq/broker/store/vfs"
)

// CheckpointState is what the checkpoint file remembers. The first five
// fields sit where Java's StoreCheckpoint keeps them; the rest are ours.
type CheckpointState struct {
	PhysicMsgTimestamp  int64 // store timestamp of the last flushed record
	LogicsMsgTimestamp  int64 // Java's consume-queue time; carried over, never set
	IndexMsgTimestamp   int64 // Java's index time; carried over, never set
	MasterFlushedOffset int64 // HA
	ConfirmPhyOffset    int64 // HA confirm offset
	FlushedPhyOffset    int64 // CommitLog bytes below this were fsynced
	DispatchedPhyOffset int64 // not advanced: the dispatch position is in Pebble; Truncate lowers it
}

// Checkpoint file layout: big-endian int64s at 0, 8, 16, 24, 32 as in
// Java's StoreCheckpoint, then magic, version, our offsets and a CRC of
// everything before it. The file is one 4 KiB page; the record fits in its
// first sector, so an in-place rewrite is not torn in practice, and the CRC
// catches it if it is.
const (
	checkpointFileSize = 4096
	checkpointMagic    = 0x52474350 // "RGCP"
	checkpointVersion  = 1
	ckPosMagic         = 40
	ckPosVersion       = 44
	ckPosFlushed       = 48
	ckPosDispatched    = 56
	ckPosCRC           = 64
	ckLen              = 68
)

// Checkpoint is the store checkpoint file. Safe for concurrent use.
type Checkpoint struct {
	mu    sync.Mutex
	f     vfs.File
	state CheckpointState
	dirty bool
}

// OpenCheckpoint opens or creates the checkpoint file. valid reports
// whether an intact checkpoint was read; otherwise the state is zero.
func OpenCheckpoint(fsys vfs.FS, path string) (c *Checkpoint, valid bool, err error) {
	f, err := fsys.OpenReadWrite(path)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = fsys.Create(path); err != nil {
			return nil, false, fmt.Errorf("create checkpoint: %w", err)
		}
	} else if err != nil {
		return nil, false, fmt.Errorf("open checkpoint: %w", err)
	}
	c = &Checkpoint{f: f}
	buf := make([]byte, ckLen)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		f.Close()
		return nil, false, fmt.Errorf("read checkpoint: %w", err)
	}
	if n == ckLen {
		c.state, valid = decodeCheckpoint(buf)
	}
	return c, valid, nil
}

func decodeCheckpoint(b []byte) (CheckpointState, bool) {
	be := binary.BigEndian
	if be.Uint32(b[ckPosMagic:]) != checkpointMagic || be.Uint32(b[ckPosVersion:]) != checkpointVersion ||
		be.Uint32(b[ckPosCRC:]) != crc32.ChecksumIEEE(b[:ckPosCRC]) {
		return CheckpointState{}, false
	}
	i := func(p int) int64 { return int64(be.Uint64(b[p:])) }
	return CheckpointState{
		PhysicMsgTimestamp: i(0), LogicsMsgTimestamp: i(8), IndexMsgTimestamp: i(16),
		MasterFlushedOffset: i(24), ConfirmPhyOffset: i(32),
		FlushedPhyOffset: i(ckPosFlushed), DispatchedPhyOffset: i(ckPosDispatched),
	}, true
}

func encodeCheckpoint(s CheckpointState) []byte {
	b := make([]byte, checkpointFileSize)
	be := binary.BigEndian
	for i, v := range []int64{s.PhysicMsgTimestamp, s.LogicsMsgTimestamp, s.IndexMsgTimestamp, s.MasterFlushedOffset, s.ConfirmPhyOffset} {
		be.PutUint64(b[8*i:], uint64(v))
	}
	be.PutUint32(b[ckPosMagic:], checkpointMagic)
	be.PutUint32(b[ckPosVersion:], checkpointVersion)
	be.PutUint64(b[ckPosFlushed:], uint64(s.FlushedPhyOffset))
	be.PutUint64(b[ckPosDispatched:], uint64(s.DispatchedPhyOffset))
	be.PutUint32(b[ckPosCRC:], crc32.ChecksumIEEE(b[:ckPosCRC]))
	return b
}

// State returns the current (possibly unflushed) state.
func (c *Checkpoint) State() CheckpointState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Update changes the state in memory; Flush persists it.
func (c *Checkpoint) Update(fn func(*CheckpointState)) {
	c.mu.Lock()
	old := c.state
	fn(&c.state)
	if c.state != old {
		c.dirty = true
	}
	c.mu.Unlock()
}

// Flush writes and fsyncs the state if it changed since the last Flush.
func (c *Checkpoint) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	if _, err := c.f.WriteAt(encodeCheckpoint(c.state), 0); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("sync checkpoint: %w", err)
	}
	c.dirty = false
	return nil
}

// Close closes the file without flushing.
func (c *Checkpoint) Close() error { return c.f.Close() }
