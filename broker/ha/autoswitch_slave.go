package ha

import (
	"bufio"
	"errors"
	"fmt"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/epoch"
)

// handshakeTimeout bounds the wait for the master's handshake.
const handshakeTimeout = 5 * time.Second

// ReplicaStore is what auto-switch replication needs of the local store
// (implemented by store.Store).
type ReplicaStore interface {
	CommitLog() *commitlog.Log
	// TruncateTo cuts the log to an offset crash-safely (the bytes there
	// are unreadable on disk before anything else changes), then the
	// consume queues above it.
	TruncateTo(off int64) error
	// CutPartialTail truncates an incomplete trailing record and returns
	// the new end.
	CutPartialTail() (int64, error)
}

// AutoSwitchSlaveConfig is the controller-mode part of a slave.
type AutoSwitchSlaveConfig struct {
	SelfID           int64
	Epochs           *epoch.Cache
	SyncFromLastFile bool
	AsyncLearner     bool
	// VerifyPrefix decides whether a log that holds bytes but no epochs
	// (a classic replica upgraded in place to controller mode, as Apache's
	// controller deploy guide allows) is a prefix of the master's, whose
	// log ends at masterMax: nil accepts it and replication continues from
	// localMax. Without VerifyPrefix such a log is refused (ErrDiverged).
	// Apache's AutoSwitchHAClient takes it on trust.
	VerifyPrefix func(localMax, masterMax int64) error
}

// ErrDiverged means the local log shares no epoch with the master's: the
// replica must be wiped and copied again.
var ErrDiverged = errors.New("ha: log diverged from the master's, no common point (wipe this replica)")

// AutoSwitchSlave replicates from a controller-mode master
// (org/apache/rocketmq/store/ha/autoswitch/AutoSwitchHAClient.java): per
// connection it cuts an incomplete tail, handshakes once, truncates to the
// common point of both epoch lists, then appends frames, records their
// epochs and follows the master's confirm offset.
type AutoSwitchSlave struct {
	*link
	cfg AutoSwitchSlaveConfig
	st  ReplicaStore
}

// NewAutoSwitchSlave replicates into st from the master at addr() (re-read
// before every connect; "" waits).
func NewAutoSwitchSlave(st ReplicaStore, addr func() string, opts Options, cfg AutoSwitchSlaveConfig) *AutoSwitchSlave {
	s := &AutoSwitchSlave{link: newLink(st.CommitLog(), addr, opts), cfg: cfg, st: st}
	s.session = s.runSession
	return s
}

// ready is state READY: a replicated frame may have ended inside a record;
// cut it, and forget epochs that began beyond the new end.
func (s *AutoSwitchSlave) ready() error {
	before := s.cl.MaxOffset()
	end, err := s.st.CutPartialTail()
	if err != nil {
		return fmt.Errorf("cut incomplete tail: %w", err)
	}
	if end < before {
		if err := s.cfg.Epochs.TruncateSuffixByOffset(end + 1); err != nil {
			return err
		}
	}
	return nil
}

// truncate runs §4.5 against the master's handshake and returns the
// offset to ack.
func (s *AutoSwitchSlave) truncate(h MasterHello) (int64, error) {
	local := s.cfg.Epochs.Entries()
	localMax := s.cl.MaxOffset()
	if epoch.HoldsNothing(local, localMax) {
		if localMax > s.cl.MinOffset() {
			if s.cfg.VerifyPrefix == nil {
				return 0, fmt.Errorf("%w: %d bytes of CommitLog without an epoch list", ErrDiverged, localMax-s.cl.MinOffset())
			}
			if err := s.cfg.VerifyPrefix(localMax, h.MaxOffset); err != nil {
				return 0, fmt.Errorf("%w: %d bytes of CommitLog without an epoch list: %v", ErrDiverged, localMax-s.cl.MinOffset(), err)
			}
			s.opts.Logger.Info("ha: a log without an epoch list (a replica upgraded in place) matches the master's: replicating from its end",
				"from", localMax, "masterMax", h.MaxOffset)
		}
		// Epochs that hold nothing (this replica was master and wrote
		// nothing) give way to the master's, re-recorded from its frames.
		if err := s.cfg.Epochs.TruncateSuffixByOffset(localMax); err != nil {
			return 0, err
		}
		return localMax, nil
	}
	point, err := epoch.CommonPoint(local, localMax, h.Epochs, h.MaxOffset)
	if err != nil {
		return 0, fmt.Errorf("%w: local epochs %v, master's %v", ErrDiverged, local, h.Epochs)
	}
	if point < s.cl.MinOffset() {
		return 0, fmt.Errorf("%w: common point %d is below the local min offset %d", ErrDiverged, point, s.cl.MinOffset())
	}
	if point < localMax {
		s.opts.Logger.Warn("ha: truncating the log to the common point with the master", "from", localMax, "to", point)
		// Log first (crash-safe, fsynced), then queues (same call), then
		// the epoch list: a crash in between leaves epochs beyond the log
		// end, which epoch.Open drops.
		if err := s.st.TruncateTo(point); err != nil {
			return 0, err
		}
	}
	// Entries from point on are re-recorded from the master's frames.
	if err := s.cfg.Epochs.TruncateSuffixByOffset(point); err != nil {
		return 0, err
	}
	return point, nil
}

// runSession runs one connection until it fails.
func (s *AutoSwitchSlave) runSession(addr string) error {
	if err := s.ready(); err != nil {
		return err
	}
	nc, release, err := s.dial(addr)
	if nc == nil {
		return err
	}
	defer release()
	write := s.writer(nc)
	hello := SlaveHello{SyncFromLastFile: s.cfg.SyncFromLastFile, AsyncLearner: s.cfg.AsyncLearner, SlaveID: s.cfg.SelfID}
	if err := write(AppendSlaveHandshake(nil, hello)); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	// Buffered as the classic slave's reader: a frame's header and body
	// (and frames behind it) in one read.
	br := bufio.NewReaderSize(nc, readBufferSize)
	fr := NewMasterFrameReader(br)
	_ = nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	f, err := fr.Next()
	if err != nil {
		return fmt.Errorf("read master handshake: %w", err)
	}
	if f.State != StateHandshake {
		return fmt.Errorf("%w: expected the master's handshake, got state %d", ErrBadFrame, f.State)
	}
	point, err := s.truncate(f.Hello)
	if err != nil {
		return err
	}
	s.opts.Logger.Info("ha connected to master", "master", addr, "masterMax", f.Hello.MaxOffset, "masterEpoch", f.Hello.LastEpoch, "from", point)

	ack := s.reporter(write, AppendAck)
	if err := ack(true); err != nil {
		return fmt.Errorf("ack: %w", err)
	}
	stop := s.heartbeat(nc, func() error { return ack(true) })
	defer stop()

	dl := deadline{set: nc.SetReadDeadline, d: s.opts.HousekeepingInterval}
	for {
		dl.refresh(time.Now())
		f, err := fr.Next()
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if f.State != StateTransfer {
			return fmt.Errorf("%w: state %d after the handshake", ErrBadFrame, f.State)
		}
		if err := s.apply(f.Transfer, f.Body); err != nil {
			return err
		}
		// Acked frame by frame as Apache's AutoSwitchHAClient, unlike
		// the classic Slave: a replica that resumes after a freeze with
		// its dead master's unacked frames buffered stops at the first
		// ack that fails and keeps only the head of that tail
		// (docs/replication.md §2.6).
		if err := ack(false); err != nil {
			return fmt.Errorf("ack: %w", err)
		}
	}
}

// apply appends one frame: its epoch is recorded before its bytes, and the
// confirm offset follows the master's, capped by what is held locally.
func (s *AutoSwitchSlave) apply(h TransferHeader, body []byte) error {
	now := time.Now()
	s.lastRead.Store(now.UnixMilli())
	if h.Start < 0 {
		// An empty master's heartbeat (no body, MasterFrameReader):
		// nothing to check against the local log, nothing appended.
		if c := min(h.Confirm, s.cl.MaxOffset()); c != s.cl.ConfirmOffset() {
			s.cl.SetConfirmOffset(c)
		}
		return nil
	}
	if err := s.checkStart(h.Start); err != nil {
		return err
	}
	if len(body) > 0 && h.Epoch != s.cfg.Epochs.LastEpoch() {
		if err := s.cfg.Epochs.Append(h.Epoch, h.EpochStart); err != nil {
			return fmt.Errorf("record epoch %d at %d: %w", h.Epoch, h.EpochStart, err)
		}
	}
	if err := s.appendBody(h.Start, body, now); err != nil {
		return err
	}
	if c := min(h.Confirm, s.cl.MaxOffset()); c != s.cl.ConfirmOffset() {
		s.cl.SetConfirmOffset(c)
	}
	return nil
}
