package replica

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// fakeController is a minimal in-memory controller for one broker set:
// enough of the decide rules to drive a manager (the real one is
// namesrv/controller). Several addresses share it; only leader answers
// leader-only requests.
type fakeController struct {
	mu            sync.Mutex
	leader        string
	down          map[string]bool
	hang          map[string]bool // requests wait for their deadline
	next          int64
	replicas      map[int64]string // id -> check code
	addrs         map[int64]string
	master        int64
	masterEpoch   int32
	sss           []int64
	sssEpoch      int32
	noLeaseFields bool
	heartbeats    map[int64]int
	hbEpochs      map[int64]int32 // last epoch each replica heartbeated
	calls         []int32
}

// loseState forgets every replica, the master and the epochs, as
// controllers restarted on empty stores do.
func (f *fakeController) loseState() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next, f.replicas, f.addrs = 1, map[int64]string{}, map[int64]string{}
	f.master, f.masterEpoch, f.sss, f.sssEpoch = 0, 0, nil, 0
}

func newFakeController(leader string) *fakeController {
	return &fakeController{leader: leader, down: map[string]bool{}, hang: map[string]bool{}, next: 1, replicas: map[int64]string{}, addrs: map[int64]string{}, heartbeats: map[int64]int{}, hbEpochs: map[int64]int32{}}
}

// setDown makes every controller stop answering (true) or answer again.
func (f *fakeController) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range controllerAddrs {
		f.down[a] = down
	}
}

var errDown = errors.New("connection refused")

func (f *fakeController) Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	f.mu.Lock()
	if f.hang[addr] {
		f.mu.Unlock()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	defer f.mu.Unlock()
	if f.down[addr] {
		return nil, errDown
	}
	f.calls = append(f.calls, req.Code)
	resp := remoting.NewResponse(req, code.Success, "")
	set := func(k, v string) { resp.SetExt(k, v) }
	if req.Code == code.ControllerGetMetadataInfo {
		set(protocol.HdrControllerLeaderAddress, f.leader)
		set(protocol.HdrIsLeader, strconv.FormatBool(addr == f.leader))
		return resp, nil
	}
	id, _ := strconv.ParseInt(req.Ext(protocol.HdrBrokerID), 10, 64)
	if req.Code == code.BrokerHeartbeat {
		f.heartbeats[id]++
		e, _ := strconv.ParseInt(req.Ext(protocol.HdrEpoch), 10, 32)
		f.hbEpochs[id] = int32(e)
		if _, ok := f.replicas[id]; !ok && addr == f.leader {
			resp.Code = code.ControllerBrokerNeedToBeRegistered
			return resp, nil
		}
		if !f.noLeaseFields && f.masterEpoch > 0 {
			f.masterFields(set)
		}
		return resp, nil
	}
	if addr != f.leader {
		resp.Code = code.ControllerNotLeader
		return resp, nil
	}
	switch req.Code {
	case code.ControllerGetNextBrokerID:
		set(protocol.HdrNextBrokerID, strconv.FormatInt(f.next, 10))
	case code.ControllerApplyBrokerID:
		want, _ := strconv.ParseInt(req.Ext(protocol.HdrAppliedBrokerID), 10, 64)
		cc := req.Ext(protocol.HdrRegisterCheckCode)
		// A free id is taken (one held under controllers that lost their
		// state is applied for again), as the real controller does.
		if old, ok := f.replicas[want]; (ok && old != cc) || want < 1 {
			resp.Code = code.ControllerBrokerIDInvalid
			return resp, nil
		}
		if _, ok := f.replicas[want]; !ok {
			f.replicas[want] = cc
			f.next = max(f.next, want+1)
		}
	case code.ControllerRegisterBroker:
		if _, ok := f.replicas[id]; !ok {
			resp.Code = code.ControllerBrokerNeedToBeRegistered
			return resp, nil
		}
		f.addrs[id] = req.Ext(protocol.HdrBrokerAddress)
		if f.master > 0 {
			f.masterFields(set)
		}
		resp.Body = protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: f.sss, SyncStateSetEpoch: f.sssEpoch})
	case code.ControllerElectMaster:
		if f.master > 0 {
			resp.Code = code.ControllerMasterStillExist
		} else {
			f.elect(id)
		}
		f.masterFields(set)
		resp.Body = protocol.MustMarshal(protocol.ElectMasterResponseBody{SyncStateSet: f.sss})
	case code.ControllerGetReplicaInfo:
		if len(f.replicas) == 0 {
			resp.Code = code.ControllerBrokerMetadataNotExist
			return resp, nil
		}
		f.masterFields(set)
		resp.Body = protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: f.sss, SyncStateSetEpoch: f.sssEpoch})
	case code.ControllerAlterSyncStateSet:
		var s protocol.SyncStateSet
		if err := protocol.Unmarshal(req.Body, &s); err != nil {
			resp.Code = code.ControllerAlterSyncStateSetFailed
			return resp, nil
		}
		me, _ := strconv.ParseInt(req.Ext(protocol.HdrMasterBrokerID), 10, 64)
		ep, _ := strconv.ParseInt(req.Ext(protocol.HdrMasterEpoch), 10, 32)
		switch {
		case me != f.master:
			resp.Code = code.ControllerInvalidMaster
		case int32(ep) != f.masterEpoch:
			resp.Code = code.ControllerFencedMasterEpoch
		case s.SyncStateSetEpoch != f.sssEpoch:
			resp.Code = code.ControllerFencedSyncStateSetEpoch
		default:
			f.sss, f.sssEpoch = slices.Clone(s.SyncStateSet), f.sssEpoch+1
			set(protocol.HdrNewSyncStateSetEpoch, strconv.FormatInt(int64(f.sssEpoch), 10))
			resp.Body = protocol.MustMarshal(protocol.SyncStateSet{SyncStateSet: f.sss, SyncStateSetEpoch: f.sssEpoch})
		}
	case code.ControllerGetSyncStateData:
		var names []string
		if err := protocol.Unmarshal(req.Body, &names); err != nil || len(names) != 1 {
			resp.Code = code.SystemError
			return resp, nil
		}
		info := protocol.ReplicasInfo{MasterBrokerID: f.master, MasterEpoch: f.masterEpoch, SyncStateSetEpoch: f.sssEpoch}
		for id := range f.replicas {
			r := protocol.ReplicaIdentity{BrokerID: id, BrokerAddress: f.addrs[id], BrokerName: names[0], Alive: true}
			if slices.Contains(f.sss, id) {
				info.InSyncReplicas = append(info.InSyncReplicas, r)
			} else {
				info.NotInSyncReplicas = append(info.NotInSyncReplicas, r)
			}
		}
		resp.Body = protocol.MustMarshal(protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{names[0]: info}})
	default:
		resp.Code = code.RequestCodeNotSupported
	}
	return resp, nil
}

func (f *fakeController) InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	_, err := f.Invoke(ctx, addr, req)
	return err
}

func (f *fakeController) masterFields(set func(k, v string)) {
	set(protocol.HdrMasterBrokerID, strconv.FormatInt(f.master, 10))
	set(protocol.HdrMasterAddress, f.addrs[f.master])
	set(protocol.HdrMasterEpoch, strconv.FormatInt(int64(f.masterEpoch), 10))
	set(protocol.HdrSyncStateSetEpoch, strconv.FormatInt(int64(f.sssEpoch), 10))
}

// elect makes id master at a new epoch with the set {id}; 0 records "no
// master".
func (f *fakeController) elect(id int64) {
	f.master = id
	f.masterEpoch++
	for _, e := range f.hbEpochs {
		f.masterEpoch = max(f.masterEpoch, e+1)
	}
	if id > 0 {
		f.sss = []int64{id}
		f.sssEpoch++
	}
}

func (f *fakeController) state() (master int64, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.master, f.masterEpoch
}

// fakeNode records what the manager asks of the broker.
type fakeNode struct {
	addr string
	mu   sync.Mutex
	role Role
	ops  []string
	fenc bool
	max  int64
	last int32
	// heard is MasterHeard's answer.
	heard bool
	fail  error
	// onBecome, when set, runs as a role is taken (before it is recorded).
	onBecome func(what string)
}

func (n *fakeNode) Addr() string         { return n.addr }
func (n *fakeNode) MaxPhyOffset() int64  { n.mu.Lock(); defer n.mu.Unlock(); return n.max }
func (n *fakeNode) ConfirmOffset() int64 { return n.MaxPhyOffset() }
func (n *fakeNode) LastEpoch() int32     { n.mu.Lock(); defer n.mu.Unlock(); return n.last }
func (n *fakeNode) MasterHeard() bool    { n.mu.Lock(); defer n.mu.Unlock(); return n.heard }

func (n *fakeNode) become(what string, r Role) error {
	if n.onBecome != nil {
		n.onBecome(what)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail != nil {
		return n.fail
	}
	n.role, n.last = r, r.MasterEpoch
	n.ops = append(n.ops, what+"@"+strconv.Itoa(int(r.MasterEpoch)))
	return nil
}
func (n *fakeNode) BecomeMaster(_ context.Context, r Role) error { return n.become("master", r) }
func (n *fakeNode) BecomeSlave(_ context.Context, r Role) error  { return n.become("slave", r) }
func (n *fakeNode) SyncStateSetChanged(r Role) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ops = append(n.ops, "sss@"+strconv.Itoa(int(r.SyncStateSetEpoch)))
}
func (n *fakeNode) SetFenced(f bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fenc = f
	n.ops = append(n.ops, "fenced="+strconv.FormatBool(f))
}

func (n *fakeNode) snapshot() (Role, []string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.role, slices.Clone(n.ops), n.fenc
}
