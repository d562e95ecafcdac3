package admintest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// ControllerNode is one node of a fake controller group.
type ControllerNode struct {
	ID   string // peer id, "n0"
	Addr string
}

// Replica is one replica of a fake broker set, by controller id.
type Replica struct {
	Addr  string
	Alive bool
}

// ReplicaSet is the controller's state of one broker set
// (docs/replication.md).
type ReplicaSet struct {
	Cluster           string
	Replicas          map[int64]Replica
	Master            int64 // 0: no master
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
}

// Controllers fakes an HA controller group and the replication state of
// the fake's brokers: CONTROLLER_GET_METADATA_INFO (1005) on every node;
// GET_SYNC_STATE_DATA (1006), ELECT_MASTER (1002) and CLEAN_BROKER_DATA
// (1011) on the leader (CONTROLLER_NOT_LEADER elsewhere);
// GET/UPDATE_CONTROLLER_CONFIG (1010/1009) per node; and on brokers
// GET_BROKER_EPOCH_CACHE (1007) and GET_BROKER_HA_STATUS (907). Install it
// with AttachControllers; change fields under Cluster.Lock once requests
// flow.
type Controllers struct {
	fc *Cluster

	Group string
	Nodes []ControllerNode
	// Leader is the leading node's ID; "" means no leader.
	Leader string
	// Sets: broker name → state.
	Sets map[string]*ReplicaSet
	// Config: node address → its configuration.
	Config map[string]map[string]string
	// Epochs: broker address → its epoch cache (1007); a broker without
	// one is not in controller mode and answers SYSTEM_ERROR.
	Epochs map[string]protocol.EpochEntryCache
	// HA: broker address → its replication state (907).
	HA map[string]protocol.HARuntimeInfo
	// RawBody: request code → a body sent instead of the computed one (to
	// test decoding of Java-encoded or broken bodies).
	RawBody map[int32]string
}

// AttachControllers installs a controller fake with the given nodes on fc
// (it sets fc.Override, keeping a previous Override as a fallback) and
// returns it. The first node leads; each node's configuration holds the
// Apache defaults of the keys the tests touch.
func AttachControllers(fc *Cluster, group string, nodes ...ControllerNode) *Controllers {
	cs := &Controllers{
		fc:      fc,
		Group:   group,
		Nodes:   nodes,
		Sets:    map[string]*ReplicaSet{},
		Config:  map[string]map[string]string{},
		Epochs:  map[string]protocol.EpochEntryCache{},
		HA:      map[string]protocol.HARuntimeInfo{},
		RawBody: map[int32]string{},
	}
	if len(nodes) > 0 {
		cs.Leader = nodes[0].ID
	}
	for _, n := range nodes {
		cs.Config[n.Addr] = map[string]string{
			"controllerDLegerGroup":    group,
			"controllerDLegerSelfId":   n.ID,
			"enableElectUncleanMaster": "false",
			"notifyBrokerRoleChanged":  "true",
			"configBlackList":          "configBlackList;configStorePath",
			"configStorePath":          "/tmp/controller.properties",
		}
	}
	fc.addOverride(cs.handle)
	return cs
}

func (cs *Controllers) node(addr string) (ControllerNode, bool) {
	for _, n := range cs.Nodes {
		if n.Addr == addr {
			return n, true
		}
	}
	return ControllerNode{}, false
}

func (cs *Controllers) leaderAddr() string {
	for _, n := range cs.Nodes {
		if n.ID == cs.Leader {
			return n.Addr
		}
	}
	return ""
}

// body answers with v in the fastjson dialect, or the raw body set for
// the request code.
func (cs *Controllers) body(req *remoting.Command, v any) *remoting.Command {
	if raw, found := cs.RawBody[req.Code]; found {
		return ok(req, []byte(raw))
	}
	b, err := protocol.Marshal(v)
	if err != nil {
		return fail(req, code.SystemError, "%v", err)
	}
	return ok(req, b)
}

// brokerState answers req to the broker at addr with its entry of states,
// or fails with SYSTEM_ERROR and missing when it has none; false when no
// broker listens at addr.
func brokerState[T any](cs *Controllers, addr string, req *remoting.Command, states map[string]T, missing string) (*remoting.Command, bool) {
	if cs.fc.broker(addr) == nil {
		return nil, false
	}
	v, found := states[addr]
	if !found {
		return fail(req, code.SystemError, "%s", missing), true
	}
	return cs.body(req, v), true
}

func (cs *Controllers) handle(addr string, req *remoting.Command) (*remoting.Command, bool) {
	switch req.Code {
	case code.GetBrokerEpochCache:
		return brokerState(cs, addr, req, cs.Epochs, "this request only for controllerMode ")
	case code.GetBrokerHAStatus:
		return brokerState(cs, addr, req, cs.HA, "no ha status")
	}
	n, isNode := cs.node(addr)
	if !isNode {
		return nil, false
	}
	switch req.Code {
	case code.ControllerGetMetadataInfo:
		return cs.metadata(req, n), true
	case code.GetControllerConfig:
		return ok(req, []byte(props(cs.Config[addr]))), true
	case code.UpdateControllerConfig:
		return cs.updateConfig(req, addr), true
	case code.ControllerGetSyncStateData, code.ControllerElectMaster, code.CleanBrokerData:
		if n.ID != cs.Leader {
			return fail(req, code.ControllerNotLeader, "The controller is not in leader state"), true
		}
	default:
		return fail(req, code.RequestCodeNotSupported, "request code %d not supported", req.Code), true
	}
	switch req.Code {
	case code.ControllerGetSyncStateData:
		return cs.syncStateData(req), true
	case code.ControllerElectMaster:
		return cs.electMaster(req, addr), true
	default:
		return cs.clean(req), true
	}
}

func (cs *Controllers) metadata(req *remoting.Command, n ControllerNode) *remoting.Command {
	var peers strings.Builder
	for _, p := range cs.Nodes {
		fmt.Fprintf(&peers, "%s:%s;", p.ID, p.Addr)
	}
	resp := ok(req, nil)
	resp.ExtFields = map[string]string{
		protocol.HdrGroup:                   cs.Group,
		protocol.HdrControllerLeaderID:      cs.Leader,
		protocol.HdrControllerLeaderAddress: cs.leaderAddr(),
		protocol.HdrIsLeader:                strconv.FormatBool(n.ID == cs.Leader),
		protocol.HdrPeers:                   peers.String(),
	}
	return resp
}

func (cs *Controllers) updateConfig(req *remoting.Command, addr string) *remoting.Command {
	cfg := cs.Config[addr]
	in := parseProps(string(req.Body))
	black := append(strings.Split(cfg["configBlackList"], ";"), "rocketmqHome")
	for k := range in {
		if slices.Contains(black, k) {
			return fail(req, code.NoPermission, "Can not update config in black list.")
		}
	}
	for k, v := range in {
		cfg[k] = v
	}
	return ok(req, nil)
}

func sortedIDs(m map[int64]Replica) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (cs *Controllers) syncStateData(req *remoting.Command) *remoting.Command {
	var names []string
	if err := json.Unmarshal(req.Body, &names); err != nil {
		return fail(req, code.SystemError, "bad broker name list: %v", err)
	}
	if len(names) == 0 {
		return fail(req, code.SystemError, "Broker name list is empty")
	}
	info := protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{}}
	for _, name := range names {
		s, found := cs.Sets[name]
		if !found {
			continue
		}
		ri := protocol.ReplicasInfo{
			InSyncReplicas:    []protocol.ReplicaIdentity{},
			NotInSyncReplicas: []protocol.ReplicaIdentity{},
			MasterBrokerID:    s.Master,
			MasterAddress:     s.Replicas[s.Master].Addr,
			MasterEpoch:       s.MasterEpoch,
			SyncStateSetEpoch: s.SyncStateSetEpoch,
		}
		for _, id := range sortedIDs(s.Replicas) {
			r := s.Replicas[id]
			ident := protocol.ReplicaIdentity{BrokerName: name, BrokerID: id, BrokerAddress: r.Addr, Alive: r.Alive}
			if slices.Contains(s.SyncStateSet, id) {
				ri.InSyncReplicas = append(ri.InSyncReplicas, ident)
			} else {
				ri.NotInSyncReplicas = append(ri.NotInSyncReplicas, ident)
			}
		}
		info.ReplicasInfoTable[name] = ri
	}
	return cs.body(req, info)
}

// electMaster is the admin election of docs/replication.md: the designated
// replica must be alive and in the SyncStateSet (or any alive replica with
// enableElectUncleanMaster).
func (cs *Controllers) electMaster(req *remoting.Command, addr string) *remoting.Command {
	name := req.Ext(protocol.HdrBrokerName)
	s, found := cs.Sets[name]
	if !found {
		return fail(req, code.ControllerBrokerNeedToBeRegistered, "Broker %s hasn't been registered", name)
	}
	id, err := strconv.ParseInt(req.Ext(protocol.HdrBrokerID), 10, 64)
	if err != nil || req.Ext(protocol.HdrDesignateElect) != "true" {
		return fail(req, code.ControllerInvalidRequest, "bad election request %v", req.ExtFields)
	}
	header := func(resp *remoting.Command) *remoting.Command {
		resp.ExtFields = map[string]string{
			protocol.HdrMasterBrokerID:    strconv.FormatInt(s.Master, 10),
			protocol.HdrMasterAddress:     s.Replicas[s.Master].Addr,
			protocol.HdrMasterEpoch:       strconv.Itoa(int(s.MasterEpoch)),
			protocol.HdrSyncStateSetEpoch: strconv.Itoa(int(s.SyncStateSetEpoch)),
		}
		return resp
	}
	if id == s.Master {
		resp := cs.body(req, protocol.ElectMasterResponseBody{SyncStateSet: s.SyncStateSet})
		resp.Code, resp.Remark = code.ControllerMasterStillExist, "The old master is still alive"
		return header(resp)
	}
	r, known := s.Replicas[id]
	unclean := cs.Config[addr]["enableElectUncleanMaster"] == "true"
	if !known || !r.Alive || (!unclean && !slices.Contains(s.SyncStateSet, id)) {
		return fail(req, code.ControllerElectMasterFailed, "Failed to elect a new master for broker %s", name)
	}
	s.Master, s.MasterEpoch = id, s.MasterEpoch+1
	s.SyncStateSet, s.SyncStateSetEpoch = []int64{id}, s.SyncStateSetEpoch+1
	group := &protocol.BrokerMemberGroup{Cluster: s.Cluster, BrokerName: name, BrokerAddrs: map[int64]string{}}
	for rid, rr := range s.Replicas {
		group.BrokerAddrs[rid] = rr.Addr
	}
	return header(cs.body(req, protocol.ElectMasterResponseBody{BrokerMemberGroup: group, SyncStateSet: s.SyncStateSet}))
}

// clean is CLEAN_BROKER_DATA (docs/replication.md): living replicas are
// kept unless isCleanLivingBroker.
func (cs *Controllers) clean(req *remoting.Command) *remoting.Command {
	name := req.Ext(protocol.HdrBrokerName)
	living := req.Ext(protocol.HdrIsCleanLivingBroker) == "true"
	s, found := cs.Sets[name]
	if !found {
		return fail(req, code.ControllerInvalidCleanBrokerMetadata, "Broker %s is not existed,clean broker data failure.", name)
	}
	idsText := req.Ext(protocol.HdrBrokerControllerIDs)
	if idsText == "" {
		if !living && s.Master != 0 {
			return fail(req, code.ControllerInvalidCleanBrokerMetadata, "Broker %s is still alive, clean up failure", name)
		}
		delete(cs.Sets, name)
		return ok(req, nil)
	}
	var ids []int64
	for _, t := range strings.Split(idsText, ";") {
		id, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		if err != nil {
			return fail(req, code.ControllerInvalidCleanBrokerMetadata, "Please set the option <brokerControllerIdsToClean> according to the format")
		}
		if r := s.Replicas[id]; !living && r.Alive {
			return fail(req, code.ControllerInvalidCleanBrokerMetadata, "Broker %d is still alive, clean up failure", id)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		delete(s.Replicas, id)
		s.SyncStateSet = slices.DeleteFunc(s.SyncStateSet, func(x int64) bool { return x == id })
		if id == s.Master {
			s.Master, s.MasterEpoch = 0, s.MasterEpoch+1
		}
	}
	if len(s.Replicas) == 0 {
		delete(cs.Sets, name)
	}
	return ok(req, nil)
}

// Fixed addresses of the controller nodes of NewControllerSample.
const (
	SampleController1 = "127.0.0.1:19878" // n0, the leader
	SampleController2 = "127.0.0.1:19879" // n1
)

// NewControllerSample is NewSample with a two-node controller group
// (group "DefaultControllerGroup", n0 leading) and controller-mode state:
// broker-a has replicas 1 (SampleBrokerA0, master), 2 (SampleBrokerA1,
// alive, in the SyncStateSet) and 3 (dead, out of it); broker-b has
// replica 1 (SampleBrokerB0, master). Both live brokers of broker-a and
// broker-b report epoch lists and HA state.
func NewControllerSample() (*Cluster, *Controllers) {
	fc := NewSample()
	cs := AttachControllers(fc, "DefaultControllerGroup",
		ControllerNode{ID: "n0", Addr: SampleController1}, ControllerNode{ID: "n1", Addr: SampleController2})
	cs.Sets["broker-a"] = &ReplicaSet{
		Cluster: "DefaultCluster",
		Replicas: map[int64]Replica{
			1: {Addr: SampleBrokerA0, Alive: true},
			2: {Addr: SampleBrokerA1, Alive: true},
			3: {Addr: "127.0.0.1:20951", Alive: false},
		},
		Master: 1, MasterEpoch: 3, SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 5,
	}
	cs.Sets["broker-b"] = &ReplicaSet{
		Cluster:  "DefaultCluster",
		Replicas: map[int64]Replica{1: {Addr: SampleBrokerB0, Alive: true}},
		Master:   1, MasterEpoch: 1, SyncStateSet: []int64{1}, SyncStateSetEpoch: 1,
	}
	epochs := []protocol.EpochEntry{
		{Epoch: 1, StartOffset: 0, EndOffset: 4096},
		{Epoch: 2, StartOffset: 4096, EndOffset: 9000},
		{Epoch: 3, StartOffset: 9000, EndOffset: 1<<63 - 1},
	}
	cs.Epochs[SampleBrokerA0] = protocol.EpochEntryCache{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: 0, EpochList: epochs, MaxOffset: 12000}
	cs.Epochs[SampleBrokerA1] = protocol.EpochEntryCache{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: 2, EpochList: epochs, MaxOffset: 11500}
	cs.Epochs[SampleBrokerB0] = protocol.EpochEntryCache{ClusterName: "DefaultCluster", BrokerName: "broker-b", BrokerID: 0,
		EpochList: []protocol.EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: 1<<63 - 1}}, MaxOffset: 300}
	cs.HA[SampleBrokerA0] = protocol.HARuntimeInfo{
		Master: true, MasterCommitLogMaxOffset: 12000, InSyncSlaveNums: 1,
		HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{
			{Addr: "127.0.0.1:52110", SlaveAckOffset: 11500, Diff: 500, InSync: true, TransferredByteInSecond: 2560, TransferFromWhere: 0},
			{Addr: "127.0.0.1:52111", SlaveAckOffset: 4096, Diff: 7904, InSync: false, TransferredByteInSecond: 0, TransferFromWhere: 4096},
		},
	}
	cs.HA[SampleBrokerA1] = protocol.HARuntimeInfo{
		HAClientRuntimeInfo: &protocol.HAClientRuntimeInfo{
			MasterAddr: "127.0.0.1:20912", MaxOffset: 11500, TransferredByteInSecond: 1536,
			LastReadTimestamp: 1700000000123, LastWriteTimestamp: 1700000000456, MasterFlushOffset: 9000,
		},
	}
	cs.HA[SampleBrokerB0] = protocol.HARuntimeInfo{Master: true, MasterCommitLogMaxOffset: 300, HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
	return fc, cs
}
