package controller

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/namesrv/controller/state"
)

// defaultHeartbeatTimeout applies when a heartbeat carries no
// heartbeatTimeoutMills (upstream's default).
const defaultHeartbeatTimeout = 10 * time.Second

// liveKey identifies a replica in the liveness table.
type liveKey struct {
	cluster, brokerName string
	id                  int64
}

// liveBroker is what the last heartbeat said (docs/replication.md §2.2).
type liveBroker struct {
	addr          string
	lastUpdate    time.Time
	timeout       time.Duration
	epoch         int32
	maxOffset     int64
	confirmOffset int64
	priority      int32
	connID        uint64 // 0: no connection known (tests, one-way over another path)
}

// heartbeat is one BROKER_HEARTBEAT's content.
type heartbeat struct {
	key           liveKey
	addr          string
	timeout       time.Duration
	epoch         int32
	maxOffset     int64
	confirmOffset int64
	priority      int32
	connID        uint64
}

// liveness is the per-node, unreplicated table of broker heartbeats. Every
// node keeps it warm because brokers heartbeat every controller; only the
// leader acts on it.
type liveness struct {
	mu      sync.Mutex
	now     func() time.Time
	started time.Time
	warmup  time.Duration
	brokers map[liveKey]*liveBroker
}

func newLiveness(now func() time.Time, warmup time.Duration) *liveness {
	return &liveness{now: now, started: now(), warmup: warmup, brokers: map[liveKey]*liveBroker{}}
}

// update records a heartbeat. Each report overwrites the last one (one
// ordered connection per controller), so a replica that truncated its log
// does not keep advertising its old, higher offset.
func (l *liveness) update(h heartbeat) {
	if h.timeout <= 0 {
		h.timeout = defaultHeartbeatTimeout
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.brokers[h.key] = &liveBroker{addr: h.addr, lastUpdate: l.now(), timeout: h.timeout, epoch: h.epoch,
		maxOffset: h.maxOffset, confirmOffset: h.confirmOffset, priority: h.priority, connID: h.connID}
}

// find is the entry of brokerName's replica id in any cluster (sets are
// keyed by brokerName alone in the replicated state).
func (l *liveness) find(brokerName string, id int64) *liveBroker {
	for k, b := range l.brokers {
		if k.brokerName == brokerName && k.id == id {
			return b
		}
	}
	return nil
}

func (l *liveness) aliveAt(b *liveBroker, now time.Time) bool {
	return b != nil && !b.lastUpdate.Add(b.timeout).Before(now)
}

// alive reports whether the replica's last heartbeat is within its timeout.
func (l *liveness) alive(brokerName string, id int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.aliveAt(l.find(brokerName, id), l.now())
}

// addr is the address the replica last heartbeated from ("" if unknown).
func (l *liveness) addr(brokerName string, id int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.find(brokerName, id); b != nil {
		return b.addr
	}
	return ""
}

// candidate is the election input of a live replica.
func (l *liveness) candidate(brokerName string, id int64) (state.Candidate, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.find(brokerName, id)
	now := l.now()
	if !l.aliveAt(b, now) {
		return state.Candidate{}, false
	}
	return state.Candidate{Epoch: b.epoch, MaxOffset: b.maxOffset, Priority: b.priority,
		Stale: now.Sub(b.lastUpdate) > b.timeout/2}, true
}

// electInput binds the table into an election's inputs.
func (l *liveness) electInput(brokerName string, brokerID int64, designate, unclean bool) state.ElectInput {
	return state.ElectInput{
		BrokerID: brokerID, Designate: designate, Unclean: unclean,
		Alive: func(id int64) bool { return l.alive(brokerName, id) },
		Info:  func(id int64) (state.Candidate, bool) { return l.candidate(brokerName, id) },
		Heard: l.heard(brokerName), Warming: l.warming(brokerID == state.ControllerTriggered),
	}
}

// warming reports whether the table is younger than its warm-up; for an
// election the controller starts itself, twice that: a replica of ours
// asks for the election of a set back under controllers that lost their
// state as soon as the warm-up ends, keeping the master its slaves still
// follow, and the controller's own pick (for Apache's brokers, which never
// ask) comes after.
func (l *liveness) warming(byController bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.warmup
	if byController {
		w *= 2
	}
	return l.now().Sub(l.started) < w
}

// heard lists the ids of brokerName with a live heartbeat, ascending.
func (l *liveness) heard(brokerName string) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var ids []int64
	for k, b := range l.brokers {
		if k.brokerName == brokerName && l.aliveAt(b, now) {
			ids = append(ids, k.id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// maxEpoch is the highest epoch any replica of brokerName reported in a
// heartbeat still in the table (0 if none).
func (l *liveness) maxEpoch(brokerName string) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var e int32
	for k, b := range l.brokers {
		if k.brokerName == brokerName {
			e = max(e, b.epoch)
		}
	}
	return e
}

// removeConn drops every entry that heartbeated over connection connID and
// returns their keys: a closed connection means the broker is gone now,
// not after its timeout.
func (l *liveness) removeConn(connID uint64) []liveKey {
	if connID == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []liveKey
	for k, b := range l.brokers {
		if b.connID == connID {
			delete(l.brokers, k)
			out = append(out, k)
		}
	}
	return out
}

// expire drops entries whose timeout passed and returns them. During the
// warm-up after start nothing expires: the table starts empty, and a
// broker that has not yet heartbeated this node is not known to be dead.
func (l *liveness) expire() []liveKey {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.started) < l.warmup {
		return nil
	}
	var out []liveKey
	for k, b := range l.brokers {
		if !l.aliveAt(b, now) {
			delete(l.brokers, k)
			out = append(out, k)
		}
	}
	return out
}

// parsePriority maps a missing electionPriority to the least preferred.
func parsePriority(s string, parse func(string) (int64, error)) int32 {
	if s == "" {
		return math.MaxInt32
	}
	v, err := parse(s)
	if err != nil || v > math.MaxInt32 || v < math.MinInt32 {
		return math.MaxInt32
	}
	return int32(v)
}
