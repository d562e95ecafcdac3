package client

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rmqgo/rmq/remoting"
)

// ProducerManager is the producer group → channel table (Java's
// ProducerManager). Transaction checks and request/reply find producer
// channels here. Safe for concurrent use.
type ProducerManager struct {
	opts ManagerOptions

	mu       sync.RWMutex
	groups   map[string]map[*remoting.Channel]*ChannelInfo
	byClient map[string]*remoting.Channel // clientId → newest channel

	rr atomic.Uint64 // round-robin start for AvailableChannel
}

// NewProducerManager returns an empty table.
func NewProducerManager(opts ManagerOptions) *ProducerManager {
	return &ProducerManager{
		opts:     opts.withDefaults(),
		groups:   map[string]map[*remoting.Channel]*ChannelInfo{},
		byClient: map[string]*remoting.Channel{},
	}
}

// Register adds the channel to the group or refreshes its heartbeat time.
func (m *ProducerManager) Register(group string, info ChannelInfo) {
	info.LastUpdate = m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	chans := m.groups[group]
	if chans == nil {
		chans = map[*remoting.Channel]*ChannelInfo{}
		m.groups[group] = chans
	}
	if cur := chans[info.Channel]; cur != nil {
		cur.LastUpdate = info.LastUpdate
		return
	}
	chans[info.Channel] = &info
	m.byClient[info.ClientID] = info.Channel
	m.opts.Logger.Info("new producer connected", "group", group, "clientId", info.ClientID, "remote", info.RemoteAddr())
}

// Refresh updates the heartbeat time of a channel already in the group and
// reports whether it was; it adds nothing.
func (m *ProducerManager) Refresh(group string, ch *remoting.Channel) bool {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.groups[group][ch]
	if cur != nil {
		cur.LastUpdate = now
	}
	return cur != nil
}

// Unregister removes the channel from the group (UNREGISTER_CLIENT).
func (m *ProducerManager) Unregister(group string, ch *remoting.Channel) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removeLocked(group, ch)
}

func (m *ProducerManager) removeLocked(group string, ch *remoting.Channel) bool {
	chans := m.groups[group]
	info := chans[ch]
	if info == nil {
		return false
	}
	delete(chans, ch)
	if m.byClient[info.ClientID] == ch {
		delete(m.byClient, info.ClientID)
	}
	if len(chans) == 0 {
		delete(m.groups, group)
	}
	m.opts.Logger.Info("unregister a producer", "group", group, "clientId", info.ClientID, "remote", info.RemoteAddr())
	return true
}

// ChannelClosed removes the channel from every group.
func (m *ProducerManager) ChannelClosed(ch *remoting.Channel) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	removed := false
	for g := range m.groups {
		if m.removeLocked(g, ch) {
			removed = true
		}
	}
	return removed
}

// ScanNotActive removes channels silent for longer than the expiry and
// returns them (the caller closes them, as Java does).
func (m *ProducerManager) ScanNotActive() []*remoting.Channel {
	now, timeout := m.opts.Now(), m.opts.ChannelExpiredTimeout()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*remoting.Channel
	for g, chans := range m.groups {
		for ch, info := range chans {
			if expired(now, info.LastUpdate, timeout) {
				m.opts.Logger.Warn("remove expired producer channel", "group", g, "clientId", info.ClientID, "remote", info.RemoteAddr())
				m.removeLocked(g, ch)
				out = append(out, ch)
			}
		}
	}
	return out
}

// Channels returns the group's connections, sorted by client id.
func (m *ProducerManager) Channels(group string) []ChannelInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]ChannelInfo, 0, len(m.groups[group]))
	for _, info := range m.groups[group] {
		out = append(out, *info)
	}
	slices.SortFunc(out, func(a, b ChannelInfo) int { return cmp.Compare(a.ClientID, b.ClientID) })
	return out
}

// AvailableChannel picks a live channel of the group round-robin (Java's
// getAvailableChannel, used for CHECK_TRANSACTION_STATE); nil if none.
func (m *ProducerManager) AvailableChannel(group string) *remoting.Channel {
	infos := m.Channels(group)
	if len(infos) == 0 {
		return nil
	}
	start := int(m.rr.Add(1) % uint64(len(infos)))
	for i := range infos {
		if ch := infos[(start+i)%len(infos)].Channel; ch != nil && ch.IsActive() {
			return ch
		}
	}
	return nil
}

// FindChannel returns the channel a client id registered last (request/reply).
func (m *ProducerManager) FindChannel(clientID string) *remoting.Channel {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byClient[clientID]
}

// GroupOnline reports whether the group has a connection.
func (m *ProducerManager) GroupOnline(group string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.groups[group]) > 0
}

// Groups lists the producer groups, sorted.
func (m *ProducerManager) Groups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.groups))
	for g := range m.groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}
