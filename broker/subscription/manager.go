package subscription

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/jsonfile"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// FileName is the table's file under <storePathRootDir>/config (Java's
// BrokerPathConfigHelper.getSubscriptionGroupPath).
const FileName = "subscriptionGroup.json"

// ErrInvalidGroup: the group name breaks the naming rules.
var ErrInvalidGroup = errors.New("invalid group name")

// ErrInvalidAttribute: Options.CheckGroup refused the group's attributes.
var ErrInvalidAttribute = errors.New("invalid subscription group attribute")

// Groups Java's SubscriptionGroupManager.init creates at boot.
var systemGroups = []string{
	"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP",
	"CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS",
}

// Options configures a Manager.
type Options struct {
	// Config returns the live broker configuration (autoCreateSubscriptionGroup,
	// enableCreateSysGroup). Required.
	Config func() *config.Config
	// Path of subscriptionGroup.json; empty disables persistence.
	Path string
	// CleanOffsets drops a group's consumer offsets; DELETE_SUBSCRIPTIONGROUP
	// calls it when cleanOffset=true. Nil: offsets stay.
	CleanOffsets func(group string)
	// CheckGroup vets a group as Update would store it (attributes merged
	// over the old ones); an error refuses the update with
	// ErrInvalidAttribute (e.g. lite.bind.topic, checked by broker/lite).
	// Nil: no check.
	CheckGroup func(GroupConfig) error
	Logger     *slog.Logger
	// Now is the clock for data versions (default time.Now).
	Now func() time.Time
}

// Manager is the subscription group table; safe for concurrent use. It
// hands out copies.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu        sync.RWMutex
	groups    map[string]GroupConfig
	forbidden map[string]map[string]int
	version   protocol.DataVersion

	persistMu sync.Mutex
}

// DefaultPath is <storePathRootDir>/config/subscriptionGroup.json.
func DefaultPath(c *config.Config) string {
	return filepath.Join(c.ConfigDir(), FileName)
}

// New loads the table from Options.Path (or its .bak) over the system groups.
func New(opts Options) (*Manager, error) {
	if opts.Config == nil {
		return nil, errors.New("subscription: Options.Config is required")
	}
	defaults.Clock(&opts.Now)
	defaults.Logger(&opts.Logger)
	log := opts.Logger
	m := &Manager{
		opts:      opts,
		log:       log,
		groups:    map[string]GroupConfig{},
		forbidden: map[string]map[string]int{},
		version:   protocol.DataVersion{Timestamp: opts.Now().UnixMilli()},
	}
	for _, g := range systemGroups {
		m.groups[g] = NewGroupConfig(g)
	}
	if err := m.load(); err != nil {
		return nil, err
	}
	log.Info("subscription group table loaded", "groups", len(m.groups), "dataVersion", m.version)
	return m, nil
}

func (m *Manager) load() error {
	if m.opts.Path == "" {
		return nil
	}
	var loaded Wrapper
	found, err := jsonfile.Read(m.opts.Path, "subscriptionGroup.json", m.log, func(b []byte) error {
		w, err := DecodeWrapper(b)
		if err != nil {
			return err
		}
		loaded = w
		return nil
	})
	if err != nil {
		return fmt.Errorf("subscription: %w", err)
	}
	if !found {
		return nil
	}
	maps.Copy(m.groups, loaded.SubscriptionGroupTable)
	for g, t := range loaded.ForbiddenTable {
		m.forbidden[g] = maps.Clone(t)
	}
	m.version = loaded.DataVersion
	return nil
}

// persist writes the current table; concurrent callers each write the
// latest state, serialised.
func (m *Manager) persist() error {
	if m.opts.Path == "" {
		return nil
	}
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	ff := m.Wrapper()
	if err := jsonfile.Write(m.opts.Path, ff); err != nil {
		return fmt.Errorf("subscription: %w", err)
	}
	return nil
}

// nextVersionLocked is Java's DataVersion.nextVersion: counter+1, new
// timestamp (kept strictly increasing so two changes in one millisecond
// still differ).
func (m *Manager) nextVersionLocked() {
	now := m.opts.Now().UnixMilli()
	if now <= m.version.Timestamp {
		now = m.version.Timestamp + 1
	}
	m.version.Timestamp = now
	m.version.Counter++
}

// Find returns a group's config without creating it.
func (m *Manager) Find(group string) (GroupConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.groups[group]
	if !ok {
		return GroupConfig{}, false
	}
	return c.Clone(), true
}

// Contains reports whether the group exists.
func (m *Manager) Contains(group string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.groups[group]
	return ok
}

// FindOrCreate is Java's findSubscriptionGroupConfig: an unknown group with
// a valid name is created with defaults when autoCreateSubscriptionGroup is
// on (or, with enableCreateSysGroup, for CID_RMQ_SYS_* groups). ok is false
// when the group neither exists nor may be created.
func (m *Manager) FindOrCreate(group string) (GroupConfig, bool) {
	if c, ok := m.Find(group); ok {
		return c, true
	}
	cfg := m.opts.Config()
	sysCreate := cfg.EnableCreateSysGroup && strings.HasPrefix(group, protocol.CIDSysPrefix)
	if !cfg.AutoCreateSubscriptionGroup && !sysCreate {
		return GroupConfig{}, false
	}
	if protocol.ValidateGroup(group) != nil {
		return GroupConfig{}, false
	}
	m.mu.Lock()
	if c, ok := m.groups[group]; ok {
		m.mu.Unlock()
		return c.Clone(), true
	}
	c := NewGroupConfig(group)
	m.groups[group] = c
	m.nextVersionLocked()
	m.mu.Unlock()
	m.log.Info("auto create a subscription group", "group", group)
	if err := m.persist(); err != nil {
		// As Java: the group exists in memory even if the file write failed.
		m.log.Error("persist subscription groups", "err", err)
	}
	return c.Clone(), true
}

// Update creates or replaces a group's config (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
// Attributes use the admin syntax: "+k" sets k, "-k" removes it, a plain
// key sets it; they apply over the group's current attributes.
func (m *Manager) Update(c GroupConfig) error {
	if err := protocol.ValidateGroup(c.GroupName); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidGroup, err)
	}
	c = c.Clone()
	if c.GroupRetryPolicy.Type == "" {
		c.GroupRetryPolicy.Type = RetryPolicyCustomized
	}
	m.mu.Lock()
	attrs := map[string]string{}
	old, existed := m.groups[c.GroupName]
	if existed {
		maps.Copy(attrs, old.Attributes)
	}
	for k, v := range c.Attributes {
		switch {
		case strings.HasPrefix(k, "+"):
			attrs[k[1:]] = v
		case strings.HasPrefix(k, "-"):
			delete(attrs, k[1:])
		default:
			attrs[k] = v
		}
	}
	c.Attributes = attrs
	if m.opts.CheckGroup != nil {
		if err := m.opts.CheckGroup(c); err != nil {
			m.mu.Unlock()
			return fmt.Errorf("%w: group %s: %v", ErrInvalidAttribute, c.GroupName, err)
		}
	}
	m.groups[c.GroupName] = c
	m.nextVersionLocked()
	m.mu.Unlock()
	if existed {
		m.log.Info("update subscription group config", "old", old, "new", c)
	} else {
		m.log.Info("create new subscription group", "config", c)
	}
	return m.persist()
}

// Delete removes a group (and its forbidden entries); it reports whether it
// existed.
func (m *Manager) Delete(group string) (bool, error) {
	m.mu.Lock()
	_, ok := m.groups[group]
	delete(m.groups, group)
	delete(m.forbidden, group)
	if ok {
		m.nextVersionLocked()
	}
	m.mu.Unlock()
	if !ok {
		m.log.Warn("delete subscription group failed, not exist", "group", group)
		return false, nil
	}
	m.log.Info("delete subscription group OK", "group", group)
	return true, m.persist()
}

// ReplaceAll makes the table a copy of w (a slave's copy of its master's,
// org/apache/rocketmq/broker/slave/SlaveSynchronize.java
// syncSubscriptionGroupConfig): groups the master lacks go, the version is
// the master's. An equal version is a no-op; it reports whether anything
// changed. No CheckGroup: the master vetted the groups.
func (m *Manager) ReplaceAll(w Wrapper) (bool, error) {
	m.mu.Lock()
	if m.version.Equal(w.DataVersion) {
		m.mu.Unlock()
		return false, nil
	}
	groups := make(map[string]GroupConfig, len(w.SubscriptionGroupTable))
	for name, c := range w.SubscriptionGroupTable {
		c = c.Clone()
		c.GroupName = name
		if c.GroupRetryPolicy.Type == "" {
			c.GroupRetryPolicy.Type = RetryPolicyCustomized
		}
		groups[name] = c
	}
	forbidden := make(map[string]map[string]int, len(w.ForbiddenTable))
	for g, t := range w.ForbiddenTable {
		forbidden[g] = maps.Clone(t)
	}
	m.groups, m.forbidden, m.version = groups, forbidden, w.DataVersion
	m.mu.Unlock()
	m.log.Info("subscription groups copied from the master", "groups", len(groups), "dataVersion", w.DataVersion)
	return true, m.persist()
}

// DecodeWrapper parses a GET_ALL_SUBSCRIPTIONGROUP_CONFIG body; each group
// is decoded over Java's defaults, as the table file is.
func DecodeWrapper(b []byte) (Wrapper, error) {
	var raw struct {
		DataVersion            protocol.DataVersion       `json:"dataVersion"`
		ForbiddenTable         map[string]map[string]int  `json:"forbiddenTable"`
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	if err := protocol.Unmarshal(b, &raw); err != nil {
		return Wrapper{}, err
	}
	w := Wrapper{DataVersion: raw.DataVersion, ForbiddenTable: raw.ForbiddenTable,
		SubscriptionGroupTable: make(map[string]GroupConfig, len(raw.SubscriptionGroupTable))}
	for name, rm := range raw.SubscriptionGroupTable {
		c, err := DecodeGroupConfig(rm)
		if err != nil {
			return Wrapper{}, fmt.Errorf("group %s: %w", name, err)
		}
		c.GroupName = name
		w.SubscriptionGroupTable[name] = c
	}
	return w, nil
}

// Snapshot returns a copy of the table and its version.
func (m *Manager) Snapshot() (map[string]GroupConfig, protocol.DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]GroupConfig, len(m.groups))
	for k, c := range m.groups {
		out[k] = c.Clone()
	}
	return out, m.version
}

// Len is the number of groups.
func (m *Manager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.groups)
}

// DataVersion is the table's current version.
func (m *Manager) DataVersion() protocol.DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// Forbidden reports the forbidden bits of (group, topic) (Java's
// getForbidden).
func (m *Manager) Forbidden(group, topic string) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return max(m.forbidden[group][topic], 0)
}

// IndexPermRead is the forbidden bit of reads (PermName.INDEX_PERM_READ).
const IndexPermRead = 2

// UpdateForbidden sets or clears one forbidden bit of (group, topic), as
// Java's SubscriptionGroupManager.updateForbidden: a value left at 0
// removes the group's whole entry, without a new data version or a write
// (as Java); otherwise the table gets a new version and is persisted.
func (m *Manager) UpdateForbidden(group, topic string, index int, set bool) error {
	m.mu.Lock()
	v := max(m.forbidden[group][topic], 0)
	if set {
		v |= 1 << index
	} else {
		v &^= 1 << index
	}
	if v <= 0 {
		delete(m.forbidden, group)
		m.mu.Unlock()
		m.log.Info("clear group forbidden", "group", group, "topic", topic)
		return nil
	}
	if m.forbidden[group] == nil {
		m.forbidden[group] = map[string]int{}
	}
	old := m.forbidden[group][topic]
	m.forbidden[group][topic] = v
	m.nextVersionLocked()
	m.mu.Unlock()
	m.log.Info("set group forbidden", "group", group, "topic", topic, "old", old, "new", v)
	return m.persist()
}

// Wrapper is the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (SubscriptionGroupWrapper)
// and, as in Java's SubscriptionGroupManager, the persisted file.
type Wrapper struct {
	DataVersion            protocol.DataVersion      `json:"dataVersion"`
	ForbiddenTable         map[string]map[string]int `json:"forbiddenTable"`
	SubscriptionGroupTable map[string]GroupConfig    `json:"subscriptionGroupTable"`
}

// Wrapper returns the whole table as the admin body.
func (m *Manager) Wrapper() Wrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := Wrapper{
		DataVersion:            m.version,
		ForbiddenTable:         make(map[string]map[string]int, len(m.forbidden)),
		SubscriptionGroupTable: make(map[string]GroupConfig, len(m.groups)),
	}
	for g, c := range m.groups {
		w.SubscriptionGroupTable[g] = c.Clone()
	}
	for g, t := range m.forbidden {
		w.ForbiddenTable[g] = maps.Clone(t)
	}
	return w
}

// RetryMaxTimes is the group's retryMaxTimes; ok is false when the group
// neither exists nor may be auto-created (FindOrCreate). It lets the
// Manager serve as send.Groups for sends to %RETRY% topics.
func (m *Manager) RetryMaxTimes(group string) (int32, bool) {
	c, ok := m.FindOrCreate(group)
	if !ok {
		return 0, false
	}
	return int32(c.RetryMaxTimes), true
}
