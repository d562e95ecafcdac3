package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// A broker that finds no controller leader at startup asks again
// leaderRetries times, leaderRetryDelay apart, before it falls back to
// RetryInterval.
const (
	leaderRetries    = 3
	leaderRetryDelay = time.Second
)

// Node is what the manager needs of the broker.
type Node interface {
	// Addr is the remoting address registered at the controller.
	Addr() string
	MaxPhyOffset() int64
	ConfirmOffset() int64
	// LastEpoch is the newest epoch in the local epoch file: after a
	// restart, the floor below which role information is stale.
	LastEpoch() int32
	// BecomeMaster and BecomeSlave switch the broker; an error leaves the
	// role unchanged and the manager tries again later.
	BecomeMaster(ctx context.Context, r Role) error
	BecomeSlave(ctx context.Context, r Role) error
	// SyncStateSetChanged tells a master of a newer set at its epoch.
	SyncStateSetChanged(r Role)
	// MasterHeard reports whether this slave's HA link to its master is
	// up and heard from recently: the master is alive, whatever the
	// controllers know.
	MasterHeard() bool
	// SetFenced makes the broker refuse writes and stay away from the
	// nameserver (true), or serve its role again (false).
	SetFenced(fenced bool)
}

// Manager runs controller mode for one broker. Role changes are applied
// on one goroutine, in epoch order.
type Manager struct {
	cfg  Config
	log  *slog.Logger
	node Node
	ctl  *controllers
	ids  IdentityFiles

	notify chan Role // latest NOTIFY_BROKER_ROLE_CHANGED, capacity 1
	now    chan struct{}

	mu         sync.Mutex
	self       int64
	acted      Role // the role last acted upon
	registered bool
	// unknown: a controller leader answered a heartbeat with "not
	// registered"; the next poll registers again (rejoin).
	unknown    bool
	leaseUntil time.Time
	leaseLost  bool
	// fenceMu orders each lease decision with its SetFenced call: the
	// lease is checked on its own goroutine, renewed on the run loop.
	fenceMu sync.Mutex

	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	started bool // Start ran (mu)
}

// New builds a manager; Start runs it.
func New(cfg Config, node Node, inv Invoker, log *slog.Logger) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		cfg:    cfg,
		log:    log.With("component", "replica"),
		node:   node,
		ctl:    &controllers{inv: inv, addrs: cfg.Controllers, timeout: cfg.RequestTimeout},
		ids:    IdentityFiles{Path: cfg.IdentityPath},
		notify: make(chan Role, 1),
		now:    make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}, nil
}

// Start fences the broker and runs registration, then the periodic tasks,
// until Stop.
func (m *Manager) Start() {
	m.mu.Lock()
	m.started = true
	m.mu.Unlock()
	m.node.SetFenced(true)
	go m.run()
}

// Stop ends the manager and waits for it. A manager never started has
// nothing to wait for (a broker whose start failed before it shuts down).
func (m *Manager) Stop() {
	m.once.Do(func() { close(m.stop) })
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if started {
		<-m.done
	}
}

// ControllerID is this replica's controller id (0 before registration).
func (m *Manager) ControllerID() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.self
}

// isRegistered reports whether startup completed: after it, a controller
// that does not know this replica lost it.
func (m *Manager) isRegistered() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registered
}

// Role is the role last acted upon.
func (m *Manager) Role() Role {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.acted
	r.SyncStateSet = slices.Clone(r.SyncStateSet)
	return r
}

// HandleNotify serves NOTIFY_BROKER_ROLE_CHANGED (one-way): the newest
// notification replaces an unprocessed older one.
func (m *Manager) HandleNotify(req *remoting.Command) {
	r := roleFromHeader(m.ControllerID(), req).withSet(req.Body)
	select {
	case <-m.notify:
	default:
	}
	m.notify <- r
}

// SyncNow asks for a GET_REPLICA_INFO round at once (a heartbeat answer or
// an HA peer said the role moved).
func (m *Manager) SyncNow() {
	loop.Wake(m.now)
}

func (m *Manager) run() {
	defer close(m.done)
	ctx, cancel := loop.StopContext(m.stop)
	defer cancel()
	for tries := 0; ; {
		err := m.startup(ctx)
		if err == nil {
			break
		}
		// Controllers that are still electing their leader are asked
		// again soon a few times (docs/replication.md §3.4 step 3).
		wait := m.cfg.RetryInterval
		if errors.Is(err, ErrNoLeader) && tries < leaderRetries {
			tries++
			wait = min(wait, leaderRetryDelay)
		}
		m.log.Warn("controller registration failed; the broker stays fenced", "retryIn", wait, "err", err)
		if !m.sleep(wait) {
			return
		}
	}
	// The lease is watched on its own: the loop below waits on
	// controllers that may not answer (a partition holds each request
	// for RequestTimeout), and a master must fence itself when its lease
	// runs out, not when a request gives up.
	leaseDone := make(chan struct{})
	go func() { defer close(leaseDone); m.watchLease() }()
	defer func() { <-leaseDone }()
	hb := time.NewTicker(m.cfg.HeartbeatInterval)
	defer hb.Stop()
	poll := time.NewTicker(m.cfg.SyncPeriod)
	defer poll.Stop()
	refresh := time.NewTicker(m.cfg.LeaderRefreshPeriod)
	defer refresh.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-hb.C:
			m.heartbeat(ctx)
		case <-poll.C:
			m.syncReplicaInfo(ctx)
		case <-m.now:
			m.syncReplicaInfo(ctx)
		case <-refresh.C:
			if _, err := m.ctl.refresh(ctx); err != nil {
				m.log.Debug("controller leader refresh", "err", err)
			}
		case r := <-m.notify:
			m.apply(ctx, r)
		}
	}
}

// watchLease checks the master lease until Stop, at least every
// heartbeat interval and four times per lease.
func (m *Manager) watchLease() {
	if m.cfg.LeaseDuration <= 0 {
		return
	}
	loop.Tick(m.stop, max(min(m.cfg.HeartbeatInterval, m.cfg.LeaseDuration/4), time.Millisecond), m.checkLease)
}

func (m *Manager) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-m.stop:
		return false
	case <-t.C:
		return true
	}
}

// startup is §3.4 of docs/replication.md: an id, a registration, a role.
func (m *Manager) startup(ctx context.Context) error {
	id, err := m.obtainID(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.self = id
	m.mu.Unlock()
	r, err := m.registerOrReclaim(ctx)
	if err != nil {
		return err
	}
	// A heartbeat before the first role: an election ranks by it, and a
	// master that adds this replica to its SyncStateSet as soon as it
	// has caught up is refused while the controller has not heard from
	// it ("not alive"; Apache's brokers heartbeat from their start).
	m.heartbeat(ctx)
	if !r.HasMaster() {
		if r, err = m.elect(ctx); err != nil {
			return err
		}
	}
	if !m.apply(ctx, r) {
		return errors.New("the first role could not be applied")
	}
	m.mu.Lock()
	m.registered = true
	m.mu.Unlock()
	m.node.SetFenced(false)
	return nil
}

// obtainID returns the persisted controller id or applies for a new one,
// resuming an application a crash interrupted.
func (m *Manager) obtainID(ctx context.Context) (int64, error) {
	id, ok, err := m.ids.Load()
	if err != nil {
		return 0, err
	}
	if ok {
		if id.ClusterName != m.cfg.ClusterName || id.BrokerName != m.cfg.BrokerName {
			return 0, fmt.Errorf("broker identity file %s is for %s/%s, this broker is %s/%s", m.ids.Path, id.ClusterName, id.BrokerName, m.cfg.ClusterName, m.cfg.BrokerName)
		}
		return id.ControllerID, nil
	}
	pending, ok, err := m.ids.LoadTemp()
	if err != nil {
		m.log.Warn("unreadable broker identity temp file; applying anew", "err", err)
		ok = false
	}
	if !ok || pending.ClusterName != m.cfg.ClusterName || pending.BrokerName != m.cfg.BrokerName {
		resp, err := m.ctl.call(ctx, func() *remoting.Command {
			return remoting.NewRequest(code.ControllerGetNextBrokerID, map[string]string{
				protocol.HdrClusterName: m.cfg.ClusterName, protocol.HdrBrokerName: m.cfg.BrokerName,
			}, nil)
		})
		if err != nil {
			return 0, fmt.Errorf("get next broker id: %w", err)
		}
		next, err := strconv.ParseInt(resp.Ext(protocol.HdrNextBrokerID), 10, 64)
		if err != nil || next <= 0 {
			return 0, fmt.Errorf("get next broker id: bad answer %q", resp.Ext(protocol.HdrNextBrokerID))
		}
		pending = Identity{
			ClusterName: m.cfg.ClusterName, BrokerName: m.cfg.BrokerName, ControllerID: next,
			CheckCode: fmt.Sprintf("%s;%d", m.node.Addr(), m.cfg.Clock().UnixMilli()),
		}
		if err := m.ids.SaveTemp(pending); err != nil {
			return 0, err
		}
	}
	_, err = m.ctl.call(ctx, func() *remoting.Command {
		return remoting.NewRequest(code.ControllerApplyBrokerID, map[string]string{
			protocol.HdrClusterName:       m.cfg.ClusterName,
			protocol.HdrBrokerName:        m.cfg.BrokerName,
			protocol.HdrAppliedBrokerID:   strconv.FormatInt(pending.ControllerID, 10),
			protocol.HdrRegisterCheckCode: pending.CheckCode,
		}, nil)
	})
	if err != nil {
		// Another replica took the id (or the controller refused it): the
		// next attempt asks for a fresh one.
		if dropErr := m.ids.DropTemp(); dropErr != nil {
			m.log.Error("drop broker identity temp file", "err", dropErr)
		}
		return 0, fmt.Errorf("apply broker id %d: %w", pending.ControllerID, err)
	}
	if err := m.ids.Commit(pending); err != nil {
		return 0, err
	}
	m.log.Info("controller id assigned", "controllerId", pending.ControllerID)
	return pending.ControllerID, nil
}

// replicaRequest builds request c about replica self of this broker set
// (cluster, broker name, broker id), stamped with the invoke time when
// built, plus one more header k: v.
func (m *Manager) replicaRequest(c int32, self int64, k, v string) func() *remoting.Command {
	return func() *remoting.Command {
		return remoting.NewRequest(c, map[string]string{
			protocol.HdrClusterName: m.cfg.ClusterName,
			protocol.HdrBrokerName:  m.cfg.BrokerName,
			protocol.HdrBrokerID:    strconv.FormatInt(self, 10),
			protocol.HdrInvokeTime:  strconv.FormatInt(m.cfg.Clock().UnixMilli(), 10),
			k:                       v,
		}, nil)
	}
}

func (m *Manager) register(ctx context.Context) (Role, error) {
	self := m.ControllerID()
	resp, err := m.ctl.call(ctx, m.replicaRequest(code.ControllerRegisterBroker, self, protocol.HdrBrokerAddress, m.node.Addr()))
	if err != nil {
		return Role{}, fmt.Errorf("register at the controller: %w", err)
	}
	return roleFromHeader(self, resp).withSet(resp.Body), nil
}

// registerOrReclaim registers; controllers that do not know this replica
// (they lost their state, or replaced the ones it registered with) get
// its persisted id applied for again, with the check code it first
// registered with, and the registration is retried once.
func (m *Manager) registerOrReclaim(ctx context.Context) (Role, error) {
	r, err := m.register(ctx)
	if !IsCode(err, code.ControllerBrokerNeedToBeRegistered) {
		return r, err
	}
	id, ok, lerr := m.ids.Load()
	if lerr != nil || !ok || id.ControllerID != m.ControllerID() {
		return r, err
	}
	m.log.Warn("the controllers do not know this replica (they lost their state or were replaced): applying for its controller id again",
		"controllerId", id.ControllerID)
	if _, aerr := m.ctl.call(ctx, func() *remoting.Command {
		return remoting.NewRequest(code.ControllerApplyBrokerID, map[string]string{
			protocol.HdrClusterName:       m.cfg.ClusterName,
			protocol.HdrBrokerName:        m.cfg.BrokerName,
			protocol.HdrAppliedBrokerID:   strconv.FormatInt(id.ControllerID, 10),
			protocol.HdrRegisterCheckCode: id.CheckCode,
		}, nil)
	}); aerr != nil {
		return Role{}, fmt.Errorf("apply for controller id %d again: %w", id.ControllerID, aerr)
	}
	return m.register(ctx)
}

// rejoin registers again with controllers that lost this replica (an
// unknown set, an epoch behind the acted one, or a heartbeat answered
// "not registered"), asks for an election if they hold no master (the
// controller takes the most up-to-date replica, at an epoch above every
// replica's), and acts on the answer.
func (m *Manager) rejoin(ctx context.Context) {
	r, err := m.registerOrReclaim(ctx)
	if err != nil {
		m.mu.Lock()
		m.unknown = true
		m.mu.Unlock()
		m.log.Warn("re-register at the controller", "err", err)
		return
	}
	m.heartbeat(ctx)
	if !r.HasMaster() {
		// The old master asks; a slave that still hears it leaves the
		// election to it, so the set keeps its master.
		if acted := m.Role(); !acted.IsMaster() && acted.MasterEpoch > 0 && m.node.MasterHeard() {
			m.log.Info("the controllers hold no master for this set yet; the master this replica follows is alive and will ask")
			return
		}
		er, err := m.elect(ctx)
		if err != nil {
			m.log.Info("the controllers hold no master for this set yet; asking again at the next poll", "err", err)
			return
		}
		r = er
	}
	m.apply(ctx, r)
}

// elect asks the controller for an election ("there is no master, try
// me"). CONTROLLER_MASTER_STILL_EXIST names the master that stays.
func (m *Manager) elect(ctx context.Context) (Role, error) {
	self := m.ControllerID()
	resp, err := m.ctl.call(ctx, m.replicaRequest(code.ControllerElectMaster, self, protocol.HdrDesignateElect, "false"))
	if err != nil && !(IsCode(err, code.ControllerMasterStillExist) && resp != nil) {
		return Role{}, fmt.Errorf("elect master: %w", err)
	}
	r := roleFromHeader(self, resp).withSet(resp.Body)
	if !r.HasMaster() {
		return Role{}, errors.New("elect master: the answer names no master")
	}
	return r, nil
}

// apply acts on role information newer than what was acted on; it reports
// whether the broker now runs the given role.
func (m *Manager) apply(ctx context.Context, r Role) bool {
	m.mu.Lock()
	acted, self := m.acted, m.self
	m.mu.Unlock()
	r.Self = self
	if r.MasterEpoch <= acted.MasterEpoch {
		if r.MasterEpoch == acted.MasterEpoch && acted.IsMaster() && r.SyncStateSetEpoch > acted.SyncStateSetEpoch && len(r.SyncStateSet) > 0 {
			m.mu.Lock()
			m.acted.SyncStateSet, m.acted.SyncStateSetEpoch = slices.Clone(r.SyncStateSet), r.SyncStateSetEpoch
			m.mu.Unlock()
			m.node.SyncStateSetChanged(m.Role())
		}
		return r.MasterEpoch == acted.MasterEpoch && acted.MasterEpoch > 0
	}
	if floor := m.node.LastEpoch(); r.MasterEpoch < floor {
		m.log.Warn("ignoring stale role information", "masterEpoch", r.MasterEpoch, "localEpoch", floor)
		return false
	}
	if !r.HasMaster() {
		// The controller recorded "no master" at a new epoch: ask for an
		// election; its answer carries the role to act on.
		er, err := m.elect(ctx)
		if err != nil {
			m.log.Warn("no master and the election failed", "masterEpoch", r.MasterEpoch, "err", err)
			return false
		}
		if er.MasterEpoch <= acted.MasterEpoch {
			return false
		}
		r = er
		r.Self = self
	}
	var err error
	if r.IsMaster() {
		err = m.node.BecomeMaster(ctx, r)
	} else {
		err = m.node.BecomeSlave(ctx, r)
	}
	if err != nil {
		m.log.Error("role change failed", "master", r.MasterID, "masterEpoch", r.MasterEpoch, "self", self, "err", err)
		return false
	}
	// A role the controller just named is a fresh lease: a broker
	// fenced by a lapsed lease (a master cut off from the controllers)
	// serves again in it, as master or slave.
	m.fenceMu.Lock()
	m.mu.Lock()
	m.acted = r
	m.leaseUntil = m.cfg.Clock().Add(m.cfg.LeaseDuration)
	wasLost := m.leaseLost
	m.leaseLost = false
	m.mu.Unlock()
	if wasLost {
		m.node.SetFenced(false)
	}
	m.fenceMu.Unlock()
	m.log.Info("role changed", "master", r.MasterID, "masterAddr", r.MasterAddr, "masterEpoch", r.MasterEpoch, "self", self, "isMaster", r.IsMaster(), "syncStateSet", r.SyncStateSet)
	return true
}

func (m *Manager) syncReplicaInfo(ctx context.Context) {
	self := m.ControllerID()
	resp, err := m.ctl.call(ctx, func() *remoting.Command {
		return remoting.NewRequest(code.ControllerGetReplicaInfo, map[string]string{protocol.HdrBrokerName: m.cfg.BrokerName}, nil)
	})
	if err != nil && !IsCode(err, code.ControllerBrokerMetadataNotExist) {
		m.log.Debug("get replica info", "err", err)
		return
	}
	m.mu.Lock()
	lost, acted := m.unknown || err != nil, m.acted
	m.unknown = false
	m.mu.Unlock()
	var r Role
	if !lost {
		r = roleFromHeader(self, resp).withSet(resp.Body)
		// Epochs never go back: controllers behind this replica lost
		// their state (or replaced the ones it knew).
		lost = r.MasterEpoch < acted.MasterEpoch
	}
	if lost {
		m.rejoin(ctx)
		return
	}
	m.apply(ctx, r)
}

// heartbeat tells every controller this replica is alive, with what the
// election policy ranks by. The leader gets a request, not a one-way
// frame: its answer renews a master's lease.
func (m *Manager) heartbeat(ctx context.Context) {
	m.mu.Lock()
	self, acted := m.self, m.acted
	m.mu.Unlock()
	build := func() *remoting.Command {
		return remoting.NewRequest(code.BrokerHeartbeat, map[string]string{
			protocol.HdrClusterName:           m.cfg.ClusterName,
			protocol.HdrBrokerAddr:            m.node.Addr(),
			protocol.HdrBrokerName:            m.cfg.BrokerName,
			protocol.HdrBrokerID:              strconv.FormatInt(self, 10),
			protocol.HdrEpoch:                 strconv.FormatInt(int64(m.node.LastEpoch()), 10),
			protocol.HdrMaxOffset:             strconv.FormatInt(m.node.MaxPhyOffset(), 10),
			protocol.HdrConfirmOffset:         strconv.FormatInt(m.node.ConfirmOffset(), 10),
			protocol.HdrHeartbeatTimeoutMills: strconv.FormatInt(m.cfg.HeartbeatTimeout.Milliseconds(), 10),
			protocol.HdrElectionPriority:      strconv.FormatInt(m.cfg.ElectionPriority, 10),
		}, nil)
	}
	leader := m.ctl.cachedLeader()
	for _, a := range m.cfg.Controllers() {
		if a != leader {
			_ = m.ctl.inv.InvokeOneway(ctx, a, build())
		}
	}
	if leader == "" {
		return
	}
	sent := m.cfg.Clock()
	cctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	resp, err := m.ctl.inv.Invoke(cctx, leader, build())
	cancel()
	if err == nil && resp.Code == code.ControllerBrokerNeedToBeRegistered && m.isRegistered() {
		m.mu.Lock()
		m.unknown = true
		m.mu.Unlock()
		m.SyncNow()
		return
	}
	if err != nil || resp.Code != code.Success {
		return
	}
	if resp.Ext(protocol.HdrMasterEpoch) == "" {
		// A controller without the lease fields (Apache's): the lease is
		// renewed by the GET_REPLICA_INFO poll instead.
		if acted.IsMaster() {
			m.renewFromReplicaInfo(ctx, sent)
		}
		return
	}
	m.renew(roleFromHeader(self, resp), sent)
}

func (m *Manager) renewFromReplicaInfo(ctx context.Context, sent time.Time) {
	resp, err := m.ctl.call(ctx, func() *remoting.Command {
		return remoting.NewRequest(code.ControllerGetReplicaInfo, map[string]string{protocol.HdrBrokerName: m.cfg.BrokerName}, nil)
	})
	if err == nil {
		m.renew(roleFromHeader(m.ControllerID(), resp), sent)
	}
}

// renew extends a master's lease from an answer that confirms it at its
// epoch, and schedules a role sync when the answer says the role moved.
func (m *Manager) renew(r Role, sent time.Time) {
	m.fenceMu.Lock()
	defer m.fenceMu.Unlock()
	m.mu.Lock()
	acted := m.acted
	var unfence bool
	switch {
	case r.MasterEpoch > acted.MasterEpoch || (r.MasterEpoch == acted.MasterEpoch && r.MasterID != acted.MasterID):
		m.mu.Unlock()
		m.SyncNow()
		return
	case acted.IsMaster() && r.MasterID == acted.MasterID && r.MasterEpoch == acted.MasterEpoch:
		if until := sent.Add(m.cfg.LeaseDuration); until.After(m.leaseUntil) {
			m.leaseUntil = until
		}
		unfence = m.leaseLost
		m.leaseLost = false
	}
	m.mu.Unlock()
	if unfence {
		m.log.Info("master lease renewed; accepting writes again", "masterEpoch", acted.MasterEpoch)
		m.node.SetFenced(false)
	}
}

// checkLease fences a master whose lease lapsed: a controller may be
// electing someone else, and writes acknowledged now could be lost.
func (m *Manager) checkLease() {
	if m.cfg.LeaseDuration <= 0 {
		return
	}
	m.fenceMu.Lock()
	defer m.fenceMu.Unlock()
	m.mu.Lock()
	lapsed := m.acted.IsMaster() && !m.leaseLost && m.cfg.Clock().After(m.leaseUntil)
	if lapsed {
		m.leaseLost = true
	}
	epoch := m.acted.MasterEpoch
	m.mu.Unlock()
	if lapsed {
		m.log.Warn("master lease lapsed: refusing writes until a controller confirms this master", "masterEpoch", epoch)
		m.node.SetFenced(true)
	}
}

// AlterSyncStateSet asks the controller to change the set (the master's
// shrink and expand); on success the new set is the acted one.
func (m *Manager) AlterSyncStateSet(ctx context.Context, newSet []int64) (Role, error) {
	acted := m.Role()
	if !acted.IsMaster() {
		return acted, errors.New("replica: only the master alters the SyncStateSet")
	}
	body := protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: newSet, SyncStateSetEpoch: acted.SyncStateSetEpoch})
	resp, err := m.ctl.call(ctx, func() *remoting.Command {
		return remoting.NewRequest(code.ControllerAlterSyncStateSet, map[string]string{
			protocol.HdrBrokerName:     m.cfg.BrokerName,
			protocol.HdrMasterBrokerID: strconv.FormatInt(acted.Self, 10),
			protocol.HdrMasterEpoch:    strconv.FormatInt(int64(acted.MasterEpoch), 10),
			protocol.HdrInvokeTime:     strconv.FormatInt(m.cfg.Clock().UnixMilli(), 10),
		}, body)
	})
	if err != nil {
		if IsCode(err, code.ControllerFencedMasterEpoch) || IsCode(err, code.ControllerInvalidMaster) {
			m.SyncNow()
		}
		return acted, fmt.Errorf("alter SyncStateSet to %v: %w", newSet, err)
	}
	var s protocol.SyncStateSet
	if err := protocol.Unmarshal(resp.Body, &s); err != nil {
		return acted, fmt.Errorf("alter SyncStateSet: bad answer body: %w", err)
	}
	m.mu.Lock()
	if m.acted.MasterEpoch == acted.MasterEpoch && s.SyncStateSetEpoch > m.acted.SyncStateSetEpoch {
		m.acted.SyncStateSet, m.acted.SyncStateSetEpoch = slices.Clone(s.SyncStateSet), s.SyncStateSetEpoch
	}
	m.mu.Unlock()
	return m.Role(), nil
}

// IsReplica reports whether the controller lists id as a replica of this
// broker set: the master admits HA slaves only by such ids (an unknown id
// could otherwise count as an ack). Members of the acted SyncStateSet are
// known without asking; any other id is looked up with
// CONTROLLER_GET_SYNC_STATE_DATA, which lists every registered replica.
func (m *Manager) IsReplica(ctx context.Context, id int64) (bool, error) {
	if id <= 0 {
		return false, nil
	}
	if m.Role().InSyncStateSet(id) {
		return true, nil
	}
	body := protocol.MustMarshal([]string{m.cfg.BrokerName})
	resp, err := m.ctl.call(ctx, func() *remoting.Command {
		return remoting.NewRequest(code.ControllerGetSyncStateData, nil, body)
	})
	if err != nil {
		return false, fmt.Errorf("list the replicas of %s: %w", m.cfg.BrokerName, err)
	}
	var info protocol.BrokerReplicasInfo
	if err := protocol.Unmarshal(resp.Body, &info); err != nil {
		return false, fmt.Errorf("list the replicas of %s: bad answer body: %w", m.cfg.BrokerName, err)
	}
	set := info.ReplicasInfoTable[m.cfg.BrokerName]
	for _, r := range slices.Concat(set.InSyncReplicas, set.NotInSyncReplicas) {
		if r.BrokerID == id {
			return true, nil
		}
	}
	return false, nil
}
