package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/ha"
	"github.com/rmqgo/rmq/broker/replica"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/broker/store/epoch"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

const (
	// exchangeHATimeout bounds EXCHANGE_BROKER_HA_INFO to a new master.
	exchangeHATimeout = 2 * time.Second
	// dispatchCatchUpTimeout bounds a new master's wait for its consume
	// queues to reach the CommitLog end; the manager retries the role.
	dispatchCatchUpTimeout = 30 * time.Second
	// replicaLookupTimeout bounds the controller lookup of an HA slave's
	// id; the slave waits 5 s for the master's handshake.
	replicaLookupTimeout = 2 * time.Second
)

// ErrInSyncReplicasNotEnough refuses a send before it is stored: the
// effective SyncStateSet is smaller than minInSyncReplicas. Answered as
// SYSTEM_ERROR with this remark, as Apache does.
var ErrInSyncReplicasNotEnough = errors.New("in-sync replicas not enough")

// replicaNode is the broker as the controller client sees it
// (replica.Node): it switches the store, the HA side and the registered
// role when the controller names a master (docs/replication.md).
type replicaNode struct {
	b   *Broker
	st  *store.Store
	ep  *epoch.Cache
	log *slog.Logger
	ha  ha.Options
	mgr *replica.Manager // set once wired
	// haLn holds the HA port from start; each master term accepts
	// through a view of it.
	haLn *ha.Listener

	mu     sync.Mutex
	master *ha.AutoSwitchMaster
	slave  *ha.AutoSwitchSlave
	role   replica.Role
	fenced bool
	// fencedNow mirrors fenced for readers on the send path, which must
	// not wait on mu while a role change holds it (a new master waits for
	// its consume queues under mu).
	fencedNow atomic.Bool
}

func (n *replicaNode) Addr() string          { return n.b.Addr() }
func (n *replicaNode) MaxPhyOffset() int64   { return n.st.CommitLog().MaxOffset() }
func (n *replicaNode) LastEpoch() int32      { return n.ep.LastEpoch() }
func (n *replicaNode) isFenced() bool        { return n.fencedNow.Load() }
func (n *replicaNode) cfg() *config.Config   { return n.b.cfg.Get() }
func (n *replicaNode) current() replica.Role { n.mu.Lock(); defer n.mu.Unlock(); return n.role }

func (n *replicaNode) ConfirmOffset() int64 {
	n.mu.Lock()
	m := n.master
	n.mu.Unlock()
	if m != nil {
		return m.ConfirmOffset()
	}
	return n.st.CommitLog().ConfirmOffset()
}

// BecomeMaster is §3.6 "become master".
func (n *replicaNode) BecomeMaster(ctx context.Context, r replica.Role) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	cl := n.st.CommitLog()
	if n.master != nil {
		// Re-elected: a new epoch at the log end; slaves handshake again
		// so that they learn it.
		if r.MasterEpoch > n.ep.LastEpoch() {
			if err := n.ep.Append(r.MasterEpoch, cl.MaxOffset()); err != nil {
				return fmt.Errorf("append epoch %d: %w", r.MasterEpoch, err)
			}
		}
		n.master.ResetSyncState(ha.SyncState{Set: r.SyncStateSet, Epoch: r.SyncStateSetEpoch})
		n.master.CloseConnections("new master epoch")
		n.role = r
		n.roleChanged()
		return nil
	}
	if last := n.ep.LastEpoch(); r.MasterEpoch < last {
		return fmt.Errorf("stale: master epoch %d below the local epoch %d", r.MasterEpoch, last)
	}
	if n.slave != nil {
		n.slave.Close()
		n.slave = nil
	}
	before := cl.MaxOffset()
	end, err := n.st.CutPartialTail()
	if err != nil {
		return err
	}
	if end < before {
		if err := n.ep.TruncateSuffixByOffset(end + 1); err != nil {
			return err
		}
	}
	// The epoch boundary; a restarted master the controller still names at
	// its own last epoch continues that epoch.
	if r.MasterEpoch > n.ep.LastEpoch() {
		start := end
		if len(n.ep.Entries()) == 0 && end > cl.MinOffset() {
			// A log without any epoch: a classic store upgraded in place
			// (or one whose epoch file was deleted, as Apache's upgrade
			// guide for persistent broker ids asks). Its bytes go under
			// this first epoch, so that a replica joining with an empty
			// store can copy them: no epoch would hold them otherwise, and
			// a master sends nothing outside an epoch (Apache's neither:
			// "Failed to find an epochEntry to match nextTransferFromWhere").
			start = cl.MinOffset()
			n.log.Info("the log has no epoch list (a classic store upgraded in place?): its bytes go under the first epoch",
				"epoch", r.MasterEpoch, "from", start, "to", end)
		}
		if err := n.ep.Append(r.MasterEpoch, start); err != nil {
			return fmt.Errorf("append epoch %d at %d: %w", r.MasterEpoch, start, err)
		}
	}
	cl.SetConfirmOffset(end)
	ln := n.haLn.View()
	cfg := n.cfg()
	m := ha.NewAutoSwitchMaster(cl, ln, n.ha, ha.AutoSwitchConfig{
		SelfID:                 r.Self,
		Epochs:                 n.ep,
		AllAckInSyncStateSet:   cfg.AllAckInSyncStateSet,
		InSyncReplicas:         cfg.InSyncReplicas,
		MaxTimeSlaveNotCatchup: cfg.HaMaxTimeSlaveNotCatchup,
		CheckInterval:          cfg.CheckSyncStateSetPeriod,
		IsReplica:              n.replicaCheck(r.Self),
		Alter:                  n.alter,
	}, ha.SyncState{Set: r.SyncStateSet, Epoch: r.SyncStateSetEpoch})
	if !cfg.ReadUnCommitted {
		n.st.SetDispatchLimit(m.ConfirmOffset)
	}
	// Queue offsets of the new epoch continue from the CommitLog tail:
	// wait until the queues hold it, then reload the counters.
	ctx, cancel := context.WithTimeout(ctx, dispatchCatchUpTimeout)
	defer cancel()
	for n.st.DispatchedOffset() < end {
		select {
		case <-ctx.Done():
			_ = m.Close()
			return fmt.Errorf("wait for dispatch to %d: %w", end, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	n.st.ResetQueueOffsets()
	// The old master's pop checkpoints, replicated in its journal, are
	// this broker's to revive now; pops wait for the role below.
	if n.b.msg != nil && n.b.msg.pop != nil {
		if err := n.b.msg.pop.CatchUp(); err != nil {
			_ = m.Close()
			return fmt.Errorf("pop journal: %w", err)
		}
	}
	m.Start()
	n.master = m
	n.role = r
	m.SetFenced(n.fenced)
	n.b.cfg.SetRole(config.RoleSyncMaster, protocol.MasterID)
	n.b.masterAddr.Store("")
	n.st.SetReplica(n.fenced)
	n.roleChanged()
	n.log.Info("became master", "masterEpoch", r.MasterEpoch, "epochStart", end, "syncStateSet", r.SyncStateSet, "ha", ln.Addr().String())
	return nil
}

// replicaCheck admits HA slaves by ids the controller lists as replicas
// of this set (spec: an unknown id is closed); ids once confirmed stay
// admitted for this master term. Without an answer from the controller an
// id outside the SyncStateSet is refused: the slave reconnects later.
func (n *replicaNode) replicaCheck(self int64) func(int64) bool {
	var mu sync.Mutex
	known := map[int64]bool{}
	return func(id int64) bool {
		if id == self || id <= 0 {
			return false
		}
		mu.Lock()
		ok := known[id]
		mu.Unlock()
		if ok {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), replicaLookupTimeout)
		defer cancel()
		ok, err := n.mgr.IsReplica(ctx, id)
		if err != nil {
			n.log.Warn("cannot check an HA slave's id at the controller", "slaveId", id, "err", err)
			return false
		}
		if ok {
			mu.Lock()
			known[id] = true
			mu.Unlock()
		}
		return ok
	}
}

// alter asks the controller for a new SyncStateSet.
func (n *replicaNode) alter(ctx context.Context, set []int64) (ha.SyncState, error) {
	r, err := n.mgr.AlterSyncStateSet(ctx, set)
	if err != nil {
		return ha.SyncState{}, err
	}
	return ha.SyncState{Set: r.SyncStateSet, Epoch: r.SyncStateSetEpoch}, nil
}

// BecomeSlave is §3.6 "become slave".
func (n *replicaNode) BecomeSlave(_ context.Context, r replica.Role) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if last := n.ep.LastEpoch(); r.MasterEpoch < last {
		return fmt.Errorf("stale: master epoch %d below the local epoch %d", r.MasterEpoch, last)
	}
	if n.slave != nil && n.role.MasterID == r.MasterID && n.role.MasterAddr == r.MasterAddr {
		n.role = r
		n.b.registrar.Trigger()
		return nil
	}
	if n.master != nil {
		// Waiting sends end now with FLUSH_SLAVE_TIMEOUT.
		_ = n.master.Close()
		n.master = nil
	}
	if n.slave != nil {
		n.slave.Close()
	}
	n.st.SetReplica(true)
	n.b.cfg.SetRole(config.RoleSlave, r.Self)
	if !n.cfg().ReadUnCommitted {
		n.st.SetDispatchLimit(n.st.CommitLog().ConfirmOffset)
	}
	n.b.masterAddr.Store(r.MasterAddr)
	n.b.masterHAAddr.Store("")
	cfg := n.cfg()
	masterAddr := r.MasterAddr
	prefix := &prefixVerifier{cl: n.st.CommitLog(), read: n.st.ReadRecord, invoker: n.b.client.Invoke, masterAddr: masterAddr}
	n.slave = ha.NewAutoSwitchSlave(n.st, func() string { return n.masterHAAddr(masterAddr) }, n.ha, ha.AutoSwitchSlaveConfig{
		SelfID: r.Self, Epochs: n.ep, SyncFromLastFile: cfg.SyncFromLastFile, AsyncLearner: cfg.AsyncLearner,
		VerifyPrefix: prefix.verify,
	})
	n.slave.Start()
	if n.b.slaveSync != nil {
		n.b.slaveSync.Trigger() // copy the new master's metadata now
	}
	n.role = r
	n.roleChanged()
	n.log.Info("became slave", "master", r.MasterID, "masterAddr", r.MasterAddr, "masterEpoch", r.MasterEpoch, "self", r.Self)
	return nil
}

// roleChanged carries the new epoch into the topic DataVersion's
// stateVersion (which also triggers a registration round).
func (n *replicaNode) roleChanged() {
	if err := n.b.topics.BumpDataVersion(); err != nil {
		n.log.Error("bump topic data version", "err", err)
		n.b.registrar.Trigger()
	}
}

// masterHAAddr asks the master for its HA address (EXCHANGE_BROKER_HA_INFO
// with an empty header); the nameserver's answer is the fallback.
func (n *replicaNode) masterHAAddr(masterAddr string) string {
	if masterAddr != "" {
		ctx, cancel := context.WithTimeout(context.Background(), exchangeHATimeout)
		defer cancel()
		resp, err := n.b.client.Invoke(ctx, masterAddr, remoting.NewRequest(code.ExchangeBrokerHAInfo, map[string]string{}, nil))
		if err == nil && resp.Code == code.Success && resp.Ext(protocol.HdrMasterHaAddress) != "" {
			return resp.Ext(protocol.HdrMasterHaAddress)
		}
		n.log.Debug("exchange HA info with the master", "master", masterAddr, "err", err)
	}
	return n.b.masterHAAddr.Load().(string)
}

func (n *replicaNode) SyncStateSetChanged(r replica.Role) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.role = r
	if n.master != nil {
		n.master.SetSyncState(ha.SyncState{Set: r.SyncStateSet, Epoch: r.SyncStateSetEpoch})
	}
}

// SetFenced: a fenced broker refuses writes (SERVICE_NOT_AVAILABLE) and
// stays away from the nameservers; a fenced master completes its waiting
// sends with FLUSH_SLAVE_TIMEOUT.
func (n *replicaNode) SetFenced(on bool) {
	n.mu.Lock()
	n.fenced = on
	n.fencedNow.Store(on)
	if n.master != nil {
		n.master.SetFenced(on)
		n.st.SetReplica(on)
	} else {
		n.st.SetReplica(true)
	}
	n.mu.Unlock()
	if !on {
		n.b.registrar.Trigger()
	}
}

// WaitReplicas is send.Replicas in controller mode (§4.7).
func (n *replicaNode) WaitReplicas(ctx context.Context, end int64) error {
	n.mu.Lock()
	m := n.master
	n.mu.Unlock()
	if m == nil {
		return fmt.Errorf("%w: no longer master", ha.ErrReplicaTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg().SlaveTimeout)
	defer cancel()
	return m.WaitAcks(ctx, end)
}

// checkInSync is §4.7 step 1, before anything is stored.
func (n *replicaNode) checkInSync() error {
	n.mu.Lock()
	m := n.master
	n.mu.Unlock()
	if m == nil {
		return nil // the store refuses: not writable
	}
	if size, need := m.EffectiveSize(), n.cfg().MinInSyncReplicas; size < need {
		return fmt.Errorf("%w: SyncStateSet of %d, minInSyncReplicas %d", ErrInSyncReplicasNotEnough, size, need)
	}
	return nil
}

// MasterHeard: the slave's link names a master and read from it within two
// HA heartbeat intervals (an idle master sends one every interval), or 2 s
// with short intervals, which a loaded machine may stretch.
func (n *replicaNode) MasterHeard() bool {
	n.mu.Lock()
	s := n.slave
	n.mu.Unlock()
	if s == nil {
		return false
	}
	c := s.Status().HAClientRuntimeInfo
	return c != nil && c.MasterAddr != "" && time.Since(time.UnixMilli(c.LastReadTimestamp)) < max(2*n.ha.HeartbeatInterval, 2*time.Second)
}

func (n *replicaNode) status() protocol.HARuntimeInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.master != nil:
		return n.master.Status()
	case n.slave != nil:
		return n.slave.Status()
	}
	return protocol.HARuntimeInfo{HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
}

func (n *replicaNode) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.master != nil {
		_ = n.master.Close()
		n.master = nil
	}
	if n.slave != nil {
		n.slave.Close()
		n.slave = nil
	}
}
