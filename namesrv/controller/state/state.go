// Package state is the HA controller's replicated state (docs/replication.md
// §2): one record per broker set, changed only by the compare-and-set
// commands in command.go, applied through raft (fsm.go). Everything here is
// deterministic and free of I/O so every node computes the same state from
// the same log.
package state

import (
	"maps"
	"slices"
)

// NoMaster is MasterBrokerID when a set has no master. Controller ids start
// at 1, so 0 never names a replica (and is the route id Java tools print for
// "none" too).
const NoMaster int64 = 0

// Replica is one registered member of a broker set.
type Replica struct {
	ID int64 `json:"id"`
	// Address is the replica's remoting "ip:port".
	Address string `json:"address"`
	// CheckCode is "<brokerAddr>;<unixMillis>" from ApplyBrokerId; a retry
	// with the same code is the same registration.
	CheckCode string `json:"checkCode"`
}

// BrokerSet is the replicated record of one brokerName.
type BrokerSet struct {
	ClusterName        string            `json:"clusterName"`
	BrokerName         string            `json:"brokerName"`
	NextAssignBrokerID int64             `json:"nextAssignBrokerId"`
	Replicas           map[int64]Replica `json:"-"`
	MasterBrokerID     int64             `json:"masterBrokerId"`
	MasterEpoch        int32             `json:"masterEpoch"`
	SyncStateSet       []int64           `json:"syncStateSet"` // sorted, no duplicates
	SyncStateSetEpoch  int32             `json:"syncStateSetEpoch"`
	// CleanedIDs were removed by CleanBrokerData and are not taken again
	// while the set exists (sorted). Other free ids below
	// NextAssignBrokerID were never registered here: a replica that held
	// one under controllers that lost their state may apply for it.
	CleanedIDs []int64 `json:"cleanedIds,omitempty"`
}

// HasMaster reports whether the set currently has a master.
func (b *BrokerSet) HasMaster() bool { return b.MasterBrokerID != NoMaster }

// InSyncStateSet reports whether id is a SyncStateSet member.
func (b *BrokerSet) InSyncStateSet(id int64) bool {
	_, ok := slices.BinarySearch(b.SyncStateSet, id)
	return ok
}

// Address is the remoting address of replica id ("" if unknown).
func (b *BrokerSet) Address(id int64) string { return b.Replicas[id].Address }

// TakenCheckCodeSuffix ends the check code of an id the controller took
// for a broker that registered or heartbeated it unknown (the controllers
// lost their state): "<address>;taken". The broker may apply for it later
// with its own check code, from the same address.
const TakenCheckCodeSuffix = ";taken"

// IDOf is the id of the replica registered at addr (0: none).
func (b *BrokerSet) IDOf(addr string) int64 {
	for id, r := range b.Replicas {
		if r.Address == addr {
			return id
		}
	}
	return 0
}

// ReplicaIDs returns the registered ids in ascending order.
func (b *BrokerSet) ReplicaIDs() []int64 {
	return slices.Sorted(maps.Keys(b.Replicas))
}

// Clone is a deep copy, so readers never share maps with the FSM.
func (b *BrokerSet) Clone() *BrokerSet {
	c := *b
	c.Replicas = maps.Clone(b.Replicas)
	if c.Replicas == nil {
		c.Replicas = map[int64]Replica{}
	}
	c.SyncStateSet = slices.Clone(b.SyncStateSet)
	c.CleanedIDs = slices.Clone(b.CleanedIDs)
	return &c
}

// normalizeSet sorts ids and drops duplicates, so set comparisons and the
// snapshot do not depend on the order a broker listed them.
func normalizeSet(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// State is every broker set, keyed by brokerName (upstream keys by name
// only; see docs/replication.md §2.1). It is not safe for concurrent use:
// FSM adds the locking.
type State struct {
	sets map[string]*BrokerSet
}

// New returns an empty state.
func New() *State { return &State{sets: map[string]*BrokerSet{}} }

// Set returns the live record of brokerName (nil if unknown). Callers
// outside this package get clones through FSM.
func (s *State) Set(brokerName string) *BrokerSet { return s.sets[brokerName] }

// Names returns the broker names in ascending order.
func (s *State) Names() []string { return slices.Sorted(maps.Keys(s.sets)) }

// NextBrokerID is GetNextBrokerId: 1 for an unknown set.
func (s *State) NextBrokerID(brokerName string) int64 {
	if b := s.sets[brokerName]; b != nil {
		return b.NextAssignBrokerID
	}
	return 1
}
