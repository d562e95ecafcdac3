package ha

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/rmqgo/rmq/broker/store/commitlog"
)

// ErrReplicaTimeout means not enough slaves acknowledged in time: the send
// is answered FLUSH_SLAVE_TIMEOUT (the message stays stored on the master).
var ErrReplicaTimeout = errors.New("ha: wait for slave acks timed out")

// Master serves slaves on the HA port (Apache's DefaultHAService with
// AcceptSocketService and one DefaultHAConnection per slave).
type Master struct {
	hub
	conns map[*conn]struct{} // guarded by mu
}

// NewMaster serves the log on ln once started.
func NewMaster(cl *commitlog.Log, ln net.Listener, opts Options) *Master {
	return &Master{hub: newHub(cl, ln, opts), conns: map[*conn]struct{}{}}
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
	m.broadcastLocked()
}

func (m *Master) acked() {
	m.mu.Lock()
	m.broadcastLocked()
	m.mu.Unlock()
}

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
// reach needed, or ctx ends (ErrReplicaTimeout). needed ≤ 1 returns at once.
func (m *Master) WaitAcks(ctx context.Context, end int64, needed int) error {
	if needed <= 1 {
		return nil
	}
	m.Wake()
	for {
		m.mu.Lock()
		n := m.ackedLocked(end)
		ch := m.changed
		m.mu.Unlock()
		if 1+n >= needed {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: %d of %d replicas hold offset %d", ErrReplicaTimeout, 1+n, needed, end)
		}
	}
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
