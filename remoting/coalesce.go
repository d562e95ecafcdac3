package remoting

import (
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudwego/netpoll"
)

// flusher is a transport whose write only queues the frame; the Channel
// calls flush after releasing its write lock.
type flusher interface{ flush(more bool) error }

// maxPendingWrite bounds what a coalescingTransport queues before writers
// wait for the peer (the backpressure a blocking write gives).
const maxPendingWrite = 1 << 20

// sink puts bytes on the wire: all of b, or an error after which the
// stream is unusable.
type sink interface {
	send(b []byte) error
	close() error
	active() bool
}

// coalescingTransport serves every connection, plain, TLS or netpoll.
// Frames written while another goroutine is sending are queued and sent by
// it in one go: one system call (and one TLS record) for the responses of
// a whole group-committed batch of sends, where a call per frame cost the
// broker a fifth of its CPU. Without concurrent writers it is one send
// per frame, as before.
type coalescingTransport struct {
	s    sink
	bufs *writeBufs // where queues larger than maxKeptWriteBuf come from

	mu       sync.Mutex
	drained  sync.Cond // signalled when a send ends
	pending  []byte    // queued frames
	spare    []byte    // the previous send's buffer, reused
	flushing bool      // a goroutine is sending
	err      error     // the failed send's error: the stream is broken
}

func newCoalescingTransport(s sink, bufs *writeBufs) *coalescingTransport {
	t := &coalescingTransport{s: s, bufs: bufs}
	t.drained.L = &t.mu
	return t
}

// newConnTransport coalesces writes on a net.Conn (client connections,
// the plain accept loop, TLS).
func newConnTransport(c net.Conn, writeTimeout time.Duration, bufs *writeBufs) *coalescingTransport {
	return newCoalescingTransport(&connSink{c: c, writeTimeout: writeTimeout}, bufs)
}

// write queues the frame (copied); the Channel's write lock orders the
// frames.
func (t *coalescingTransport) write(head, body []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	if n := len(t.pending) + len(head) + len(body); n > cap(t.pending) && n > maxKeptWriteBuf {
		// One pooled buffer of the size needed, rather than append's
		// doublings from a connection's small one.
		nb := append(t.bufs.get(n), t.pending...)
		t.recycle(t.pending)
		t.pending = nb
	}
	t.pending = append(t.pending, head...)
	t.pending = append(t.pending, body...)
	return nil
}

// recycle keeps a buffer nothing refers to any more: a small one as the
// connection's spare, a large one in the endpoint's pool.
func (t *coalescingTransport) recycle(b []byte) {
	if cap(b) <= maxKeptWriteBuf {
		if cap(b) > cap(t.spare) {
			t.spare = b[:0]
		}
		return
	}
	t.bufs.put(b)
}

// flush sends what is queued unless another goroutine is sending, which
// then sends it too; a writer waits while too much is queued. more says
// other frames may be about to be queued: the sender yields once first.
func (t *coalescingTransport) flush(more bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.flushing {
		if t.err != nil {
			return t.err
		}
		if len(t.pending) <= maxPendingWrite {
			return nil // the sender takes ours along
		}
		t.drained.Wait()
	}
	if t.err != nil {
		return t.err
	}
	t.flushing = true
	if more {
		// Responses that are ready to be written (a group-committed
		// batch of sends ends together) join this send.
		t.mu.Unlock()
		runtime.Gosched()
		t.mu.Lock()
	}
	for len(t.pending) > 0 {
		buf := t.pending
		t.pending, t.spare = t.spare[:0], nil
		t.mu.Unlock()
		err := t.s.send(buf)
		t.mu.Lock()
		t.drained.Broadcast()
		if err != nil {
			// buf is not reused: a failed send may still refer to it.
			t.err, t.pending, t.flushing = err, nil, false
			return err
		}
		t.recycle(buf)
	}
	t.flushing = false
	return nil
}

func (t *coalescingTransport) close() error { return t.s.close() }
func (t *coalescingTransport) active() bool { return t.s.active() }

// closing waits for a send in progress to end and fails later ones: the
// Channel calls it when the connection closes, before netpoll frees the
// connection's buffers.
func (t *coalescingTransport) closing() {
	if c, ok := t.s.(interface{ closing() }); ok {
		c.closing()
	}
}

// connSink writes to a net.Conn with a deadline per send.
type connSink struct {
	c            net.Conn
	writeTimeout time.Duration
	closed       atomic.Bool
}

func (s *connSink) send(b []byte) error {
	if err := s.c.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil {
		return err
	}
	_, err := s.c.Write(b)
	return err
}

func (s *connSink) close() error {
	s.closed.Store(true)
	return s.c.Close()
}

func (s *connSink) active() bool { return !s.closed.Load() }

// npSink writes to a netpoll connection (the server's plain port; the
// connection's write timeout is set at accept).
type npSink struct {
	c      netpoll.Connection
	mu     sync.Mutex // held while netpoll's output buffer is in use
	closed bool
}

func (s *npSink) send(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: netpoll connection", ErrConnClosed)
	}
	w := s.c.Writer()
	buf, err := w.Malloc(len(b))
	if err != nil {
		return err
	}
	copy(buf, b)
	return w.Flush()
}

func (s *npSink) closing() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *npSink) close() error { return s.c.Close() }
func (s *npSink) active() bool { return s.c.IsActive() }
