package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/remoting/code"
)

// CommandType is the first byte of a raft log entry (docs/replication.md
// §2.6). Values are part of the on-disk log: never renumber.
type CommandType byte

const (
	TypeApplyBrokerID       CommandType = 1
	TypeUpdateBrokerAddress CommandType = 2
	TypeAlterSyncStateSet   CommandType = 3
	TypeElectMaster         CommandType = 4
	TypeCleanBrokerData     CommandType = 5
)

func (t CommandType) String() string {
	switch t {
	case TypeApplyBrokerID:
		return "ApplyBrokerId"
	case TypeUpdateBrokerAddress:
		return "UpdateBrokerAddress"
	case TypeAlterSyncStateSet:
		return "AlterSyncStateSet"
	case TypeElectMaster:
		return "ElectMaster"
	case TypeCleanBrokerData:
		return "CleanBrokerData"
	}
	return "Unknown(" + strconv.Itoa(int(t)) + ")"
}

// Command is one replicated change. Each carries the values the leader saw
// when it decided; Apply re-checks them, so a command decided on stale
// state changes nothing and reports a conflict.
type Command interface {
	Type() CommandType
	apply(s *State) Result
}

// MaxBrokerID bounds the ids a replica may apply for: nextAssignBrokerId
// (the id + 1) must not overflow.
const MaxBrokerID = 1<<31 - 1

// ApplyBrokerID registers replica ID in a set, creating the set if it is
// unknown.
type ApplyBrokerID struct {
	ClusterName string `json:"clusterName"`
	BrokerName  string `json:"brokerName"`
	ID          int64  `json:"id"`
	Address     string `json:"address"`
	CheckCode   string `json:"checkCode"`
}

// UpdateBrokerAddress records a replica's new remoting address.
type UpdateBrokerAddress struct {
	BrokerName string `json:"brokerName"`
	ID         int64  `json:"id"`
	Address    string `json:"address"`
}

// AlterSyncStateSet replaces the SyncStateSet if the master, its epoch and
// the set's epoch are still the ones the master saw.
type AlterSyncStateSet struct {
	BrokerName        string  `json:"brokerName"`
	ExpectMaster      int64   `json:"expectMaster"`
	ExpectMasterEpoch int32   `json:"expectMasterEpoch"`
	ExpectSSSEpoch    int32   `json:"expectSyncStateSetEpoch"`
	NewSet            []int64 `json:"newSet"`
}

// ElectMaster installs NewMaster (NoMaster: "no master") as of the expected
// epochs. Unclean travels in the command because enableElectUncleanMaster
// is per node. MinEpoch is the lowest master epoch the election may give:
// one above every epoch the set's replicas reported, so that a set whose
// controllers lost their state (or were replaced) continues its epochs
// instead of starting again at 1, which its replicas would refuse.
type ElectMaster struct {
	BrokerName        string `json:"brokerName"`
	ExpectMasterEpoch int32  `json:"expectMasterEpoch"`
	ExpectSSSEpoch    int32  `json:"expectSyncStateSetEpoch"`
	NewMaster         int64  `json:"newMaster"`
	Unclean           bool   `json:"unclean"`
	MinEpoch          int32  `json:"minEpoch,omitempty"`
}

// CleanBrokerData removes replicas IDs (empty: the whole set).
type CleanBrokerData struct {
	BrokerName string  `json:"brokerName"`
	IDs        []int64 `json:"ids,omitempty"`
}

func (ApplyBrokerID) Type() CommandType       { return TypeApplyBrokerID }
func (UpdateBrokerAddress) Type() CommandType { return TypeUpdateBrokerAddress }
func (AlterSyncStateSet) Type() CommandType   { return TypeAlterSyncStateSet }
func (ElectMaster) Type() CommandType         { return TypeElectMaster }
func (CleanBrokerData) Type() CommandType     { return TypeCleanBrokerData }

// Result is what Apply returns for one command: Code 0 (code.Success) when
// it changed the state, otherwise the controller response code of the
// failed precondition. The epochs and master are the set's values after
// the command (zero when the set does not exist).
type Result struct {
	Code              int32  `json:"code"`
	Remark            string `json:"remark,omitempty"`
	MasterBrokerID    int64  `json:"masterBrokerId"`
	MasterEpoch       int32  `json:"masterEpoch"`
	SyncStateSetEpoch int32  `json:"syncStateSetEpoch"`
}

// OK reports whether the command took effect.
func (r Result) OK() bool { return r.Code == code.Success }

func conflict(c int32, format string, args ...any) Result {
	return Result{Code: c, Remark: fmt.Sprintf(format, args...)}
}

func resultOf(b *BrokerSet) Result {
	if b == nil {
		return Result{}
	}
	return Result{MasterBrokerID: b.MasterBrokerID, MasterEpoch: b.MasterEpoch, SyncStateSetEpoch: b.SyncStateSetEpoch}
}

// Encode is the log entry: one type byte, then the JSON payload.
func Encode(c Command) ([]byte, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("state: encode %s: %w", c.Type(), err)
	}
	return append([]byte{byte(c.Type())}, payload...), nil
}

// ErrUnknownCommand: the entry was written by a newer binary.
var ErrUnknownCommand = errors.New("state: unknown command type")

// Decode parses a log entry written by Encode.
func Decode(data []byte) (Command, error) {
	if len(data) == 0 {
		return nil, errors.New("state: empty log entry")
	}
	var c Command
	switch CommandType(data[0]) {
	case TypeApplyBrokerID:
		c = &ApplyBrokerID{}
	case TypeUpdateBrokerAddress:
		c = &UpdateBrokerAddress{}
	case TypeAlterSyncStateSet:
		c = &AlterSyncStateSet{}
	case TypeElectMaster:
		c = &ElectMaster{}
	case TypeCleanBrokerData:
		c = &CleanBrokerData{}
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknownCommand, data[0])
	}
	if err := json.Unmarshal(data[1:], c); err != nil {
		return nil, fmt.Errorf("state: decode %s: %w", CommandType(data[0]), err)
	}
	return c, nil
}

// Apply runs c against s. It never fails: a failed precondition is a
// Result with its code and leaves s untouched.
func (s *State) Apply(c Command) Result { return c.apply(s) }

func (c ApplyBrokerID) apply(s *State) Result {
	if c.ID < 1 || c.ID > MaxBrokerID {
		return conflict(code.ControllerBrokerIDInvalid, "broker id %d of %s: ids are 1 to %d", c.ID, c.BrokerName, MaxBrokerID)
	}
	b := s.sets[c.BrokerName]
	if b == nil {
		// A new set starts with the id GET_NEXT_BROKER_ID gave (1), or
		// with the id a replica held under controllers that lost their
		// state: it applies for it again (upstream accepts only 1 here).
		b = &BrokerSet{ClusterName: c.ClusterName, BrokerName: c.BrokerName, NextAssignBrokerID: c.ID + 1,
			Replicas: map[int64]Replica{c.ID: {ID: c.ID, Address: c.Address, CheckCode: c.CheckCode}}}
		s.sets[c.BrokerName] = b
		return resultOf(b)
	}
	if c.ClusterName != "" && b.ClusterName != "" && c.ClusterName != b.ClusterName {
		return conflict(code.ControllerBrokerIDInvalid, "broker set %s belongs to cluster %s, not %s", c.BrokerName, b.ClusterName, c.ClusterName)
	}
	if r, ok := b.Replicas[c.ID]; ok {
		if r.CheckCode == c.CheckCode {
			return resultOf(b) // the same registration, retried
		}
		if strings.HasSuffix(r.CheckCode, TakenCheckCodeSuffix) && r.Address == c.Address && !strings.HasSuffix(c.CheckCode, TakenCheckCodeSuffix) {
			// The controller took this id for the broker at this address
			// when it registered or heartbeated it unknown; the broker now
			// applies with the check code of its identity file.
			r.CheckCode = c.CheckCode
			b.Replicas[c.ID] = r
			return resultOf(b)
		}
		return conflict(code.ControllerBrokerIDInvalid, "id %d of %s is taken by another registration", c.ID, c.BrokerName)
	}
	if _, cleaned := slices.BinarySearch(b.CleanedIDs, c.ID); cleaned {
		return conflict(code.ControllerBrokerIDInvalid, "id %d of %s was cleaned: it is not taken again (next is %d)", c.ID, c.BrokerName, b.NextAssignBrokerID)
	}
	// Any other free id is taken. GET_NEXT_BROKER_ID hands out only ids
	// from nextAssignBrokerId on, so a free one below it is one this set
	// never registered: a replica that held it under controllers that lost
	// their state applies for it again.
	b.Replicas[c.ID] = Replica{ID: c.ID, Address: c.Address, CheckCode: c.CheckCode}
	b.NextAssignBrokerID = max(b.NextAssignBrokerID, c.ID+1)
	return resultOf(b)
}

func (c UpdateBrokerAddress) apply(s *State) Result {
	b := s.sets[c.BrokerName]
	if b == nil {
		return conflict(code.ControllerBrokerNeedToBeRegistered, "broker set %s unknown", c.BrokerName)
	}
	r, ok := b.Replicas[c.ID]
	if !ok {
		return conflict(code.ControllerBrokerNeedToBeRegistered, "broker %s id %d unknown", c.BrokerName, c.ID)
	}
	r.Address = c.Address
	b.Replicas[c.ID] = r
	return resultOf(b)
}

func (c AlterSyncStateSet) apply(s *State) Result {
	b := s.sets[c.BrokerName]
	if b == nil {
		return conflict(code.ControllerAlterSyncStateSetFailed, "broker set %s unknown", c.BrokerName)
	}
	if r := CheckAlter(b, c.ExpectMaster, c.ExpectMasterEpoch, c.ExpectSSSEpoch, c.NewSet); !r.OK() {
		return r
	}
	b.SyncStateSet = normalizeSet(c.NewSet)
	b.SyncStateSetEpoch++
	return resultOf(b)
}

// CheckAlter is the deterministic part of the AlterSyncStateSet checks, in
// the order docs/replication.md §2.3 lists them (liveness is the leader's
// business and is checked before the command is built).
func CheckAlter(b *BrokerSet, master int64, masterEpoch, sssEpoch int32, newSet []int64) Result {
	set := normalizeSet(newSet)
	if slices.Equal(set, b.SyncStateSet) {
		return withSet(conflict(code.ControllerAlterSyncStateSetFailed, "SyncStateSet of %s unchanged", b.BrokerName), b)
	}
	if master != b.MasterBrokerID || !b.HasMaster() {
		return withSet(conflict(code.ControllerInvalidMaster, "broker %d is not the master of %s (master %d)", master, b.BrokerName, b.MasterBrokerID), b)
	}
	if masterEpoch != b.MasterEpoch {
		return withSet(conflict(code.ControllerFencedMasterEpoch, "master epoch %d of %s is stale (current %d)", masterEpoch, b.BrokerName, b.MasterEpoch), b)
	}
	if sssEpoch != b.SyncStateSetEpoch {
		return withSet(conflict(code.ControllerFencedSyncStateSetEpoch, "SyncStateSet epoch %d of %s is stale (current %d)", sssEpoch, b.BrokerName, b.SyncStateSetEpoch), b)
	}
	for _, id := range set {
		if _, ok := b.Replicas[id]; !ok {
			return withSet(conflict(code.ControllerInvalidReplicas, "replica %d of %s is not registered", id, b.BrokerName), b)
		}
	}
	if _, ok := slices.BinarySearch(set, master); !ok {
		return withSet(conflict(code.ControllerAlterSyncStateSetFailed, "new SyncStateSet of %s lacks its master %d", b.BrokerName, master), b)
	}
	return Result{}
}

func withSet(r Result, b *BrokerSet) Result {
	r.MasterBrokerID, r.MasterEpoch, r.SyncStateSetEpoch = b.MasterBrokerID, b.MasterEpoch, b.SyncStateSetEpoch
	return r
}

func (c ElectMaster) apply(s *State) Result {
	b := s.sets[c.BrokerName]
	if b == nil {
		return conflict(code.ControllerBrokerNeedToBeRegistered, "broker set %s unknown", c.BrokerName)
	}
	if c.ExpectMasterEpoch != b.MasterEpoch || c.ExpectSSSEpoch != b.SyncStateSetEpoch {
		return withSet(conflict(code.ControllerElectMasterFailed, "election for %s decided at epochs %d/%d, now %d/%d",
			c.BrokerName, c.ExpectMasterEpoch, c.ExpectSSSEpoch, b.MasterEpoch, b.SyncStateSetEpoch), b)
	}
	if c.NewMaster == NoMaster {
		// The SyncStateSet is kept: its members still hold every acked
		// message and remain the only clean candidates.
		b.MasterBrokerID = NoMaster
		b.MasterEpoch = max(b.MasterEpoch+1, c.MinEpoch)
		return resultOf(b)
	}
	if _, ok := b.Replicas[c.NewMaster]; !ok {
		return withSet(conflict(code.ControllerElectMasterFailed, "new master %d of %s is not registered", c.NewMaster, c.BrokerName), b)
	}
	// A set that never had a master has an empty SyncStateSet: its first
	// master is whoever asked first (docs/replication.md §2.3 step 2).
	if b.MasterEpoch != 0 && !c.Unclean && !b.InSyncStateSet(c.NewMaster) {
		return withSet(conflict(code.ControllerElectMasterFailed, "new master %d of %s is outside the SyncStateSet %v", c.NewMaster, c.BrokerName, b.SyncStateSet), b)
	}
	b.MasterBrokerID = c.NewMaster
	b.MasterEpoch = max(b.MasterEpoch+1, c.MinEpoch)
	b.SyncStateSet = []int64{c.NewMaster}
	b.SyncStateSetEpoch++
	return resultOf(b)
}

func (c CleanBrokerData) apply(s *State) Result {
	b := s.sets[c.BrokerName]
	if b == nil {
		return conflict(code.ControllerInvalidCleanBrokerMetadata, "broker set %s unknown", c.BrokerName)
	}
	if len(c.IDs) == 0 {
		delete(s.sets, c.BrokerName)
		return Result{}
	}
	hadSet := len(b.SyncStateSet) > 0
	for _, id := range c.IDs {
		if _, ok := b.Replicas[id]; ok {
			b.CleanedIDs = normalizeSet(append(b.CleanedIDs, id))
		}
		delete(b.Replicas, id)
		b.SyncStateSet = slices.DeleteFunc(b.SyncStateSet, func(m int64) bool { return m == id })
		if id == b.MasterBrokerID {
			// Upstream leaves the removed id as master; a master that is
			// not a replica would break invariant 2, so clear it and move
			// the epoch so the old value names one master only.
			b.MasterBrokerID = NoMaster
			b.MasterEpoch++
		}
	}
	if len(b.Replicas) == 0 || (hadSet && len(b.SyncStateSet) == 0) {
		delete(s.sets, c.BrokerName)
		return Result{}
	}
	return resultOf(b)
}
