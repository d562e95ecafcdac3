package client

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rmqgo/rmq/remoting"
)

// ConsumerGroupInfo is a snapshot of one consumer group (Java's
// ConsumerGroupInfo).
type ConsumerGroupInfo struct {
	Group            string
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	// Subscriptions by topic, from the latest full heartbeat.
	Subscriptions map[string]SubscriptionData
	// Channels sorted by client id.
	Channels   []ChannelInfo
	LastUpdate time.Time
}

// ClientIDs returns the client ids of the channels, sorted.
func (g ConsumerGroupInfo) ClientIDs() []string {
	out := make([]string, 0, len(g.Channels))
	for _, c := range g.Channels {
		out = append(out, c.ClientID)
	}
	return out
}

// Change says that a group's membership or subscriptions changed and who
// is left in it; the caller decides whether to notify (NOTIFY_CONSUMER_IDS_CHANGED).
type Change struct {
	Group        string
	MessageModel string
	// Channels are the group's remaining channels.
	Channels []*remoting.Channel
	// GroupRemoved: the last channel left and the group is gone.
	GroupRemoved bool
}

type consumerGroup struct {
	consumeType, messageModel, fromWhere string
	subs                                 map[string]SubscriptionData
	chans                                map[*remoting.Channel]*ChannelInfo
	lastUpdate                           time.Time
}

func (g *consumerGroup) channelList() []*remoting.Channel {
	infos := make([]*ChannelInfo, 0, len(g.chans))
	for _, c := range g.chans {
		infos = append(infos, c)
	}
	slices.SortFunc(infos, func(a, b *ChannelInfo) int { return cmp.Compare(a.ClientID, b.ClientID) })
	out := make([]*remoting.Channel, len(infos))
	for i, c := range infos {
		out[i] = c.Channel
	}
	return out
}

type compensated struct {
	sub  SubscriptionData
	seen time.Time
}

// ConsumerManager is the consumer group table (Java's ConsumerManager).
// Safe for concurrent use; lookups return copies.
type ConsumerManager struct {
	opts ManagerOptions

	mu          sync.RWMutex
	groups      map[string]*consumerGroup
	topicGroups map[string]map[string]struct{} // topic → groups subscribing it
	// compensation holds subscriptions learned from pulls that carry their
	// own subscription (pull/lite-pull consumers, tools) so that stats and
	// lookups know them without a heartbeat (Java's consumerCompensationTable).
	compensation map[string]map[string]compensated
}

// NewConsumerManager returns an empty table.
func NewConsumerManager(opts ManagerOptions) *ConsumerManager {
	return &ConsumerManager{
		opts:         opts.withDefaults(),
		groups:       map[string]*consumerGroup{},
		topicGroups:  map[string]map[string]struct{}{},
		compensation: map[string]map[string]compensated{},
	}
}

// Register records a heartbeat of one consumer group (Java's
// registerConsumer / registerConsumerWithoutSub). With updateSubs the
// group's subscriptions become subs: topics added or removed count as a
// change, a newer subVersion replaces an entry silently (as Java does).
// It reports whether the channel is new and whether the subscribed topics
// changed, plus the group's channels for a notification.
func (m *ConsumerManager) Register(group string, info ChannelInfo, consumeType, messageModel, fromWhere string,
	subs []SubscriptionData, updateSubs bool) (channelAdded, subsChanged bool, ch Change) {
	now := m.opts.Now()
	info.LastUpdate = now
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		g = &consumerGroup{subs: map[string]SubscriptionData{}, chans: map[*remoting.Channel]*ChannelInfo{}}
		m.groups[group] = g
	}
	g.consumeType, g.messageModel, g.fromWhere = consumeType, messageModel, fromWhere
	g.lastUpdate = now

	if cur := g.chans[info.Channel]; cur == nil {
		g.chans[info.Channel] = &info
		channelAdded = true
		m.opts.Logger.Info("new consumer connected", "group", group, "clientId", info.ClientID, "consumeType", consumeType,
			"messageModel", messageModel, "remote", info.RemoteAddr())
	} else {
		if cur.ClientID != info.ClientID {
			m.opts.Logger.Error("consumer channel exists with another clientId", "group", group, "old", cur.ClientID, "new", info.ClientID)
		}
		*cur = info
	}

	if updateSubs {
		seen := make(map[string]struct{}, len(subs))
		for _, s := range subs {
			seen[s.Topic] = struct{}{}
			old, ok := g.subs[s.Topic]
			switch {
			case !ok:
				g.subs[s.Topic] = s.clone()
				subsChanged = true
				m.opts.Logger.Info("subscription changed, add new topic", "group", group, "topic", s.Topic, "sub", s.SubString)
			case s.SubVersion > old.SubVersion:
				g.subs[s.Topic] = s.clone()
			}
		}
		for t := range g.subs {
			if _, ok := seen[t]; !ok {
				delete(g.subs, t)
				m.removeTopicGroupLocked(t, group)
				subsChanged = true
				m.opts.Logger.Warn("subscription changed, remove topic", "group", group, "topic", t)
			}
		}
	}
	for t := range g.subs {
		m.addTopicGroupLocked(t, group)
	}
	return channelAdded, subsChanged, Change{Group: group, MessageModel: g.messageModel, Channels: g.channelList()}
}

func (m *ConsumerManager) addTopicGroupLocked(topic, group string) {
	gs := m.topicGroups[topic]
	if gs == nil {
		gs = map[string]struct{}{}
		m.topicGroups[topic] = gs
	}
	gs[group] = struct{}{}
}

func (m *ConsumerManager) removeTopicGroupLocked(topic, group string) {
	if gs := m.topicGroups[topic]; gs != nil {
		delete(gs, group)
		if len(gs) == 0 {
			delete(m.topicGroups, topic)
		}
	}
}

// removeChannelLocked drops ch from group; ok is false when it was not there.
func (m *ConsumerManager) removeChannelLocked(group string, ch *remoting.Channel) (Change, bool) {
	g := m.groups[group]
	if g == nil || g.chans[ch] == nil {
		return Change{}, false
	}
	info := g.chans[ch]
	delete(g.chans, ch)
	m.opts.Logger.Info("unregister a consumer", "group", group, "clientId", info.ClientID, "remote", info.RemoteAddr())
	c := Change{Group: group, MessageModel: g.messageModel, Channels: g.channelList()}
	if len(g.chans) == 0 {
		delete(m.groups, group)
		for t := range g.subs {
			m.removeTopicGroupLocked(t, group)
		}
		c.GroupRemoved = true
		m.opts.Logger.Info("consumer group has no connection left, removed", "group", group)
	}
	return c, true
}

// Unregister removes a channel from a group (UNREGISTER_CLIENT).
func (m *ConsumerManager) Unregister(group string, ch *remoting.Channel) (Change, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeChannelLocked(group, ch)
}

// ChannelClosed removes a channel from every group it belongs to.
func (m *ConsumerManager) ChannelClosed(ch *remoting.Channel) []Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Change
	for _, group := range slices.Sorted(maps.Keys(m.groups)) {
		if c, ok := m.removeChannelLocked(group, ch); ok {
			out = append(out, c)
		}
	}
	return out
}

// Expired is a channel dropped by ScanNotActive.
type Expired struct {
	Change
	Channel *remoting.Channel
}

// ScanNotActive removes channels silent for longer than the expiry (the
// caller closes them and notifies) and forgets stale compensated
// subscriptions.
func (m *ConsumerManager) ScanNotActive() []Expired {
	now, timeout := m.opts.Now(), m.opts.ChannelExpiredTimeout()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Expired
	for _, group := range slices.Sorted(maps.Keys(m.groups)) {
		g := m.groups[group]
		var stale []*remoting.Channel
		for ch, info := range g.chans {
			if expired(now, info.LastUpdate, timeout) {
				m.opts.Logger.Warn("remove expired consumer channel", "group", group, "clientId", info.ClientID, "remote", info.RemoteAddr())
				stale = append(stale, ch)
			}
		}
		for _, ch := range stale {
			if c, ok := m.removeChannelLocked(group, ch); ok {
				out = append(out, Expired{Change: c, Channel: ch})
			}
		}
	}
	subTimeout := m.opts.SubscriptionExpiredTimeout()
	for group, subs := range m.compensation {
		for t, c := range subs {
			if expired(now, c.seen, subTimeout) {
				delete(subs, t)
			}
		}
		if len(subs) == 0 {
			delete(m.compensation, group)
		}
	}
	return out
}

// CompensateSubscription remembers a subscription a pull carried (sysFlag
// subscription bit), for groups that do not heartbeat it.
func (m *ConsumerManager) CompensateSubscription(group string, sub SubscriptionData) {
	m.mu.Lock()
	defer m.mu.Unlock()
	subs := m.compensation[group]
	if subs == nil {
		subs = map[string]compensated{}
		m.compensation[group] = subs
	}
	subs[sub.Topic] = compensated{sub: sub.clone(), seen: m.opts.Now()}
}

// GroupInfo returns a snapshot of a registered group.
func (m *ConsumerManager) GroupInfo(group string) (ConsumerGroupInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil {
		return ConsumerGroupInfo{}, false
	}
	info := ConsumerGroupInfo{
		Group: group, ConsumeType: g.consumeType, MessageModel: g.messageModel, ConsumeFromWhere: g.fromWhere,
		Subscriptions: make(map[string]SubscriptionData, len(g.subs)), LastUpdate: g.lastUpdate,
	}
	for t, s := range g.subs {
		info.Subscriptions[t] = s.clone()
	}
	for _, c := range g.chans {
		info.Channels = append(info.Channels, *c)
	}
	slices.SortFunc(info.Channels, func(a, b ChannelInfo) int { return cmp.Compare(a.ClientID, b.ClientID) })
	return info, true
}

// FindSubscription returns the group's subscription of topic: the
// registered one, else one learned from pulls (compensated). Heartbeat-only
// callers (pull without subscription flag) use RegisteredSubscription.
func (m *ConsumerManager) FindSubscription(group, topic string) (SubscriptionData, bool) {
	if s, ok := m.RegisteredSubscription(group, topic); ok {
		return s, true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if c, ok := m.compensation[group][topic]; ok {
		return c.sub.clone(), true
	}
	return SubscriptionData{}, false
}

// RegisteredSubscription returns the subscription of topic from the
// group's heartbeats only.
func (m *ConsumerManager) RegisteredSubscription(group, topic string) (SubscriptionData, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.groups[group]
	if g == nil {
		return SubscriptionData{}, false
	}
	s, ok := g.subs[topic]
	return s.clone(), ok
}

// SubscriptionCount is the number of heartbeat-registered subscriptions.
func (m *ConsumerManager) SubscriptionCount(group string) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		return len(g.subs)
	}
	return 0
}

// MessageModel returns the group's message model (CLUSTERING/BROADCASTING).
func (m *ConsumerManager) MessageModel(group string) (string, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		return g.messageModel, true
	}
	return "", false
}

// ClientIDs returns the client ids of a group's channels, sorted.
func (m *ConsumerManager) ClientIDs(group string) []string {
	info, _ := m.GroupInfo(group)
	return info.ClientIDs()
}

// FindChannel returns the channel of (group, clientId) (GET_CONSUMER_RUNNING_INFO,
// CONSUME_MESSAGE_DIRECTLY forwarding).
func (m *ConsumerManager) FindChannel(group, clientID string) (ChannelInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		for _, c := range g.chans {
			if c.ClientID == clientID {
				return *c, true
			}
		}
	}
	return ChannelInfo{}, false
}

// ChannelGroup returns the client info of ch in group.
func (m *ConsumerManager) ChannelGroup(group string, ch *remoting.Channel) (ChannelInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.groups[group]; g != nil {
		if c := g.chans[ch]; c != nil {
			return *c, true
		}
	}
	return ChannelInfo{}, false
}

// GroupsByTopic lists the groups subscribing topic, sorted (QUERY_TOPIC_CONSUME_BY_WHO).
func (m *ConsumerManager) GroupsByTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.topicGroups[topic]))
}

// Groups lists the registered groups, sorted.
func (m *ConsumerManager) Groups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.groups))
}
