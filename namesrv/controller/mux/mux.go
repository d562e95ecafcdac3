// Package mux shares one TCP port between the controller's raft traffic and
// remoting (docs/replication.md §2.6): each accepted connection is
// classified by its first byte. Our raft stream layer sends RaftMarker
// right after connecting; a remoting frame starts with the high byte of its
// length (0x00 or 0x01 for frames up to 16 MiB), TLS with 0x16.
package mux

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/remoting"
)

// RaftMarker is the first byte of every raft connection.
const RaftMarker byte = 0x52

// Config configures a Mux.
type Config struct {
	// ClassifyTimeout bounds the wait for a new connection's first byte;
	// a silent connection is closed after it.
	ClassifyTimeout time.Duration
	// Backlog is how many classified connections may wait for Accept on
	// each side.
	Backlog int
}

// DefaultConfig: 10 s to send the first byte, 128 waiting connections.
func DefaultConfig() Config { return Config{ClassifyTimeout: 10 * time.Second, Backlog: 128} }

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	if c.ClassifyTimeout <= 0 {
		return fmt.Errorf("mux: ClassifyTimeout must be positive, got %v", c.ClassifyTimeout)
	}
	if c.Backlog < 1 {
		return fmt.Errorf("mux: Backlog must be at least 1, got %d", c.Backlog)
	}
	return nil
}

// Mux owns a listener and splits it into Raft and Remoting listeners.
type Mux struct {
	cfg      Config
	log      *slog.Logger
	ln       net.Listener
	raft     *chanListener
	remoting *chanListener
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup

	// Raft connections handed out, closed by Close: raft's transport
	// closes only its listener, and a handler reading a peer's idle
	// connection would otherwise outlive the node.
	cmu   sync.Mutex
	conns map[*trackedConn]struct{}
}

// New serves ln. A nil log discards logs.
func New(ln net.Listener, cfg Config, log *slog.Logger) (*Mux, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mux{cfg: cfg, log: log, ln: ln, done: make(chan struct{}), conns: map[*trackedConn]struct{}{}}
	m.raft = &chanListener{m: m, conns: make(chan net.Conn, cfg.Backlog)}
	m.remoting = &chanListener{m: m, conns: make(chan net.Conn, cfg.Backlog)}
	m.wg.Add(1)
	go m.accept()
	return m, nil
}

// Raft is the listener of connections that began with RaftMarker (the
// marker consumed).
func (m *Mux) Raft() net.Listener { return m.raft }

// Remoting is the listener of every other connection (nothing consumed).
func (m *Mux) Remoting() net.Listener { return m.remoting }

// Addr is the shared address.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Close closes the shared listener and both sides; connections already
// handed out stay with their owners.
func (m *Mux) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		err = m.ln.Close()
		m.wg.Wait()
		m.cmu.Lock()
		open := m.conns
		m.conns = nil
		m.cmu.Unlock()
		for c := range open {
			_ = c.Conn.Close()
		}
		for _, l := range []*chanListener{m.raft, m.remoting} {
			for {
				select {
				case c := <-l.conns:
					_ = c.Close()
					continue
				default:
				}
				break
			}
		}
	})
	return err
}

func (m *Mux) accept() {
	defer m.wg.Done()
	pause := 5 * time.Millisecond
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			m.log.Warn("controller mux: accept failed", "addr", m.ln.Addr().String(), "err", err)
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 5 * time.Millisecond
		m.wg.Add(1)
		go m.classify(conn)
	}
}

// classify reads the first byte off the accept loop, so one slow client
// cannot hold up the others.
func (m *Mux) classify(conn net.Conn) {
	defer m.wg.Done()
	_ = conn.SetReadDeadline(time.Now().Add(m.cfg.ClassifyTimeout))
	br := bufio.NewReaderSize(conn, 512)
	first, err := br.Peek(1)
	_ = conn.SetReadDeadline(time.Time{})
	if err != nil {
		_ = conn.Close()
		return
	}
	target := m.remoting
	var out net.Conn = &bufferedConn{Conn: conn, r: br}
	if first[0] == RaftMarker {
		_, _ = br.Discard(1)
		target = m.raft
		tc := &trackedConn{Conn: out, m: m}
		m.cmu.Lock()
		if m.conns == nil { // closing
			m.cmu.Unlock()
			_ = conn.Close()
			return
		}
		m.conns[tc] = struct{}{}
		m.cmu.Unlock()
		out = tc
	}
	select {
	case target.conns <- out:
	case <-m.done:
		_ = conn.Close()
	}
}

// bufferedConn reads through the classifier's buffer first.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// trackedConn leaves the Mux's set when its owner closes it.
type trackedConn struct {
	net.Conn
	m *Mux
}

func (c *trackedConn) Close() error {
	c.m.cmu.Lock()
	delete(c.m.conns, c)
	c.m.cmu.Unlock()
	return c.Conn.Close()
}

type chanListener struct {
	m     *Mux
	conns chan net.Conn
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

// Close closes the whole mux: both sides share one port.
func (l *chanListener) Close() error { return l.m.Close() }

func (l *chanListener) Addr() net.Addr { return l.m.ln.Addr() }

// TLS is the raft side's TLS (docs/operations.md "TLS"). The zero value is
// plaintext both ways.
type TLS struct {
	// Server is how accepted connections are served: TLS or plaintext by
	// their first byte (permissive), TLS only (enforcing), plaintext only
	// (disabled, the zero value); as a remoting listener's.
	Server remoting.ServerTLS
	// Client dials peers over TLS (nil: plaintext).
	Client *tls.Config
}

// StreamLayer is raft's network layer: over the Raft side of a Mux, where
// dialled connections announce themselves with RaftMarker, or over a
// listener of its own (NewListenerStreamLayer). With TLS the marker stays
// plaintext (it selects the side of the shared port) and everything after
// it, raft's RPCs, goes through the TLS session.
type StreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	marker    bool
	client    *tls.Config // nil: dial plaintext
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// NewStreamLayer uses m's raft side; advertise is this node's peer address
// (what other nodes dial), nil for the listener's address.
func NewStreamLayer(m *Mux, advertise net.Addr) *StreamLayer {
	if advertise == nil {
		advertise = m.Addr()
	}
	return &StreamLayer{ln: m.Raft(), advertise: advertise, marker: true}
}

// NewListenerStreamLayer serves raft alone on ln (a port of its own: no
// marker); advertise nil is ln's address.
func NewListenerStreamLayer(ln net.Listener, advertise net.Addr) *StreamLayer {
	if advertise == nil {
		advertise = ln.Addr()
	}
	return &StreamLayer{ln: ln, advertise: advertise}
}

// WithTLS returns s carrying raft over TLS as t says (accepted
// connections are classified on their first read, off the accept loop; a
// refused one fails that read, and raft drops it).
func (s *StreamLayer) WithTLS(t TLS) (*StreamLayer, error) {
	ln, err := remoting.NewTLSListener(s.ln, t.Server, nil)
	if err != nil {
		return nil, fmt.Errorf("mux: raft TLS: %w", err)
	}
	c := *s
	c.ln, c.client = ln, t.Client
	return &c, nil
}

// Addr is the advertised address.
func (s *StreamLayer) Addr() net.Addr { return s.advertise }

// Close closes the listener.
func (s *StreamLayer) Close() error { return s.ln.Close() }

// Accept returns the next raft connection.
func (s *StreamLayer) Accept() (net.Conn, error) { return s.ln.Accept() }

// Dial connects to a peer, sends the marker (shared port) and makes the TLS
// handshake (TLS client side), all within timeout.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if s.marker {
		if _, err := conn.Write([]byte{RaftMarker}); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("mux: raft marker to %s: %w", address, err)
		}
	}
	if s.client != nil {
		cfg := s.client.Clone()
		if cfg.ServerName == "" {
			if host, _, err := net.SplitHostPort(string(address)); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(conn, cfg)
		if err := tc.Handshake(); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("mux: raft TLS handshake with %s: %w", address, err)
		}
		conn = tc
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}
