package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	"github.com/rmqgo/rmq/namesrv/controller/state"
)

func millis(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func isNotLeader(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrRaftShutdown)
}

// electResult is one election's answer, for the request handler and for
// the controller's own elections alike.
type electResult struct {
	code   int32
	remark string
	set    *state.BrokerSet // the set after the election (nil: unknown set)
	err    error            // raft error
}

// electMasterRequest (1002): broker-triggered (its own id), admin
// (designateElect=true) or another controller's (-1).
func (c *Controller) electMasterRequest(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name := req.Ext(protocol.HdrBrokerName)
	id, ok, err := extInt(req, protocol.HdrBrokerID)
	if err != nil {
		return remoting.NewResponse(req, code.ControllerInvalidRequest, err.Error()), nil
	}
	if !ok {
		id = state.ControllerTriggered
	}
	designate := req.Ext(protocol.HdrDesignateElect) == "true"
	r, err := decide(ctx, c, func() electResult { return c.elect(name, id, designate) })
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	if r.err != nil {
		return c.failApply(req, r.err), nil
	}
	if r.set == nil || (r.code != code.Success && r.code != code.ControllerMasterStillExist) {
		resp := remoting.NewResponse(req, r.code, r.remark)
		if r.set != nil {
			resp.SetExt(protocol.HdrMasterEpoch, itoa(int64(r.set.MasterEpoch)))
			resp.SetExt(protocol.HdrSyncStateSetEpoch, itoa(int64(r.set.SyncStateSetEpoch)))
		}
		return resp, nil
	}
	ext := map[string]string{}
	masterFields(ext, r.set)
	body := protocol.ElectMasterResponseBody{SyncStateSet: syncStateSetBody(r.set).SyncStateSet}
	if r.code == code.Success {
		addrs := map[int64]string{}
		for id, rep := range r.set.Replicas {
			addrs[id] = rep.Address
		}
		body.BrokerMemberGroup = &protocol.BrokerMemberGroup{BrokerAddrs: addrs, BrokerName: name, Cluster: r.set.ClusterName}
	}
	return respond(req, r.code, r.remark, ext, body), nil
}

// elect decides and commits one election; it runs on the decide loop. A
// command that lost a race (epochs moved) is decided again, up to
// electMasterMaxRetryCount times.
func (c *Controller) elect(name string, brokerID int64, designate bool) electResult {
	cfg := c.cfg.Load()
	for attempt := 0; ; attempt++ {
		b, ok := c.fsm.Get(name)
		if !ok {
			return electResult{code: code.ControllerBrokerNeedToBeRegistered, remark: "broker set " + name + " unknown"}
		}
		if brokerID != state.ControllerTriggered {
			if _, ok := b.Replicas[brokerID]; !ok {
				return electResult{code: code.ControllerBrokerNeedToBeRegistered, remark: fmt.Sprintf("broker %s id %d is not registered", name, brokerID), set: b}
			}
		}
		d := state.DecideElection(b, c.live.electInput(name, brokerID, designate, cfg.EnableElectUncleanMaster))
		// Epochs continue above whatever the replicas hold (state.ElectMaster).
		minEpoch := c.live.maxEpoch(name) + 1
		var cmd state.ElectMaster
		switch d.Outcome {
		case state.StillMaster:
			return electResult{code: code.ControllerMasterStillExist, remark: fmt.Sprintf("master %d of %s is still alive", b.MasterBrokerID, name), set: b}
		case state.NoneEligible:
			if brokerID != state.ControllerTriggered {
				return electResult{code: code.ControllerElectMasterFailed, remark: "no eligible replica for " + name, set: b}
			}
			if !b.HasMaster() {
				// Already without a master: moving the epoch again on
				// every scan would only churn the log.
				return electResult{code: code.ControllerMasterNotAvailable, remark: "no eligible replica for " + name, set: b}
			}
			cmd = state.ElectMaster{BrokerName: name, ExpectMasterEpoch: b.MasterEpoch, ExpectSSSEpoch: b.SyncStateSetEpoch, MinEpoch: minEpoch}
		case state.Elected:
			cmd = state.ElectMaster{BrokerName: name, ExpectMasterEpoch: b.MasterEpoch, ExpectSSSEpoch: b.SyncStateSetEpoch,
				NewMaster: d.Master, Unclean: d.Unclean, MinEpoch: minEpoch}
		}
		res, err := c.apply(cmd)
		if err != nil {
			return electResult{err: err, set: b}
		}
		if !res.OK() {
			if attempt < cfg.ElectMasterMaxRetryCount {
				continue
			}
			return electResult{code: code.ControllerElectMasterFailed, remark: res.Remark, set: b}
		}
		after, _ := c.fsm.Get(name)
		if cmd.NewMaster == state.NoMaster {
			c.log.Warn("controller: no eligible master; the set has none now", "brokerName", name, "masterEpoch", res.MasterEpoch)
			return electResult{code: code.ControllerMasterNotAvailable, remark: "no eligible replica for " + name, set: after}
		}
		c.log.Info("controller: elected master", "brokerName", name, "master", res.MasterBrokerID,
			"masterEpoch", res.MasterEpoch, "syncStateSetEpoch", res.SyncStateSetEpoch, "unclean", cmd.Unclean)
		c.notifyRoleChanged(after)
		return electResult{code: code.Success, set: after}
	}
}

// electByController is a controller-triggered election. Lost races are
// re-decided inside elect; a raft error (apply timeout, for instance) is
// retried here, electMasterMaxRetryCount times, while this node leads.
func (c *Controller) electByController(ctx context.Context, name string) {
	for attempt := 0; ; attempt++ {
		r, err := decide(ctx, c, func() electResult { return c.elect(name, state.ControllerTriggered, false) })
		switch {
		case err != nil:
			c.log.Debug("controller: election not run", "brokerName", name, "err", err)
			return
		case r.err != nil && !isNotLeader(r.err) && attempt < c.cfg.Load().ElectMasterMaxRetryCount:
			c.log.Warn("controller: election failed, retrying", "brokerName", name, "attempt", attempt+1, "err", r.err)
			continue
		case r.err != nil:
			c.log.Warn("controller: election failed", "brokerName", name, "err", r.err)
		case r.code == code.ControllerElectMasterFailed:
			c.log.Warn("controller: election failed", "brokerName", name, "remark", r.remark)
		}
		return
	}
}

// masterGoneGrace is how long the election of a set whose master left
// waits. Replicas that die with their master (one kill of two processes,
// a script stopping both) close their connections milliseconds after it:
// elected before its own close was seen, such a replica would be a dead
// master alone in its new SyncStateSet, and the set would stay without one
// until that very replica came back (found by tests/e2e TestHASoak).
const masterGoneGrace = 100 * time.Millisecond

// goneGrace is the grace in force: masterGoneGrace, or a test's.
func (c *Controller) goneGrace() time.Duration {
	if d := c.graceOverride.Load(); d > 0 {
		return time.Duration(d)
	}
	return masterGoneGrace
}

// brokersGone reacts to replicas that left the liveness table: on the
// leader, a set whose master left gets an election, after masterGoneGrace.
func (c *Controller) brokersGone(keys []liveKey) {
	for _, k := range keys {
		c.log.Info("controller: broker inactive", "clusterName", k.cluster, "brokerName", k.brokerName, "brokerId", k.id)
		if !c.serving.Load() {
			continue
		}
		if b, ok := c.fsm.Get(k.brokerName); ok && b.HasMaster() && b.MasterBrokerID == k.id {
			grace := c.goneGrace()
			c.holdElection(k.brokerName, grace)
			go func() {
				select {
				case <-c.stop:
				case <-time.After(grace):
					c.electByController(context.Background(), k.brokerName)
				}
			}()
		}
	}
}

// holdElection keeps the inactive-master scan from electing a master for
// set name during d.
func (c *Controller) holdElection(name string, d time.Duration) {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	now := c.now()
	for n, until := range c.held {
		if !until.After(now) {
			delete(c.held, n)
		}
	}
	c.held[name] = now.Add(d)
}

// electionHeld reports whether set name's election waits (holdElection).
func (c *Controller) electionHeld(name string) bool {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	until, ok := c.held[name]
	return ok && until.After(c.now())
}

// scanBrokersLoop expires silent brokers on every node (each keeps its own
// table); only the leader elects.
func (c *Controller) scanBrokersLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-time.After(c.cfg.Load().ScanNotActiveBrokerInterval):
			c.brokersGone(c.live.expire())
		}
	}
}

// scanMastersLoop runs while this node leads.
func (c *Controller) scanMastersLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.cfg.Load().ScanInactiveMasterInterval):
			for _, name := range c.setsNeedingElection() {
				c.electByController(ctx, name)
			}
		}
	}
}

// setsNeedingElection are the sets whose master is missing or not alive
// while some replica is alive (upstream's jRaft controller once had this test inverted
// and elected whenever a slave was down).
func (c *Controller) setsNeedingElection() []string {
	var out []string
	for _, name := range c.fsm.Names() {
		b, ok := c.fsm.Get(name)
		if !ok || (b.HasMaster() && c.live.alive(name, b.MasterBrokerID)) || c.electionHeld(name) {
			continue
		}
		for _, id := range b.ReplicaIDs() {
			if c.live.alive(name, id) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// notifyRoleChanged tells every alive replica of b its new master
// (NOTIFY_BROKER_ROLE_CHANGED, one-way), if configured.
func (c *Controller) notifyRoleChanged(b *state.BrokerSet) {
	if !c.cfg.Load().NotifyBrokerRoleChanged || b == nil || !b.HasMaster() {
		return
	}
	body := protocol.MustMarshal(syncStateSetBody(b))
	for _, id := range b.ReplicaIDs() {
		if !c.live.alive(b.BrokerName, id) {
			continue
		}
		addr := b.Address(id)
		if a := c.live.addr(b.BrokerName, id); a != "" {
			addr = a
		}
		if addr == "" {
			continue
		}
		req := remoting.NewRequest(code.NotifyBrokerRoleChanged, map[string]string{
			protocol.HdrMasterAddress:     b.Address(b.MasterBrokerID),
			protocol.HdrMasterEpoch:       itoa(int64(b.MasterEpoch)),
			protocol.HdrSyncStateSetEpoch: itoa(int64(b.SyncStateSetEpoch)),
			protocol.HdrMasterBrokerID:    itoa(b.MasterBrokerID),
		}, body)
		c.notify.send(addr, b.MasterEpoch, req)
	}
}
