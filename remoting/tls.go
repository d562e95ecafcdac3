package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// TLSMode is Apache's tls.server.mode (Apache
// remoting/src/main/java/org/apache/rocketmq/remoting/common/TlsMode.java).
type TLSMode uint8

const (
	// TLSDisabled serves plaintext only, on netpoll. A TLS client's hello
	// reads as an oversized frame and the connection is closed.
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plaintext on one port, told apart by a
	// connection's first byte (0x16 starts a TLS handshake record), as
	// Apache's NettyRemotingServer.TlsModeHandler does.
	TLSPermissive
	// TLSEnforcing serves TLS only; a plaintext connection is closed
	// without an answer, as Apache does.
	TLSEnforcing
)

// ParseTLSMode reads "disabled", "permissive" or "enforcing" ("" is
// disabled).
func ParseTLSMode(s string) (TLSMode, error) {
	switch s {
	case "", "disabled":
		return TLSDisabled, nil
	case "permissive":
		return TLSPermissive, nil
	case "enforcing":
		return TLSEnforcing, nil
	}
	return TLSDisabled, fmt.Errorf("remoting: TLS mode %q: want disabled, permissive or enforcing", s)
}

func (m TLSMode) String() string {
	switch m {
	case TLSPermissive:
		return "permissive"
	case TLSEnforcing:
		return "enforcing"
	}
	return "disabled"
}

// DefaultHandshakeTimeout bounds a new connection's first byte and its TLS
// handshake.
const DefaultHandshakeTimeout = 10 * time.Second

// tlsHandshakeRecord is the first byte a TLS client sends (content type 22).
const tlsHandshakeRecord = 0x16

// ErrPlaintextRefused is what reading a plaintext connection on an
// enforcing listener returns.
var ErrPlaintextRefused = errors.New("remoting: plaintext connection refused (TLS enforcing)")

// ServerTLS is a listener's TLS. With Mode TLSDisabled (the zero value)
// the server is the plain netpoll one; otherwise connections are served
// one goroutine each over crypto/tls (plaintext ones too in permissive
// mode), through the same frame codec.
type ServerTLS struct {
	Mode   TLSMode
	Config *tls.Config // required unless Mode is TLSDisabled
	// HandshakeTimeout bounds the first byte and the handshake (0:
	// DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
}

func (t ServerTLS) validate() error {
	if t.Mode > TLSEnforcing {
		return fmt.Errorf("remoting: unknown TLS mode %d", t.Mode)
	}
	if t.Mode != TLSDisabled && t.Config == nil {
		return fmt.Errorf("remoting: TLS mode %s needs a tls.Config", t.Mode)
	}
	return nil
}

// NewTLSListener wraps ln so that each accepted connection is classified
// by its first byte when first read or written: TLS (served over
// tls.Server with t.Config), plaintext (passed through in permissive mode,
// refused in enforcing mode). The classification runs on the goroutine that
// first uses the connection, never in Accept, so a slow or silent peer
// holds up nobody else. Mode TLSDisabled returns ln itself.
func NewTLSListener(ln net.Listener, t ServerTLS, log *slog.Logger) (net.Listener, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	if t.Mode == TLSDisabled {
		return ln, nil
	}
	if t.HandshakeTimeout <= 0 {
		t.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &tlsListener{Listener: ln, t: t, log: log}, nil
}

type tlsListener struct {
	net.Listener
	t   ServerTLS
	log *slog.Logger
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &SniffConn{raw: c, t: &l.t, log: l.log}, nil
}

// SniffConn is a connection accepted by a TLS listener. Until its first
// Read or Write it has not been classified; then it is TLS or plaintext for
// good.
type SniffConn struct {
	raw net.Conn
	t   *ServerTLS
	log *slog.Logger

	once sync.Once
	c    net.Conn // the classified connection
	tc   atomic.Pointer[tls.Conn]
	err  error

	dmu      sync.Mutex
	sniffing bool
	rdl, wdl time.Time // deadlines the user set
}

// sniff classifies the connection once.
func (c *SniffConn) sniff() error {
	c.once.Do(func() {
		c.dmu.Lock()
		c.sniffing = true
		c.dmu.Unlock()
		_ = c.raw.SetDeadline(time.Now().Add(c.t.HandshakeTimeout))
		var first [1]byte
		if _, err := io.ReadFull(c.raw, first[:]); err != nil {
			c.err = fmt.Errorf("remoting: first byte from %s: %w", addrString(c.raw.RemoteAddr()), err)
		} else {
			pc := &prefixConn{Conn: c.raw, first: first[0], has: true}
			switch {
			case first[0] == tlsHandshakeRecord:
				tc := tls.Server(pc, c.t.Config)
				if err := tc.Handshake(); err != nil {
					c.err = fmt.Errorf("remoting: TLS handshake with %s: %w", addrString(c.raw.RemoteAddr()), err)
					c.log.Debug("remoting: TLS handshake failed", "remote", addrString(c.raw.RemoteAddr()), "err", err)
				} else {
					c.c = tc
					c.tc.Store(tc)
				}
			case c.t.Mode == TLSEnforcing:
				c.err = fmt.Errorf("%w: from %s", ErrPlaintextRefused, addrString(c.raw.RemoteAddr()))
				c.log.Info("remoting: plaintext connection closed, this server runs TLS enforcing mode", "remote", addrString(c.raw.RemoteAddr()))
			default:
				c.c = pc
			}
		}
		if c.err != nil {
			_ = c.raw.Close()
		}
		c.dmu.Lock()
		c.sniffing = false
		_ = c.raw.SetReadDeadline(c.rdl)
		_ = c.raw.SetWriteDeadline(c.wdl)
		c.dmu.Unlock()
	})
	return c.err
}

// Read classifies the connection first.
func (c *SniffConn) Read(p []byte) (int, error) {
	if err := c.sniff(); err != nil {
		return 0, err
	}
	return c.c.Read(p)
}

// Write classifies the connection first (waiting for the peer's first byte).
func (c *SniffConn) Write(p []byte) (int, error) {
	if err := c.sniff(); err != nil {
		return 0, err
	}
	return c.c.Write(p)
}

// Close closes the socket (no TLS close_notify: it could block on a full
// send buffer).
func (c *SniffConn) Close() error { return c.raw.Close() }

func (c *SniffConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *SniffConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

func (c *SniffConn) SetDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.rdl, c.wdl = t, t
	if c.sniffing {
		return nil // applied when the classification ends
	}
	return c.raw.SetDeadline(t)
}

func (c *SniffConn) SetReadDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.rdl = t
	if c.sniffing {
		return nil
	}
	return c.raw.SetReadDeadline(t)
}

func (c *SniffConn) SetWriteDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.wdl = t
	if c.sniffing {
		return nil
	}
	return c.raw.SetWriteDeadline(t)
}

// ConnectionState is the TLS state once the connection was classified as
// TLS; ok is false for plaintext or before the first Read or Write.
func (c *SniffConn) ConnectionState() (state tls.ConnectionState, ok bool) {
	tc := c.tc.Load()
	if tc == nil {
		return tls.ConnectionState{}, false
	}
	return tc.ConnectionState(), true
}

// prefixConn returns the sniffed byte before reading on.
type prefixConn struct {
	net.Conn
	first byte
	has   bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.has && len(p) > 0 {
		p[0] = c.first
		c.has = false
		return 1, nil
	}
	return c.Conn.Read(p)
}

// ClientHandshake runs the TLS client handshake on conn within timeout of
// ctx; it closes conn on failure. The dialled host of addr is the name
// verified unless cfg names one (or skips verification).
func ClientHandshake(ctx context.Context, conn net.Conn, cfg *tls.Config, addr string, timeout time.Duration) (net.Conn, error) {
	if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc := tls.Client(conn, cfg)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
	}
	return tc, nil
}
