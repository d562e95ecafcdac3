package remoting

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudwego/netpoll"

	"github.com/rmqgo/rmq/remoting/code"
)

// Defaults shared by ServerConfig and ClientConfig.
const (
	DefaultIdleTimeout    = 120 * time.Second // Java's channelMaxIdleTimeSeconds
	DefaultWriteTimeout   = 10 * time.Second
	DefaultInvokeTimeout  = 3 * time.Second // Java's default sync invoke timeout
	DefaultConnectTimeout = 3 * time.Second
	DefaultWorkers        = 16
	DefaultQueueSize      = 10000
)

// overloadRemark is the Java broker's answer when a processor's queue is
// full (NettyRemotingAbstract, RejectedExecutionException).
const overloadRemark = "[OVERLOAD]system busy, start flow control for a while"

// expiredRemark is the Java broker's answer to a request that waited in its
// processor's queue longer than allowed (BrokerFastFailure): the client
// turns to another broker instead of timing out on this one.
const expiredRemark = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d"

// busyRemark answers a request dropped while the broker sheds its queue
// because the disk cannot keep up (Apache: the OS page cache is busy).
const busyRemark = "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d"

// goAwayMinVersion: Java answers GO_AWAY while shutting down only to peers
// newer than V5_3_1 (older ones do not know the code).
const goAwayMinVersion = 475

// ServerConfig configures a Server. Zero fields take their defaults.
type ServerConfig struct {
	ListenAddr   string        // "0.0.0.0:9876"; port 0 picks a free port (tests)
	MaxFrameSize int           // largest accepted length field; default DefaultMaxFrameSize
	IdleTimeout  time.Duration // connections without traffic this long are closed; default 120s, negative disables
	WriteTimeout time.Duration // a write blocked this long fails and closes the connection; default 10s

	InvokeTimeout time.Duration // Channel.Invoke timeout when ctx has no deadline; default 3s
	Workers       int           // default executor workers; default 16
	QueueSize     int           // default executor queue; default 10000

	// TLS: the zero value (TLSDisabled) is the plain netpoll server; other
	// modes serve each connection on its own goroutine over crypto/tls
	// (tls.go).
	TLS ServerTLS
}

// DefaultServerConfig is the nameserver's default listener with all defaults.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		ListenAddr:    "0.0.0.0:9876",
		MaxFrameSize:  DefaultMaxFrameSize,
		IdleTimeout:   DefaultIdleTimeout,
		WriteTimeout:  DefaultWriteTimeout,
		InvokeTimeout: DefaultInvokeTimeout,
		Workers:       DefaultWorkers,
		QueueSize:     DefaultQueueSize,
	}
}

// Validate reports a config that cannot work. Zero values are valid (they
// mean "default").
func (c ServerConfig) Validate() error {
	if c.ListenAddr == "" {
		return errors.New("remoting: ServerConfig.ListenAddr is empty")
	}
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		return fmt.Errorf("remoting: ServerConfig.ListenAddr %q: %w", c.ListenAddr, err)
	}
	if c.MaxFrameSize < 0 || c.MaxFrameSize > 1<<30 {
		return fmt.Errorf("remoting: ServerConfig.MaxFrameSize %d out of range [0, 1GiB]", c.MaxFrameSize)
	}
	if c.WriteTimeout < 0 || c.InvokeTimeout < 0 {
		return errors.New("remoting: ServerConfig timeouts must not be negative (except IdleTimeout)")
	}
	if c.Workers < 0 || c.QueueSize < 0 {
		return errors.New("remoting: ServerConfig.Workers and QueueSize must not be negative")
	}
	return c.TLS.validate()
}

func (c ServerConfig) withDefaults() ServerConfig {
	d := DefaultServerConfig()
	c.MaxFrameSize = cmp.Or(c.MaxFrameSize, d.MaxFrameSize)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, d.IdleTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, d.WriteTimeout)
	c.InvokeTimeout = cmp.Or(c.InvokeTimeout, d.InvokeTimeout)
	c.Workers = cmp.Or(c.Workers, d.Workers)
	c.QueueSize = cmp.Or(c.QueueSize, d.QueueSize)
	return c
}

type route struct {
	h  Handler
	ex *Executor // nil: the server's default executor
}

const (
	stateNew int32 = iota
	stateRunning
	stateDraining
	stateClosed
)

// Server accepts RocketMQ remoting connections on netpoll. Frames are read
// on netpoll's per-connection tasks (never on the poller itself) and every
// request is handed to an executor, so a slow handler never stalls reading.
type Server struct {
	cfg   ServerConfig
	log   *slog.Logger
	wbufs *writeBufs // large write buffers shared by the connections

	rmu      sync.RWMutex
	routes   map[int32]route
	fallback *route

	hooks hookList

	cbmu      sync.Mutex
	onConnect atomic.Pointer[[]func(*Channel)]
	onClose   atomic.Pointer[[]func(*Channel)]

	ctx    context.Context // handler context, cancelled on hard shutdown
	cancel context.CancelFunc

	opaque   atomic.Int32 // server-originated requests (Channel.Invoke)
	nextID   atomic.Uint64
	arrivals atomic.Uint64           // Command.Arrival
	deferred atomic.Pointer[[]int32] // codes read with their extFields deferred

	mu       sync.Mutex // guards state transitions and channels
	state    atomic.Int32
	channels map[uint64]*Channel
	ln       net.Listener
	addr     string
	evl      netpoll.EventLoop
	exec     *Executor
	served   chan struct{} // closed when netpoll's Serve returns
	stopIdle chan struct{}

	inflight    counter      // requests submitted to executors and not finished
	lastBusyLog atomic.Int64 // unix nanos of the last "executor full" line
	handling    atomic.Int64 // requests dispatched and not yet served
	conns       counter      // accepted connections whose close callbacks have not finished
	bg          counter      // idle scanner
}

// chanKey carries the *Channel in netpoll's per-connection context.
type chanKey struct{}

// NewServer validates cfg and builds a server; Start listens. A nil log
// discards logs.
func NewServer(cfg ServerConfig, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg:      cfg.withDefaults(),
		log:      log,
		routes:   make(map[int32]route),
		ctx:      ctx,
		cancel:   cancel,
		channels: make(map[uint64]*Channel),
		wbufs:    newWriteBufs(),
	}, nil
}

// Register routes requests with code to h on executor ex (nil: the server's
// default executor). Registering again replaces the handler.
func (s *Server) Register(code int32, h Handler, ex *Executor) {
	s.rmu.Lock()
	s.routes[code] = route{h: h, ex: ex}
	s.rmu.Unlock()
}

// DeferExtFields makes the server read requests with these codes without
// decoding their extFields when the header is ROCKETMQ (Command.Deferred):
// their handlers read fields with Command.Ext, ExtBytes or Fields, which
// saves building a map per request on a hot path. RPC hooks still see
// ExtFields decoded.
func (s *Server) DeferExtFields(codes ...int32) {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	var next []int32
	if cur := s.deferred.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, codes...)
	s.deferred.Store(&next)
}

func (s *Server) deferredCodes() []int32 {
	if d := s.deferred.Load(); d != nil {
		return *d
	}
	return nil
}

// RegisterDefault handles codes without a registered handler. Without it such
// requests get REQUEST_CODE_NOT_SUPPORTED.
func (s *Server) RegisterDefault(h Handler, ex *Executor) {
	s.rmu.Lock()
	s.fallback = &route{h: h, ex: ex}
	s.rmu.Unlock()
}

// Handler returns the handler and executor registered for code (not the
// default handler), so a feature can wrap an existing processor, e.g. static
// topics rewriting logic queues before the send and pull handlers run.
func (s *Server) Handler(code int32) (Handler, *Executor, bool) {
	s.rmu.RLock()
	defer s.rmu.RUnlock()
	r, ok := s.routes[code]
	return r.h, r.ex, ok
}

func (s *Server) route(c int32) (route, bool) {
	s.rmu.RLock()
	defer s.rmu.RUnlock()
	if r, ok := s.routes[c]; ok {
		return r, true
	}
	if s.fallback != nil {
		return *s.fallback, true
	}
	return route{}, false
}

// AddHook appends an RPC hook; hooks run in the order added.
func (s *Server) AddHook(h RPCHook) { s.hooks.add(h) }

// OnConnect registers f to run when a connection is accepted, before any of
// its requests is dispatched.
func (s *Server) OnConnect(f func(ch *Channel)) { s.addCallback(&s.onConnect, f) }

// OnClose registers f to run (on its own goroutine) after a connection closed.
func (s *Server) OnClose(f func(ch *Channel)) { s.addCallback(&s.onClose, f) }

func (s *Server) addCallback(list *atomic.Pointer[[]func(*Channel)], f func(*Channel)) {
	s.cbmu.Lock()
	defer s.cbmu.Unlock()
	var next []func(*Channel)
	if cur := list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, f)
	list.Store(&next)
}

func (s *Server) runCallbacks(list *atomic.Pointer[[]func(*Channel)], ch *Channel, what string) {
	p := list.Load()
	if p == nil {
		return
	}
	for _, f := range *p {
		func() {
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("remoting: connection callback panicked", "event", what, "channel", ch.String(), "panic", fmt.Sprint(r))
				}
			}()
			f(ch)
		}()
	}
}

// Start listens on cfg.ListenAddr and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.Load() != stateNew {
		return errors.New("remoting: server already started")
	}
	if s.cfg.TLS.Mode != TLSDisabled {
		// TLS needs crypto/tls over a net.Conn: one goroutine per
		// connection (serve.go), plaintext ones too in permissive mode.
		ln, err := net.Listen("tcp", s.cfg.ListenAddr)
		if err != nil {
			return fmt.Errorf("remoting: listen on %s: %w", s.cfg.ListenAddr, err)
		}
		return s.serveLocked(ln)
	}
	ln, err := s.listen(s.cfg.ListenAddr)
	if err != nil {
		return err
	}
	evl, err := s.newEventLoop()
	if err != nil {
		_ = ln.Close()
		return err
	}
	s.ln, s.evl, s.addr = ln, evl, ln.Addr().String()
	s.exec = NewExecutor("remoting-default", s.cfg.Workers, s.cfg.QueueSize)
	s.served = make(chan struct{})
	s.stopIdle = make(chan struct{})
	s.state.Store(stateRunning)
	go s.serve(ln, evl)
	if s.cfg.IdleTimeout > 0 {
		s.bg.goTracked(func() { idleLoop(s.cfg.IdleTimeout, s.stopIdle, s.closeIdle) })
	}
	s.log.Info("remoting: server listening", "addr", s.addr)
	return nil
}

// listen opens a TCP listener in netpoll's form, which Serve uses as is.
func (s *Server) listen(addr string) (netpoll.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("remoting: listen on %s: %w", addr, err)
	}
	npln, err := newFDListener(ln)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("remoting: netpoll listener on %s: %w", addr, err)
	}
	return npln, nil
}

func (s *Server) newEventLoop() (netpoll.EventLoop, error) {
	evl, err := netpoll.NewEventLoop(s.onRequest,
		netpoll.WithOnPrepare(s.onPrepare),
		netpoll.WithOnConnect(s.onConnected),
	)
	if err != nil {
		return nil, fmt.Errorf("remoting: netpoll event loop: %w", err)
	}
	return evl, nil
}

// serve runs netpoll's Serve until Shutdown. netpoll may stop serving on
// its own — it quits when registering the listener with its poller fails
// (what netpoll's own listener's double close caused, see listener.go) or
// when the poller reports a hang-up on it — and then connections would wait
// in the backlog unanswered. So when Serve returns while the server runs,
// the listener is closed and the address listened on again; the
// connections already accepted are not affected.
func (s *Server) serve(ln net.Listener, evl netpoll.EventLoop) {
	defer close(s.served)
	pause := 10 * time.Millisecond
	for {
		err := evl.Serve(ln)
		if s.state.Load() != stateRunning {
			return
		}
		s.log.Error("remoting: netpoll stopped serving; listening again", "addr", s.addr, "err", err)
		_ = ln.Close()
		for {
			select {
			case <-s.stopIdle: // closed by Shutdown
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
			nln, lerr := s.listen(s.addr)
			if lerr == nil {
				var nevl netpoll.EventLoop
				if nevl, lerr = s.newEventLoop(); lerr == nil {
					s.mu.Lock()
					if s.state.Load() != stateRunning {
						s.mu.Unlock()
						_ = nln.Close()
						return
					}
					s.ln, s.evl = nln, nevl
					s.mu.Unlock()
					ln, evl = nln, nevl
					pause = 10 * time.Millisecond
					break
				}
				_ = nln.Close()
			}
			s.log.Error("remoting: listening again failed", "addr", s.addr, "err", lerr)
		}
	}
}

// Addr is the actual listening "ip:port" after Start ("" before).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Channels returns the open connections.
func (s *Server) Channels() []*Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Channel, 0, len(s.channels))
	for _, ch := range s.channels {
		out = append(out, ch)
	}
	return out
}

// onPrepare runs on the poller for each accepted connection: keep it short.
func (s *Server) onPrepare(conn netpoll.Connection) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.Load() != stateRunning {
		// Shutting down: netpoll keeps accepting until its listener closes
		// at the end of Shutdown, so refuse here.
		_ = conn.Close()
		return context.Background()
	}
	_ = conn.SetWriteTimeout(s.cfg.WriteTimeout)
	ch := newChannel(s.nextID.Add(1), addrString(conn.LocalAddr()), addrString(conn.RemoteAddr()),
		newCoalescingTransport(&npSink{c: conn}, s.wbufs), &s.opaque, s.cfg.InvokeTimeout, s.log)
	s.channels[ch.id] = ch
	s.conns.add()
	_ = conn.AddCloseCallback(func(netpoll.Connection) error {
		s.closed(ch)
		return nil
	})
	return context.WithValue(context.Background(), chanKey{}, ch)
}

// onConnected runs on a netpoll task before the connection's first read.
func (s *Server) onConnected(ctx context.Context, _ netpoll.Connection) context.Context {
	if ch, ok := ctx.Value(chanKey{}).(*Channel); ok {
		s.log.Debug("remoting: connection accepted", "channel", ch.String())
		s.runCallbacks(&s.onConnect, ch, "connect")
	}
	return ctx
}

// closed runs once per connection from netpoll's close callback, which may
// be on the poller: user callbacks go to their own goroutine.
func (s *Server) closed(ch *Channel) {
	s.mu.Lock()
	delete(s.channels, ch.id)
	s.mu.Unlock()
	ch.markClosed()
	go func() {
		defer s.conns.done()
		s.log.Debug("remoting: connection closed", "channel", ch.String())
		s.runCallbacks(&s.onClose, ch, "close")
	}()
}

// onRequest runs on a netpoll task while the connection has unread input. It
// must consume all input or close the connection: netpoll calls it again while
// input remains, even after the peer has closed. A frame is consumed only once
// all of its bytes have arrived (Peek waits for them), so a connection that
// ends mid-frame is closed by us with nothing of that frame executed; bytes
// after a cut are never parsed as a new frame.
func (s *Server) onRequest(ctx context.Context, conn netpoll.Connection) error {
	ch, _ := ctx.Value(chanKey{}).(*Channel)
	if ch == nil {
		return conn.Close()
	}
	return s.readFrames(ch, conn.Reader())
}

// frameReader is the part of netpoll.Reader the frame loop uses. On a
// connection, Peek(n) waits until n bytes have arrived and fails only when
// the connection ends (or its read timeout passes) first.
type frameReader interface {
	Len() int
	Peek(n int) ([]byte, error)
	Skip(n int) error
	Release() error
}

// batchWindow bounds what readFrames takes in with one Peek. The whole
// frames in it are consumed with one Skip and one Release: netpoll keeps a
// connection's input length in an atomic counter its poller adds to on
// every read, and touching it four times per frame (Len, two Peeks, Skip)
// cost about 2% of a 1 KiB send's broker CPU under 64 pipelining
// producers. Peek copies bytes spread over several of netpoll's buffers,
// hence a bound.
const batchWindow = 64 << 10

// readFrames consumes every whole frame available in r and dispatches it.
// A Peek error means the input ended inside a frame (cutFrame); a frame that
// cannot be parsed closes the connection (badFrame).
func (s *Server) readFrames(ch *Channel, r frameReader) error {
	deferred := s.deferredCodes()
	for {
		avail := r.Len()
		if avail == 0 {
			return nil
		}
		head, err := r.Peek(4)
		if err != nil {
			return s.cutFrame(ch, err)
		}
		n, err := FrameLength(head, s.cfg.MaxFrameSize)
		if err != nil {
			return s.badFrame(ch, err)
		}
		if window := min(avail, batchWindow); n <= window {
			// Every whole frame that has arrived, up to the window, the
			// first one included.
			buf, err := r.Peek(window)
			if err != nil {
				return s.cutFrame(ch, err)
			}
			used := 0
			for len(buf)-used >= 4 {
				n, err := FrameLength(buf[used:used+4], s.cfg.MaxFrameSize)
				if err != nil {
					return s.badFrame(ch, err)
				}
				if n > len(buf)-used {
					break
				}
				cmd, err := DecodeDeferring(copyFrame(buf[used+4:used+n]), deferred)
				if err != nil {
					return s.badFrame(ch, err)
				}
				used += n
				s.deliver(ch, cmd)
			}
			if err := r.Skip(used); err != nil {
				return s.cutFrame(ch, err)
			}
			_ = r.Release()
			continue
		}
		// The first frame is not all here, or is larger than the window:
		// wait for all of it (Peek blocks until it has arrived).
		whole, err := r.Peek(n)
		if err != nil {
			return s.cutFrame(ch, err)
		}
		frame := copyFrame(whole[4:])
		if err := r.Skip(n); err != nil {
			return s.cutFrame(ch, err)
		}
		_ = r.Release()
		cmd, err := DecodeDeferring(frame, deferred)
		if err != nil {
			return s.badFrame(ch, err)
		}
		s.deliver(ch, cmd)
	}
}

// copyFrame copies a frame out of netpoll's buffer: Body aliases it beyond
// Release. make+copy of one length is compiled to a copy into memory that
// is not zeroed first.
func copyFrame(src []byte) []byte {
	frame := make([]byte, len(src))
	copy(frame, src)
	return frame
}

// deliver stamps a decoded frame's arrival and dispatches it. One clock
// read per frame serves both (a clock read per 1 KiB send is measurable:
// issue 18's profiles).
func (s *Server) deliver(ch *Channel, cmd *Command) {
	now := time.Now()
	ch.touchAt(now)
	cmd.Arrival = s.arrivals.Add(1)
	cmd.Received = now
	s.dispatch(ch, cmd)
}

// cutFrame: the connection ended (or timed out) before a whole frame arrived.
// Nothing of that frame runs; closing here stops netpoll from handing us the
// leftover bytes again.
func (s *Server) cutFrame(ch *Channel, err error) error {
	s.log.Debug("remoting: connection ended inside a frame", "channel", ch.String(), "err", err)
	_ = ch.Close()
	return err
}

// badFrame: a frame we cannot parse has no usable opaque and desynchronizes
// the stream, so the connection is closed (as Java's decoder does).
func (s *Server) badFrame(ch *Channel, err error) error {
	s.log.Warn("remoting: bad frame, closing connection", "channel", ch.String(), "err", err)
	_ = ch.Close()
	return err
}

func (s *Server) dispatch(ch *Channel, req *Command) {
	if req.IsResponse() {
		ch.completeResponse(req)
		return
	}
	if s.state.Load() != stateRunning && req.Version > goAwayMinVersion {
		s.reply(ch, req, NewResponse(req, code.GoAway, "please go away"))
		return
	}
	r, ok := s.route(req.Code)
	if !ok {
		s.reply(ch, req, notSupported(req))
		return
	}
	ex := r.ex
	if ex == nil {
		ex = s.exec
	}
	s.inflight.add()
	ch.handling.Add(1)
	s.handling.Add(1)
	since := req.Received
	if since.IsZero() {
		since = time.Now()
	}
	accepted := ex.submitRequest(request{s: s, ch: ch, req: req, h: r.h}, since)
	if !accepted {
		s.inflight.done()
		ch.handling.Add(-1)
		s.handling.Add(-1)
		// A flood would log every refusal: at most one line per 10 s.
		if now := time.Now().UnixNano(); now-s.lastBusyLog.Load() >= int64(10*time.Second) {
			s.lastBusyLog.Store(now)
			s.log.Warn("remoting: executor full, rejecting requests", "executor", ex.Name(), "code", req.Code, "channel", ch.String())
		}
		s.reply(ch, req, NewResponse(req, code.SystemBusy, overloadRemark))
	}
}

// request is a request dispatched to an executor.
type request struct {
	s   *Server
	ch  *Channel
	req *Command
	h   Handler
}

// serve runs the request's handler and writes its answer.
func (q request) serve() {
	defer q.s.inflight.done()
	defer q.ch.handling.Add(-1)
	defer q.s.handling.Add(-1)
	serveRequest(q.s.ctx, q.s.log, &q.s.hooks, q.ch, q.req, q.h)
}

// drop answers SYSTEM_BUSY instead: the request waited too long in the
// queue, or the server sheds its queue.
func (q request) drop(why DropReason, waited time.Duration, queueLen int) {
	defer q.s.inflight.done()
	defer q.ch.handling.Add(-1)
	defer q.s.handling.Add(-1)
	remark := expiredRemark
	if why == DropBusy {
		remark = busyRemark
	}
	q.s.reply(q.ch, q.req, NewResponse(q.req, code.SystemBusy, fmt.Sprintf(remark, waited.Milliseconds(), queueLen)))
}

// Handling is the number of requests dispatched to executors and not yet
// served, queued ones included.
func (s *Server) Handling() int64 { return s.handling.Load() }

// reply answers directly from the reading task (cheap, fixed responses).
func (s *Server) reply(ch *Channel, req, resp *Command) {
	if req.IsOneway() {
		return
	}
	if err := ch.WriteResponse(resp); err != nil {
		s.log.Debug("remoting: write response failed", "channel", ch.String(), "err", err)
	}
}

func (s *Server) closeIdle(before int64) {
	s.mu.Lock()
	var idle []*Channel
	for _, ch := range s.channels {
		if ch.idleSince(before) {
			idle = append(idle, ch)
		}
	}
	s.mu.Unlock()
	for _, ch := range idle {
		s.log.Info("remoting: closing idle connection", "channel", ch.String(), "idle", s.cfg.IdleTimeout)
		_ = ch.Close()
	}
}

// Shutdown stops accepting connections, waits until in-flight handlers finish
// or ctx ends (then cancels the handlers' context), closes all connections
// and releases the listener and the default executor. Requests arriving
// meanwhile are still served, except that peers newer than 5.3.1 get GO_AWAY
// so they retry elsewhere. It returns ctx's error if draining was cut short.
// The final cleanup (closing connections, OnClose callbacks) may take up to
// 5 s beyond ctx so that it completes even after a hard stop.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.state.CompareAndSwap(stateRunning, stateDraining) {
		s.mu.Unlock()
		return nil // never started, or already shut down
	}
	s.mu.Unlock()
	s.log.Info("remoting: server shutting down", "addr", s.addr)

	drainErr := s.inflight.wait(ctx)
	if drainErr != nil {
		s.log.Warn("remoting: shutdown deadline reached with requests in flight", "err", drainErr)
	}
	s.cancel()

	// Cleanup must finish even when ctx has already expired; bound it so a
	// stuck OnClose callback cannot hang shutdown forever.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()

	close(s.stopIdle)
	for _, ch := range s.Channels() {
		_ = ch.Close()
	}
	s.stopServing(cctx)
	// Queued tasks still run (their writes fail fast on closed connections);
	// a handler that ignores its cancelled ctx must not hang Shutdown.
	execDone := make(chan struct{})
	go func() { s.exec.Close(); close(execDone) }()
	select {
	case <-execDone:
	case <-cctx.Done():
		s.log.Warn("remoting: handlers still running after shutdown", "addr", s.addr)
	}
	cerr := s.conns.wait(cctx)
	_ = s.bg.wait(cctx)
	s.state.Store(stateClosed)
	s.log.Info("remoting: server stopped", "addr", s.addr)
	if drainErr != nil {
		return fmt.Errorf("remoting: shutdown %s: draining requests: %w", s.addr, drainErr)
	}
	if cerr != nil {
		return fmt.Errorf("remoting: shutdown %s: closing connections: %w", s.addr, cerr)
	}
	return nil
}

// stopServing closes netpoll's listener and waits for Serve to return.
// netpoll's Shutdown is a no-op if it runs before Serve registered its
// server, so it is retried until Serve has returned.
func (s *Server) stopServing(ctx context.Context) {
	if s.evl == nil { // Serve: plain accept loop
		_ = s.ln.Close()
		select {
		case <-s.served:
		case <-ctx.Done():
			s.log.Warn("remoting: accept loop did not stop in time", "addr", s.addr)
		}
		return
	}
	for {
		s.mu.Lock()
		evl := s.evl
		s.mu.Unlock()
		if err := evl.Shutdown(ctx); err != nil {
			s.log.Debug("remoting: netpoll shutdown", "err", err)
		}
		select {
		case <-s.served:
			return
		case <-ctx.Done():
			s.log.Warn("remoting: netpoll did not stop in time", "addr", s.addr)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// idleLoop calls closeIdle with the cutoff time every tick until stop
// closes. The tick is a fraction of the timeout so a connection is closed
// within ~1.25 × timeout.
func idleLoop(timeout time.Duration, stop <-chan struct{}, closeIdle func(before int64)) {
	tick := min(max(timeout/4, 10*time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			closeIdle(now.Add(-timeout).UnixNano())
		}
	}
}
