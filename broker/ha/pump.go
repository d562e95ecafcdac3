package ha

import (
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
)

// pump streams the CommitLog to one slave from next on (both masters'
// connection writers): data frames while there are bytes, a keep-alive
// frame with no body every HeartbeatInterval, otherwise it sleeps until
// woken or PollInterval passed. The protocols differ only in the frame
// header and in how far one frame may reach.
type pump struct {
	h     *hub
	nc    net.Conn
	done  <-chan struct{}
	rate  *rate
	next  *atomic.Int64
	id    any // the slave, for log lines
	close func(reason string, args ...any)
	// limit, when set, caps the next frame's body; ok false means nothing
	// may be sent now (it waited already): look again.
	limit func(next int64, batch int) (n int, ok bool)
	// header appends the frame header for n body bytes at next.
	header func(dst []byte, next int64, n int) []byte
	// beforeWrite, when set, runs before each frame is written; end is
	// where its n body bytes end.
	beforeWrite func(now time.Time, end int64, n int)
}

func (p *pump) run() {
	opts := p.h.opts
	hdr := make([]byte, 0, TransferHeaderSize)
	lastWrite := time.Now()
	poll := time.NewTimer(opts.PollInterval)
	defer poll.Stop()
	for {
		wake := p.h.wakeChan()
		next := p.next.Load()
		batch, ok := flowAllowance(p.rate, p.done, opts)
		if ok && p.limit != nil {
			batch, ok = p.limit(next, batch)
		}
		if !ok {
			select {
			case <-p.done:
				return
			default:
				continue
			}
		}
		buf, err := p.h.cl.ReadChunk(next, batch, 0)
		if err != nil {
			if errors.Is(err, commitlog.ErrOffsetOutOfRange) && next < p.h.cl.MinOffset() {
				p.h.log.Error("slave needs a full resync: its offset is no longer on the master", "slave", p.id, "offset", next, "masterMin", p.h.cl.MinOffset())
			}
			p.close("read commitlog", "offset", next, "err", err)
			return
		}
		body := buf.Bytes()
		now := time.Now()
		if len(body) > 0 || now.Sub(lastWrite) >= opts.HeartbeatInterval {
			if p.beforeWrite != nil {
				p.beforeWrite(now, next+int64(len(body)), len(body))
			}
			hdr = p.header(hdr[:0], next, len(body))
			_ = p.nc.SetWriteDeadline(now.Add(opts.HousekeepingInterval))
			bufs := net.Buffers{hdr, body}
			_, err := bufs.WriteTo(p.nc)
			buf.Release()
			if err != nil {
				p.close("write", "err", err)
				return
			}
			p.rate.add(len(body), now)
			p.next.Store(next + int64(len(body)))
			lastWrite = now
			if len(body) > 0 {
				continue
			}
		} else {
			buf.Release()
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(min(opts.PollInterval, opts.HeartbeatInterval-time.Since(lastWrite)))
		select {
		case <-p.done:
			return
		case <-wake:
		case <-poll.C:
		}
	}
}
