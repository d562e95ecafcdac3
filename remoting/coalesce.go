package remoting

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// flusher is a transport whose write only queues the frame; the Channel
// calls flush after releasing its write lock.
type flusher interface{ flush() error }

// maxPendingWrite bounds what a coalescingTransport queues before writers
// wait for the peer (the backpressure a blocking write gives).
const maxPendingWrite = 1 << 20

// coalescingTransport serves TLS connections. Frames written while another
// goroutine is sending are queued and sent by it in one Write: one TLS
// record and one system call for many responses, where a Write per frame
// would cost a record and a call each. Without concurrent writers it is a
// Write per frame, as netTransport.
type coalescingTransport struct {
	c            net.Conn
	writeTimeout time.Duration
	closed       atomic.Bool

	mu       sync.Mutex
	drained  sync.Cond // signalled when a send ends
	pending  []byte    // queued frames
	spare    []byte    // the previous send's buffer, reused
	flushing bool      // a goroutine is sending
	err      error     // the failed send's error: the stream is broken
}

func newCoalescingTransport(c net.Conn, writeTimeout time.Duration) *coalescingTransport {
	t := &coalescingTransport{c: c, writeTimeout: writeTimeout}
	t.drained.L = &t.mu
	return t
}

// write queues b (copied); the Channel's write lock orders the frames.
func (t *coalescingTransport) write(b []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	t.pending = append(t.pending, b...)
	return nil
}

// flush sends what is queued unless another goroutine is sending, which
// then sends it too; a writer waits while too much is queued.
func (t *coalescingTransport) flush() error {
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
	for len(t.pending) > 0 {
		buf := t.pending
		t.pending, t.spare = t.spare[:0], nil
		t.mu.Unlock()
		err := t.c.SetWriteDeadline(time.Now().Add(t.writeTimeout))
		if err == nil {
			_, err = t.c.Write(buf)
		}
		t.mu.Lock()
		if cap(buf) <= maxKeptWriteBuf {
			t.spare = buf[:0]
		}
		t.drained.Broadcast()
		if err != nil {
			t.err, t.pending, t.flushing = err, nil, false
			return err
		}
	}
	t.flushing = false
	return nil
}

func (t *coalescingTransport) close() error {
	t.closed.Store(true)
	return t.c.Close()
}

func (t *coalescingTransport) active() bool { return !t.closed.Load() }
