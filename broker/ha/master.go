package ha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
)

// ErrReplicaTimeout means not enough slaves acknowledged in time: the send
// is answered FLUSH_SLAVE_TIMEOUT (the message stays stored on the master).
var ErrReplicaTimeout = errors.New("ha: wait for slave acks timed out")

// Master serves slaves on the HA port (Apache's DefaultHAService with
// AcceptSocketService and one DefaultHAConnection per slave).
type Master struct {
	hub
	conns   map[*conn]struct{} // guarded by mu
	waiters []*waiter          // sends waiting for acks; guarded by mu
	pool    sync.Pool          // of *waiter
	// expiry fails the waiters whose timeout passed: one timer for all,
	// armed for the earliest deadline (expiryAt; zero when not armed), so
	// a waiting send sets no timer of its own. Guarded by mu.
	expiry   *time.Timer
	expiryAt time.Time
}

// waiter is one send waiting in WaitAcks. An ack releases exactly the
// waiters it completes (Apache's GroupTransferService checks its requests
// against the slaves' offsets), so a report wakes no send it does not
// complete.
type waiter struct {
	end      int64
	needed   int
	deadline time.Time // zero: no timeout
	done     chan bool // receives true once acked, false on timeout or when the master closes
}

// NewMaster serves the log on ln once started.
func NewMaster(cl *commitlog.Log, ln net.Listener, opts Options) *Master {
	m := &Master{hub: newHub(cl, ln, opts), conns: map[*conn]struct{}{}}
	m.pool.New = newWaiter
	m.expiry = time.AfterFunc(time.Hour, m.expire)
	m.expiry.Stop()
	return m
}

// Start accepts slaves until Close.
func (m *Master) Start() {
	m.wg.Add(1)
	go m.serve(m.add)
}

func (m *Master) add(nc net.Conn) {
	c := newConn(m, nc)
	m.admit(nc, func() { m.conns[c] = struct{}{} }, c.readLoop, c.writeLoop)
}

// remove forgets a closed connection.
func (m *Master) remove(c *conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conns, c)
}

// acked releases the waiting sends a new report completed.
func (m *Master) acked() {
	m.mu.Lock()
	if len(m.waiters) > 0 {
		// The connections' positions once, not once per waiting send.
		var buf [8]connAck
		acks := buf[:0]
		for c := range m.conns {
			acks = append(acks, c.position())
		}
		m.waiters = releaseWaiters(m.waiters, func(w *waiter) (bool, bool) {
			n := 0
			for _, a := range acks {
				if a.holds(w.end) {
					n++
				}
			}
			return 1+n >= w.needed, true
		})
	}
	m.mu.Unlock()
}

// connAck is where a connection's transfer started (-1 before the first
// report) and what its slave acked.
type connAck struct{ from, ack int64 }

// holds reports whether the connection sent the bytes ending at end and
// the slave acknowledged them.
func (a connAck) holds(end int64) bool { return a.from >= 0 && a.from < end && a.ack >= end }

// AckedSlaves counts the connections that acknowledged end after
// receiving it: an ack counts for a message only on the connection that
// transferred it (the connection started below end and reported at least
// end, never more than it was sent). A stranger's or a reconnecting
// slave's first report therefore completes no waiting send, a message is
// counted once per slave (only one connection of a slave transfers it),
// and several slaves on one host each count.
func (m *Master) AckedSlaves(end int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ackedLocked(end)
}

func (m *Master) ackedLocked(end int64) int {
	n := 0
	for c := range m.conns {
		if c.transferred(end) {
			n++
		}
	}
	return n
}

// WaitAcks blocks until 1 (the master) + the slaves acknowledging end
// reach needed, or ctx ends, timeout (when > 0) passes or the master
// closes (ErrReplicaTimeout). needed ≤ 1 returns at once.
func (m *Master) WaitAcks(ctx context.Context, end int64, needed int, timeout time.Duration) error {
	if needed <= 1 {
		return nil
	}
	m.mu.Lock()
	if 1+m.ackedLocked(end) >= needed {
		m.mu.Unlock()
		return nil
	}
	w := m.pool.Get().(*waiter)
	w.end, w.needed, w.deadline = end, needed, time.Time{}
	closed := m.closed
	if !closed {
		if timeout > 0 {
			now := time.Now()
			w.deadline = now.Add(timeout)
			if m.expiryAt.IsZero() || w.deadline.Before(m.expiryAt) {
				m.expiryAt = w.deadline
				m.expiry.Reset(timeout)
			}
		}
		m.waiters = append(m.waiters, w)
	}
	m.mu.Unlock()
	acked := false
	if !closed {
		m.Wake()
		select {
		case acked = <-w.done:
		case <-ctx.Done():
			acked = forgetWaiter(&m.mu, &m.waiters, w)
		}
	}
	if acked {
		m.pool.Put(w)
		return nil
	}
	n := m.AckedSlaves(end)
	m.pool.Put(w)
	return fmt.Errorf("%w: %d of %d replicas hold offset %d", ErrReplicaTimeout, 1+n, needed, end)
}

// expire fails the waiters whose deadline passed and arms the timer for
// the earliest one left.
func (m *Master) expire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	next := time.Time{}
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		switch {
		case w.deadline.IsZero():
			kept = append(kept, w)
		case !w.deadline.After(now):
			w.done <- false
		default:
			kept = append(kept, w)
			if next.IsZero() || w.deadline.Before(next) {
				next = w.deadline
			}
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
	m.expiryAt = next
	if !next.IsZero() && !m.closed {
		m.expiry.Reset(next.Sub(now))
	}
}

// newWaiter is a sync.Pool's New for both masters' waiters.
func newWaiter() any { return &waiter{done: make(chan bool, 1)} }

// releaseWaiters completes the waiters decide releases (its first result)
// with its second result and returns the others, in order, in ws's array.
func releaseWaiters(ws []*waiter, decide func(*waiter) (release, acked bool)) []*waiter {
	kept := ws[:0]
	for _, w := range ws {
		if release, acked := decide(w); release {
			w.done <- acked
		} else {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	return kept
}

// forgetWaiter removes w, which gave up, from *ws (guarded by mu); when
// it was released meanwhile, it takes that outcome.
func forgetWaiter(mu *sync.Mutex, ws *[]*waiter, w *waiter) (acked bool) {
	mu.Lock()
	defer mu.Unlock()
	for i, x := range *ws {
		if x == w {
			*ws = slices.Delete(*ws, i, i+1)
			return false
		}
	}
	return <-w.done
}

// Close stops accepting, closes every connection and waits for their
// goroutines.
func (m *Master) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.expiry.Stop()
	for _, w := range m.waiters {
		w.done <- false
	}
	clear(m.waiters)
	m.waiters = nil
	conns := make([]*conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	err := m.ln.Close()
	for _, c := range conns {
		c.close("master shutting down")
	}
	m.wg.Wait()
	return err
}
