package ha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// link is what both slave kinds share: the reconnect loop, the socket that
// Close interrupts, the periodic report, and the status counters.
type link struct {
	opts Options
	cl   *commitlog.Log
	addr func() string
	// session runs one connection until it fails.
	session func(addr string) error

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	nc net.Conn

	masterAddr   atomic.Value // string: address of the current connection
	lastRead     atomic.Int64 // ms
	lastWrite    atomic.Int64 // ms
	masterOffset atomic.Int64 // end of the last frame the master sent
	rate         rate
}

func newLink(cl *commitlog.Log, addr func() string, opts Options) *link {
	ctx, cancel := context.WithCancel(context.Background())
	l := &link{opts: opts.withDefaults(), cl: cl, addr: addr, ctx: ctx, cancel: cancel}
	l.masterAddr.Store("")
	return l
}

// Start connects in the background and keeps reconnecting until Close.
func (l *link) Start() {
	l.wg.Add(1)
	go l.run()
}

// Close disconnects and waits for the replication goroutines.
func (l *link) Close() {
	l.cancel()
	l.mu.Lock()
	if l.nc != nil {
		_ = l.nc.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

func (l *link) run() {
	defer l.wg.Done()
	log := l.opts.Logger
	for l.ctx.Err() == nil {
		// Until the master's address is known, look again soon rather
		// than after a reconnect delay.
		wait := min(addrPoll, l.opts.ReconnectDelay)
		if addr := l.addr(); addr != "" {
			err := l.session(addr)
			switch {
			case errors.Is(err, ErrDiverged):
				log.Error("ha: replica cannot follow its master: operator action needed", "master", addr, "err", err)
			case err != nil && l.ctx.Err() == nil:
				log.Warn("ha connection to master ended", "master", addr, "err", err)
			}
			l.masterAddr.Store("")
			wait = l.opts.ReconnectDelay
		}
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// dial connects to addr; the returned release ends the connection. A nil
// connection without error means the link is closing.
func (l *link) dial(addr string) (net.Conn, func(), error) {
	d := net.Dialer{Timeout: l.opts.DialTimeout}
	nc, err := d.DialContext(l.ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	if l.opts.TLS != nil {
		if nc, err = remoting.ClientHandshake(l.ctx, nc, l.opts.TLS, addr, l.opts.DialTimeout); err != nil {
			return nil, nil, err
		}
	}
	l.mu.Lock()
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		_ = nc.Close()
		return nil, nil, nil
	}
	l.nc = nc
	l.mu.Unlock()
	l.masterAddr.Store(addr)
	return nc, func() {
		l.mu.Lock()
		l.nc = nil
		l.mu.Unlock()
		_ = nc.Close()
	}, nil
}

// writer serialises writes on nc and records the last write time.
func (l *link) writer(nc net.Conn) func([]byte) error {
	var mu sync.Mutex
	dl := deadline{set: nc.SetWriteDeadline, d: l.opts.HousekeepingInterval} // guarded by mu
	return func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		dl.refresh(time.Now())
		if _, err := nc.Write(b); err != nil {
			return err
		}
		l.lastWrite.Store(time.Now().UnixMilli())
		return nil
	}
}

// reporter returns the slave's offset report (classic REPORT or
// auto-switch ACK, encoded by enc) written through write: force sends even
// an unchanged offset (the keep-alive). Reading the log end and writing it
// happen under one lock, because the read loop and the keep-alive both
// report: a value read before the other's append must not reach the wire
// after the other's larger one, or the master sees the offset go back and
// closes the connection.
func (l *link) reporter(write func([]byte) error, enc func([]byte, int64) []byte) func(force bool) error {
	var mu sync.Mutex
	last := int64(-1)
	return func(force bool) error {
		mu.Lock()
		defer mu.Unlock()
		off := l.cl.MaxOffset()
		if !force && off <= last {
			return nil
		}
		if err := write(enc(nil, off)); err != nil {
			return err
		}
		last = off
		return nil
	}
}

// heartbeat reports every HeartbeatInterval until the returned stop runs
// (which closes nc first, so that a report blocked in a write ends). A
// failed report closes nc: the reader sees it and ends the session.
func (l *link) heartbeat(nc net.Conn, report func() error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(l.opts.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := report(); err != nil {
					_ = nc.Close()
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		_ = nc.Close()
		wg.Wait()
	}
}

// checkStart rejects a frame that does not continue the local log.
func (l *link) checkStart(start int64) error {
	if max := l.cl.MaxOffset(); max > l.cl.MinOffset() && start != max {
		return fmt.Errorf("master's frame starts at %d but the local log ends at %d", start, max)
	}
	return nil
}

// appendBody appends a frame's bytes verbatim.
func (l *link) appendBody(start int64, body []byte, now time.Time) error {
	l.masterOffset.Store(start + int64(len(body)))
	if len(body) == 0 {
		return nil
	}
	if err := l.cl.AppendRaw(l.ctx, start, body); err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return fmt.Errorf("append %d bytes at %d: %w", len(body), start, err)
	}
	l.rate.add(len(body), now)
	return nil
}

// Status is the slave's view of its master connection.
func (l *link) Status() protocol.HARuntimeInfo {
	return protocol.HARuntimeInfo{
		HAClientRuntimeInfo: &protocol.HAClientRuntimeInfo{
			LastReadTimestamp:       l.lastRead.Load(),
			LastWriteTimestamp:      l.lastWrite.Load(),
			MasterAddr:              l.masterAddr.Load().(string),
			MasterFlushOffset:       l.masterOffset.Load(),
			MaxOffset:               l.cl.MaxOffset(),
			TransferredByteInSecond: l.rate.perSecond(time.Now()),
		},
		HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{},
	}
}
