package protocol

// Bodies of the replication and HA-controller requests (docs/replication.md),
// in the fastjson dialect: fields in alphabetical key order; map keys of
// numeric Java maps are quoted numbers on output (Unmarshal also takes bare
// ones). Header fields of these requests are plain extFields; their names
// are the constants below.

// Header keys of the controller requests (org/apache/rocketmq/remoting/
// protocol/header/controller/*.java and namesrv/BrokerHeartbeatRequestHeader).
const (
	HdrClusterName             = "clusterName"
	HdrBrokerName              = "brokerName"
	HdrBrokerAddr              = "brokerAddr"
	HdrBrokerAddress           = "brokerAddress"
	HdrBrokerID                = "brokerId"
	HdrEpoch                   = "epoch"
	HdrMaxOffset               = "maxOffset"
	HdrConfirmOffset           = "confirmOffset"
	HdrHeartbeatTimeoutMills   = "heartbeatTimeoutMills"
	HdrElectionPriority        = "electionPriority"
	HdrMasterBrokerID          = "masterBrokerId"
	HdrMasterAddress           = "masterAddress"
	HdrMasterEpoch             = "masterEpoch"
	HdrSyncStateSetEpoch       = "syncStateSetEpoch"
	HdrNewSyncStateSetEpoch    = "newSyncStateSetEpoch"
	HdrDesignateElect          = "designateElect"
	HdrInvokeTime              = "invokeTime"
	HdrNextBrokerID            = "nextBrokerId"
	HdrAppliedBrokerID         = "appliedBrokerId"
	HdrRegisterCheckCode       = "registerCheckCode"
	HdrBrokerControllerIDs     = "brokerControllerIdsToClean"
	HdrIsCleanLivingBroker     = "isCleanLivingBroker"
	HdrGroup                   = "group"
	HdrControllerLeaderID      = "controllerLeaderId"
	HdrControllerLeaderAddress = "controllerLeaderAddress"
	HdrIsLeader                = "isLeader"
	HdrPeers                   = "peers"
	HdrMasterHaAddress         = "masterHaAddress"
	HdrMasterFlushOffset       = "masterFlushOffset"
)

// SyncStateSet is the SyncStateSet body: the controller ids that hold every
// acknowledged message, and the epoch of that set.
type SyncStateSet struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// ElectMasterResponseBody answers CONTROLLER_ELECT_MASTER (on 0 and 2011).
// BrokerMemberGroup.BrokerAddrs holds every replica by controller id.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup,omitempty"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// ReplicaIdentity is one replica in GET_SYNC_STATE_DATA's answer.
type ReplicaIdentity struct {
	Alive         bool   `json:"alive"`
	BrokerAddress string `json:"brokerAddress"`
	BrokerID      int64  `json:"brokerId"`
	BrokerName    string `json:"brokerName"`
}

// ReplicasInfo is one broker set in BrokerReplicasInfo.
type ReplicasInfo struct {
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	MasterAddress     string            `json:"masterAddress,omitempty"`
	MasterBrokerID    int64             `json:"masterBrokerId"`
	MasterEpoch       int32             `json:"masterEpoch"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
}

// BrokerReplicasInfo answers CONTROLLER_GET_SYNC_STATE_DATA (1006), whose
// request body is a JSON array of broker names.
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// EpochEntry is one epoch of a broker's epoch list; the last entry's
// EndOffset is math.MaxInt64.
type EpochEntry struct {
	EndOffset   int64 `json:"endOffset"`
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

// EpochEntryCache answers GET_BROKER_EPOCH_CACHE (1007). BrokerID is the
// route id (0 for the master).
type EpochEntryCache struct {
	BrokerID    int64        `json:"brokerId"`
	BrokerName  string       `json:"brokerName"`
	ClusterName string       `json:"clusterName"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}

// HAClientRuntimeInfo is a slave's view of its replication.
type HAClientRuntimeInfo struct {
	LastReadTimestamp       int64  `json:"lastReadTimestamp"`
	LastWriteTimestamp      int64  `json:"lastWriteTimestamp"`
	MasterAddr              string `json:"masterAddr"`
	MasterFlushOffset       int64  `json:"masterFlushOffset"`
	MaxOffset               int64  `json:"maxOffset"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}

// HAConnectionRuntimeInfo is a master's view of one slave connection.
type HAConnectionRuntimeInfo struct {
	Addr                    string `json:"addr"`
	Diff                    int64  `json:"diff"`
	InSync                  bool   `json:"inSync"`
	SlaveAckOffset          int64  `json:"slaveAckOffset"`
	TransferFromWhere       int64  `json:"transferFromWhere"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}

// HARuntimeInfo answers GET_BROKER_HA_STATUS (907): on a master the slave
// connections, on a slave its client state.
type HARuntimeInfo struct {
	HAClientRuntimeInfo      *HAClientRuntimeInfo      `json:"haClientRuntimeInfo,omitempty"`
	HAConnectionInfo         []HAConnectionRuntimeInfo `json:"haConnectionInfo"`
	InSyncSlaveNums          int                       `json:"inSyncSlaveNums"`
	Master                   bool                      `json:"master"`
	MasterCommitLogMaxOffset int64                     `json:"masterCommitLogMaxOffset"`
}
