package remoting

import (
	"errors"
	"net"
	"time"
)

// Serve is Start for a listener the caller owns: connections accepted from
// ln are served by one goroutine each with the standard library instead of
// netpoll, which can only watch a listener's own descriptor. It is meant
// for ports shared with another protocol (the HA controller classifies
// each connection by its first byte and passes remoting ones here). It
// returns at once; Shutdown closes ln and stops serving. With TLS
// configured (ServerConfig.TLS) connections are classified as Start's are.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.Load() != stateNew {
		return errors.New("remoting: server already started")
	}
	return s.serveLocked(ln)
}

// serveLocked runs the accept loop on ln; s.mu is held.
func (s *Server) serveLocked(ln net.Listener) error {
	tln, err := NewTLSListener(ln, s.cfg.TLS, s.log)
	if err != nil {
		_ = ln.Close()
		return err
	}
	ln = tln
	s.ln, s.addr = ln, ln.Addr().String()
	s.exec = NewExecutor("remoting-default", s.cfg.Workers, s.cfg.QueueSize)
	s.served = make(chan struct{})
	s.stopIdle = make(chan struct{})
	s.state.Store(stateRunning)
	go s.acceptLoop(ln)
	if s.cfg.IdleTimeout > 0 {
		s.bg.goTracked(func() { idleLoop(s.cfg.IdleTimeout, s.stopIdle, s.closeIdle) })
	}
	s.log.Info("remoting: server serving on its own goroutines", "addr", s.addr, "tls", s.cfg.TLS.Mode.String())
	return nil
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer close(s.served)
	pause := 5 * time.Millisecond
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.state.Load() != stateRunning || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: back off, as net/http does.
			s.log.Warn("remoting: accept failed", "addr", s.addr, "err", err)
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		go s.serveConn(conn)
	}
}

// serveConn is one connection's reader; it owns conn.
func (s *Server) serveConn(conn net.Conn) {
	s.mu.Lock()
	if s.state.Load() != stateRunning {
		s.mu.Unlock()
		_ = conn.Close()
		return
	}
	t := newConnTransport(conn, s.cfg.WriteTimeout, s.wbufs)
	ch := newChannel(s.nextID.Add(1), addrString(conn.LocalAddr()), addrString(conn.RemoteAddr()),
		t, &s.opaque, s.cfg.InvokeTimeout, s.log)
	s.channels[ch.id] = ch
	s.conns.add()
	s.mu.Unlock()
	s.runCallbacks(&s.onConnect, ch, "connect")
	err := readFrames(conn, s.cfg.MaxFrameSize, s.deferredCodes(), ch, func(cmd *Command) {
		// Stamped as netpoll's reader stamps them: the offset-commit
		// order check and the RPC latency metrics read these.
		cmd.Arrival = s.arrivals.Add(1)
		cmd.Received = time.Now()
		s.dispatch(ch, cmd)
	})
	s.log.Debug("remoting: connection ended", "channel", ch.String(), "err", err)
	_ = ch.Close()
	s.closed(ch)
}
