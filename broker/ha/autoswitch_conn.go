package ha

import (
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/store/epoch"
)

// epochMissLimit is how many times a connection looks for the epoch
// holding its next offset (every epochMissRetry) before giving up.
const (
	epochMissLimit = 3
	epochMissRetry = 500 * time.Millisecond
)

// asConn is one slave connection on an auto-switch master.
type asConn struct {
	m    *AutoSwitchMaster
	nc   net.Conn
	addr string

	// Set by the handshake, before started is closed.
	id      int64
	learner bool
	last    bool // syncFromLastFile

	ack          atomic.Int64 // last validated ack; -1 before the first
	next         atomic.Int64 // next offset to send
	sent         atomic.Int64 // end of the bytes handed to the socket
	lastMax      atomic.Int64 // master max offset at the last data send
	lastTransfer atomic.Int64 // unix ms of the last data send
	caughtUp     int64        // unix ms; guarded by m.mu
	started      chan struct{}
	done         chan struct{}
	once         sync.Once
	rate         rate
}

func newASConn(m *AutoSwitchMaster, nc net.Conn) *asConn {
	c := &asConn{m: m, nc: nc, addr: nc.RemoteAddr().String(), started: make(chan struct{}), done: make(chan struct{})}
	c.ack.Store(-1)
	c.next.Store(-1)
	c.sent.Store(-1)
	return c
}

func (c *asConn) close(reason string, args ...any) {
	c.once.Do(func() {
		_ = c.nc.Close()
		close(c.done)
		c.m.remove(c)
		c.m.log.Info("ha slave connection closed", append([]any{"addr", c.addr, "slaveId", c.id, "reason", reason}, args...)...)
	})
}

// readLoop takes the handshake, answers it with the epoch list, then
// validates every ack (≤ the master's end, never decreasing on this
// connection) before it counts.
func (c *asConn) readLoop() {
	defer c.m.wg.Done()
	m := c.m
	_ = c.nc.SetReadDeadline(time.Now().Add(m.opts.HousekeepingInterval))
	f, err := ReadSlaveFrame(c.nc)
	if err != nil || f.State != StateHandshake {
		c.close("no handshake", "state", f.State, "err", err)
		return
	}
	h := f.Hello
	if m.cfg.IsReplica != nil && !m.cfg.IsReplica(h.SlaveID) {
		m.log.Warn("ha handshake from an id that is not a replica of this broker set", "addr", c.addr, "slaveId", h.SlaveID)
		c.close("unknown slave id")
		return
	}
	c.id, c.learner, c.last = h.SlaveID, h.AsyncLearner, h.SyncFromLastFile
	m.bind(c)
	hello := MasterHello{MaxOffset: m.cl.MaxOffset(), Epochs: m.cfg.Epochs.Entries()}
	hello.LastEpoch = m.cfg.Epochs.LastEpoch()
	_ = c.nc.SetWriteDeadline(time.Now().Add(m.opts.HousekeepingInterval))
	if _, err := c.nc.Write(AppendMasterHandshake(nil, hello)); err != nil {
		c.close("write handshake", "err", err)
		return
	}
	dl := deadline{set: c.nc.SetReadDeadline, d: m.opts.HousekeepingInterval}
	for {
		dl.refresh(time.Now())
		f, err := ReadSlaveFrame(c.nc)
		if err != nil {
			c.close("read", "err", err)
			return
		}
		if f.State != StateTransfer {
			c.close("second handshake")
			return
		}
		off := f.Ack
		if max := m.cl.MaxOffset(); off > max {
			m.log.Warn("ha ack beyond the master's max offset", "addr", c.addr, "slaveId", c.id, "ack", off, "masterMax", max)
			c.close("ack beyond max offset")
			return
		}
		prev := c.ack.Load()
		if prev >= 0 && off > max(prev, c.sent.Load()) {
			// Only the first ack may name bytes this connection did not
			// send (the slave's own end).
			m.log.Warn("ha ack beyond what this connection was sent", "addr", c.addr, "slaveId", c.id, "ack", off, "sent", c.sent.Load())
			c.close("ack beyond the bytes sent")
			return
		}
		if off < prev {
			c.close("decreasing ack", "ack", off, "previous", prev)
			return
		}
		if prev < 0 && !c.begin(off) {
			return
		}
		c.ack.Store(off)
		m.onAck(c, off)
	}
}

// begin fixes the first offset to send from the first ack: an empty slave
// starts at the master's min offset, or its last file with
// syncFromLastFile.
func (c *asConn) begin(off int64) bool {
	cl := c.m.cl
	start := off
	if off == 0 {
		start = cl.MinOffset()
		if c.last {
			max := cl.MaxOffset()
			start = max - max%cl.FileSize()
		}
	} else if min := cl.MinOffset(); off < min {
		c.m.log.Error("slave needs a full resync: its offset is no longer on the master", "addr", c.addr, "slaveId", c.id, "slaveOffset", off, "masterMin", min)
		c.close("slave behind the master's min offset")
		return false
	}
	c.sent.Store(start)
	c.next.Store(start)
	close(c.started)
	return true
}

// writeLoop streams from the first acked offset. A frame never crosses a
// CommitLog file (ReadChunk) nor the end of the epoch it is sent under;
// every frame carries the current confirm offset.
func (c *asConn) writeLoop() {
	defer c.m.wg.Done()
	select {
	case <-c.started:
	case <-c.done:
		return
	}
	m := c.m
	var r epoch.Range // the epoch of the frame being built
	misses := 0
	p := pump{h: &m.hub, nc: c.nc, done: c.done, rate: &c.rate, next: &c.next, id: c.id, close: c.close,
		limit: func(next int64, batch int) (int, bool) {
			var ok bool
			if r, ok = m.cfg.Epochs.Find(next); !ok {
				if misses++; misses > epochMissLimit {
					m.log.Error("no epoch holds the slave's next offset", "slaveId", c.id, "offset", next)
					c.close("no epoch for offset", "offset", next)
					return 0, false
				}
				select {
				case <-c.done:
				case <-time.After(epochMissRetry):
				}
				return 0, false
			}
			misses = 0
			if r.End != math.MaxInt64 {
				batch = int(min(int64(batch), r.End-next))
			}
			return batch, true
		},
		header: func(dst []byte, next int64, n int) []byte {
			return AppendTransferHeader(dst, TransferHeader{Start: next, Epoch: r.Epoch, EpochStart: r.Start, Confirm: m.ConfirmOffset()}, n)
		},
		beforeWrite: func(now time.Time, end int64, n int) {
			c.sent.Store(end) // the slave may ack before the write returns
			if n > 0 {
				c.lastMax.Store(m.cl.MaxOffset())
				c.lastTransfer.Store(now.UnixMilli())
			}
		},
	}
	p.run()
}
