package state

import (
	"cmp"
	"slices"
)

// ControllerTriggered is the brokerId of an election the controller starts
// itself (ELECT_MASTER's "-1 = none").
const ControllerTriggered int64 = -1

// Candidate is what a replica last reported in its heartbeat.
type Candidate struct {
	Epoch     int32
	MaxOffset int64
	Priority  int32 // smaller is preferred
	// Stale: last heard more than half its heartbeat timeout ago. Live
	// replicas heartbeat every second; one that died silently with the
	// master (a host lost) is still alive in the table until its own
	// timeout, up to a heartbeat interval after the master's.
	Stale bool
}

// ElectInput is everything an election decision reads besides the set.
// Alive and Info come from the leader's liveness table, which is not
// replicated: the decision (the chosen id) is.
type ElectInput struct {
	BrokerID  int64 // requester; ControllerTriggered for the controller
	Designate bool  // admin electMaster: BrokerID is the only acceptable choice
	Unclean   bool  // enableElectUncleanMaster on this node
	Alive     func(id int64) bool
	Info      func(id int64) (Candidate, bool)
	// Heard lists the set's ids with a live heartbeat, registered or not:
	// replicas of a set whose controllers lost their state heartbeat
	// before they have applied for their ids again.
	Heard []int64
	// Warming: this node's heartbeat table is younger than its warm-up,
	// so a live replica may not be in Heard yet.
	Warming bool
}

// Outcome of an election decision.
type Outcome int

const (
	// Elected: Decision.Master becomes master (a command must be applied).
	Elected Outcome = iota
	// StillMaster: the policy chose the current master; nothing changes.
	StillMaster
	// NoneEligible: nobody can be master.
	NoneEligible
)

// Decision is DecideElection's answer. Unclean is set when the master comes
// from outside the SyncStateSet; it travels in the ElectMaster command.
type Decision struct {
	Outcome Outcome
	Master  int64
	Unclean bool
}

// DecideElection is the election policy of docs/replication.md §2.3.
func DecideElection(b *BrokerSet, in ElectInput) Decision {
	if b.MasterEpoch == 0 {
		if in.BrokerID != ControllerTriggered {
			return firstMaster(b, in)
		}
		if hasHistory(in) {
			return firstMasterByController(b, in)
		}
	}
	prefer := NoMaster
	if in.Designate {
		prefer = in.BrokerID
	}
	alive := func(id int64) bool { return in.Alive != nil && in.Alive(id) }
	var pool []int64
	for _, id := range b.SyncStateSet {
		if _, ok := b.Replicas[id]; ok && alive(id) {
			pool = append(pool, id)
		}
	}
	if id, ok := pick(b, pool, prefer, in.Info); ok {
		return decided(b, id, false)
	}
	if in.Unclean {
		pool = pool[:0]
		for _, id := range b.ReplicaIDs() {
			if alive(id) {
				pool = append(pool, id)
			}
		}
		if id, ok := pick(b, pool, prefer, in.Info); ok {
			return decided(b, id, !b.InSyncStateSet(id))
		}
	}
	return Decision{Outcome: NoneEligible}
}

// firstMaster decides for a set that never had a master here. A new set
// takes the first replica that asks. A set with a history (its controllers
// lost their state, or replaced others) must take its most up-to-date
// replica instead: one that heartbeats a newer log than the requester's is
// elected if it is registered, and otherwise nobody is yet (it applies for
// its id again within a poll, and the requester asks again). Nobody is
// elected either while the heartbeat table warms up: the newest replica
// may not have been heard yet.
func firstMaster(b *BrokerSet, in ElectInput) Decision {
	if in.Warming && hasHistory(in) {
		return Decision{Outcome: NoneEligible}
	}
	// best over every live replica, chosen over registered ones (the
	// requester first: it wins ties).
	chosen, best := in.BrokerID, in.BrokerID
	for _, id := range in.Heard {
		if newerLog(id, best, in.Info) {
			best = id
		}
		if _, ok := b.Replicas[id]; ok && in.Alive != nil && in.Alive(id) && newerLog(id, chosen, in.Info) {
			chosen = id
		}
	}
	if newerLog(best, chosen, in.Info) {
		return Decision{Outcome: NoneEligible}
	}
	return decided(b, chosen, false)
}

// firstMasterByController is firstMaster when nobody asks: the controller's
// scan of a set with a history and no master here. Apache's brokers, back
// under controllers that lost their state, hold an epoch above the new
// controller's 0 and never ask for an election; ours do ask. The most
// up-to-date live replica is elected once it is registered, and not during
// the warm-up.
func firstMasterByController(b *BrokerSet, in ElectInput) Decision {
	if in.Warming {
		return Decision{Outcome: NoneEligible}
	}
	alive := func(id int64) bool { return in.Alive != nil && in.Alive(id) }
	var pool []int64
	for _, id := range in.Heard {
		if _, ok := b.Replicas[id]; ok && alive(id) {
			pool = append(pool, id)
		}
	}
	chosen, ok := pick(b, pool, NoMaster, in.Info)
	if !ok {
		return Decision{Outcome: NoneEligible}
	}
	for _, id := range in.Heard {
		if newerLog(id, chosen, in.Info) {
			return Decision{Outcome: NoneEligible} // not registered again yet
		}
	}
	return decided(b, chosen, false)
}

// hasHistory reports whether the requester or a live replica heartbeated
// an epoch or a non-empty log.
func hasHistory(in ElectInput) bool {
	if in.Info == nil {
		return false
	}
	for _, id := range append([]int64{in.BrokerID}, in.Heard...) {
		if c, ok := in.Info(id); ok && (c.Epoch > 0 || c.MaxOffset > 0) {
			return true
		}
	}
	return false
}

// newerLog reports whether replica x heartbeated a strictly newer log than
// y: a higher epoch, or the same epoch and more of it. A replica without
// heartbeat data counts as an empty log.
func newerLog(x, y int64, info func(int64) (Candidate, bool)) bool {
	if info == nil {
		return false
	}
	cx, okx := info(x)
	if !okx {
		return false
	}
	cy, oky := info(y)
	if !oky {
		return cx.Epoch > 0 || cx.MaxOffset > 0
	}
	return cx.Epoch > cy.Epoch || (cx.Epoch == cy.Epoch && cx.MaxOffset > cy.MaxOffset)
}

func decided(b *BrokerSet, id int64, unclean bool) Decision {
	if id == b.MasterBrokerID && b.HasMaster() {
		return Decision{Outcome: StillMaster, Master: id}
	}
	return Decision{Outcome: Elected, Master: id, Unclean: unclean}
}

// pick chooses from pool: the old master if it is there (and not
// overridden by prefer), else prefer if it is there, else the best by
// heartbeat data.
func pick(b *BrokerSet, pool []int64, prefer int64, info func(int64) (Candidate, bool)) (int64, bool) {
	if len(pool) == 0 {
		return 0, false
	}
	if b.HasMaster() && slices.Contains(pool, b.MasterBrokerID) && (prefer == NoMaster || prefer == b.MasterBrokerID) {
		return b.MasterBrokerID, true
	}
	if prefer != NoMaster {
		return prefer, slices.Contains(pool, prefer)
	}
	best := slices.Clone(pool)
	slices.SortStableFunc(best, func(x, y int64) int { return compareCandidates(x, y, info) })
	return best[0], true
}

// compareCandidates orders better candidates first: recently heard ones
// (not Stale), then higher epoch, then higher maxOffset, then smaller
// priority, then smaller id; replicas without heartbeat data last. Every
// candidate of a clean election is in the SyncStateSet and holds every
// acknowledged message, so preferring the replicas heard lately costs no
// data and keeps a replica that died silently with the master from being
// elected in its place. Offsets are compared as int64 values, never
// by subtracting (a difference over 2 GiB does not fit an int32, which made
// upstream elect a lagging replica in
// org/apache/rocketmq/controller/elect/impl/DefaultElectPolicy.java).
func compareCandidates(x, y int64, info func(int64) (Candidate, bool)) int {
	var cx, cy Candidate
	var okx, oky bool
	if info != nil {
		cx, okx = info(x)
		cy, oky = info(y)
	}
	if okx != oky {
		if okx {
			return -1
		}
		return 1
	}
	if okx {
		if cx.Stale != cy.Stale {
			if cy.Stale {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(cy.Epoch, cx.Epoch); c != 0 {
			return c
		}
		if c := cmp.Compare(cy.MaxOffset, cx.MaxOffset); c != 0 {
			return c
		}
		if c := cmp.Compare(cx.Priority, cy.Priority); c != 0 {
			return c
		}
	}
	return cmp.Compare(x, y)
}
