package remoting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// transport is the byte pipe under a Channel: netpoll on the server, net.Conn
// on the client.
type transport interface {
	// write sends one whole frame, head (length field and header) then
	// body; calls are serialized by the Channel. The transport must not
	// retain either after returning.
	write(head, body []byte) error
	close() error
	active() bool
}

// maxKeptWriteBuf bounds the per-connection encode buffer kept between
// writes, so one large message does not pin memory for the connection's life.
const maxKeptWriteBuf = 64 << 10

// Channel is one TCP connection (server side or client side). Both ends may
// send requests on it: responses are matched to pending requests by opaque.
type Channel struct {
	id     uint64
	local  string
	remote string
	t      transport
	fl     flusher // t when it queues writes (every real connection), else nil
	log    *slog.Logger

	opaque  *atomic.Int32 // the owning endpoint's request counter
	timeout time.Duration // Invoke timeout when ctx has no deadline

	wmu  sync.Mutex
	wbuf []byte

	// writers counts goroutines inside write, handling the requests of
	// this connection being served: a queueing transport waits for more
	// frames (one yield) only when these or the requests awaiting answers
	// say another frame may be coming.
	writers  atomic.Int32
	handling atomic.Int32

	pmu     sync.Mutex
	pending map[int32]*pending // nil once the channel is closed

	closeOnce  sync.Once
	closed     atomic.Bool
	done       chan struct{}
	lastActive atomic.Int64 // unix nanos of the last frame read or written

	values sync.Map
}

// pending is one request waiting for its response. Whoever removes it from
// the pending map (response, timer, ctx, connection close) completes it, so
// complete runs exactly once.
type pending struct {
	code     int32
	complete func(*Command, error)
	timer    *time.Timer // guarded by Channel.pmu
	stopCtx  func() bool // guarded by Channel.pmu
}

func newChannel(id uint64, local, remote string, t transport, opaque *atomic.Int32, timeout time.Duration, log *slog.Logger) *Channel {
	ch := &Channel{
		id: id, local: local, remote: remote, t: t, log: log,
		opaque: opaque, timeout: timeout,
		pending: make(map[int32]*pending),
		done:    make(chan struct{}),
	}
	ch.fl, _ = t.(flusher)
	ch.touch()
	return ch
}

// ID is unique per endpoint (Server or Client) for the endpoint's lifetime.
func (ch *Channel) ID() uint64 { return ch.id }

// RemoteAddr is the peer's "ip:port".
func (ch *Channel) RemoteAddr() string { return ch.remote }

// LocalAddr is this end's "ip:port".
func (ch *Channel) LocalAddr() string { return ch.local }

// IsActive reports whether the connection is still open.
func (ch *Channel) IsActive() bool { return !ch.closed.Load() && ch.t.active() }

// Done is closed when the connection has closed.
func (ch *Channel) Done() <-chan struct{} { return ch.done }

// SetValue stores a per-connection attribute (client id, language...).
func (ch *Channel) SetValue(key, val any) { ch.values.Store(key, val) }

// Value returns a per-connection attribute, nil when absent.
func (ch *Channel) Value(key any) any {
	v, _ := ch.values.Load(key)
	return v
}

// String identifies the channel in logs.
func (ch *Channel) String() string {
	return fmt.Sprintf("channel#%d[%s->%s]", ch.id, ch.local, ch.remote)
}

// Close closes the connection; pending requests on it fail with ErrConnClosed.
func (ch *Channel) Close() error {
	err := ch.t.close()
	// The transport reports the close asynchronously (netpoll callback,
	// reader goroutine); fail pending requests now so callers return at once.
	ch.markClosed()
	return err
}

// markClosed is idempotent; it runs when the transport reports the close
// (netpoll runs our close callback before it frees the connection's buffers).
// It must not be called with wmu held.
func (ch *Channel) markClosed() {
	ch.closeOnce.Do(func() {
		ch.closed.Store(true)
		// Barrier: wait for a write already past the closed check, so the
		// transport is not torn down under it. Later writes see closed.
		ch.wmu.Lock()
		ch.wmu.Unlock() //nolint:staticcheck // empty critical section is the point
		// A queueing transport sends outside wmu: wait for that too.
		if c, ok := ch.t.(interface{ closing() }); ok {
			c.closing()
		}
		close(ch.done)
		ch.failAll(fmt.Errorf("%w: %s", ErrConnClosed, ch.remote))
	})
}

func (ch *Channel) touch() { ch.lastActive.Store(time.Now().UnixNano()) }

// touchAt is touch with the time already read.
func (ch *Channel) touchAt(now time.Time) { ch.lastActive.Store(now.UnixNano()) }

// idleSince reports whether nothing was read or written since t (unix nanos).
func (ch *Channel) idleSince(t int64) bool { return ch.lastActive.Load() < t }

// WriteResponse writes a response; safe for concurrent use. It sets the
// response flag in case the caller built the command by hand.
func (ch *Channel) WriteResponse(resp *Command) error {
	resp.Flag |= FlagResponse
	return ch.write(resp)
}

// write encodes and sends one command. A failed write closes the connection:
// a partly written frame leaves the stream unusable.
func (ch *Channel) write(cmd *Command) error {
	ch.writers.Add(1)
	defer ch.writers.Add(-1)
	broken, err := ch.writeLocked(cmd)
	if cmd.Written != nil {
		// The transport copied the frame (or nothing will be sent).
		done := cmd.Written
		cmd.Written = nil
		done()
	}
	if ch.fl != nil && err == nil {
		// A queueing transport sends outside the write lock, so that
		// frames written meanwhile go out with this one.
		more := ch.writers.Load() > 1 || ch.handling.Load() > 1 || ch.awaiting() > 1
		if err = ch.fl.flush(more); err != nil {
			broken = true
		}
	}
	if broken {
		// Close outside wmu: the transport may run markClosed synchronously.
		_ = ch.Close()
		return fmt.Errorf("%w: write to %s: %w", ErrConnClosed, ch.remote, err)
	}
	return err
}

// awaiting is the number of requests sent on this channel and waiting for
// their responses: a client with several waiting is a concurrent one,
// whose next requests usually follow at once.
func (ch *Channel) awaiting() int {
	ch.pmu.Lock()
	defer ch.pmu.Unlock()
	return len(ch.pending)
}

// writeLocked reports broken when the transport failed mid-write; other
// errors (closed, encode) leave the stream intact.
func (ch *Channel) writeLocked(cmd *Command) (broken bool, err error) {
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	if ch.closed.Load() {
		return false, fmt.Errorf("%w: %s", ErrConnClosed, ch.remote)
	}
	buf, err := appendFrameHead(ch.wbuf[:0], cmd)
	if err != nil {
		return false, fmt.Errorf("remoting: encode code %d for %s: %w", cmd.Code, ch.remote, err)
	}
	err = ch.t.write(buf, cmd.Body)
	if cap(buf) <= maxKeptWriteBuf {
		ch.wbuf = buf
	} else {
		ch.wbuf = nil
	}
	if err != nil {
		return true, err
	}
	if !cmd.IsResponse() {
		// A response follows a request whose read touched the channel
		// a moment ago: idleness is judged in seconds, so it need not
		// read the clock again.
		ch.touch()
	}
	return false, nil
}

// Invoke sends a request on this connection and waits for its response. It
// assigns req.Opaque from the endpoint's counter. Without a ctx deadline the
// endpoint's default timeout applies (ServerConfig.InvokeTimeout,
// ClientConfig.RequestTimeout).
func (ch *Channel) Invoke(ctx context.Context, req *Command) (*Command, error) {
	type result struct {
		resp *Command
		err  error
	}
	res := make(chan result, 1)
	err := ch.send(ctx, req, func(resp *Command, err error) { res <- result{resp, err} })
	if err != nil {
		return nil, err
	}
	r := <-res // the timer, ctx or connection close guarantee completion
	return r.resp, r.err
}

// invokeAsync sends req; complete runs exactly once, on the response, the
// timeout, ctx cancellation or connection close, unless an error is returned
// (then it never runs). complete must not block: it may run on the reader.
func (ch *Channel) invokeAsync(ctx context.Context, req *Command, complete func(*Command, error)) error {
	return ch.send(ctx, req, complete)
}

// InvokeOneway sends a one-way request: flag bit 1, no response expected.
func (ch *Channel) InvokeOneway(req *Command) error {
	req.Flag = (req.Flag &^ FlagResponse) | FlagOneway
	req.Opaque = ch.opaque.Add(1)
	return ch.write(req)
}

func (ch *Channel) send(ctx context.Context, req *Command, complete func(*Command, error)) error {
	req.Flag &^= FlagResponse | FlagOneway
	op := ch.opaque.Add(1)
	req.Opaque = op
	timeout := ch.timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if err := ctx.Err(); err != nil {
		return ch.ctxError(err, req.Code, op)
	}
	if timeout <= 0 {
		return ch.timeoutError(req.Code, op)
	}
	p := &pending{code: req.Code, complete: complete}

	ch.pmu.Lock()
	if ch.pending == nil {
		ch.pmu.Unlock()
		return fmt.Errorf("%w: %s", ErrConnClosed, ch.remote)
	}
	if _, dup := ch.pending[op]; dup {
		// Only after 2^32 requests with one still pending; refuse rather
		// than misdeliver.
		ch.pmu.Unlock()
		return fmt.Errorf("remoting: opaque %d still pending on %s", op, ch.remote)
	}
	ch.pending[op] = p
	p.timer = time.AfterFunc(timeout, func() { ch.fail(op, ch.timeoutError(p.code, op)) })
	if ctx.Done() != nil {
		p.stopCtx = context.AfterFunc(ctx, func() { ch.fail(op, ch.ctxError(ctx.Err(), p.code, op)) })
	}
	ch.pmu.Unlock()

	if err := ch.write(req); err != nil {
		ch.take(op) // the caller gets the error; complete never runs
		return err
	}
	return nil
}

func (ch *Channel) timeoutError(code, op int32) error {
	return fmt.Errorf("%w: code %d opaque %d to %s", ErrTimeout, code, op, ch.remote)
}

func (ch *Channel) ctxError(err error, code, op int32) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return ch.timeoutError(code, op)
	}
	return fmt.Errorf("remoting: request code %d opaque %d to %s: %w", code, op, ch.remote, err)
}

// take removes a pending request and disarms its timers.
func (ch *Channel) take(op int32) *pending {
	ch.pmu.Lock()
	defer ch.pmu.Unlock()
	p := ch.pending[op]
	if p == nil {
		return nil
	}
	delete(ch.pending, op)
	p.disarm()
	return p
}

func (p *pending) disarm() {
	p.timer.Stop()
	if p.stopCtx != nil {
		p.stopCtx()
	}
}

func (ch *Channel) fail(op int32, err error) {
	if p := ch.take(op); p != nil {
		p.complete(nil, err)
	}
}

func (ch *Channel) failAll(err error) {
	ch.pmu.Lock()
	ps := ch.pending
	ch.pending = nil
	for _, p := range ps {
		p.disarm()
	}
	ch.pmu.Unlock()
	for _, p := range ps {
		p.complete(nil, err)
	}
}

// completeResponse delivers a response frame to its pending request.
func (ch *Channel) completeResponse(resp *Command) {
	if p := ch.take(resp.Opaque); p != nil {
		p.complete(resp, nil)
		return
	}
	// As in Java and client-go: a late or unsolicited response is dropped.
	ch.log.Debug("remoting: response without pending request", "remote", ch.remote, "opaque", resp.Opaque, "code", resp.Code)
}
