package ha

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// alterTimeout bounds one ALTER_SYNC_STATE_SET call.
const alterTimeout = 5 * time.Second

// effectiveLocked is the confirmed set ∪ the proposal in flight: waiting
// sends and the confirm offset need every member of it, so a member being
// removed still counts until the controller agreed, and one being added
// counts from the moment it is proposed.
func (m *AutoSwitchMaster) effectiveLocked() []int64 {
	set := slices.Clone(m.sync.Set)
	for _, id := range m.propose {
		if !slices.Contains(set, id) {
			set = append(set, id)
		}
	}
	if !slices.Contains(set, m.cfg.SelfID) {
		set = append(set, m.cfg.SelfID)
	}
	slices.Sort(set)
	return set
}

// SyncStateSet returns the confirmed set and the effective one.
func (m *AutoSwitchMaster) SyncStateSet() (confirmed SyncState, effective []int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return SyncState{Set: slices.Clone(m.sync.Set), Epoch: m.sync.Epoch}, m.effectiveLocked()
}

// EffectiveSize is the size minInSyncReplicas is checked against.
func (m *AutoSwitchMaster) EffectiveSize() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.effectiveLocked())
}

// SetSyncState adopts a set the controller reports, if it is newer.
func (m *AutoSwitchMaster) SetSyncState(s SyncState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.Epoch <= m.sync.Epoch {
		return
	}
	m.sync = SyncState{Set: slices.Clone(s.Set), Epoch: s.Epoch}
	m.propose = nil
	m.releaseLocked()
}

// ResetSyncState installs s whatever its epoch: the master was elected
// again, and a SyncStateSet epoch belongs to one master term (controllers
// that lost their state number it from 1 again).
func (m *AutoSwitchMaster) ResetSyncState(s SyncState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sync = SyncState{Set: slices.Clone(s.Set), Epoch: s.Epoch}
	m.propose = nil
	m.releaseLocked()
}

// SetFenced makes waiting and new sends fail at once (true) until the
// master is confirmed again (false).
func (m *AutoSwitchMaster) SetFenced(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fenced = on
	m.releaseLocked()
}

// ConfirmOffset is the offset every member of the effective SyncStateSet
// holds (the master's end without allAckInSyncStateSet or without other
// members). A member without a connection or without an ack holds it where
// it is: it never goes back and never passes the master's end.
func (m *AutoSwitchMaster) ConfirmOffset() int64 {
	max := m.cl.MaxOffset()
	m.mu.Lock()
	c := m.confirmLocked(max)
	m.mu.Unlock()
	if c != m.cl.ConfirmOffset() {
		m.cl.SetConfirmOffset(c)
	}
	return c
}

func (m *AutoSwitchMaster) confirmLocked(end int64) int64 {
	others := m.othersLocked()
	if !m.cfg.AllAckInSyncStateSet || len(others) == 0 {
		m.confirm = end
		return end
	}
	c := end
	for _, id := range others {
		conn := m.byID[id]
		if conn == nil || conn.ack.Load() < 0 {
			return min(m.confirm, end)
		}
		c = min(c, conn.ack.Load())
	}
	m.confirm = max(m.confirm, c)
	return min(m.confirm, end)
}

func (m *AutoSwitchMaster) othersLocked() []int64 {
	set := m.effectiveLocked()
	return slices.DeleteFunc(set, func(id int64) bool { return id == m.cfg.SelfID })
}

// WaitAcks blocks until the send ending at end is committed (§4.7): with
// allAckInSyncStateSet every other member of the effective set acked it;
// otherwise 1 + the connections that acked it reach InSyncReplicas. ctx
// ending is ErrReplicaTimeout. A waiting send sleeps until a change
// completes it (releaseLocked): an ack wakes only the sends it commits,
// not every send waiting.
func (m *AutoSwitchMaster) WaitAcks(ctx context.Context, end int64) error {
	m.Wake()
	m.mu.Lock()
	done, have, need := m.ackedLocked(end)
	if done {
		m.mu.Unlock()
		return nil
	}
	if m.closed || m.fenced {
		m.mu.Unlock()
		return fmt.Errorf("%w: master closed or fenced, %d of %d replicas hold offset %d", ErrReplicaTimeout, have, need, end)
	}
	w := m.pool.Get().(*waiter)
	w.end = end
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()
	acked := false
	select {
	case acked = <-w.done:
	case <-ctx.Done():
		acked = forgetWaiter(&m.mu, &m.waiters, w)
	}
	m.pool.Put(w)
	if acked {
		return nil
	}
	m.mu.Lock()
	_, have, need = m.ackedLocked(end)
	closed, fenced := m.closed, m.fenced
	m.mu.Unlock()
	if closed || fenced {
		return fmt.Errorf("%w: master closed or fenced, %d of %d replicas hold offset %d", ErrReplicaTimeout, have, need, end)
	}
	return fmt.Errorf("%w: %d of %d replicas hold offset %d", ErrReplicaTimeout, have, need, end)
}

// releaseLocked completes the waiting sends the current acks, set and
// state decide: all fail when the master is closed or fenced; otherwise
// those ending at or below committedLocked succeed, the others sleep on.
// Called after every change that can decide a waiting send.
func (m *AutoSwitchMaster) releaseLocked() {
	if len(m.waiters) == 0 {
		return
	}
	if m.closed || m.fenced {
		m.waiters = releaseWaiters(m.waiters, func(*waiter) (bool, bool) { return true, false })
		return
	}
	upTo := m.committedLocked()
	m.waiters = releaseWaiters(m.waiters, func(w *waiter) (bool, bool) { return w.end <= upTo, true })
}

// committedLocked is the end offset up to which sends are committed, the
// threshold form of ackedLocked: with allAckInSyncStateSet the smallest
// ack of the other effective members (-1 while one has no connection or
// no ack); otherwise the InSyncReplicas−1-th largest ack of the
// connections.
func (m *AutoSwitchMaster) committedLocked() int64 {
	if m.cfg.AllAckInSyncStateSet {
		c := int64(math.MaxInt64)
		for _, id := range m.othersLocked() {
			conn := m.byID[id]
			if conn == nil {
				return -1
			}
			c = min(c, conn.ack.Load())
		}
		return c
	}
	need := m.cfg.InSyncReplicas - 1
	if need <= 0 {
		return math.MaxInt64
	}
	if len(m.conns) < need {
		return -1
	}
	acks := make([]int64, 0, len(m.conns))
	for c := range m.conns {
		acks = append(acks, c.ack.Load())
	}
	slices.Sort(acks)
	return acks[len(acks)-need]
}

func (m *AutoSwitchMaster) ackedLocked(end int64) (done bool, have, need int) {
	if m.cfg.AllAckInSyncStateSet {
		others := m.othersLocked()
		have = 1
		for _, id := range others {
			if c := m.byID[id]; c != nil && c.ack.Load() >= end {
				have++
			}
		}
		return have == 1+len(others), have, 1 + len(others)
	}
	need = m.cfg.InSyncReplicas
	have = 1
	for c := range m.conns {
		if c.ack.Load() >= end {
			have++
		}
	}
	return have >= need, have, need
}

// onAck records an ack: the slave's caught-up time, an expansion of the
// SyncStateSet when it qualifies (§4.8), and waiting sends are woken. All
// under one lock with the send completions, so no send completes against
// a set that omits a member being proposed.
func (m *AutoSwitchMaster) onAck(c *asConn, ack int64) {
	end := m.cl.MaxOffset()
	now := time.Now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID[c.id] != c {
		return
	}
	caught := !c.learner && ack >= c.lastMax.Load()
	if caught {
		at := c.lastTransfer.Load()
		if ack == end {
			at = now
		}
		c.caughtUp = max(c.caughtUp, at)
	}
	first, _ := m.cfg.Epochs.Last()
	if caught && m.cfg.Alter != nil && !m.alter && !slices.Contains(m.effectiveLocked(), c.id) &&
		ack >= m.confirmLocked(end) && ack >= first.Start {
		m.propose = append(slices.Clone(m.sync.Set), c.id)
		m.log.Info("ha slave caught up: proposing to add it to the SyncStateSet", "slaveId", c.id, "ack", ack, "proposal", m.propose)
		m.startAlterLocked()
	}
	m.releaseLocked()
}

// startAlterLocked sends the current proposal to the controller.
func (m *AutoSwitchMaster) startAlterLocked() {
	if m.closed {
		return
	}
	m.alter = true
	proposal := slices.Clone(m.propose)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), alterTimeout)
		s, err := m.cfg.Alter(ctx, proposal)
		cancel()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.alter = false
		if err != nil {
			// The proposal stays in force (and in the effective set) and
			// is retried by the next check.
			m.log.Warn("alter SyncStateSet failed", "proposal", proposal, "err", err)
			return
		}
		if s.Epoch > m.sync.Epoch {
			m.sync = SyncState{Set: slices.Clone(s.Set), Epoch: s.Epoch}
		}
		m.propose = nil
		m.log.Info("SyncStateSet changed", "set", m.sync.Set, "epoch", m.sync.Epoch)
		m.releaseLocked()
	}()
}

// checkLoop runs the shrink check every CheckInterval and when a member's
// connection closes. A panic in one check is logged, not fatal to the loop
// (upstream's checker thread died once and the set never shrank again).
func (m *AutoSwitchMaster) checkLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		case <-m.check:
		}
		m.safeCheck()
	}
}

func (m *AutoSwitchMaster) safeCheck() {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("SyncStateSet check failed", "panic", r)
		}
	}()
	m.shrinkCheck(time.Now())
}

// shrinkCheck proposes the confirmed set without members that have no
// connection or were not caught up for MaxTimeSlaveNotCatchup; a failed
// earlier proposal is retried.
func (m *AutoSwitchMaster) shrinkCheck(now time.Time) {
	if m.cfg.Alter == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.alter || m.closed {
		return
	}
	keep := []int64{}
	for _, id := range m.sync.Set {
		if id == m.cfg.SelfID {
			keep = append(keep, id)
			continue
		}
		c := m.byID[id]
		if c != nil && c.caughtUp > 0 && now.Sub(time.UnixMilli(c.caughtUp)) <= m.cfg.MaxTimeSlaveNotCatchup {
			keep = append(keep, id)
		}
	}
	if !slices.Contains(keep, m.cfg.SelfID) {
		keep = append(keep, m.cfg.SelfID)
	}
	switch {
	case len(keep) != len(m.sync.Set):
		m.log.Info("proposing to shrink the SyncStateSet", "from", m.sync.Set, "to", keep)
		m.propose = keep
	case m.propose == nil:
		return
	}
	m.startAlterLocked()
}
