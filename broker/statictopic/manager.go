package statictopic

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/jsonfile"
	"github.com/rmqgo/rmq/pkg/protocol"
	st "github.com/rmqgo/rmq/pkg/statictopic"
)

// Errors of Manager.Update. The 513 handler maps ErrInvalidMapping to
// INVALID_PARAMETER and the others to SYSTEM_ERROR, as Java answers every
// refused update.
var (
	// ErrInvalidMapping: the detail breaks a rule on its own (wrong
	// broker, bad item list, physical queue mapped twice).
	ErrInvalidMapping = errors.New("invalid static topic mapping")
	// ErrStaleEpoch: the detail's epoch is older than the stored one.
	ErrStaleEpoch = errors.New("stale static topic mapping epoch")
	// ErrConflict: the detail contradicts the stored one (scope, a
	// decided segment changed, leader changed under the same epoch).
	ErrConflict = errors.New("static topic mapping conflicts with the stored one")
	// ErrBusy: another update held the lock for longer than LockTimeout.
	ErrBusy = errors.New("static topic mapping update busy")
)

// LockTimeout bounds the wait for the update lock (Java's 3 s tryLock).
const LockTimeout = 3 * time.Second

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Path of topicQueueMapping.json; "" keeps the table in memory only.
	Path string
	// BrokerName is this broker's name: every stored detail carries it.
	BrokerName string
	Logger     *slog.Logger
}

// table is an immutable snapshot: readers load it without locking.
type table struct {
	details map[string]*protocol.TopicQueueMappingDetail
	version protocol.DataVersion
}

// Manager is the static-topic mapping table (Java's
// TopicQueueMappingManager). It implements mapping.Source. Stored details
// are never modified in place: an update swaps in a new table.
type Manager struct {
	opts ManagerOptions
	log  *slog.Logger

	sem       chan struct{} // the update lock, with a timed acquire
	persistMu sync.Mutex
	cur       atomic.Pointer[table]
}

// OpenManager loads the table from opts.Path (or its .bak) if present.
func OpenManager(opts ManagerOptions) (*Manager, error) {
	if opts.BrokerName == "" {
		return nil, errors.New("statictopic: ManagerOptions.BrokerName is required")
	}
	defaults.Logger(&opts.Logger)
	log := opts.Logger
	m := &Manager{opts: opts, log: log, sem: make(chan struct{}, 1)}
	t := &table{details: map[string]*protocol.TopicQueueMappingDetail{}, version: protocol.DataVersion{Timestamp: time.Now().UnixMilli()}}
	if err := m.load(t); err != nil {
		return nil, err
	}
	m.cur.Store(t)
	return m, nil
}

// fileFormat is Java's TopicQueueMappingSerializeWrapper (details despite
// the key name, §2.6).
type fileFormat struct {
	DataVersion              protocol.DataVersion                        `json:"dataVersion"`
	TopicQueueMappingInfoMap map[string]protocol.TopicQueueMappingDetail `json:"topicQueueMappingInfoMap"`
}

func (m *Manager) load(t *table) error {
	if m.opts.Path == "" {
		return nil
	}
	var ff fileFormat
	found, err := jsonfile.Read(m.opts.Path, "topicQueueMapping.json", m.log, func(b []byte) error {
		ff = fileFormat{}
		return protocol.Unmarshal(b, &ff)
	})
	if err != nil {
		return fmt.Errorf("statictopic: %w", err)
	}
	if !found {
		return nil
	}
	for topic, d := range ff.TopicQueueMappingInfoMap {
		d := normalize(d)
		if d.Topic == "" {
			d.Topic = topic
		}
		if d.Bname != m.opts.BrokerName {
			// A file copied from another broker: kept (Java does), but
			// this broker leads none of its queues.
			m.log.Warn("static topic mapping names another broker", "topic", topic, "bname", d.Bname, "broker", m.opts.BrokerName)
		}
		t.details[topic] = &d
	}
	t.version = ff.DataVersion
	return nil
}

// normalize fills Java's defaults: empty maps instead of null, global scope.
func normalize(d protocol.TopicQueueMappingDetail) protocol.TopicQueueMappingDetail {
	if d.Scope == "" {
		d.Scope = protocol.MappingScopeGlobal
	}
	if d.CurrIDMap == nil {
		d.CurrIDMap = map[int]int{}
	}
	if d.HostedQueues == nil {
		d.HostedQueues = map[int][]protocol.LogicQueueMappingItem{}
	}
	return d
}

// cloneDetail deep-copies a detail.
func cloneDetail(d *protocol.TopicQueueMappingDetail) protocol.TopicQueueMappingDetail {
	out := *d
	out.CurrIDMap = maps.Clone(d.CurrIDMap)
	if out.CurrIDMap == nil {
		out.CurrIDMap = map[int]int{}
	}
	out.HostedQueues = make(map[int][]protocol.LogicQueueMappingItem, len(d.HostedQueues))
	for g, items := range d.HostedQueues {
		out.HostedQueues[g] = slices.Clone(items)
	}
	return out
}

// BrokerName is the name every stored detail must carry.
func (m *Manager) BrokerName() string { return m.opts.BrokerName }

// lookup returns the stored detail of a topic, shared: callers must not
// modify it. This is the request path's one map lookup.
func (m *Manager) lookup(topic string) *protocol.TopicQueueMappingDetail {
	return m.cur.Load().details[topic]
}

// Led reports whether the topic has a mapping on this broker (a static
// topic) and which of its logic queues this broker leads, ascending: the
// ids whose list ends with this broker, as the currIdMap it registers
// (docs/static-topics.md §5.1). The gRPC send picks among them (no copy of
// the detail is made).
func (m *Manager) Led(topic string) (ids []int32, static bool) {
	d := m.lookup(topic)
	if d == nil {
		return nil, false
	}
	for g, items := range d.HostedQueues {
		if l := leaderOf(items); l != nil && l.Bname == m.opts.BrokerName && d.Bname == m.opts.BrokerName {
			ids = append(ids, int32(g))
		}
	}
	slices.Sort(ids)
	return ids, true
}

// Get implements mapping.Source: a copy of the topic's detail.
func (m *Manager) Get(topic string) (protocol.TopicQueueMappingDetail, bool) {
	d := m.lookup(topic)
	if d == nil {
		return protocol.TopicQueueMappingDetail{}, false
	}
	return cloneDetail(d), true
}

// All implements mapping.Source: copies of every detail and the version.
func (m *Manager) All() (map[string]protocol.TopicQueueMappingDetail, protocol.DataVersion) {
	t := m.cur.Load()
	out := make(map[string]protocol.TopicQueueMappingDetail, len(t.details))
	for k, d := range t.details {
		out[k] = cloneDetail(d)
	}
	return out, t.version
}

// Len is the number of topics with a mapping.
func (m *Manager) Len() int { return len(m.cur.Load().details) }

// DataVersion is the mapping table's version.
func (m *Manager) DataVersion() protocol.DataVersion { return m.cur.Load().version }

// UpdateOptions qualify Manager.Update (Java's force, isClean, flush).
type UpdateOptions struct {
	// Force skips the epoch and immutability checks; stored lists missing
	// from the new detail are kept.
	Force bool
	// Flush bumps the data version and persists the file.
	Flush bool
	// Before runs under the update lock after every check passed and
	// before the detail is stored; an error aborts the update, so a caller
	// applies a companion change (the topic config of request 513) and
	// the mapping together or neither.
	Before func() error
}

func (m *Manager) lock() error {
	t := time.NewTimer(LockTimeout)
	defer t.Stop()
	select {
	case m.sem <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: lock not acquired within %v", ErrBusy, LockTimeout)
	}
}

func (m *Manager) unlock() { <-m.sem }

// Update validates a new detail against the per-list invariants and the
// stored detail (docs/static-topics.md §3.2) and stores it. Lists of the stored
// detail that the new one lacks are kept as backups when the epoch grew.
// On error nothing changes.
func (m *Manager) Update(d protocol.TopicQueueMappingDetail, o UpdateOptions) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.unlock()
	n := normalize(cloneDetail(&d))
	n.Dirty = false
	if n.Bname != m.opts.BrokerName {
		return fmt.Errorf("%w: bname %q is not this broker %q", ErrInvalidMapping, n.Bname, m.opts.BrokerName)
	}
	if n.Topic == "" {
		return fmt.Errorf("%w: empty topic", ErrInvalidMapping)
	}
	if n.TotalQueues < 0 {
		return fmt.Errorf("%w: totalQueues %d", ErrInvalidMapping, n.TotalQueues)
	}
	for _, g := range slices.Sorted(maps.Keys(n.HostedQueues)) {
		if g < 0 || (n.TotalQueues > 0 && g >= n.TotalQueues) {
			return fmt.Errorf("%w: logic queue %d outside [0, totalQueues %d)", ErrInvalidMapping, g, n.TotalQueues)
		}
		if err := checkItems(n.HostedQueues[g]); err != nil {
			return fmt.Errorf("%w: logic queue %d: %v", ErrInvalidMapping, g, err)
		}
	}
	if err := checkNoReuse(n.HostedQueues); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMapping, err)
	}

	cur := m.cur.Load()
	if old := cur.details[n.Topic]; old != nil {
		if err := merge(&n, old, o.Force); err != nil {
			return err
		}
		// Backups carried over must not collide with the new lists.
		if err := checkNoReuse(n.HostedQueues); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidMapping, err)
		}
	}
	if o.Before != nil {
		if err := o.Before(); err != nil {
			return err
		}
	}
	next := &table{details: maps.Clone(cur.details), version: cur.version}
	next.details[n.Topic] = &n
	if o.Flush {
		next.version = nextVersion(next.version)
	}
	m.cur.Store(next)
	m.log.Info("static topic mapping updated", "topic", n.Topic, "epoch", n.Epoch, "totalQueues", n.TotalQueues,
		"hosted", len(n.HostedQueues), "force", o.Force)
	if o.Flush {
		return m.Persist()
	}
	return nil
}

// merge checks n against the stored detail and carries stored lists over
// (§3.2 steps 5–9).
func merge(n *protocol.TopicQueueMappingDetail, old *protocol.TopicQueueMappingDetail, force bool) error {
	if force {
		for g, items := range old.HostedQueues {
			if _, ok := n.HostedQueues[g]; !ok {
				n.HostedQueues[g] = slices.Clone(items)
			}
		}
		return nil
	}
	if n.Epoch < old.Epoch {
		return fmt.Errorf("%w: topic %s: epoch %d is older than the stored %d", ErrStaleEpoch, n.Topic, n.Epoch, old.Epoch)
	}
	if n.Scope != old.Scope {
		return fmt.Errorf("%w: topic %s: scope %q differs from the stored %q", ErrConflict, n.Topic, n.Scope, old.Scope)
	}
	equal := n.Epoch == old.Epoch
	for _, g := range slices.Sorted(maps.Keys(old.HostedQueues)) {
		oldItems := old.HostedQueues[g]
		newItems, ok := n.HostedQueues[g]
		if !ok {
			if equal {
				return fmt.Errorf("%w: topic %s: logic queue %d is missing under the same epoch %d", ErrConflict, n.Topic, g, n.Epoch)
			}
			n.HostedQueues[g] = slices.Clone(oldItems)
			continue
		}
		if err := st.CheckImmutable(oldItems, newItems, equal); err != nil {
			return fmt.Errorf("%w: topic %s logic queue %d: %v", ErrConflict, n.Topic, g, err)
		}
	}
	return nil
}

// nextVersion is Java's DataVersion.nextVersion.
func nextVersion(v protocol.DataVersion) protocol.DataVersion {
	v.Counter++
	now := time.Now().UnixMilli()
	if now <= v.Timestamp {
		now = v.Timestamp + 1
	}
	v.Timestamp = now
	return v
}

// Delete removes a topic's mapping (DELETE_TOPIC_IN_BROKER), bumping the
// version and persisting. It reports whether there was one.
func (m *Manager) Delete(topic string) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.unlock()
	cur := m.cur.Load()
	if _, ok := cur.details[topic]; !ok {
		return false, nil
	}
	next := &table{details: maps.Clone(cur.details), version: nextVersion(cur.version)}
	delete(next.details, topic)
	m.cur.Store(next)
	m.log.Info("static topic mapping deleted", "topic", topic)
	return true, m.Persist()
}

// edit replaces the stored detail of a topic with f's result without the
// checks of Update: the clean service removes items and backup lists,
// which an update under the same epoch would refuse. f gets a copy; it
// returns false to leave the detail alone.
func (m *Manager) edit(topic string, f func(d *protocol.TopicQueueMappingDetail) bool) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.unlock()
	cur := m.cur.Load()
	old := cur.details[topic]
	if old == nil {
		return false, nil
	}
	d := cloneDetail(old)
	if !f(&d) {
		return false, nil
	}
	next := &table{details: maps.Clone(cur.details), version: cur.version}
	next.details[topic] = &d
	m.cur.Store(next)
	return true, nil
}

// bump advances the data version (after a round of edits).
func (m *Manager) bump() error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.unlock()
	cur := m.cur.Load()
	m.cur.Store(&table{details: cur.details, version: nextVersion(cur.version)})
	return nil
}

// ReplaceAll makes the table a copy of details at version dv (a slave's
// copy of its master's mappings, which travel in GET_ALL_TOPIC_CONFIG's
// topicQueueMappingDetailMap) and persists it. An equal version is a
// no-op; it reports whether anything changed. The details name the master's
// broker name, which is the slave's too.
func (m *Manager) ReplaceAll(details map[string]protocol.TopicQueueMappingDetail, dv protocol.DataVersion) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.unlock()
	if m.cur.Load().version.Equal(dv) {
		return false, nil
	}
	next := &table{details: make(map[string]*protocol.TopicQueueMappingDetail, len(details)), version: dv}
	for topic, d := range details {
		n := normalize(cloneDetail(&d))
		if n.Topic == "" {
			n.Topic = topic
		}
		next.details[topic] = &n
	}
	m.cur.Store(next)
	m.log.Info("static topic mappings copied from the master", "topics", len(next.details), "dataVersion", dv)
	return true, m.Persist()
}

// Persist writes the current table to the file (pretty-printed, as Java).
func (m *Manager) Persist() error {
	if m.opts.Path == "" {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	t := m.cur.Load()
	ff := fileFormat{DataVersion: t.version, TopicQueueMappingInfoMap: make(map[string]protocol.TopicQueueMappingDetail, len(t.details))}
	for k, d := range t.details {
		ff.TopicQueueMappingInfoMap[k] = *d
	}
	if err := jsonfile.Write(m.opts.Path, ff); err != nil {
		return fmt.Errorf("statictopic: %w", err)
	}
	return nil
}
