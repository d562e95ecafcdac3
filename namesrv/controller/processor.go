package controller

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"

	nsconfig "github.com/rmqgo/rmq/namesrv/config"
	"github.com/rmqgo/rmq/namesrv/controller/state"
)

// handlers maps request codes to handlers (docs/replication.md §3.1).
// Codes not listed — among them upstream's jRaft-internal 1014–1018 — get
// REQUEST_CODE_NOT_SUPPORTED from the remoting server.
func (c *Controller) handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.BrokerHeartbeat:             c.heartbeat,
		code.ControllerGetMetadataInfo:   c.getMetadata,
		code.UpdateControllerConfig:      c.updateConfig,
		code.GetControllerConfig:         c.getConfig,
		code.ControllerAlterSyncStateSet: c.leaderOnly(c.alterSyncStateSet),
		code.ControllerElectMaster:       c.leaderOnly(c.electMasterRequest),
		code.ControllerRegisterBroker:    c.leaderOnly(c.registerBroker),
		code.ControllerGetReplicaInfo:    c.leaderOnly(c.getReplicaInfo),
		code.ControllerGetSyncStateData:  c.leaderOnly(c.getSyncStateData),
		code.CleanBrokerData:             c.leaderOnly(c.cleanBrokerData),
		code.ControllerGetNextBrokerID:   c.leaderOnly(c.getNextBrokerID),
		code.ControllerApplyBrokerID:     c.leaderOnly(c.applyBrokerID),
	}
}

// leaderOnly answers CONTROLLER_NOT_LEADER unless this node serves as
// leader; requests are never forwarded (clients find the leader with
// GET_METADATA_INFO).
func (c *Controller) leaderOnly(h remoting.Handler) remoting.Handler {
	return func(ctx context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if !c.serving.Load() {
			return c.notLeader(req), nil
		}
		return h(ctx, ch, req)
	}
}

func (c *Controller) notLeader(req *remoting.Command) *remoting.Command {
	_, leader := c.raft.LeaderWithID()
	return remoting.NewResponse(req, code.ControllerNotLeader, fmt.Sprintf("the controller %s is not the leader (leader: %q)", c.self.ID, leader))
}

// fail answers with a state.Result's code, or maps a raft error.
func (c *Controller) failApply(req *remoting.Command, err error) *remoting.Command {
	if isNotLeader(err) {
		return c.notLeader(req)
	}
	return remoting.NewResponse(req, code.ControllerJRaftInternalError, err.Error())
}

// extInt parses an integer header; ok is false when absent.
func extInt(req *remoting.Command, key string) (v int64, ok bool, err error) {
	s := strings.TrimSpace(req.Ext(key))
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("header %s=%q is not an integer", key, s)
	}
	return v, true, nil
}

// needInts parses required integer headers, in order.
func needInts(req *remoting.Command, keys ...string) ([]int64, *remoting.Command) {
	out := make([]int64, len(keys))
	for i, k := range keys {
		v, ok, err := extInt(req, k)
		if err != nil {
			return nil, remoting.NewResponse(req, code.ControllerInvalidRequest, err.Error())
		}
		if !ok {
			return nil, remoting.NewResponse(req, code.ControllerInvalidRequest, "missing header "+k)
		}
		out[i] = v
	}
	return out, nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func respond(req *remoting.Command, c int32, remark string, ext map[string]string, body any) *remoting.Command {
	resp := remoting.NewResponse(req, c, remark)
	for k, v := range ext {
		resp.SetExt(k, v)
	}
	if body != nil {
		resp.Body = protocol.MustMarshal(body)
	}
	return resp
}

func syncStateSetBody(b *state.BrokerSet) protocol.SyncStateSet {
	set := b.SyncStateSet
	if set == nil {
		set = []int64{}
	}
	return protocol.SyncStateSet{SyncStateSet: set, SyncStateSetEpoch: b.SyncStateSetEpoch}
}

// heartbeat (904) refreshes the liveness table on every node. As a request
// (not one-way) it is answered with the set's master and epochs when this
// node serves as leader, which renews a master's lease
// (docs/replication.md §3.8).
func (c *Controller) heartbeat(_ context.Context, ch *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	id, ok, err := extInt(req, protocol.HdrBrokerID)
	if err != nil || !ok {
		return remoting.NewResponse(req, code.ControllerInvalidRequest, "heartbeat without a valid brokerId"), nil
	}
	h := heartbeat{
		key:  liveKey{cluster: req.Ext(protocol.HdrClusterName), brokerName: req.Ext(protocol.HdrBrokerName), id: id},
		addr: req.Ext(protocol.HdrBrokerAddr),
		priority: parsePriority(req.Ext(protocol.HdrElectionPriority), func(s string) (int64, error) {
			return strconv.ParseInt(s, 10, 64)
		}),
	}
	if ch != nil {
		h.connID = ch.ID()
	}
	if v, ok, _ := extInt(req, protocol.HdrHeartbeatTimeoutMills); ok {
		h.timeout = millis(v)
	}
	if v, ok, _ := extInt(req, protocol.HdrEpoch); ok {
		h.epoch = int32(v)
	}
	if v, ok, _ := extInt(req, protocol.HdrMaxOffset); ok {
		h.maxOffset = v
	}
	if v, ok, _ := extInt(req, protocol.HdrConfirmOffset); ok {
		h.confirmOffset = v
	}
	c.live.update(h)
	ext := map[string]string{}
	b, ok := c.fsm.Get(h.key.brokerName)
	registered := false
	if ok {
		_, registered = b.Replicas[id]
	}
	if c.serving.Load() && !registered {
		if req.IsOneway() {
			// Apache's brokers send the heartbeat one-way and, under
			// controllers that lost their state, only the first of a set
			// to ask for its replica info registers again (the others
			// find the set known): the heartbeat's id is taken as
			// registered, so every replica is back and an election can
			// pick the most up-to-date one.
			ctx, cancel := context.WithTimeout(context.Background(), heartbeatTakeTimeout)
			defer cancel()
			if _, err := decide(ctx, c, func() error {
				_, err := c.takeUnknownID(h.key.cluster, h.key.brokerName, id, h.addr, "heartbeated")
				return err
			}); err != nil {
				c.log.Warn("controller: take the id of a heartbeating broker", "brokerName", h.key.brokerName, "brokerId", id, "err", err)
			}
			return nil, nil
		}
		// Our brokers ask for an answer and apply for their id again on
		// this code (the controllers lost their state, or replaced
		// others), with the check code of their first application.
		return remoting.NewResponse(req, code.ControllerBrokerNeedToBeRegistered,
			fmt.Sprintf("broker %s id %d is not registered", h.key.brokerName, id)), nil
	}
	if ok && c.serving.Load() {
		if b.HasMaster() {
			ext[protocol.HdrMasterBrokerID] = itoa(b.MasterBrokerID)
		}
		ext[protocol.HdrMasterEpoch] = itoa(int64(b.MasterEpoch))
		ext[protocol.HdrSyncStateSetEpoch] = itoa(int64(b.SyncStateSetEpoch))
	}
	return respond(req, code.Success, "", ext, nil), nil
}

// getMetadata (1005) is answered by every node from raft's view.
func (c *Controller) getMetadata(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	leaderAddr, leaderID := c.raft.LeaderWithID()
	// Clients need the leader's request address; it differs from the raft
	// address only in the jRaft flavour.
	var peers strings.Builder
	for _, p := range c.peers {
		fmt.Fprintf(&peers, "%s:%s;", p.ID, c.rpcAddr(p))
		if raft.ServerID(p.ID) == leaderID {
			leaderAddr = raft.ServerAddress(c.rpcAddr(p))
		}
	}
	return respond(req, code.Success, "", map[string]string{
		protocol.HdrGroup:                   c.cfg.Load().Group(),
		protocol.HdrControllerLeaderID:      string(leaderID),
		protocol.HdrControllerLeaderAddress: string(leaderAddr),
		protocol.HdrIsLeader:                strconv.FormatBool(c.serving.Load()),
		protocol.HdrPeers:                   peers.String(),
	}, nil), nil
}

// rpcAddr is the request address of p as clients see it (tests with an
// in-memory transport name peers by their raft address).
func (c *Controller) rpcAddr(p nsconfig.Peer) string {
	if p.RPCAddr != p.Addr {
		return p.RPCAddr
	}
	return string(c.addr(p))
}

// getNextBrokerID (1012).
func (c *Controller) getNextBrokerID(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name := req.Ext(protocol.HdrBrokerName)
	return respond(req, code.Success, "", map[string]string{
		protocol.HdrClusterName:  req.Ext(protocol.HdrClusterName),
		protocol.HdrBrokerName:   name,
		protocol.HdrNextBrokerID: itoa(c.fsm.NextBrokerID(name)),
	}, nil), nil
}

// applyBrokerID (1013): the command's preconditions are the whole
// decision (id free or the same registration; a new set starts at 1).
func (c *Controller) applyBrokerID(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	ids, bad := needInts(req, protocol.HdrAppliedBrokerID)
	if bad != nil {
		return bad, nil
	}
	checkCode := req.Ext(protocol.HdrRegisterCheckCode)
	addr, _, _ := strings.Cut(checkCode, ";")
	cmd := state.ApplyBrokerID{ClusterName: req.Ext(protocol.HdrClusterName), BrokerName: req.Ext(protocol.HdrBrokerName),
		ID: ids[0], Address: addr, CheckCode: checkCode}
	return c.applyAndAnswer(ctx, req, cmd, map[string]string{
		protocol.HdrClusterName: cmd.ClusterName, protocol.HdrBrokerName: cmd.BrokerName,
	})
}

// applyAndAnswer commits cmd on the decide loop and answers with its code.
func (c *Controller) applyAndAnswer(ctx context.Context, req *remoting.Command, cmd state.Command, ext map[string]string) (*remoting.Command, error) {
	resp, err := decide(ctx, c, func() *remoting.Command {
		res, err := c.apply(cmd)
		if err != nil {
			return c.failApply(req, err)
		}
		return respond(req, res.Code, res.Remark, ext, nil)
	})
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	return resp, nil
}

// heartbeatTakeTimeout bounds the raft write that takes a heartbeating
// broker's unknown id.
const heartbeatTakeTimeout = 3 * time.Second

// registerBroker (1003): the replica must hold a controller id; its
// address is updated if it moved; the answer names the master only while
// that master is alive.
//
// An id this controller does not know, from a broker that names its
// cluster, is taken as applied for again (the rules of APPLY_BROKER_ID:
// a free id, not one cleanBrokerMetadata removed, not a second id for an
// address the set knows): the controllers lost their state, and the
// broker registers the id its identity file holds. Apache's broker does
// exactly that when GET_REPLICA_INFO answers that its set is unknown, but
// never applies again, so without this it stayed out (Apache's controller
// answers CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, as this one did).
func (c *Controller) registerBroker(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	ids, bad := needInts(req, protocol.HdrBrokerID)
	if bad != nil {
		return bad, nil
	}
	name, id, addr := req.Ext(protocol.HdrBrokerName), ids[0], req.Ext(protocol.HdrBrokerAddress)
	cluster := req.Ext(protocol.HdrClusterName)
	resp, err := decide(ctx, c, func() *remoting.Command {
		b, ok := c.fsm.Get(name)
		if ok {
			_, ok = b.Replicas[id]
		}
		if !ok {
			var err error
			if ok, err = c.takeUnknownID(cluster, name, id, addr, "registered"); err != nil {
				return c.failApply(req, err)
			}
			b, _ = c.fsm.Get(name)
		}
		if !ok {
			return remoting.NewResponse(req, code.ControllerBrokerNeedToBeRegistered, fmt.Sprintf("broker %s id %d is not registered", name, id))
		}
		if addr != "" && b.Address(id) != addr {
			res, err := c.apply(state.UpdateBrokerAddress{BrokerName: name, ID: id, Address: addr})
			if err != nil {
				return c.failApply(req, err)
			}
			if !res.OK() {
				return remoting.NewResponse(req, res.Code, res.Remark)
			}
			b, _ = c.fsm.Get(name)
		}
		ext := map[string]string{protocol.HdrClusterName: b.ClusterName, protocol.HdrBrokerName: name}
		if b.HasMaster() && c.live.alive(name, b.MasterBrokerID) {
			masterFields(ext, b)
		}
		return respond(req, code.Success, "", ext, syncStateSetBody(b))
	})
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	return resp, nil
}

// takeUnknownID applies for id on behalf of a broker that names it but that
// this controller does not know (registerBroker): APPLY_BROKER_ID's rules
// decide, the broker must name its cluster and a host:port address, and an address
// the set knows under another id does not get a second one. Runs on the
// decide loop.
func (c *Controller) takeUnknownID(cluster, name string, id int64, addr, how string) (bool, error) {
	if cluster == "" || id < 1 || id > state.MaxBrokerID {
		return false, nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" || port == "0" {
		return false, nil // not a broker's address
	}
	// What the command would refuse is refused here, without a raft
	// entry: a heartbeat that cannot be taken comes back every second.
	if b, ok := c.fsm.Get(name); ok {
		if _, cleaned := slices.BinarySearch(b.CleanedIDs, id); cleaned || b.IDOf(addr) > 0 || (b.ClusterName != "" && b.ClusterName != cluster) {
			return false, nil
		}
	}
	res, err := c.apply(state.ApplyBrokerID{ClusterName: cluster, BrokerName: name, ID: id, Address: addr, CheckCode: addr + state.TakenCheckCodeSuffix})
	if err != nil || !res.OK() {
		return false, err
	}
	c.log.Info("controller: a broker "+how+" an id this controller did not know: taken (controllers that lost their state?)",
		"brokerName", name, "brokerId", id, "addr", addr)
	return true, nil
}

func masterFields(ext map[string]string, b *state.BrokerSet) {
	ext[protocol.HdrMasterBrokerID] = itoa(b.MasterBrokerID)
	ext[protocol.HdrMasterAddress] = b.Address(b.MasterBrokerID)
	ext[protocol.HdrMasterEpoch] = itoa(int64(b.MasterEpoch))
	ext[protocol.HdrSyncStateSetEpoch] = itoa(int64(b.SyncStateSetEpoch))
}

// getReplicaInfo (1004): master fields even when the master is dead.
func (c *Controller) getReplicaInfo(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name := req.Ext(protocol.HdrBrokerName)
	b, ok := c.fsm.Get(name)
	if !ok {
		return remoting.NewResponse(req, code.ControllerBrokerMetadataNotExist, "broker set "+name+" unknown"), nil
	}
	ext := map[string]string{protocol.HdrMasterEpoch: itoa(int64(b.MasterEpoch))}
	if b.HasMaster() {
		ext[protocol.HdrMasterBrokerID] = itoa(b.MasterBrokerID)
		ext[protocol.HdrMasterAddress] = b.Address(b.MasterBrokerID)
	}
	return respond(req, code.Success, "", ext, syncStateSetBody(b)), nil
}

// getSyncStateData (1006): body is a JSON array of broker names; unknown
// names are skipped.
func (c *Controller) getSyncStateData(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var names []string
	if err := protocol.Unmarshal(req.Body, &names); err != nil || len(names) == 0 {
		return remoting.NewResponse(req, code.SystemError, "the body must be a non-empty JSON array of broker names"), nil
	}
	out := protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{}}
	for _, name := range names {
		b, ok := c.fsm.Get(name)
		if !ok {
			continue
		}
		info := protocol.ReplicasInfo{MasterBrokerID: b.MasterBrokerID, MasterEpoch: b.MasterEpoch, SyncStateSetEpoch: b.SyncStateSetEpoch,
			InSyncReplicas: []protocol.ReplicaIdentity{}, NotInSyncReplicas: []protocol.ReplicaIdentity{}}
		if b.HasMaster() {
			info.MasterAddress = b.Address(b.MasterBrokerID)
		}
		for _, id := range b.ReplicaIDs() {
			r := protocol.ReplicaIdentity{Alive: c.live.alive(name, id), BrokerAddress: b.Address(id), BrokerID: id, BrokerName: name}
			if b.InSyncStateSet(id) {
				info.InSyncReplicas = append(info.InSyncReplicas, r)
			} else {
				info.NotInSyncReplicas = append(info.NotInSyncReplicas, r)
			}
		}
		out.ReplicasInfoTable[name] = info
	}
	return respond(req, code.Success, "", nil, out), nil
}

// alterSyncStateSet (1001): only the current master, at its epochs, with
// registered and alive members. A command that lost a race is decided
// once more from fresh state.
func (c *Controller) alterSyncStateSet(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	ids, bad := needInts(req, protocol.HdrMasterBrokerID, protocol.HdrMasterEpoch)
	if bad != nil {
		return bad, nil
	}
	var body protocol.SyncStateSet
	if err := protocol.Unmarshal(req.Body, &body); err != nil {
		return remoting.NewResponse(req, code.ControllerInvalidRequest, "bad SyncStateSet body: "+err.Error()), nil
	}
	name, master, masterEpoch := req.Ext(protocol.HdrBrokerName), ids[0], int32(ids[1])
	resp, err := decide(ctx, c, func() *remoting.Command {
		for attempt := 0; ; attempt++ {
			b, ok := c.fsm.Get(name)
			if !ok {
				return remoting.NewResponse(req, code.ControllerAlterSyncStateSetFailed, "broker set "+name+" unknown")
			}
			if r := state.CheckAlter(b, master, masterEpoch, body.SyncStateSetEpoch, body.SyncStateSet); !r.OK() {
				return remoting.NewResponse(req, r.Code, r.Remark)
			}
			for _, id := range body.SyncStateSet {
				if !c.live.alive(name, id) {
					return remoting.NewResponse(req, code.ControllerBrokerNotAlive, fmt.Sprintf("replica %d of %s is not alive", id, name))
				}
			}
			res, err := c.apply(state.AlterSyncStateSet{BrokerName: name, ExpectMaster: master, ExpectMasterEpoch: masterEpoch,
				ExpectSSSEpoch: body.SyncStateSetEpoch, NewSet: body.SyncStateSet})
			if err != nil {
				return c.failApply(req, err)
			}
			if !res.OK() {
				if attempt == 0 {
					continue
				}
				return remoting.NewResponse(req, res.Code, res.Remark)
			}
			b, _ = c.fsm.Get(name)
			return respond(req, code.Success, "", map[string]string{protocol.HdrNewSyncStateSetEpoch: itoa(int64(res.SyncStateSetEpoch))},
				protocol.SyncStateSet{SyncStateSet: b.SyncStateSet, SyncStateSetEpoch: res.SyncStateSetEpoch})
		}
	})
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	return resp, nil
}

// cleanBrokerData (1011), docs/replication.md §2.3 CleanBrokerData.
func (c *Controller) cleanBrokerData(ctx context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	name := req.Ext(protocol.HdrBrokerName)
	living := strings.EqualFold(req.Ext(protocol.HdrIsCleanLivingBroker), "true")
	var ids []int64
	for s := range strings.SplitSeq(req.Ext(protocol.HdrBrokerControllerIDs), ";") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return remoting.NewResponse(req, code.ControllerInvalidCleanBrokerMetadata, fmt.Sprintf("broker id %q is not a number", s)), nil
		}
		ids = append(ids, id)
	}
	resp, err := decide(ctx, c, func() *remoting.Command {
		b, ok := c.fsm.Get(name)
		if !living && ok {
			if len(ids) == 0 && b.HasMaster() {
				return remoting.NewResponse(req, code.ControllerInvalidCleanBrokerMetadata, fmt.Sprintf("broker set %s still has a master", name))
			}
			for _, id := range ids {
				if c.live.alive(name, id) {
					return remoting.NewResponse(req, code.ControllerInvalidCleanBrokerMetadata, fmt.Sprintf("broker %s id %d is still alive", name, id))
				}
			}
		}
		if !ok {
			return remoting.NewResponse(req, code.ControllerInvalidCleanBrokerMetadata, "broker set "+name+" unknown")
		}
		res, err := c.apply(state.CleanBrokerData{BrokerName: name, IDs: ids})
		if err != nil {
			return c.failApply(req, err)
		}
		return remoting.NewResponse(req, res.Code, res.Remark)
	})
	if err != nil {
		return remoting.NewResponse(req, code.SystemError, err.Error()), nil
	}
	return resp, nil
}
