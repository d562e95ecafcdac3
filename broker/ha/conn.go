package ha

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// conn is one slave connection on the master: a reader of reports (acks)
// and a writer of transfer frames.
type conn struct {
	m    *Master
	nc   net.Conn
	addr string

	ack     atomic.Int64  // last validated report; -1 before the first
	from    atomic.Int64  // where the transfer started; -1 before the first report
	next    atomic.Int64  // next offset to send (transferFromWhere)
	sent    atomic.Int64  // end of the bytes handed to the socket (≥ next while a write is in flight)
	ackSig  chan struct{} // signalled (never blocking) when an ack arrives
	started chan struct{}
	done    chan struct{}
	once    sync.Once
	rate    rate
}

func newConn(m *Master, nc net.Conn) *conn {
	c := &conn{m: m, nc: nc, addr: nc.RemoteAddr().String(), ackSig: make(chan struct{}, 1), started: make(chan struct{}), done: make(chan struct{})}
	c.ack.Store(-1)
	c.from.Store(-1)
	c.next.Store(-1)
	c.sent.Store(-1)
	return c
}

func (c *conn) close(reason string, args ...any) {
	c.once.Do(func() {
		_ = c.nc.Close()
		close(c.done)
		c.m.remove(c)
		c.m.log.Info("ha slave connection closed", append([]any{"addr", c.addr, "reason", reason}, args...)...)
	})
}

// readLoop validates every report before it counts as an ack: a report
// beyond the master's end (a stranger, #3015) or below the previous one
// on this connection closes the connection.
func (c *conn) readLoop() {
	defer c.m.wg.Done()
	var buf [ReportSize]byte
	dl := deadline{set: c.nc.SetReadDeadline, d: c.m.opts.HousekeepingInterval}
	for {
		dl.refresh(time.Now())
		off, err := ReadReport(c.nc, &buf)
		if err != nil {
			c.close("read", "err", err)
			return
		}
		if max := c.m.cl.MaxOffset(); off > max {
			c.m.log.Warn("ha report beyond the master's max offset: a slave with a longer or diverged log (wipe it), or not a slave", "addr", c.addr, "report", off, "masterMax", max)
			c.close("report beyond max offset")
			return
		}
		prev := c.ack.Load()
		if prev >= 0 && off > max(c.from.Load(), c.sent.Load()) {
			c.m.log.Warn("ha report beyond what this connection was sent", "addr", c.addr, "report", off, "sent", c.sent.Load())
			c.close("report beyond the bytes sent")
			return
		}
		if off < prev {
			c.m.log.Warn("ha report went backwards", "addr", c.addr, "report", off, "previous", prev)
			c.close("decreasing report")
			return
		}
		if prev < 0 && !c.begin(off) {
			return
		}
		c.ack.Store(off)
		if off != prev {
			// The sends first, then the writer: the goroutine readied
			// last runs next on this P, so the next frame (the sends
			// still waiting) leaves before the released sends answer.
			c.m.acked()
			select {
			case c.ackSig <- struct{}{}:
			default:
			}
		}
	}
}

// transferred reports whether this connection sent the bytes ending at end
// and the slave acknowledged them.
func (c *conn) transferred(end int64) bool { return c.position().holds(end) }

// position is where the transfer started and what the slave acked.
func (c *conn) position() connAck { return connAck{c.from.Load(), c.ack.Load()} }

// begin fixes where the transfer starts from the first report: an empty
// slave starts at the master's last file, others where they end.
func (c *conn) begin(off int64) bool {
	start := off
	if off == 0 {
		max := c.m.cl.MaxOffset()
		start = max - max%c.m.cl.FileSize()
	} else if min := c.m.cl.MinOffset(); off < min {
		c.m.log.Error("slave needs a full resync: its offset is no longer on the master", "addr", c.addr, "slaveOffset", off, "masterMin", min)
		c.close("slave behind the master's min offset")
		return false
	}
	c.from.Store(start)
	c.sent.Store(start)
	c.next.Store(start)
	close(c.started)
	return true
}

func (c *conn) writeLoop() {
	defer c.m.wg.Done()
	select {
	case <-c.started:
	case <-c.done:
		return
	}
	p := pump{h: &c.m.hub, nc: c.nc, done: c.done, rate: &c.rate, next: &c.next, id: c.addr, close: c.close, header: AppendHeader,
		// The slave may ack these bytes before the write returns.
		beforeWrite: func(_ time.Time, end int64, _ int) { c.sent.Store(end) },
		unacked:     func() bool { return c.ack.Load() < c.sent.Load() },
		acked:       c.ackSig,
	}
	p.run()
}

// flowAllowance is how many body bytes the next frame may carry under the
// flow-control cap; when this second's budget is spent it waits for the
// next second and reports false (the caller loops).
func flowAllowance(r *rate, done <-chan struct{}, opts Options) (int, bool) {
	limit := opts.MaxTransferBytesPerSecond
	if limit <= 0 {
		return opts.TransferBatchSize, true
	}
	now := time.Now()
	if left := limit - r.inSecond(now); left > 0 {
		return int(min(int64(opts.TransferBatchSize), left)), true
	}
	t := time.NewTimer(time.Unix(now.Unix()+1, 0).Sub(now))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return 0, false
}
