package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Controller types (controllerType). Both run on hashicorp/raft; they
// differ only in which keys name the peers and ports.
const (
	ControllerTypeDLedger = "DLedger"
	ControllerTypeJRaft   = "jRaft"
)

// ControllerKeys are the HA controller's own keys (docs/replication.md §2,
// docs/operations.md "Running the controller"), read from namesrv.conf when
// the controller is embedded and from the controller's file when it runs
// alone. Keys the controller shares with the nameserver
// (scanNotActiveBrokerInterval, configStorePath, configBlackList,
// rocketmqHome) are not here: each owner has its own field for them.
type ControllerKeys struct {
	ControllerType           string `key:"controllerType"`
	ControllerDLegerGroup    string `key:"controllerDLegerGroup"`
	ControllerDLegerPeers    string `key:"controllerDLegerPeers"`
	ControllerDLegerSelfID   string `key:"controllerDLegerSelfId"`
	ControllerStorePath      string `key:"controllerStorePath"`
	EnableElectUncleanMaster bool   `key:"enableElectUncleanMaster"`
	NotifyBrokerRoleChanged  bool   `key:"notifyBrokerRoleChanged"`
	// ScanInactiveMasterInterval: the leader's scan for sets whose master
	// is gone while a replica lives.
	ScanInactiveMasterInterval               time.Duration `key:"scanInactiveMasterInterval"`
	ElectMasterMaxRetryCount                 int           `key:"electMasterMaxRetryCount"`
	ControllerThreadPoolNums                 int           `key:"controllerThreadPoolNums"`
	ControllerRequestThreadPoolQueueCapacity int           `key:"controllerRequestThreadPoolQueueCapacity"`
	// IsProcessReadEvent is accepted for upstream files; reads are served
	// from the leader's state machine either way.
	IsProcessReadEvent bool `key:"isProcessReadEvent" effect:"none"`

	// jRaft flavour keys (controllerType=jRaft): the same raft underneath,
	// but requests are served on their own ports (jRaftControllerRPCAddr).
	// The timing keys are accepted and ignored (hashicorp/raft's defaults
	// and controllerRaftSnapshot* apply).
	JRaftGroupID              string `key:"jRaftGroupId"`
	JRaftServerID             string `key:"jRaftServerId"`
	JRaftInitConf             string `key:"jRaftInitConf"`
	JRaftControllerRPCAddr    string `key:"jRaftControllerRPCAddr"`
	JRaftElectionTimeoutMs    int    `key:"jRaftElectionTimeoutMs" effect:"none"`
	JRaftSnapshotIntervalSecs int    `key:"jRaftSnapshotIntervalSecs" effect:"none"`
	JRaftScanWaitTimeoutMs    int    `key:"jRaftScanWaitTimeoutMs" effect:"none"`

	// Ours.
	ControllerRaftSnapshotInterval  time.Duration `key:"controllerRaftSnapshotInterval"`
	ControllerRaftSnapshotThreshold uint64        `key:"controllerRaftSnapshotThreshold"`
	ControllerLivenessWarmup        time.Duration `key:"controllerLivenessWarmupMillis"`
}

// DefaultControllerKeys returns upstream's defaults plus ours.
func DefaultControllerKeys() ControllerKeys {
	return ControllerKeys{
		ControllerType:                           ControllerTypeDLedger,
		NotifyBrokerRoleChanged:                  true,
		ScanInactiveMasterInterval:               5 * time.Second,
		ElectMasterMaxRetryCount:                 3,
		ControllerThreadPoolNums:                 16,
		ControllerRequestThreadPoolQueueCapacity: 50000,
		JRaftGroupID:                             "jRaft-Controller",
		JRaftServerID:                            "localhost:9880",
		JRaftInitConf:                            "localhost:9880,localhost:9881,localhost:9882",
		JRaftControllerRPCAddr:                   "localhost:9770,localhost:9771,localhost:9772",
		JRaftElectionTimeoutMs:                   1000,
		JRaftSnapshotIntervalSecs:                3600,
		JRaftScanWaitTimeoutMs:                   1000,
		ControllerRaftSnapshotInterval:           120 * time.Second,
		ControllerRaftSnapshotThreshold:          8192,
		ControllerLivenessWarmup:                 10 * time.Second,
	}
}

// Peer is one controller node.
type Peer struct {
	ID   string
	Addr string // host:port of raft (and, DLedger flavour, of requests)
	// RPCAddr is where brokers and tools reach the node: Addr in the
	// DLedger flavour, the matching jRaftControllerRPCAddr item in jRaft's.
	RPCAddr string
}

// ParsePeers parses `n0-127.0.0.1:9878;n1-127.0.0.1:9868`. The id ends at
// the first '-' (upstream's DLedger format; ids contain no '-').
func ParsePeers(s string) ([]Peer, error) {
	var out []Peer
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addr, ok := strings.Cut(item, "-")
		if !ok || id == "" {
			return nil, fmt.Errorf("peer %q is not id-host:port", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("peer %q: %w", item, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("peer id %q listed twice", id)
		}
		seen[id] = true
		out = append(out, Peer{ID: id, Addr: addr, RPCAddr: addr})
	}
	if len(out) == 0 {
		return nil, errors.New("no peers")
	}
	return out, nil
}

// SelfPeer returns this node and all nodes. DLedger flavour: from
// controllerDLegerPeers and controllerDLegerSelfId. jRaft flavour: raft
// peers from jRaftInitConf (the id is the address, as in jRaft), this node
// jRaftServerId, request addresses from jRaftControllerRPCAddr, index for
// index.
func (k *ControllerKeys) SelfPeer() (Peer, []Peer, error) {
	if k.ControllerType == ControllerTypeJRaft {
		return k.jRaftPeers()
	}
	peers, err := ParsePeers(k.ControllerDLegerPeers)
	if err != nil {
		return Peer{}, nil, fmt.Errorf("controllerDLegerPeers: %w", err)
	}
	for _, p := range peers {
		if p.ID == k.ControllerDLegerSelfID {
			return p, peers, nil
		}
	}
	return Peer{}, nil, fmt.Errorf("controllerDLegerSelfId %q is not one of controllerDLegerPeers", k.ControllerDLegerSelfID)
}

func (k *ControllerKeys) jRaftPeers() (Peer, []Peer, error) {
	split := func(key, s string) ([]string, error) {
		var out []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(item); err != nil {
				return nil, fmt.Errorf("%s item %q: %w", key, item, err)
			}
			out = append(out, item)
		}
		return out, nil
	}
	raftAddrs, err := split("jRaftInitConf", k.JRaftInitConf)
	if err != nil {
		return Peer{}, nil, err
	}
	rpcAddrs, err := split("jRaftControllerRPCAddr", k.JRaftControllerRPCAddr)
	if err != nil {
		return Peer{}, nil, err
	}
	if len(raftAddrs) == 0 || len(raftAddrs) != len(rpcAddrs) {
		return Peer{}, nil, fmt.Errorf("jRaftInitConf has %d addresses, jRaftControllerRPCAddr %d: they pair up index for index", len(raftAddrs), len(rpcAddrs))
	}
	var self Peer
	peers := make([]Peer, len(raftAddrs))
	for i, a := range raftAddrs {
		peers[i] = Peer{ID: a, Addr: a, RPCAddr: rpcAddrs[i]}
		if a == k.JRaftServerID {
			self = peers[i]
		}
		if a == rpcAddrs[i] {
			return Peer{}, nil, fmt.Errorf("jRaft peer %s: the raft and request addresses must differ", a)
		}
	}
	if self.ID == "" {
		return Peer{}, nil, fmt.Errorf("jRaftServerId %q is not one of jRaftInitConf", k.JRaftServerID)
	}
	return self, peers, nil
}

// Group is the raft group name of the configured flavour.
func (k *ControllerKeys) Group() string {
	if k.ControllerType == ControllerTypeJRaft {
		return k.JRaftGroupID
	}
	return k.ControllerDLegerGroup
}

// Validate checks the keys a controller needs to run.
func (k *ControllerKeys) Validate() error {
	var errs []error
	switch k.ControllerType {
	case ControllerTypeDLedger:
		if k.ControllerDLegerGroup == "" {
			errs = append(errs, errors.New("controllerDLegerGroup is empty"))
		}
	case ControllerTypeJRaft:
		if k.JRaftGroupID == "" {
			errs = append(errs, errors.New("jRaftGroupId is empty"))
		}
	default:
		errs = append(errs, fmt.Errorf("controllerType %q unknown (DLedger or jRaft)", k.ControllerType))
	}
	if _, _, err := k.SelfPeer(); err != nil {
		errs = append(errs, err)
	}
	if k.ScanInactiveMasterInterval <= 0 {
		errs = append(errs, fmt.Errorf("scanInactiveMasterInterval must be positive, got %v", k.ScanInactiveMasterInterval))
	}
	if k.ElectMasterMaxRetryCount < 0 {
		errs = append(errs, fmt.Errorf("electMasterMaxRetryCount must not be negative, got %d", k.ElectMasterMaxRetryCount))
	}
	if k.ControllerThreadPoolNums < 1 || k.ControllerRequestThreadPoolQueueCapacity < 1 {
		errs = append(errs, errors.New("controllerThreadPoolNums and controllerRequestThreadPoolQueueCapacity must be at least 1"))
	}
	if k.ControllerRaftSnapshotInterval <= 0 || k.ControllerRaftSnapshotThreshold == 0 {
		errs = append(errs, errors.New("controllerRaftSnapshotInterval and controllerRaftSnapshotThreshold must be positive"))
	}
	if k.ControllerLivenessWarmup < 0 {
		errs = append(errs, fmt.Errorf("controllerLivenessWarmupMillis must not be negative, got %v", k.ControllerLivenessWarmup))
	}
	return errors.Join(errs...)
}
