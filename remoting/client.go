package remoting

import (
	"bufio"
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

// ClientConfig configures a Client. Zero fields take their defaults.
type ClientConfig struct {
	ConnectTimeout time.Duration // dial timeout; default 3s
	RequestTimeout time.Duration // used when ctx has no deadline; default 3s
	MaxFrameSize   int           // largest accepted response frame; default DefaultMaxFrameSize
	IdleTimeout    time.Duration // close connections without traffic this long; default 120s, negative disables
	WriteTimeout   time.Duration // a blocked write fails and closes the connection; default 10s
	// TLS, when set, wraps every connection in TLS (Apache's tls.enable);
	// the handshake is bounded by ConnectTimeout. Without ServerName (and
	// verification on) the dialled host is the name verified.
	TLS *tls.Config
}

// DefaultClientConfig returns the defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		ConnectTimeout: DefaultConnectTimeout,
		RequestTimeout: DefaultInvokeTimeout,
		MaxFrameSize:   DefaultMaxFrameSize,
		IdleTimeout:    DefaultIdleTimeout,
		WriteTimeout:   DefaultWriteTimeout,
	}
}

func (c ClientConfig) withDefaults() ClientConfig {
	d := DefaultClientConfig()
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = d.ConnectTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = d.RequestTimeout
	}
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = d.MaxFrameSize
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = d.IdleTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	return c
}

// Client sends requests to remoting servers over one lazily dialled
// connection per address (standard net package, one reader goroutine per
// connection). It also serves requests the server sends back on those
// connections (broker → client codes).
type Client struct {
	cfg   ClientConfig
	log   *slog.Logger
	wbufs *writeBufs // large write buffers shared by the connections

	hooks hookList

	hmu      sync.RWMutex
	handlers map[int32]Handler

	opaque atomic.Int32 // one counter per Client, as per RocketMQ endpoint
	nextID atomic.Uint64

	ctx    context.Context // handlers' context, cancelled by Close
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	conns    map[string]*connEntry
	stopIdle chan struct{} // non-nil once the idle scanner runs

	tasks counter // reader goroutines, handler goroutines, async callbacks, idle scanner
}

// connEntry is one address's connection, or the dial in progress for it so
// concurrent callers share a single dial.
type connEntry struct {
	ready chan struct{} // closed when the dial finished
	ch    *Channel
	err   error
}

// NewClient builds a client; connections are dialled on first use. A nil log
// discards logs.
func NewClient(cfg ClientConfig, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg:      cfg.withDefaults(),
		log:      log,
		handlers: make(map[int32]Handler),
		ctx:      ctx,
		cancel:   cancel,
		conns:    make(map[string]*connEntry),
		wbufs:    newWriteBufs(),
	}
}

// RegisterHandler serves requests with code that servers send on this
// client's connections (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED,
// GET_CONSUMER_RUNNING_INFO...). Codes without a handler are answered with
// REQUEST_CODE_NOT_SUPPORTED.
func (c *Client) RegisterHandler(code int32, h Handler) {
	c.hmu.Lock()
	c.handlers[code] = h
	c.hmu.Unlock()
}

// AddHook appends an RPC hook (see RPCHook for when it runs on a client).
func (c *Client) AddHook(h RPCHook) { c.hooks.add(h) }

// Invoke sends req to addr and waits for the response. The ctx deadline, or
// RequestTimeout without one, bounds the wait. req.Opaque is assigned here.
func (c *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	ch, err := c.channel(ctx, addr)
	if err != nil {
		return nil, err
	}
	if resp := c.hooks.before(ch, req); resp != nil {
		return resp, nil
	}
	resp, err := ch.Invoke(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("remoting: invoke %s code %d: %w", addr, req.Code, err)
	}
	c.hooks.after(ch, req, resp)
	return resp, nil
}

// InvokeAsync sends req and returns once it is written; cb runs exactly once
// on its own goroutine with the response or the error (timeout, ctx
// cancelled, connection closed). If InvokeAsync returns an error, cb is not
// called.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error {
	ch, err := c.channel(ctx, addr)
	if err != nil {
		return err
	}
	if resp := c.hooks.before(ch, req); resp != nil {
		c.tasks.goTracked(func() { cb(resp, nil) })
		return nil
	}
	err = ch.invokeAsync(ctx, req, func(resp *Command, err error) {
		// complete may run on the reader goroutine: never block it on cb.
		c.tasks.goTracked(func() {
			if err != nil {
				cb(nil, fmt.Errorf("remoting: invoke %s code %d: %w", addr, req.Code, err))
				return
			}
			c.hooks.after(ch, req, resp)
			cb(resp, nil)
		})
	})
	if err != nil {
		return fmt.Errorf("remoting: invoke %s code %d: %w", addr, req.Code, err)
	}
	return nil
}

// InvokeOneway sends req with the one-way flag; no response is expected.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	ch, err := c.channel(ctx, addr)
	if err != nil {
		return err
	}
	if resp := c.hooks.before(ch, req); resp != nil {
		return nil // rejected locally; there is nobody to tell
	}
	if err := ch.InvokeOneway(req); err != nil {
		return fmt.Errorf("remoting: oneway %s code %d: %w", addr, req.Code, err)
	}
	return nil
}

// CloseConn closes the connection to addr, if any; the next call redials.
func (c *Client) CloseConn(addr string) {
	c.mu.Lock()
	e := c.conns[addr]
	delete(c.conns, addr)
	c.mu.Unlock()
	if e == nil {
		return
	}
	closeIt := func() {
		<-e.ready
		if e.ch != nil {
			_ = e.ch.Close()
		}
	}
	select {
	case <-e.ready:
		closeIt()
	default: // a dial is in progress: do not block the caller on it
		c.tasks.goTracked(closeIt)
	}
}

// Close closes all connections (pending requests fail with ErrConnClosed),
// cancels running handlers and waits for the client's goroutines to end.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	entries := c.conns
	c.conns = make(map[string]*connEntry)
	if c.stopIdle != nil {
		close(c.stopIdle)
	}
	c.mu.Unlock()
	c.cancel()
	for _, e := range entries {
		<-e.ready // a dialler sees closed and closes what it dialled itself
		if e.ch != nil {
			_ = e.ch.Close()
		}
	}
	return c.tasks.wait(context.Background())
}

// channel returns the live connection to addr, dialling it if needed.
func (c *Client) channel(ctx context.Context, addr string) (*Channel, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		e := c.conns[addr]
		if e == nil {
			e = &connEntry{ready: make(chan struct{})}
			c.conns[addr] = e
			c.mu.Unlock()
			c.dial(ctx, addr, e)
			return e.ch, e.err
		}
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("remoting: connect to %s: %w", addr, ctx.Err())
		}
		if e.err != nil {
			return nil, e.err
		}
		if e.ch.IsActive() {
			return e.ch, nil
		}
		// Dead but its reader has not removed it yet: drop it and redial.
		c.forget(addr, e)
	}
}

// forget removes e from the table if it is still addr's entry.
func (c *Client) forget(addr string, e *connEntry) {
	c.mu.Lock()
	if c.conns[addr] == e {
		delete(c.conns, addr)
	}
	c.mu.Unlock()
}

// dial connects e and starts its reader; it always closes e.ready.
func (c *Client) dial(ctx context.Context, addr string, e *connEntry) {
	defer close(e.ready)
	// Close must not wait a full ConnectTimeout for a dial in progress.
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	d := net.Dialer{Timeout: c.cfg.ConnectTimeout}
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err == nil && c.cfg.TLS != nil {
		conn, err = ClientHandshake(dctx, conn, c.cfg.TLS, addr, c.cfg.ConnectTimeout)
	}
	if err != nil {
		e.err = fmt.Errorf("remoting: connect to %s: %w", addr, err)
		c.forget(addr, e) // the next call redials
		return
	}
	t := newConnTransport(conn, c.cfg.WriteTimeout, c.wbufs)
	ch := newChannel(c.nextID.Add(1), addrString(conn.LocalAddr()), addrString(conn.RemoteAddr()),
		t, &c.opaque, c.cfg.RequestTimeout, c.log)

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = conn.Close()
		e.err = ErrClosed
		return
	}
	// Counted under mu so Close, which sets closed under mu, waits for it.
	c.tasks.goTracked(func() { c.read(addr, e, conn, ch) })
	if c.stopIdle == nil && c.cfg.IdleTimeout > 0 {
		c.stopIdle = make(chan struct{})
		stop := c.stopIdle
		c.tasks.goTracked(func() { idleLoop(c.cfg.IdleTimeout, stop, c.closeIdle) })
	}
	c.mu.Unlock()
	e.ch = ch
	c.log.Debug("remoting: connected", "channel", ch.String())
}

// read is the connection's reader loop. When it ends the connection is dead:
// pending requests fail and the next call redials.
func (c *Client) read(addr string, e *connEntry, conn net.Conn, ch *Channel) {
	err := c.readFrames(conn, ch)
	_ = conn.Close()
	ch.markClosed()
	c.forget(addr, e)
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		c.log.Debug("remoting: connection closed", "channel", ch.String())
	default:
		c.log.Warn("remoting: connection closed", "channel", ch.String(), "err", err)
	}
}

func (c *Client) readFrames(conn net.Conn, ch *Channel) error {
	return readFrames(conn, c.cfg.MaxFrameSize, nil, ch, func(cmd *Command) {
		if cmd.IsResponse() {
			ch.completeResponse(cmd)
			return
		}
		c.hmu.RLock()
		h := c.handlers[cmd.Code]
		c.hmu.RUnlock()
		if h == nil {
			if !cmd.IsOneway() {
				_ = ch.WriteResponse(notSupported(cmd))
			}
			return
		}
		c.tasks.goTracked(func() { serveRequest(c.ctx, c.log, &c.hooks, ch, cmd, h) })
	})
}

// readFrames reads whole frames from conn until it fails and hands each
// decoded command to handle on the reading goroutine; requests with a code
// in deferred keep their extFields undecoded (Server.DeferExtFields).
func readFrames(conn net.Conn, maxFrame int, deferred []int32, ch *Channel, handle func(*Command)) error {
	br := bufio.NewReaderSize(conn, 32<<10)
	var head [4]byte
	for {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return err
		}
		n, err := FrameLength(head[:], maxFrame)
		if err != nil {
			return err
		}
		frame := make([]byte, n-4)
		if _, err := io.ReadFull(br, frame); err != nil {
			return err
		}
		cmd, err := DecodeDeferring(frame, deferred)
		if err != nil {
			return err
		}
		ch.touch()
		handle(cmd)
	}
}

func (c *Client) closeIdle(before int64) {
	c.mu.Lock()
	var idle []*Channel
	for _, e := range c.conns {
		select {
		case <-e.ready:
			if e.ch != nil && e.ch.idleSince(before) {
				idle = append(idle, e.ch)
			}
		default: // still dialling
		}
	}
	c.mu.Unlock()
	for _, ch := range idle {
		c.log.Debug("remoting: closing idle connection", "channel", ch.String())
		_ = ch.Close()
	}
}
