package ha

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/epoch"
)

// SyncState is a SyncStateSet with its epoch, as the controller returned it.
type SyncState struct {
	Set   []int64
	Epoch int32
}

// AutoSwitchConfig is the controller-mode part of a master.
type AutoSwitchConfig struct {
	// SelfID is this broker's controller id.
	SelfID int64
	// Epochs is the local epoch list; its last entry is the current epoch.
	Epochs *epoch.Cache
	// AllAckInSyncStateSet: a send waits for every member of the effective
	// SyncStateSet; otherwise for InSyncReplicas acks of any connection.
	AllAckInSyncStateSet bool
	InSyncReplicas       int
	// MaxTimeSlaveNotCatchup is haMaxTimeSlaveNotCatchup (15 s).
	MaxTimeSlaveNotCatchup time.Duration
	// CheckInterval is checkSyncStateSetPeriod (5 s).
	CheckInterval time.Duration
	// IsReplica reports whether a handshaking slave id is a registered
	// replica of this set; nil accepts any id.
	IsReplica func(id int64) bool
	// Alter asks the controller for a new SyncStateSet (shrink, expand);
	// nil: the set never changes.
	Alter func(ctx context.Context, set []int64) (SyncState, error)
}

func (c AutoSwitchConfig) withDefaults() AutoSwitchConfig {
	if c.MaxTimeSlaveNotCatchup <= 0 {
		c.MaxTimeSlaveNotCatchup = 15 * time.Second
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = 5 * time.Second
	}
	return c
}

// AutoSwitchMaster serves slaves with the auto-switch protocol
// (org/apache/rocketmq/store/ha/autoswitch/AutoSwitchHAService.java):
// every slave handshakes with its controller id, gets the epoch list,
// truncates to the common point, and acks byte positions; the master
// keeps the SyncStateSet and the confirm offset from those acks.
type AutoSwitchMaster struct {
	hub
	cfg AutoSwitchConfig

	// Guarded by mu.
	conns   map[*asConn]struct{}
	byID    map[int64]*asConn // the newest handshaken connection per slave id
	sync    SyncState         // confirmed by the controller
	propose []int64           // in flight or to retry; nil: none
	alter   bool              // an Alter call is running
	confirm int64             // confirm offset while others must ack
	fenced  bool              // waiting sends fail at once (lease lapsed)
	waiters []*waiter         // sends waiting for acks (WaitAcks)
	pool    sync.Pool         // of *waiter
	check   chan struct{}     // capacity 1: run the shrink check now
	stop    chan struct{}
}

// NewAutoSwitchMaster serves cl on ln once started, with the SyncStateSet
// the controller gave the new master (normally only itself).
func NewAutoSwitchMaster(cl *commitlog.Log, ln net.Listener, opts Options, cfg AutoSwitchConfig, initial SyncState) *AutoSwitchMaster {
	m := &AutoSwitchMaster{
		hub: newHub(cl, ln, opts), cfg: cfg.withDefaults(),
		conns: map[*asConn]struct{}{}, byID: map[int64]*asConn{},
		sync: SyncState{Set: slices.Clone(initial.Set), Epoch: initial.Epoch}, confirm: cl.MaxOffset(),
		check: make(chan struct{}, 1), stop: make(chan struct{}),
	}
	m.pool.New = newWaiter
	return m
}

// Start accepts slaves and runs the SyncStateSet check until Close.
func (m *AutoSwitchMaster) Start() {
	m.wg.Add(2)
	go m.serve(m.add)
	go m.checkLoop()
}

func (m *AutoSwitchMaster) add(nc net.Conn) {
	c := newASConn(m, nc)
	m.admit(nc, func() { m.conns[c] = struct{}{} }, c.readLoop, c.writeLoop)
}

// bind makes c the connection of its slave id, closing an older one.
func (m *AutoSwitchMaster) bind(c *asConn) {
	m.mu.Lock()
	old := m.byID[c.id]
	m.byID[c.id] = c
	m.releaseLocked()
	m.mu.Unlock()
	if old != nil {
		old.close("replaced by a newer connection of the same slave")
	}
}

// remove forgets a closed connection; a SyncStateSet member losing its
// connection triggers the shrink check at once.
func (m *AutoSwitchMaster) remove(c *asConn) {
	m.mu.Lock()
	delete(m.conns, c)
	member := false
	if m.byID[c.id] == c {
		delete(m.byID, c.id)
		member = slices.Contains(m.sync.Set, c.id)
	}
	m.releaseLocked()
	m.mu.Unlock()
	if member {
		m.checkSoon()
	}
}

func (m *AutoSwitchMaster) checkSoon() {
	select {
	case m.check <- struct{}{}:
	default:
	}
}

// CloseConnections drops every slave connection (a role change: slaves
// reconnect and handshake again with the new epoch list).
func (m *AutoSwitchMaster) CloseConnections(reason string) {
	m.mu.Lock()
	conns := make([]*asConn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		c.close(reason)
	}
}

// Close stops accepting, closes every connection, ends the check loop and
// waits. Sends still waiting for acks end with ErrReplicaTimeout.
func (m *AutoSwitchMaster) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	m.releaseLocked()
	m.mu.Unlock()
	err := m.ln.Close()
	m.CloseConnections("master shutting down")
	m.wg.Wait()
	return err
}
