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
)

// addrPoll is how often a slave without a master address looks for one.
const addrPoll = 100 * time.Millisecond

// Slave replicates from a master (Apache's DefaultHAClient): it reports
// its max offset on connect, after every append and every heartbeat
// interval, and appends each frame verbatim. The store's dispatcher builds
// consume queues and indexes from the appended bytes.
type Slave struct {
	opts Options
	cl   *commitlog.Log
	addr func() string

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

// NewSlave replicates into cl from the master at addr() (re-read before
// every connect; "" waits).
func NewSlave(cl *commitlog.Log, addr func() string, opts Options) *Slave {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Slave{opts: opts, cl: cl, addr: addr, ctx: ctx, cancel: cancel}
	s.masterAddr.Store("")
	return s
}

// Start connects in the background and keeps reconnecting until Close.
func (s *Slave) Start() {
	s.wg.Add(1)
	go s.run()
}

// Close disconnects and waits for the replication goroutines.
func (s *Slave) Close() {
	s.cancel()
	s.mu.Lock()
	if s.nc != nil {
		_ = s.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Slave) run() {
	defer s.wg.Done()
	log := s.opts.Logger
	for s.ctx.Err() == nil {
		// Until the master's address is known (the first REGISTER_BROKER
		// answer), look again soon rather than after a reconnect delay.
		wait := min(addrPoll, s.opts.ReconnectDelay)
		if addr := s.addr(); addr != "" {
			if err := s.session(addr); err != nil && s.ctx.Err() == nil {
				log.Warn("ha connection to master ended", "master", addr, "err", err)
			}
			s.masterAddr.Store("")
			wait = s.opts.ReconnectDelay
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// session runs one connection until it fails.
func (s *Slave) session(addr string) error {
	d := net.Dialer{Timeout: s.opts.DialTimeout}
	nc, err := d.DialContext(s.ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		_ = nc.Close()
		return nil
	}
	s.nc = nc
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.nc = nil
		s.mu.Unlock()
		_ = nc.Close()
	}()
	s.masterAddr.Store(addr)
	s.opts.Logger.Info("ha connected to master", "master", addr, "maxOffset", s.cl.MaxOffset())

	var wmu sync.Mutex
	var reported int64 = -1
	report := func(force bool) error {
		wmu.Lock()
		defer wmu.Unlock()
		off := s.cl.MaxOffset()
		if !force && off <= reported {
			return nil
		}
		_ = nc.SetWriteDeadline(time.Now().Add(s.opts.HousekeepingInterval))
		if _, err := nc.Write(AppendReport(nil, off)); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		reported = off
		s.lastWrite.Store(time.Now().UnixMilli())
		return nil
	}
	if err := report(true); err != nil {
		return err
	}
	done := make(chan struct{})
	var beat sync.WaitGroup
	defer func() {
		// Closing the socket first ends a heartbeat blocked in a write.
		close(done)
		_ = nc.Close()
		beat.Wait()
	}()
	beat.Add(1)
	go func() {
		defer beat.Done()
		t := time.NewTicker(s.opts.HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if err := report(true); err != nil {
					_ = nc.Close() // the reader sees it and ends the session
					return
				}
			}
		}
	}()

	tr := NewTransferReader(nc)
	for {
		_ = nc.SetReadDeadline(time.Now().Add(s.opts.HousekeepingInterval))
		t, err := tr.Next()
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		now := time.Now()
		s.lastRead.Store(now.UnixMilli())
		if max := s.cl.MaxOffset(); max != 0 && t.Start != max {
			return fmt.Errorf("master's frame starts at %d but the local log ends at %d", t.Start, max)
		}
		s.masterOffset.Store(t.Start + int64(len(t.Body)))
		if len(t.Body) == 0 {
			continue
		}
		if err := s.cl.AppendRaw(s.ctx, t.Start, t.Body); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return fmt.Errorf("append %d bytes at %d: %w", len(t.Body), t.Start, err)
		}
		s.rate.add(len(t.Body), now)
		if err := report(false); err != nil {
			return err
		}
	}
}
