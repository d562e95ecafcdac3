// Package topic is the broker's topic table (Java's TopicConfigManager): the
// system topics created at boot, admin creates/updates/deletes, creation from
// a default topic (TBW102) on first send, the DataVersion bumped on every
// change, and persistence to <storePathRootDir>/config/topics.json.
package topic

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/jsonfile"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Errors; the admin layer maps them to response codes.
var (
	// ErrInvalidTopic: the name breaks the naming rules.
	ErrInvalidTopic = errors.New("invalid topic name")
	// ErrInvalidConfig: queue numbers, perm, filter type or attributes are wrong.
	ErrInvalidConfig = errors.New("invalid topic config")
	// ErrNotFound: the topic (or the default topic to create it from) does not exist.
	ErrNotFound = errors.New("topic not exist")
	// ErrNotInheritable: the default topic lacks PERM_INHERIT (or auto-create is off).
	ErrNotInheritable = errors.New("default topic does not allow creating topics from it")
)

// Queue-number limits accepted by Update. Java sets none; 1024 is the size
// of its largest system topic (BenchmarkTest) [our choice]. 0 is allowed
// because static topics register non-target brokers with 0 queues.
const MaxQueueNums = 1024

// Queue counts of Java's boot-time system topics.
const (
	scheduleTopicQueueNums  = 18
	benchmarkTopicQueueNums = 1024
)

// Reply topic and revive topic name parts (Java MixAll / PopAckConstants).
const (
	ReplyTopicPostfix      = "REPLY_TOPIC"
	ReviveTopicPrefix      = protocol.SysTopicPrefix + "REVIVE_LOG_"
	SyncBrokerMemberPrefix = protocol.SysTopicPrefix + "SYNC_BROKER_MEMBER_"
	TimerTopic             = protocol.SysTopicPrefix + "wheel_timer"
)

// Options configures a Manager.
type Options struct {
	// Config returns the live broker configuration.
	Config func() *config.Config
	// Path of topics.json; empty disables persistence (tests).
	Path string
	// StateVersion is the store's state-machine version written into
	// DataVersion.stateVersion (nil: 0).
	StateVersion func() int64
	Logger       *slog.Logger
}

// Manager is safe for concurrent use. Values it returns are copies.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu      sync.RWMutex
	topics  map[string]protocol.TopicConfig
	version protocol.DataVersion
	system  map[string]bool // names created at boot, reserved like TopicValidator's set

	persistMu sync.Mutex // serialises file writes; each writes the latest table

	lmu       sync.Mutex
	listeners []func(changed []string)
}

// New builds the table: Java's boot-time system topics, overridden by what
// topics.json holds. The file is rewritten (and the version bumped) when
// boot changed the table, so the nameserver rebuilds its route data.
func New(opts Options) (*Manager, error) {
	if opts.Config == nil {
		return nil, errors.New("topic: Options.Config is required")
	}
	defaults.Logger(&opts.Logger)
	log := opts.Logger
	m := &Manager{
		opts:    opts,
		log:     log,
		topics:  map[string]protocol.TopicConfig{},
		system:  map[string]bool{},
		version: protocol.DataVersion{Timestamp: time.Now().UnixMilli()},
	}
	cfg := opts.Config()
	for _, tc := range systemTopics(cfg) {
		m.topics[tc.TopicName] = tc
		m.system[tc.TopicName] = true
	}

	fromFile, version, found, err := m.readFile()
	if err != nil {
		return nil, err
	}
	if found {
		maps.Copy(m.topics, fromFile)
		m.version = version
	}
	if !cfg.AutoCreateTopicEnable {
		// Java keeps a TBW102 loaded from an older run; we drop it so that
		// the nameserver stops offering it (docs/protocol.md §5.2).
		delete(m.topics, protocol.AutoCreateTopicKey)
	}
	if !found || !tablesEqual(m.topics, fromFile) {
		m.nextVersionLocked()
		if err := m.persist(); err != nil {
			return nil, err
		}
	}
	log.Info("topic table loaded", "topics", len(m.topics), "fromFile", len(fromFile), "dataVersion", m.version)
	return m, nil
}

// systemTopics lists what Java's TopicConfigManager.init creates.
func systemTopics(cfg *config.Config) []protocol.TopicConfig {
	mk := func(name string, queues, perm int) protocol.TopicConfig {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = queues, queues, perm
		return tc
	}
	rw := protocol.PermRead | protocol.PermWrite
	var out []protocol.TopicConfig
	out = append(out, mk(protocol.SelfTestTopic, 1, rw))
	if cfg.AutoCreateTopicEnable {
		out = append(out, mk(protocol.AutoCreateTopicKey, cfg.DefaultTopicQueueNums, rw|protocol.PermInherit))
	}
	out = append(out, mk(protocol.BenchmarkTopic, benchmarkTopicQueueNums, rw))
	clusterPerm := protocol.PermInherit
	if cfg.ClusterTopicEnable {
		clusterPerm |= rw
	}
	out = append(out, mk(cfg.BrokerClusterName, protocol.DefaultReadQueueNums, clusterPerm))
	brokerPerm := protocol.PermInherit
	if cfg.BrokerTopicEnable {
		brokerPerm |= rw
	}
	out = append(out, mk(cfg.BrokerName, 1, brokerPerm))
	out = append(out, mk(protocol.OffsetMovedEvent, 1, rw))
	out = append(out, mk(protocol.ScheduleTopic, scheduleTopicQueueNums, rw))
	if cfg.TraceTopicEnable {
		out = append(out, mk(cfg.MsgTraceTopicName, 1, rw))
	}
	out = append(out, mk(cfg.BrokerClusterName+"_"+ReplyTopicPostfix, 1, rw))
	out = append(out, mk(ReviveTopicPrefix+cfg.BrokerClusterName, cfg.ReviveQueueNum, rw))
	out = append(out, mk(SyncBrokerMemberPrefix+cfg.BrokerName, 1, protocol.PermInherit))
	out = append(out, mk(protocol.TransHalfTopic, 1, rw))
	out = append(out, mk(protocol.TransOpHalfTopic, 1, rw))
	if cfg.TimerWheelEnable {
		out = append(out, mk(TimerTopic, 1, rw))
	}
	return out
}

// OnChange registers f to run (outside the manager's locks) after every
// change of the table, with the names of the changed topics (empty when
// only the version moved).
func (m *Manager) OnChange(f func(changed []string)) {
	m.lmu.Lock()
	defer m.lmu.Unlock()
	m.listeners = append(m.listeners, f)
}

func (m *Manager) notify(changed []string) {
	if changed == nil {
		return
	}
	m.lmu.Lock()
	ls := slices.Clone(m.listeners)
	m.lmu.Unlock()
	for _, f := range ls {
		f(changed)
	}
}

// Get returns a topic's config.
func (m *Manager) Get(name string) (protocol.TopicConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tc, ok := m.topics[name]
	return cloneTC(tc), ok
}

// GetShared returns a topic's config with its Attributes map shared with
// the table, not copied: for hot read-only callers (each gRPC send reads
// its topic). The caller must not modify the map; the table never does
// (Update and the others store new maps), so reading it without the lock
// is safe.
func (m *Manager) GetShared(name string) (protocol.TopicConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	tc, ok := m.topics[name]
	return tc, ok
}

// Contains reports whether the topic exists.
func (m *Manager) Contains(name string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.topics[name]
	return ok
}

// Len is the number of topics.
func (m *Manager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.topics)
}

// Names returns the topic names, sorted.
func (m *Manager) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.topics))
}

// Snapshot returns a consistent copy of the table and its version.
func (m *Manager) Snapshot() (map[string]protocol.TopicConfig, protocol.DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]protocol.TopicConfig, len(m.topics))
	for k, tc := range m.topics {
		out[k] = cloneTC(tc)
	}
	return out, m.version
}

// DataVersion is the table's current version.
func (m *Manager) DataVersion() protocol.DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// SystemTopics is TopicValidator.getSystemTopicSet as a Java broker has it:
// the reserved names plus the topics created at boot (cluster, broker,
// reply, revive, ... topics), sorted.
func (m *Manager) SystemTopics() []string {
	names := map[string]bool{}
	for _, t := range protocol.SystemTopicNames() {
		names[t] = true
	}
	m.mu.RLock()
	for t := range m.system {
		names[t] = true
	}
	m.mu.RUnlock()
	out := make([]string, 0, len(names))
	for t := range names {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// IsSystemTopic reports reserved names: TopicValidator's fixed set, any
// rmq_sys_ topic, and the names created at boot (cluster, broker, reply…).
func (m *Manager) IsSystemTopic(name string) bool {
	if protocol.IsSystemTopic(name) {
		return true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.system[name]
}

// IsOrder reports whether a topic is an order topic.
func (m *Manager) IsOrder(name string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.topics[name].Order
}

// Validate checks a config's name, queue numbers, perm and filter type (not
// its attributes, which are checked against the current ones on update).
func Validate(tc protocol.TopicConfig) error {
	if err := protocol.ValidateTopic(tc.TopicName); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidTopic, err)
	}
	if tc.ReadQueueNums < 0 || tc.ReadQueueNums > MaxQueueNums || tc.WriteQueueNums < 0 || tc.WriteQueueNums > MaxQueueNums {
		return fmt.Errorf("%w: readQueueNums %d / writeQueueNums %d out of range [0, %d]",
			ErrInvalidConfig, tc.ReadQueueNums, tc.WriteQueueNums, MaxQueueNums)
	}
	if tc.Perm < 0 || tc.Perm > 7 {
		return fmt.Errorf("%w: perm %d out of range [0, 7] (R=4, W=2, X=1)", ErrInvalidConfig, tc.Perm)
	}
	switch tc.TopicFilterType {
	case protocol.SingleTag, protocol.MultiTag:
	default:
		return fmt.Errorf("%w: topicFilterType %q (want SINGLE_TAG or MULTI_TAG)", ErrInvalidConfig, tc.TopicFilterType)
	}
	return nil
}

// Update creates or replaces topics. Each config's Attributes holds admin
// modifications ("+k": v, "-k": "", see AlterAttributes), applied to the
// topic's current attributes. Configs are all validated before any is
// applied; unchanged ones are skipped. It returns the names that changed.
func (m *Manager) Update(list ...protocol.TopicConfig) ([]string, error) {
	m.mu.Lock()
	next := make([]protocol.TopicConfig, 0, len(list))
	seen := map[string]bool{}
	for _, req := range list {
		if req.TopicFilterType == "" {
			req.TopicFilterType = protocol.SingleTag
		}
		if err := Validate(req); err != nil {
			m.mu.Unlock()
			return nil, err
		}
		if seen[req.TopicName] {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: topic %s listed twice", ErrInvalidConfig, req.TopicName)
		}
		seen[req.TopicName] = true
		cur, exists := m.topics[req.TopicName]
		attrs, err := AlterAttributes(!exists, cur.Attributes, req.Attributes)
		if err != nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: topic %s: %v", ErrInvalidConfig, req.TopicName, err)
		}
		req.Attributes = attrs
		if exists && cur.Equal(req) {
			continue
		}
		next = append(next, req)
	}
	if len(next) == 0 {
		m.mu.Unlock()
		return nil, nil
	}
	changed := make([]string, 0, len(next))
	for _, tc := range next {
		if old, ok := m.topics[tc.TopicName]; ok {
			m.log.Info("update topic config", "old", old, "new", tc)
		} else {
			m.log.Info("create new topic", "config", tc)
		}
		m.topics[tc.TopicName] = tc
		changed = append(changed, tc.TopicName)
	}
	m.nextVersionLocked()
	m.mu.Unlock()
	return changed, m.afterChange(changed)
}

// CreateIfAbsent creates tc (attributes stored as given, without prefixes)
// unless the topic exists; it returns the topic's config and whether it was
// created. Used for retry/DLQ topics and other broker-created topics.
func (m *Manager) CreateIfAbsent(tc protocol.TopicConfig) (protocol.TopicConfig, bool, error) {
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = protocol.SingleTag
	}
	if err := Validate(tc); err != nil {
		return protocol.TopicConfig{}, false, err
	}
	tc.Attributes = normaliseStored(tc.Attributes)
	m.mu.Lock()
	if cur, ok := m.topics[tc.TopicName]; ok {
		m.mu.Unlock()
		return cloneTC(cur), false, nil
	}
	m.topics[tc.TopicName] = tc
	m.nextVersionLocked()
	m.mu.Unlock()
	m.log.Info("create new topic", "config", tc)
	return cloneTC(tc), true, m.afterChange([]string{tc.TopicName})
}

// CreateFromDefault is the send path's auto-create (docs/protocol.md §5.2): if
// topic is unknown and defaultTopic exists with PERM_INHERIT, create topic
// with min(clientQueueNums, default's writeQueueNums) queues, the default's
// perm without INHERIT and its filter type. TBW102 only serves as template
// while autoCreateTopicEnable is on. An existing topic is returned as is.
func (m *Manager) CreateFromDefault(topic, defaultTopic string, clientQueueNums, topicSysFlag int) (protocol.TopicConfig, bool, error) {
	if err := protocol.ValidateTopic(topic); err != nil {
		return protocol.TopicConfig{}, false, fmt.Errorf("%w: %v", ErrInvalidTopic, err)
	}
	autoCreate := m.opts.Config().AutoCreateTopicEnable
	m.mu.Lock()
	if cur, ok := m.topics[topic]; ok {
		m.mu.Unlock()
		return cloneTC(cur), false, nil
	}
	def, ok := m.topics[defaultTopic]
	if !ok {
		m.mu.Unlock()
		return protocol.TopicConfig{}, false, fmt.Errorf("%w: topic[%s] not exist, and default topic[%s] not exist", ErrNotFound, topic, defaultTopic)
	}
	perm := def.Perm
	if defaultTopic == protocol.AutoCreateTopicKey && !autoCreate {
		perm = protocol.PermRead | protocol.PermWrite
	}
	if perm&protocol.PermInherit == 0 {
		m.mu.Unlock()
		return protocol.TopicConfig{}, false, fmt.Errorf("%w: topic[%s] not exist, default topic[%s] has perm %s", ErrNotInheritable, topic, defaultTopic, protocol.PermString(perm))
	}
	queues := max(min(clientQueueNums, def.WriteQueueNums), 0)
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	tc.Perm = perm &^ protocol.PermInherit
	tc.TopicSysFlag = topicSysFlag
	tc.TopicFilterType = def.TopicFilterType
	m.topics[topic] = tc
	m.nextVersionLocked()
	m.mu.Unlock()
	m.log.Info("create new topic by default topic", "defaultTopic", defaultTopic, "config", tc)
	return cloneTC(tc), true, m.afterChange([]string{topic})
}

// Delete removes a topic; it reports whether it existed.
func (m *Manager) Delete(name string) (bool, error) {
	m.mu.Lock()
	if _, ok := m.topics[name]; !ok {
		m.mu.Unlock()
		return false, nil
	}
	delete(m.topics, name)
	m.nextVersionLocked()
	m.mu.Unlock()
	m.log.Info("delete topic config", "topic", name)
	return true, m.afterChange([]string{name})
}

// SetOrderTopics marks as order topics the existing topics named in the
// nameserver's ORDER_TOPIC_CONFIG table (REGISTER_BROKER response). As in
// Java, the flag is only ever set here, never cleared.
func (m *Manager) SetOrderTopics(table map[string]string) error {
	m.mu.Lock()
	var changed []string
	for name := range table {
		if tc, ok := m.topics[name]; ok && !tc.Order {
			tc.Order = true
			m.topics[name] = tc
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		m.mu.Unlock()
		return nil
	}
	m.nextVersionLocked()
	m.mu.Unlock()
	return m.afterChange(changed)
}

// EnsureAutoCreateTopic adds or removes TBW102 to follow a runtime change of
// autoCreateTopicEnable.
func (m *Manager) EnsureAutoCreateTopic() error {
	cfg := m.opts.Config()
	m.mu.Lock()
	_, has := m.topics[protocol.AutoCreateTopicKey]
	switch {
	case cfg.AutoCreateTopicEnable && !has:
		tc := protocol.NewTopicConfig(protocol.AutoCreateTopicKey)
		tc.ReadQueueNums, tc.WriteQueueNums = cfg.DefaultTopicQueueNums, cfg.DefaultTopicQueueNums
		tc.Perm = protocol.PermRead | protocol.PermWrite | protocol.PermInherit
		m.topics[tc.TopicName] = tc
		m.system[tc.TopicName] = true
	case !cfg.AutoCreateTopicEnable && has:
		delete(m.topics, protocol.AutoCreateTopicKey)
	default:
		m.mu.Unlock()
		return nil
	}
	m.nextVersionLocked()
	m.mu.Unlock()
	return m.afterChange([]string{protocol.AutoCreateTopicKey})
}

// ReplaceAll makes the table a copy of table at version dv (a slave's copy
// of its master's, org/apache/rocketmq/broker/slave/SlaveSynchronize.java
// syncTopicConfig): topics the master lacks go, the version is the
// master's. It reports whether anything changed; an equal version is a
// no-op.
func (m *Manager) ReplaceAll(table map[string]protocol.TopicConfig, dv protocol.DataVersion) (bool, error) {
	m.mu.Lock()
	if m.version.Equal(dv) {
		m.mu.Unlock()
		return false, nil
	}
	var changed []string
	for name := range m.topics {
		if _, ok := table[name]; !ok {
			changed = append(changed, name)
		}
	}
	next := make(map[string]protocol.TopicConfig, len(table))
	for name, tc := range table {
		tc = cloneTC(tc)
		tc.TopicName = name
		if old, ok := m.topics[name]; !ok || !old.Equal(tc) {
			changed = append(changed, name)
		}
		next[name] = tc
	}
	m.topics = next
	m.version = dv
	m.mu.Unlock()
	m.log.Info("topic table copied from the master", "topics", len(next), "changed", len(changed), "dataVersion", dv)
	return true, m.afterChange(changed)
}

// BumpDataVersion advances the version without changing topics, so that the
// nameserver rebuilds its route data (after a brokerPermission change).
func (m *Manager) BumpDataVersion() error {
	m.mu.Lock()
	m.nextVersionLocked()
	m.mu.Unlock()
	return m.afterChange([]string{})
}

// nextVersionLocked is Java's DataVersion.nextVersion(stateVersion).
func (m *Manager) nextVersionLocked() {
	var sv int64
	if m.opts.StateVersion != nil {
		sv = m.opts.StateVersion()
	}
	m.version.Counter++
	m.version.StateVersion = sv
	now := time.Now().UnixMilli()
	if now <= m.version.Timestamp {
		now = m.version.Timestamp + 1 // keep versions distinct within one millisecond
	}
	m.version.Timestamp = now
}

// afterChange persists and then notifies. A persistence failure is returned
// (the change stays in memory, as in Java) and still notifies, so the
// nameserver matches what the broker serves.
func (m *Manager) afterChange(changed []string) error {
	err := m.persist()
	m.notify(changed)
	return err
}

// fileFormat is topics.json: Java's TopicConfigSerializeWrapper.
type fileFormat struct {
	DataVersion      protocol.DataVersion            `json:"dataVersion"`
	TopicConfigTable map[string]protocol.TopicConfig `json:"topicConfigTable"`
}

func (m *Manager) persist() error {
	if m.opts.Path == "" {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.mu.RLock()
	ff := fileFormat{DataVersion: m.version, TopicConfigTable: make(map[string]protocol.TopicConfig, len(m.topics))}
	for k, tc := range m.topics {
		if tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
		ff.TopicConfigTable[k] = tc
	}
	m.mu.RUnlock()
	if err := jsonfile.Write(m.opts.Path, ff); err != nil {
		return fmt.Errorf("topic: %w", err)
	}
	return nil
}

// DecodeTable parses a topic table (topics.json, or the body of
// GET_ALL_TOPIC_CONFIG): dataVersion and topicConfigTable, each topic
// decoded over Java's defaults so absent fields keep TopicConfig's default
// values.
func DecodeTable(b []byte) (map[string]protocol.TopicConfig, protocol.DataVersion, error) {
	var raw struct {
		DataVersion      protocol.DataVersion       `json:"dataVersion"`
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
	}
	if err := protocol.Unmarshal(b, &raw); err != nil {
		return nil, protocol.DataVersion{}, err
	}
	table := make(map[string]protocol.TopicConfig, len(raw.TopicConfigTable))
	for name, rm := range raw.TopicConfigTable {
		tc := protocol.NewTopicConfig(name)
		if err := protocol.Unmarshal(rm, &tc); err != nil {
			return nil, protocol.DataVersion{}, fmt.Errorf("topic %s: %w", name, err)
		}
		tc.TopicName = name
		tc.Attributes = normaliseStored(tc.Attributes)
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = protocol.SingleTag
		}
		table[name] = tc
	}
	return table, raw.DataVersion, nil
}

// readFile loads topics.json (or its .bak). Topics are decoded over Java's
// defaults so absent fields keep TopicConfig's default values.
func (m *Manager) readFile() (map[string]protocol.TopicConfig, protocol.DataVersion, bool, error) {
	if m.opts.Path == "" {
		return nil, protocol.DataVersion{}, false, nil
	}
	var out map[string]protocol.TopicConfig
	var version protocol.DataVersion
	found, err := jsonfile.Read(m.opts.Path, "topics.json", m.log, func(b []byte) error {
		var err error
		out, version, err = DecodeTable(b)
		return err
	})
	if err != nil {
		return nil, protocol.DataVersion{}, false, fmt.Errorf("topic: %w", err)
	}
	if !found {
		return nil, protocol.DataVersion{}, false, nil
	}
	return out, version, true, nil
}

func cloneTC(tc protocol.TopicConfig) protocol.TopicConfig {
	tc.Attributes = maps.Clone(tc.Attributes)
	if tc.Attributes == nil && tc.TopicName != "" {
		tc.Attributes = map[string]string{}
	}
	return tc
}

func tablesEqual(a, b map[string]protocol.TopicConfig) bool {
	if len(a) != len(b) {
		return false
	}
	for k, tc := range a {
		o, ok := b[k]
		if !ok || !tc.Equal(o) {
			return false
		}
	}
	return true
}
