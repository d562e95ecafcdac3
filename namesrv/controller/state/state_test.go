package state

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rmqgo/rmq/remoting/code"
)

// twoReplicas: broker-a with ids 1 (master, epoch 1) and 2, SyncStateSet
// {1,2} at epoch 2.
func twoReplicas(t *testing.T) *State {
	t.Helper()
	s := New()
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 1, Address: "h:1", CheckCode: "h:1;1"})
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, Address: "h:2", CheckCode: "h:2;1"})
	mustOK(t, s, ElectMaster{BrokerName: "a", NewMaster: 1})
	mustOK(t, s, AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 1, NewSet: []int64{2, 1}})
	return s
}

func mustOK(t *testing.T, s *State, c Command) Result {
	t.Helper()
	r := s.Apply(c)
	if !r.OK() {
		t.Fatalf("%s %+v: code %d %s", c.Type(), c, r.Code, r.Remark)
	}
	checkInvariants(t, s)
	return r
}

// checkInvariants asserts docs/replication.md §2.4 items 2, 4 and 6 on
// every set (1 is checked across commands by the callers).
func checkInvariants(t *testing.T, s *State) {
	t.Helper()
	for _, name := range s.Names() {
		b := s.Set(name)
		if b.HasMaster() && !b.InSyncStateSet(b.MasterBrokerID) {
			t.Fatalf("%s: master %d outside SyncStateSet %v", name, b.MasterBrokerID, b.SyncStateSet)
		}
		for _, id := range b.SyncStateSet {
			if _, ok := b.Replicas[id]; !ok {
				t.Fatalf("%s: SyncStateSet member %d not registered", name, id)
			}
		}
		for id := range b.Replicas {
			if id < 1 || id >= b.NextAssignBrokerID {
				t.Fatalf("%s: replica id %d outside [1,%d)", name, id, b.NextAssignBrokerID)
			}
		}
		if !slices.IsSorted(b.SyncStateSet) {
			t.Fatalf("%s: SyncStateSet %v not sorted", name, b.SyncStateSet)
		}
	}
}

func TestApplyPreconditions(t *testing.T) {
	tests := []struct {
		name string
		cmd  Command
		want int32
	}{
		{"apply: ids start at 1", ApplyBrokerID{ClusterName: "c", BrokerName: "new", ID: 0}, code.ControllerBrokerIDInvalid},
		{"apply: id too large for a next id", ApplyBrokerID{ClusterName: "c", BrokerName: "new", ID: 1<<63 - 1}, code.ControllerBrokerIDInvalid},
		{"apply: largest id", ApplyBrokerID{ClusterName: "c", BrokerName: "new", ID: MaxBrokerID}, code.Success},
		{"apply: new set from a replica's id", ApplyBrokerID{ClusterName: "c", BrokerName: "new", ID: 2}, code.Success},
		{"apply: new set id 1", ApplyBrokerID{ClusterName: "c", BrokerName: "new", ID: 1}, code.Success},
		{"apply: taken by another code", ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, CheckCode: "other"}, code.ControllerBrokerIDInvalid},
		{"apply: retry with the same code", ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, CheckCode: "h:2;1"}, code.Success},
		{"apply: next free id", ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 3, CheckCode: "x"}, code.Success},
		{"apply: other cluster", ApplyBrokerID{ClusterName: "d", BrokerName: "a", ID: 3, CheckCode: "x"}, code.ControllerBrokerIDInvalid},
		{"update addr: unknown set", UpdateBrokerAddress{BrokerName: "zz", ID: 1, Address: "n"}, code.ControllerBrokerNeedToBeRegistered},
		{"update addr: unknown id", UpdateBrokerAddress{BrokerName: "a", ID: 9, Address: "n"}, code.ControllerBrokerNeedToBeRegistered},
		{"update addr", UpdateBrokerAddress{BrokerName: "a", ID: 2, Address: "n"}, code.Success},
		{"alter: unknown set", AlterSyncStateSet{BrokerName: "zz", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewSet: []int64{1}}, code.ControllerAlterSyncStateSetFailed},
		{"alter: no change", AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewSet: []int64{1, 2}}, code.ControllerAlterSyncStateSetFailed},
		{"alter: not the master", AlterSyncStateSet{BrokerName: "a", ExpectMaster: 2, ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewSet: []int64{2}}, code.ControllerInvalidMaster},
		{"alter: stale master epoch", AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 0, ExpectSSSEpoch: 2, NewSet: []int64{1}}, code.ControllerFencedMasterEpoch},
		{"alter: stale set epoch", AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 1, NewSet: []int64{1}}, code.ControllerFencedSyncStateSetEpoch},
		{"alter: unregistered member", AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewSet: []int64{1, 7}}, code.ControllerInvalidReplicas},
		{"alter: master not a member", AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewSet: []int64{2}}, code.ControllerAlterSyncStateSetFailed},
		{"alter: shrink", AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewSet: []int64{1}}, code.Success},
		{"elect: unknown set", ElectMaster{BrokerName: "zz", NewMaster: 1}, code.ControllerBrokerNeedToBeRegistered},
		{"elect: stale master epoch", ElectMaster{BrokerName: "a", ExpectMasterEpoch: 0, ExpectSSSEpoch: 2, NewMaster: 2}, code.ControllerElectMasterFailed},
		{"elect: stale set epoch", ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 1, NewMaster: 2}, code.ControllerElectMasterFailed},
		{"elect: unregistered", ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewMaster: 5}, code.ControllerElectMasterFailed},
		{"elect: in set", ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewMaster: 2}, code.Success},
		{"elect: no master", ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 2}, code.Success},
		{"clean: unknown set", CleanBrokerData{BrokerName: "zz"}, code.ControllerInvalidCleanBrokerMetadata},
		{"clean: one id", CleanBrokerData{BrokerName: "a", IDs: []int64{2}}, code.Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := twoReplicas(t)
			before, _ := s.MarshalJSON()
			r := s.Apply(tt.cmd)
			if r.Code != tt.want {
				t.Fatalf("code %d (%s), want %d", r.Code, r.Remark, tt.want)
			}
			after, _ := s.MarshalJSON()
			if !r.OK() && !bytes.Equal(before, after) {
				t.Fatalf("failed command changed the state:\n%s\n%s", before, after)
			}
			checkInvariants(t, s)
		})
	}
}

func TestApplyEffects(t *testing.T) {
	s := twoReplicas(t)
	b := s.Set("a")
	if b.MasterBrokerID != 1 || b.MasterEpoch != 1 || b.SyncStateSetEpoch != 2 || !slices.Equal(b.SyncStateSet, []int64{1, 2}) || b.NextAssignBrokerID != 3 {
		t.Fatalf("set after setup: %+v", b)
	}
	// Unclean election outside the set only with the flag.
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 3, Address: "h:3", CheckCode: "3"})
	if r := s.Apply(ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewMaster: 3}); r.Code != code.ControllerElectMasterFailed {
		t.Fatalf("clean election of a non-member: %+v", r)
	}
	r := mustOK(t, s, ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewMaster: 3, Unclean: true})
	if r.MasterBrokerID != 3 || r.MasterEpoch != 2 || r.SyncStateSetEpoch != 3 || !slices.Equal(s.Set("a").SyncStateSet, []int64{3}) {
		t.Fatalf("unclean election: %+v %+v", r, s.Set("a"))
	}
	// "No master" keeps the SyncStateSet and moves only masterEpoch.
	r = mustOK(t, s, ElectMaster{BrokerName: "a", ExpectMasterEpoch: 2, ExpectSSSEpoch: 3})
	if r.MasterBrokerID != NoMaster || r.MasterEpoch != 3 || r.SyncStateSetEpoch != 3 || !slices.Equal(s.Set("a").SyncStateSet, []int64{3}) {
		t.Fatalf("no master: %+v %+v", r, s.Set("a"))
	}
	// Cleaned ids are not handed out or taken again, not even by the
	// replica that held them.
	mustOK(t, s, CleanBrokerData{BrokerName: "a", IDs: []int64{2}})
	if r := s.Apply(ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, CheckCode: "new"}); r.Code != code.ControllerBrokerIDInvalid {
		t.Fatalf("reused id 2: %+v", r)
	}
	if r := s.Apply(ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, CheckCode: "h:2;1"}); r.Code != code.ControllerBrokerIDInvalid {
		t.Fatalf("cleaned id 2 taken back: %+v", r)
	}
	if got := s.Set("a").CleanedIDs; !slices.Equal(got, []int64{2}) {
		t.Fatalf("cleaned ids %v", got)
	}
	if s.NextBrokerID("a") != 4 || s.NextBrokerID("unknown") != 1 {
		t.Fatalf("next ids %d %d", s.NextBrokerID("a"), s.NextBrokerID("unknown"))
	}
	// Cleaning the master clears it and bumps the epoch.
	s = twoReplicas(t)
	r = mustOK(t, s, CleanBrokerData{BrokerName: "a", IDs: []int64{1}})
	if r.MasterBrokerID != NoMaster || r.MasterEpoch != 2 || !slices.Equal(s.Set("a").SyncStateSet, []int64{2}) {
		t.Fatalf("clean master: %+v %+v", r, s.Set("a"))
	}
	// Emptying the replicas drops the set; so does cleaning without ids.
	mustOK(t, s, CleanBrokerData{BrokerName: "a", IDs: []int64{2}})
	if s.Set("a") != nil {
		t.Fatal("set survived its last replica")
	}
	s = twoReplicas(t)
	mustOK(t, s, CleanBrokerData{BrokerName: "a"})
	if s.Set("a") != nil {
		t.Fatal("set survived a full clean")
	}
}

func TestFirstElection(t *testing.T) {
	s := New()
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 1, CheckCode: "1"})
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, CheckCode: "2"})
	b := s.Set("a")
	d := DecideElection(b, ElectInput{BrokerID: 2})
	if d.Outcome != Elected || d.Master != 2 {
		t.Fatalf("first broker to ask: %+v", d)
	}
	// The controller itself never picks a first master from an empty set.
	if d := DecideElection(b, ElectInput{BrokerID: ControllerTriggered, Alive: func(int64) bool { return true }}); d.Outcome != NoneEligible {
		t.Fatalf("controller-triggered on a new set: %+v", d)
	}
	r := mustOK(t, s, ElectMaster{BrokerName: "a", NewMaster: 2})
	if r.MasterEpoch != 1 || r.SyncStateSetEpoch != 1 || !slices.Equal(s.Set("a").SyncStateSet, []int64{2}) {
		t.Fatalf("first election: %+v", r)
	}
}

// TestSetWithAHistory: controllers that lost their state (or replaced
// others) meet a set whose replicas hold ids and epochs. The replicas
// apply for their ids again in any order; the most up-to-date live one is
// elected, and only once it has applied; epochs continue above theirs.
func TestSetWithAHistory(t *testing.T) {
	s := New()
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 3, CheckCode: "h:3;1"})
	if s.NextBrokerID("a") != 4 {
		t.Fatalf("next id %d", s.NextBrokerID("a"))
	}
	// Heartbeats: 1 was master at epoch 7 and holds the longest log; 2
	// and 3 follow it, 3 a little behind.
	info := map[int64]Candidate{1: {Epoch: 7, MaxOffset: 900}, 2: {Epoch: 7, MaxOffset: 900}, 3: {Epoch: 7, MaxOffset: 800}}
	in := func(requester int64) ElectInput {
		return ElectInput{BrokerID: requester, Heard: []int64{1, 2, 3},
			Alive: func(id int64) bool { _, ok := info[id]; return ok },
			Info:  func(id int64) (Candidate, bool) { c, ok := info[id]; return c, ok }}
	}
	if d := DecideElection(s.Set("a"), in(3)); d.Outcome != NoneEligible {
		t.Fatalf("elected while newer logs are unregistered: %+v", d)
	}
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, CheckCode: "h:2;1"})
	warming := in(3)
	warming.Warming = true
	if d := DecideElection(s.Set("a"), warming); d.Outcome != NoneEligible {
		t.Fatalf("elected while the heartbeat table warms up: %+v", d)
	}
	if d := DecideElection(s.Set("a"), in(3)); d.Outcome != Elected || d.Master != 2 {
		t.Fatalf("3 asks, 2 (as new as 1) registered: %+v", d)
	}
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 1, CheckCode: "h:1;1"})
	if d := DecideElection(s.Set("a"), in(1)); d.Outcome != Elected || d.Master != 1 {
		t.Fatalf("1 asks, nobody newer: %+v", d)
	}
	if s.NextBrokerID("a") != 4 {
		t.Fatalf("next id after the lower ids %d", s.NextBrokerID("a"))
	}
	r := mustOK(t, s, ElectMaster{BrokerName: "a", NewMaster: 1, MinEpoch: 8})
	if r.MasterEpoch != 8 || r.MasterBrokerID != 1 {
		t.Fatalf("election with a floor: %+v", r)
	}
	// A floor below the next epoch changes nothing.
	r = mustOK(t, s, ElectMaster{BrokerName: "a", ExpectMasterEpoch: 8, ExpectSSSEpoch: 1, MinEpoch: 3})
	if r.MasterEpoch != 9 {
		t.Fatalf("no master with a low floor: %+v", r)
	}
	// A brand-new set still takes the first replica that asks.
	fresh := New()
	mustOK(t, fresh, ApplyBrokerID{ClusterName: "c", BrokerName: "b", ID: 1, CheckCode: "1"})
	mustOK(t, fresh, ApplyBrokerID{ClusterName: "c", BrokerName: "b", ID: 2, CheckCode: "2"})
	zero := ElectInput{BrokerID: 2, Heard: []int64{1, 2}, Alive: func(int64) bool { return true },
		Info: func(int64) (Candidate, bool) { return Candidate{}, true }}
	zero.Warming = true
	if d := DecideElection(fresh.Set("b"), zero); d.Outcome != Elected || d.Master != 2 {
		t.Fatalf("new set: %+v", d)
	}
}

// TestSetWithAHistoryElectedByController: nobody asks (Apache's brokers,
// whose epoch is above the new controller's, never do): the controller's
// own election of a set with a history and no master here takes the most
// up-to-date registered live replica once the table is warm, and nobody
// while a newer log is unregistered; a new set without a history waits
// for a broker to ask, as before.
func TestSetWithAHistoryElectedByController(t *testing.T) {
	s := New()
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, CheckCode: "h:2;taken"})
	info := map[int64]Candidate{1: {Epoch: 3, MaxOffset: 900}, 2: {Epoch: 3, MaxOffset: 800}}
	in := ElectInput{BrokerID: ControllerTriggered, Heard: []int64{1, 2},
		Alive: func(id int64) bool { _, ok := info[id]; return ok },
		Info:  func(id int64) (Candidate, bool) { c, ok := info[id]; return c, ok }}
	if d := DecideElection(s.Set("a"), in); d.Outcome != NoneEligible {
		t.Fatalf("elected 2 while 1's newer log is unregistered: %+v", d)
	}
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 1, CheckCode: "h:1;taken"})
	warming := in
	warming.Warming = true
	if d := DecideElection(s.Set("a"), warming); d.Outcome != NoneEligible {
		t.Fatalf("elected while the heartbeat table warms up: %+v", d)
	}
	if d := DecideElection(s.Set("a"), in); d.Outcome != Elected || d.Master != 1 {
		t.Fatalf("the most up-to-date registered replica: %+v", d)
	}
	fresh := New()
	mustOK(t, fresh, ApplyBrokerID{ClusterName: "c", BrokerName: "b", ID: 1, CheckCode: "1"})
	none := ElectInput{BrokerID: ControllerTriggered, Heard: []int64{1}, Alive: func(int64) bool { return true },
		Info: func(int64) (Candidate, bool) { return Candidate{}, true }}
	if d := DecideElection(fresh.Set("b"), none); d.Outcome != NoneEligible {
		t.Fatalf("a new set elected by the controller: %+v", d)
	}
}

// set3 is a set with replicas 1..3 in the SyncStateSet, master m (0: none),
// past its first election.
func set3(m int64, sss ...int64) *BrokerSet {
	return &BrokerSet{BrokerName: "a", NextAssignBrokerID: 4, MasterBrokerID: m, MasterEpoch: 5, SyncStateSetEpoch: 7,
		Replicas:     map[int64]Replica{1: {ID: 1}, 2: {ID: 2}, 3: {ID: 3}},
		SyncStateSet: sss}
}

func TestElectionPolicy(t *testing.T) {
	const gib = int64(1) << 30
	all := func(int64) bool { return true }
	not := func(dead ...int64) func(int64) bool {
		return func(id int64) bool { return !slices.Contains(dead, id) }
	}
	infos := func(m map[int64]Candidate) func(int64) (Candidate, bool) {
		return func(id int64) (Candidate, bool) { c, ok := m[id]; return c, ok }
	}
	tests := []struct {
		name string
		set  *BrokerSet
		in   ElectInput
		want Decision
	}{
		{"old master alive stays", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: all}, Decision{Outcome: StillMaster, Master: 1}},
		{"higher epoch wins", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 4, MaxOffset: 900}, 3: {Epoch: 5, MaxOffset: 100}})}, Decision{Outcome: Elected, Master: 3}},
		{"larger offset wins at equal epoch", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 5, MaxOffset: 900}, 3: {Epoch: 5, MaxOffset: 100}})}, Decision{Outcome: Elected, Master: 2}},
		{"gap over 2 GiB (#10578)", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 5, MaxOffset: 100}, 3: {Epoch: 5, MaxOffset: 100 + 3*gib}})}, Decision{Outcome: Elected, Master: 3}},
		{"gap over 4 GiB the other way", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 5, MaxOffset: 5*gib + 1}, 3: {Epoch: 5, MaxOffset: 1}})}, Decision{Outcome: Elected, Master: 2}},
		{"smaller priority breaks ties", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 5, MaxOffset: 9, Priority: 3}, 3: {Epoch: 5, MaxOffset: 9, Priority: 1}})}, Decision{Outcome: Elected, Master: 3}},
		{"recently heard beats stale", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 5, MaxOffset: 900, Stale: true}, 3: {Epoch: 5, MaxOffset: 100}})}, Decision{Outcome: Elected, Master: 3}},
		{"all stale: the usual order", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 5, MaxOffset: 900, Stale: true}, 3: {Epoch: 5, MaxOffset: 100, Stale: true}})}, Decision{Outcome: Elected, Master: 2}},
		{"heartbeat data beats none", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{3: {Epoch: 1}})}, Decision{Outcome: Elected, Master: 3}},
		{"no data: smallest id", set3(1, 1, 2, 3), ElectInput{BrokerID: -1, Alive: not(1)}, Decision{Outcome: Elected, Master: 2}},
		{"only alive members", set3(1, 1, 3), ElectInput{BrokerID: -1, Alive: not(1),
			Info: infos(map[int64]Candidate{2: {Epoch: 9, MaxOffset: 999}})}, Decision{Outcome: Elected, Master: 3}},
		{"nobody alive in the set", set3(1, 1, 2), ElectInput{BrokerID: -1, Alive: not(1, 2)}, Decision{Outcome: NoneEligible}},
		{"unclean falls back to any alive", set3(1, 1, 2), ElectInput{BrokerID: -1, Alive: not(1, 2), Unclean: true}, Decision{Outcome: Elected, Master: 3, Unclean: true}},
		{"unclean prefers the set", set3(1, 1, 2), ElectInput{BrokerID: -1, Alive: not(1), Unclean: true}, Decision{Outcome: Elected, Master: 2}},
		{"designate a member", set3(1, 1, 2, 3), ElectInput{BrokerID: 3, Designate: true, Alive: all}, Decision{Outcome: Elected, Master: 3}},
		{"designate the master", set3(1, 1, 2, 3), ElectInput{BrokerID: 1, Designate: true, Alive: all}, Decision{Outcome: StillMaster, Master: 1}},
		{"designate outside the set", set3(1, 1, 2), ElectInput{BrokerID: 3, Designate: true, Alive: all}, Decision{Outcome: NoneEligible}},
		{"designate outside, unclean", set3(1, 1, 2), ElectInput{BrokerID: 3, Designate: true, Alive: all, Unclean: true}, Decision{Outcome: Elected, Master: 3, Unclean: true}},
		{"designate a dead member", set3(1, 1, 2, 3), ElectInput{BrokerID: 3, Designate: true, Alive: not(3)}, Decision{Outcome: NoneEligible}},
		{"broker-triggered keeps a live master", set3(1, 1, 2), ElectInput{BrokerID: 2, Alive: all}, Decision{Outcome: StillMaster, Master: 1}},
		{"no master now, set member alive", set3(0, 2), ElectInput{BrokerID: 3, Alive: all}, Decision{Outcome: Elected, Master: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideElection(tt.set, tt.in); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEncodeDecode(t *testing.T) {
	cmds := []Command{
		ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 1, Address: "x", CheckCode: "y"},
		UpdateBrokerAddress{BrokerName: "a", ID: 1, Address: "z"},
		AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 2, ExpectSSSEpoch: 3, NewSet: []int64{1, 2}},
		ElectMaster{BrokerName: "a", ExpectMasterEpoch: 2, ExpectSSSEpoch: 3, NewMaster: 2, Unclean: true},
		CleanBrokerData{BrokerName: "a", IDs: []int64{2}},
	}
	for _, c := range cmds {
		data, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if data[0] != byte(c.Type()) {
			t.Fatalf("%s: type byte %d", c.Type(), data[0])
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Encode(got)
		if !bytes.Equal(data, again) {
			t.Fatalf("%s: round trip %s != %s", c.Type(), data, again)
		}
	}
	if _, err := Decode([]byte{99, '{', '}'}); err == nil {
		t.Fatal("unknown type decoded")
	}
	if _, err := Decode(nil); err == nil {
		t.Fatal("empty entry decoded")
	}
}

func TestFSMUnknownTypePanics(t *testing.T) {
	f := NewFSM()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "unknown command type") {
			t.Fatalf("recovered %v", r)
		}
	}()
	f.Apply(&raft.Log{Type: raft.LogCommand, Index: 7, Data: []byte{42, '{', '}'}})
}

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func TestSnapshotRoundTrip(t *testing.T) {
	f := NewFSM()
	apply := func(c Command) Result {
		data, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		return f.Apply(&raft.Log{Type: raft.LogCommand, Data: data}).(Result)
	}
	apply(ApplyBrokerID{ClusterName: "c", BrokerName: "b", ID: 1, Address: "h:1", CheckCode: "1"})
	apply(ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 1, Address: "h:1", CheckCode: "1"})
	apply(ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 2, Address: "h:2", CheckCode: "2"})
	apply(ElectMaster{BrokerName: "a", NewMaster: 2})
	if r := apply(AlterSyncStateSet{BrokerName: "a", ExpectMaster: 2, ExpectMasterEpoch: 1, ExpectSSSEpoch: 1, NewSet: []int64{2, 1}}); !r.OK() {
		t.Fatalf("alter: %+v", r)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	want := `{"version":1,"brokerSets":[` +
		`{"clusterName":"c","brokerName":"a","nextAssignBrokerId":3,"masterBrokerId":2,"masterEpoch":1,"syncStateSet":[1,2],"syncStateSetEpoch":2,` +
		`"replicas":[{"id":1,"address":"h:1","checkCode":"1"},{"id":2,"address":"h:2","checkCode":"2"}]},` +
		`{"clusterName":"c","brokerName":"b","nextAssignBrokerId":2,"masterBrokerId":0,"masterEpoch":0,"syncStateSet":[],"syncStateSetEpoch":0,` +
		`"replicas":[{"id":1,"address":"h:1","checkCode":"1"}]}]}`
	if sink.String() != want {
		t.Fatalf("snapshot\n%s\nwant\n%s", sink.String(), want)
	}
	g := NewFSM()
	apply2 := ApplyBrokerID{ClusterName: "c", BrokerName: "gone", ID: 1}
	data, _ := Encode(apply2)
	g.Apply(&raft.Log{Type: raft.LogCommand, Data: data})
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !g.st.Equal(f.st) {
		t.Fatal("restored state differs")
	}
	if _, ok := g.Get("gone"); ok {
		t.Fatal("restore kept a set that is not in the snapshot")
	}
	if err := g.Restore(io.NopCloser(strings.NewReader(`{"version":2,"brokerSets":[]}`))); err == nil {
		t.Fatal("restored an unknown snapshot version")
	}
}

// TestEpochsNeverDecrease runs a command sequence and checks invariant 1
// after each step, plus that each masterEpoch names at most one master.
func TestEpochsNeverDecrease(t *testing.T) {
	s := twoReplicas(t)
	mustOK(t, s, ApplyBrokerID{ClusterName: "c", BrokerName: "a", ID: 3, CheckCode: "3"})
	seen := map[int32]int64{1: 1}
	prev := *s.Set("a")
	steps := []Command{
		AlterSyncStateSet{BrokerName: "a", ExpectMaster: 1, ExpectMasterEpoch: 1, ExpectSSSEpoch: 2, NewSet: []int64{1, 2, 3}},
		ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 3, NewMaster: 3},
		ElectMaster{BrokerName: "a", ExpectMasterEpoch: 1, ExpectSSSEpoch: 3, NewMaster: 2}, // stale: refused
		ElectMaster{BrokerName: "a", ExpectMasterEpoch: 2, ExpectSSSEpoch: 4},
		ElectMaster{BrokerName: "a", ExpectMasterEpoch: 3, ExpectSSSEpoch: 4, NewMaster: 3},
		CleanBrokerData{BrokerName: "a", IDs: []int64{3}},
	}
	for i, c := range steps {
		s.Apply(c)
		checkInvariants(t, s)
		b := s.Set("a")
		if b == nil {
			break
		}
		if b.MasterEpoch < prev.MasterEpoch || b.SyncStateSetEpoch < prev.SyncStateSetEpoch {
			t.Fatalf("step %d: epochs went back %d/%d -> %d/%d", i, prev.MasterEpoch, prev.SyncStateSetEpoch, b.MasterEpoch, b.SyncStateSetEpoch)
		}
		if b.HasMaster() {
			if m, ok := seen[b.MasterEpoch]; ok && m != b.MasterBrokerID {
				t.Fatalf("step %d: epoch %d names masters %d and %d", i, b.MasterEpoch, m, b.MasterBrokerID)
			}
			seen[b.MasterEpoch] = b.MasterBrokerID
		}
		prev = *b
	}
}
