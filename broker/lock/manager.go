// Package lock is the broker's orderly-consumption lock table (Java's
// RebalanceLockManager) and its request handlers LOCK_BATCH_MQ (41) and
// UNLOCK_BATCH_MQ (42) (docs/protocol.md §3.3, §4.7, §6.6).
//
// An orderly consumer pulls only the queues it holds a lock on. A lock is
// granted when the queue is unlocked, already held by the same client, or
// held by a client that has not renewed it for MaxLiveTime (60 s by default;
// clients renew every 20 s). Locks live in memory only, as in Java: after a
// broker restart clients lock their queues again on their next renewal.
package lock

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// DefaultMaxLiveTime is Java's rocketmq.broker.rebalance.lockMaxLiveTime.
const DefaultMaxLiveTime = 60 * time.Second

// Options configure a Manager.
type Options struct {
	// MaxLiveTime is how long a lock lives without renewal (0: 60 s).
	MaxLiveTime time.Duration
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// entry is one queue's lock.
type entry struct {
	clientID string
	last     time.Time
}

// Manager is the lock table: consumer group → queue → holder. It is safe
// for concurrent use.
type Manager struct {
	maxLive time.Duration
	now     func() time.Time
	log     *slog.Logger

	mu     sync.Mutex
	groups map[string]map[protocol.MessageQueue]*entry
}

// NewManager returns an empty table.
func NewManager(o Options) *Manager {
	defaults.Positive(&o.MaxLiveTime, DefaultMaxLiveTime)
	defaults.Clock(&o.Now)
	defaults.Logger(&o.Logger)
	return &Manager{maxLive: o.MaxLiveTime, now: o.Now, log: o.Logger, groups: map[string]map[protocol.MessageQueue]*entry{}}
}

// MaxLiveTime is the lock expiry.
func (m *Manager) MaxLiveTime() time.Duration { return m.maxLive }

func (m *Manager) expired(e *entry, now time.Time) bool { return now.Sub(e.last) > m.maxLive }

// TryLockBatch locks the queues for clientID and returns those it holds
// afterwards (renewed or newly granted), sorted. Queues held by another
// live client are left out.
func (m *Manager) TryLockBatch(group, clientID string, mqs []protocol.MessageQueue) []protocol.MessageQueue {
	now := m.now()
	out := make([]protocol.MessageQueue, 0, len(mqs))
	m.mu.Lock()
	defer m.mu.Unlock()
	table := m.groups[group]
	if table == nil {
		table = make(map[protocol.MessageQueue]*entry, len(mqs))
		m.groups[group] = table
	}
	for _, mq := range mqs {
		e := table[mq]
		switch {
		case e == nil:
			table[mq] = &entry{clientID: clientID, last: now}
			m.log.Info("lock a queue that was not locked", "group", group, "clientId", clientID, "mq", mq.String())
		case e.clientID == clientID:
			// Renewal; an expired own lock is taken again, as Java does.
			e.last = now
		case m.expired(e, now):
			m.log.Warn("lock expired: queue taken over", "group", group, "mq", mq.String(),
				"oldClientId", e.clientID, "newClientId", clientID, "idle", now.Sub(e.last).Round(time.Millisecond))
			e.clientID, e.last = clientID, now
		default:
			m.log.Debug("queue locked by another client", "group", group, "mq", mq.String(), "holder", e.clientID, "requester", clientID)
			continue
		}
		out = append(out, mq)
	}
	if len(table) == 0 {
		delete(m.groups, group)
	}
	sortQueues(out)
	return out
}

// UnlockBatch releases the queues clientID holds; queues held by others
// (or not locked) are left alone.
func (m *Manager) UnlockBatch(group, clientID string, mqs []protocol.MessageQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	table := m.groups[group]
	for _, mq := range mqs {
		e := table[mq]
		switch {
		case e == nil:
			m.log.Debug("unlock a queue that is not locked", "group", group, "clientId", clientID, "mq", mq.String())
		case e.clientID != clientID:
			m.log.Warn("unlock a queue locked by another client: ignored", "group", group, "mq", mq.String(),
				"holder", e.clientID, "requester", clientID)
		default:
			delete(table, mq)
			m.log.Info("unlock queue", "group", group, "clientId", clientID, "mq", mq.String())
		}
	}
	if table != nil && len(table) == 0 {
		delete(m.groups, group)
	}
}

// IsLocked reports whether clientID holds a live lock on mq.
func (m *Manager) IsLocked(group string, mq protocol.MessageQueue, clientID string) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.groups[group][mq]
	return e != nil && e.clientID == clientID && !m.expired(e, now)
}

// Holder returns the client holding a live lock on mq.
func (m *Manager) Holder(group string, mq protocol.MessageQueue) (string, bool) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.groups[group][mq]
	if e == nil || m.expired(e, now) {
		return "", false
	}
	return e.clientID, true
}

// HasLiveLocks reports whether the group holds an unexpired lock (Java's
// !isLockAllExpired): the send path then sends the group's retry messages
// straight to its DLQ (send.OrderLocks).
func (m *Manager) HasLiveLocks(group string) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.groups[group] {
		if !m.expired(e, now) {
			return true
		}
	}
	return false
}

// Sweep drops expired locks and empty groups and returns how many locks it
// dropped. Java keeps expired entries forever; dropping them bounds memory
// and changes no answer (an expired lock is granted to anyone).
func (m *Manager) Sweep() int {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for g, table := range m.groups {
		for mq, e := range table {
			if m.expired(e, now) {
				delete(table, mq)
				n++
			}
		}
		if len(table) == 0 {
			delete(m.groups, g)
		}
	}
	return n
}

// Len is the number of locks held (expired ones included until Sweep).
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.groups {
		n += len(t)
	}
	return n
}

func sortQueues(mqs []protocol.MessageQueue) {
	slices.SortFunc(mqs, protocol.MessageQueue.Compare)
}
