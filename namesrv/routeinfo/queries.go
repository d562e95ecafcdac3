package routeinfo

import (
	"maps"
	"slices"
	"sort"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// ClusterInfo is the GET_BROKER_CLUSTER_INFO body: every broker name with its
// addresses, and every cluster's broker names (sorted).
func (m *Manager) ClusterInfo() protocol.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ci := protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]protocol.BrokerData, len(m.brokers)),
		ClusterAddrTable: make(map[string][]string, len(m.cluster)),
	}
	for name, b := range m.brokers {
		ci.BrokerAddrTable[name] = b.data()
	}
	for c, names := range m.cluster {
		ci.ClusterAddrTable[c] = slices.Sorted(maps.Keys(names))
	}
	return ci
}

func (b *brokerEntry) data() protocol.BrokerData {
	return protocol.BrokerData{
		BrokerAddrs:        maps.Clone(b.addrs),
		BrokerName:         b.name,
		Cluster:            b.cluster,
		EnableActingMaster: b.enableActingMaster,
		ZoneName:           b.zoneName,
	}
}

// Broker returns a registered broker name's data.
func (m *Manager) Broker(name string) (protocol.BrokerData, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b := m.brokers[name]
	if b == nil {
		return protocol.BrokerData{}, false
	}
	return b.data(), true
}

// BrokerMemberGroup lists the addresses of a broker name (empty when
// unknown), for GET_BROKER_MEMBER_GROUP.
func (m *Manager) BrokerMemberGroup(cluster, brokerName string) protocol.BrokerMemberGroup {
	g := protocol.BrokerMemberGroup{BrokerAddrs: map[int64]string{}, BrokerName: brokerName, Cluster: cluster}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if b := m.brokers[brokerName]; b != nil {
		maps.Copy(g.BrokerAddrs, b.addrs)
	}
	return g
}

// AllTopics lists every topic, sorted.
func (m *Manager) AllTopics() []string {
	m.mu.RLock()
	topics := make([]string, 0, len(m.topics))
	for t := range m.topics {
		topics = append(topics, t)
	}
	m.mu.RUnlock()
	sort.Strings(topics)
	return topics
}

// TopicsByCluster lists the topics with queue data on any broker of a
// cluster, sorted; empty for an unknown cluster.
func (m *Manager) TopicsByCluster(cluster string) []string {
	m.mu.RLock()
	names := m.cluster[cluster]
	topics := []string{}
	if len(names) > 0 {
		for topic, t := range m.topics {
			for _, q := range t.queues {
				if _, ok := names[m.slots[q.broker].name]; ok {
					topics = append(topics, topic)
					break
				}
			}
		}
	}
	m.mu.RUnlock()
	sort.Strings(topics)
	return topics
}

// SystemTopics is the GET_SYSTEM_TOPIC_LIST_FROM_NS body: every cluster name
// and broker name (brokers register topics named after both), and one
// broker address to query them on.
func (m *Manager) SystemTopics() protocol.TopicList {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := map[string]struct{}{}
	for c, names := range m.cluster {
		set[c] = struct{}{}
		for n := range names {
			set[n] = struct{}{}
		}
	}
	tl := protocol.TopicList{TopicList: slices.Sorted(maps.Keys(set))}
	// Deterministic pick: the smallest id of the first broker name in order.
	for _, name := range slices.Sorted(maps.Keys(m.brokers)) {
		if lo, ok := minID(m.brokers[name].addrs); ok {
			tl.BrokerAddr = m.brokers[name].addrs[lo]
			break
		}
	}
	return tl
}

// TopicsWithSysFlag lists topics whose first queue data's sysflag satisfies
// keep (the unit topic lists, codes 311/312/313).
func (m *Manager) TopicsWithSysFlag(keep func(sysFlag int) bool) []string {
	m.mu.RLock()
	topics := []string{}
	for topic, t := range m.topics {
		if len(t.queues) > 0 && keep(int(t.queues[0].topicSysFlag)) {
			topics = append(topics, topic)
		}
	}
	m.mu.RUnlock()
	sort.Strings(topics)
	return topics
}

// LiveBroker describes one registered broker address.
type LiveBroker struct {
	Cluster      string
	BrokerAddr   string
	HAServerAddr string
	LastUpdate   int64 // unix ms
	Timeout      int64 // ms
	DataVersion  protocol.DataVersion
}

// LiveBrokers lists the registered broker addresses (for tests and logs).
func (m *Manager) LiveBrokers() []LiveBroker {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]LiveBroker, 0, len(m.live))
	for k, li := range m.live {
		out = append(out, LiveBroker{Cluster: k.cluster, BrokerAddr: k.addr, HAServerAddr: li.haServerAddr,
			LastUpdate: li.lastUpdate.Load(), Timeout: li.timeout.Milliseconds(), DataVersion: li.dataVersion})
	}
	slices.SortFunc(out, func(a, b LiveBroker) int {
		if a.Cluster != b.Cluster {
			if a.Cluster < b.Cluster {
				return -1
			}
			return 1
		}
		if a.BrokerAddr < b.BrokerAddr {
			return -1
		}
		if a.BrokerAddr > b.BrokerAddr {
			return 1
		}
		return 0
	})
	return out
}

// TopicCount is the number of topics in the table.
func (m *Manager) TopicCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.topics)
}
