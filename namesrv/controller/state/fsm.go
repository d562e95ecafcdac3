package state

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
)

// snapshotVersion is the "version" of the snapshot JSON.
const snapshotVersion = 1

// FSM is the raft state machine over State. Reads (Get, NextBrokerID,
// Names) may run concurrently with Apply.
type FSM struct {
	mu sync.RWMutex
	st *State
}

// NewFSM returns an FSM over an empty state.
func NewFSM() *FSM { return &FSM{st: New()} }

// Apply implements raft.FSM. It returns a Result. An entry it cannot decode
// panics: it was written by a newer binary (or is corrupt), and applying
// the rest of the log without it would silently diverge from the nodes
// that understood it (docs/replication.md §2.6).
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	c, err := Decode(l.Data)
	if err != nil {
		panic(fmt.Sprintf("controller state: cannot apply raft log entry %d: %v", l.Index, err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.Apply(c)
}

// Get returns a copy of brokerName's record.
func (f *FSM) Get(brokerName string) (*BrokerSet, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b := f.st.Set(brokerName)
	if b == nil {
		return nil, false
	}
	return b.Clone(), true
}

// NextBrokerID is GetNextBrokerId.
func (f *FSM) NextBrokerID(brokerName string) int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.NextBrokerID(brokerName)
}

// Names lists the known broker sets.
func (f *FSM) Names() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.Names()
}

// snapshotSet is BrokerSet on disk: replicas as a list sorted by id.
type snapshotSet struct {
	BrokerSet
	Replicas []Replica `json:"replicas"`
}

type snapshotDoc struct {
	Version    int           `json:"version"`
	BrokerSets []snapshotSet `json:"brokerSets"`
}

// MarshalJSON is the snapshot form: {"version":1,"brokerSets":[...]}, sets
// sorted by name and replicas by id, so equal states give equal bytes.
func (s *State) MarshalJSON() ([]byte, error) {
	doc := snapshotDoc{Version: snapshotVersion, BrokerSets: []snapshotSet{}}
	for _, name := range s.Names() {
		b := s.sets[name]
		ss := snapshotSet{BrokerSet: *b}
		for _, id := range b.ReplicaIDs() {
			ss.Replicas = append(ss.Replicas, b.Replicas[id])
		}
		if ss.SyncStateSet == nil {
			ss.SyncStateSet = []int64{}
		}
		doc.BrokerSets = append(doc.BrokerSets, ss)
	}
	return json.Marshal(doc)
}

// UnmarshalJSON replaces s with a snapshot.
func (s *State) UnmarshalJSON(data []byte) error {
	var doc snapshotDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("state: decode snapshot: %w", err)
	}
	if doc.Version != snapshotVersion {
		return fmt.Errorf("state: snapshot version %d not supported (want %d)", doc.Version, snapshotVersion)
	}
	sets := make(map[string]*BrokerSet, len(doc.BrokerSets))
	for _, ss := range doc.BrokerSets {
		b := ss.BrokerSet
		b.Replicas = make(map[int64]Replica, len(ss.Replicas))
		for _, r := range ss.Replicas {
			b.Replicas[r.ID] = r
		}
		b.SyncStateSet = normalizeSet(b.SyncStateSet)
		b.CleanedIDs = normalizeSet(b.CleanedIDs)
		sets[b.BrokerName] = &b
	}
	s.sets = sets
	return nil
}

// Equal reports whether two states hold the same sets (tests, checks).
func (s *State) Equal(o *State) bool {
	return maps.EqualFunc(s.sets, o.sets, func(a, b *BrokerSet) bool {
		return a.ClusterName == b.ClusterName && a.BrokerName == b.BrokerName &&
			a.NextAssignBrokerID == b.NextAssignBrokerID && maps.Equal(a.Replicas, b.Replicas) &&
			a.MasterBrokerID == b.MasterBrokerID && a.MasterEpoch == b.MasterEpoch &&
			slices.Equal(a.SyncStateSet, b.SyncStateSet) && a.SyncStateSetEpoch == b.SyncStateSetEpoch &&
			slices.Equal(a.CleanedIDs, b.CleanedIDs)
	})
}

// Snapshot implements raft.FSM: the state is encoded now, under the read
// lock, so Persist may run while Apply continues.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	data, err := f.st.MarshalJSON()
	f.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("state: snapshot: %w", err)
	}
	return snapshot(data), nil
}

// Restore implements raft.FSM: the whole state is replaced.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("state: read snapshot: %w", err)
	}
	st := New()
	if err := st.UnmarshalJSON(data); err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

// Export returns the snapshot JSON of the current state (tests, debugging).
func (f *FSM) Export() ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.MarshalJSON()
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("state: write snapshot: %w", err)
	}
	return sink.Close()
}

func (snapshot) Release() {}
