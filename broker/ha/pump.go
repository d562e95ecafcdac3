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
	// unacked, when set, reports whether the slave has not yet acked all
	// bytes sent to it; acked is signalled when an ack arrives. With both
	// set, the pump holds a frame shorter than the batch while earlier
	// bytes are unacked (see hold).
	unacked func() bool
	acked   <-chan struct{}
}

// maxHold bounds how long the pump holds a short frame for the previous
// frame's ack, in case the slave reports late (a slow disk).
const maxHold = 2 * time.Millisecond

// hold reports whether the n available bytes at next should wait for the
// slave's ack of the bytes in flight: a frame shorter than batch is sent
// only when nothing is unacknowledged or it cannot grow (it reaches the
// end of a CommitLog file), as TCP's Nagle rule does for segments. The
// slave acks each frame as soon as it appended it (Apache's HAClient
// reports after every read), so under load the bytes that arrive while a
// frame is in flight leave as one frame instead of one frame per send,
// which is most of the per-message cost of replication (a write and a
// wake-up on the master, a read, a file write and a report on each
// slave). Idle, nothing is in flight and a send's bytes leave at once.
func (p *pump) hold(next int64, n int64, batch int) bool {
	if p.unacked == nil || n <= 0 || n >= int64(batch) {
		return false
	}
	fs := p.h.cl.FileSize()
	if segEnd := (next/fs + 1) * fs; next+n >= segEnd {
		return false
	}
	return p.unacked()
}

func (p *pump) run() {
	opts := p.h.opts
	hdr := make([]byte, 0, TransferHeaderSize)
	lastWrite := time.Now()
	poll := time.NewTimer(opts.PollInterval)
	defer poll.Stop()
	var held time.Time // when the pump began holding a short frame
	dl := deadline{set: p.nc.SetWriteDeadline, d: opts.HousekeepingInterval}
	for {
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
		seen := p.h.cl.MaxOffset()
		if p.hold(next, seen-next, batch) {
			now := time.Now()
			if held.IsZero() {
				held = now
			}
			if wait := maxHold - now.Sub(held); wait > 0 {
				resetTimer(poll, wait)
				select {
				case <-p.done:
					return
				case <-p.acked:
				case <-poll.C:
				}
				continue
			}
		}
		held = time.Time{}
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
			dl.refresh(now)
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
		if !p.idle(poll, min(opts.PollInterval, opts.HeartbeatInterval-time.Since(lastWrite)), seen) {
			return
		}
	}
}

// idle waits up to d for Wake or the end (false), unless the log grew
// past seen (its end when the pump last looked). It counts itself idle
// before it takes the wake channel and looks at the log end again, so a
// Wake that found no writer idle (and did nothing) came after bytes this
// look sees.
func (p *pump) idle(poll *time.Timer, d time.Duration, seen int64) bool {
	p.h.idle.Add(1)
	defer p.h.idle.Add(-1)
	wake := p.h.wakeChan()
	if p.h.cl.MaxOffset() > seen {
		return true
	}
	resetTimer(poll, d)
	select {
	case <-p.done:
		return false
	case <-wake:
	case <-poll.C:
	}
	return true
}

// resetTimer makes t fire after d, dropping a pending expiry.
func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}
