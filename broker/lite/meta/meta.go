// Package meta reads lite-topic metadata out of topic and subscription-group
// configs (docs/lite-topics.md §2.1, §2.2): which topics are parents and how long
// their lite topics live, which groups are lite groups and how they
// subscribe. It also keeps the per-sweep maps parent → TTL and parent →
// groups (§4.2).
package meta

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Subscription-group attributes of a lite group (§2.2).
const (
	AttrBindTopic              = "lite.bind.topic"
	AttrSubModel               = "lite.sub.model"
	AttrResetOffsetExclusive   = "lite.sub.reset.offset.exclusive"
	AttrResetOffsetUnsubscribe = "lite.sub.reset.offset.unsubscribe"
	AttrClientQuota            = "lite.sub.client.quota"
	AttrClientMaxEventCount    = "lite.sub.client.max.event.cnt"
	AttrWildcard               = "lite.sub.wildcard"
)

// Attribute values and defaults.
const (
	SubModelShared         = "Shared"
	SubModelExclusive      = "Exclusive"
	DefaultClientQuota     = 2000
	MinClientMaxEventCount = 10
)

// Topics is the part of the topic table lite code reads (*topic.Manager).
type Topics interface {
	Get(name string) (protocol.TopicConfig, bool)
	Snapshot() (map[string]protocol.TopicConfig, protocol.DataVersion)
}

// Groups is the part of the subscription-group table lite code reads
// (*subscription.Manager).
type Groups interface {
	Find(group string) (subscription.GroupConfig, bool)
	Snapshot() (map[string]subscription.GroupConfig, protocol.DataVersion)
}

// IsParent reports whether tc is a lite parent topic (message.type=LITE).
func IsParent(tc protocol.TopicConfig) bool {
	t, _ := tc.Attribute(topic.AttrMessageType)
	return t == topic.MessageTypeLite
}

// TTLMinutes is the parent's lite.topic.expiration in minutes; -1 (never
// expire) when absent, malformed or the topic is not LITE.
func TTLMinutes(tc protocol.TopicConfig) int64 {
	if !IsParent(tc) {
		return -1
	}
	v, ok := tc.Attribute(topic.AttrLiteTopicExpiration)
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Group is a lite group's settings.
type Group struct {
	Name          string
	BindTopic     string // "" for a non-lite group
	ConsumeEnable bool
	Exclusive     bool
	// ResetOnEvict: lite.sub.reset.offset.exclusive.
	ResetOnEvict bool
	// ResetOnUnsubscribe: lite.sub.reset.offset.unsubscribe.
	ResetOnUnsubscribe bool
	// ClientQuota is the max lite topics per client; ≤ 0 is unlimited.
	ClientQuota int64
	// MaxEventCount is lite.sub.client.max.event.cnt, -1 when absent (the
	// broker's maxClientEventCount applies).
	MaxEventCount int64
	Wildcard      bool
}

// IsLite reports a lite group.
func (g Group) IsLite() bool { return g.BindTopic != "" }

// GroupOf reads the lite settings of a group config.
func GroupOf(c subscription.GroupConfig) Group {
	a := c.Attributes
	g := Group{
		Name:          c.GroupName,
		BindTopic:     strings.TrimSpace(attr(a, AttrBindTopic)),
		ConsumeEnable: c.ConsumeEnable,
		ClientQuota:   DefaultClientQuota,
		MaxEventCount: -1,
	}
	g.Exclusive = strings.EqualFold(strings.TrimSpace(attr(a, AttrSubModel)), SubModelExclusive)
	g.ResetOnEvict = parseBool(attr(a, AttrResetOffsetExclusive))
	g.ResetOnUnsubscribe = parseBool(attr(a, AttrResetOffsetUnsubscribe))
	if v, ok := lookup(a, AttrClientQuota); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			g.ClientQuota = n
		}
	}
	if v, ok := lookup(a, AttrClientMaxEventCount); ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			g.MaxEventCount = max(n, MinClientMaxEventCount)
		}
	}
	_, g.Wildcard = lookup(a, AttrWildcard)
	return g
}

// BindTopicAttr returns the raw lite.bind.topic of a group's attributes and
// whether it is set at all (a blank value is set).
func BindTopicAttr(a map[string]string) (string, bool) { return lookup(a, AttrBindTopic) }

func lookup(a map[string]string, k string) (string, bool) {
	if v, ok := a[k]; ok {
		return v, true
	}
	v, ok := a["+"+k]
	return v, ok
}

func attr(a map[string]string, k string) string {
	v, _ := lookup(a, k)
	return v
}

func parseBool(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// Source resolves lite metadata from the live tables and keeps the maps
// the lifecycle sweep refreshes (parent → TTL minutes, parent → groups).
type Source struct {
	topics Topics
	groups Groups

	mu        sync.RWMutex
	ttl       map[string]int64
	subGroups map[string][]string
}

// NewSource returns a Source over the tables; call Refresh to fill the maps.
func NewSource(topics Topics, groups Groups) *Source {
	return &Source{topics: topics, groups: groups, ttl: map[string]int64{}, subGroups: map[string][]string{}}
}

// Topic returns a topic's config.
func (s *Source) Topic(name string) (protocol.TopicConfig, bool) { return s.topics.Get(name) }

// Group returns a group's lite settings; ok is false for an unknown group.
func (s *Source) Group(name string) (Group, bool) {
	c, ok := s.groups.Find(name)
	if !ok {
		return Group{}, false
	}
	return GroupOf(c), true
}

// Refresh rebuilds the parent → TTL and parent → groups maps (§4.2).
func (s *Source) Refresh() {
	ttl := map[string]int64{}
	topics, _ := s.topics.Snapshot()
	for name, tc := range topics {
		if IsParent(tc) {
			ttl[name] = TTLMinutes(tc)
		}
	}
	sub := map[string][]string{}
	groups, _ := s.groups.Snapshot()
	for name, c := range groups {
		if g := GroupOf(c); g.IsLite() {
			sub[g.BindTopic] = append(sub[g.BindTopic], name)
		}
	}
	s.mu.Lock()
	s.ttl, s.subGroups = ttl, sub
	s.mu.Unlock()
}

// TTL returns the parent's TTL in minutes as of the last Refresh; ok is
// false when the parent was not a LITE topic then.
func (s *Source) TTL(parent string) (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.ttl[parent]
	return v, ok
}

// TTLMap returns a copy of parent → TTL minutes.
func (s *Source) TTLMap() map[string]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]int64, len(s.ttl))
	for k, v := range s.ttl {
		out[k] = v
	}
	return out
}

// SubscriberGroups returns the lite groups bound to parent as of the last
// Refresh.
func (s *Source) SubscriberGroups(parent string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.subGroups[parent]...)
}

// GroupMap returns a copy of parent → lite groups.
func (s *Source) GroupMap() map[string][]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string][]string, len(s.subGroups))
	for k, v := range s.subGroups {
		// Sorted: admin output must not depend on map order.
		out[k] = slices.Sorted(slices.Values(v))
	}
	return out
}
