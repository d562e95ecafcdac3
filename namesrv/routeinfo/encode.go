package routeinfo

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// The route is encoded by hand because it is the nameserver's hot path:
// every client asks for every topic's route every 30 s. The output is
// byte-for-byte what protocol.Marshal produces for protocol.TopicRouteData
// (compact, keys sorted, brokerAddrs keys quoted) — the tests check that.

// syncBrokerMemberGroupPrefix topics carry broker membership; routes for them
// are never rewritten for acting masters (Apache TopicValidator).
const syncBrokerMemberGroupPrefix = "rmq_sys_SYNC_BROKER_MEMBER_"

// EncodedRoute is a GET_ROUTEINFO_BY_TOPIC body. Its bytes are shared with
// the cache: read them, never modify them.
type EncodedRoute struct {
	body     []byte
	queueOff int // offset of `,"queueDatas"`, where orderTopicConf goes
}

// Bytes returns the body.
func (r EncodedRoute) Bytes() []byte { return r.body }

// WithOrderTopicConf returns the body with orderTopicConf inserted in its
// sorted position (between filterServerTable and queueDatas).
func (r EncodedRoute) WithOrderTopicConf(conf string) []byte {
	out := make([]byte, 0, len(r.body)+len(conf)+24)
	out = append(out, r.body[:r.queueOff]...)
	out = append(out, `,"orderTopicConf":`...)
	out = appendString(out, conf)
	return append(out, r.body[r.queueOff:]...)
}

// RouteJSON returns the encoded route of a topic; false when the topic has
// no queue data or none of its brokers is registered (TOPIC_NOT_EXIST).
func (m *Manager) RouteJSON(topic string) (EncodedRoute, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.topics[topic]
	if t == nil {
		return EncodedRoute{}, false
	}
	c := t.cache.Load()
	if c != nil && c.gen == m.gen {
		return EncodedRoute{c.body, c.queueOff}, true
	}
	r, ok := m.encodeRouteLocked(topic, t)
	if !ok {
		return EncodedRoute{}, false
	}
	m.storeCache(t, c, &routeCache{gen: m.gen, body: r.body, queueOff: r.queueOff})
	return r, true
}

// Route returns the decoded route (for tools and tests; clients get
// RouteJSON).
func (m *Manager) Route(topic string) (protocol.TopicRouteData, bool) {
	r, ok := m.RouteJSON(topic)
	if !ok {
		return protocol.TopicRouteData{}, false
	}
	var out protocol.TopicRouteData
	if err := protocol.Unmarshal(r.body, &out); err != nil {
		// Our own encoding failing to decode is a programming error.
		panic("routeinfo: cannot decode own route: " + err.Error())
	}
	return out, true
}

// storeCache installs a freshly encoded route unless the budget is spent.
// Readers race here under the read lock; CompareAndSwap keeps exactly one
// winner and the byte count exact.
func (m *Manager) storeCache(t *topicEntry, old, c *routeCache) {
	if m.cacheLimit < 0 {
		return
	}
	delta := int64(len(c.body))
	if old != nil {
		delta -= int64(len(old.body))
	}
	if delta > 0 && m.cacheUsed.Load()+delta > m.cacheLimit {
		return
	}
	if t.cache.CompareAndSwap(old, c) {
		m.cacheUsed.Add(delta)
	}
}

// CacheBytes reports the bytes held by cached routes.
func (m *Manager) CacheBytes() int64 { return m.cacheUsed.Load() }

// encodeRouteLocked builds a topic's route; the caller holds the read lock.
func (m *Manager) encodeRouteLocked(topic string, t *topicEntry) (EncodedRoute, bool) {
	if len(t.queues) == 0 {
		return EncodedRoute{}, false
	}
	size := 64 + len(t.queues)*96
	needActing := false
	for _, q := range t.queues {
		b := m.slots[q.broker]
		size += len(b.frag)
		if _, ok := b.addrs[protocol.MasterID]; !ok && len(b.addrs) > 0 {
			needActing = true
		}
	}
	needActing = needActing && m.policy.SupportActingMaster && !strings.HasPrefix(topic, syncBrokerMemberGroupPrefix)

	b := make([]byte, 0, size)
	b = append(b, `{"brokerDatas":[`...)
	n := 0
	for _, q := range t.queues {
		be := m.slots[q.broker]
		if n > 0 {
			b = append(b, ',')
		}
		n++
		if needActing && be.enableActingMaster && q.perm&protocol.PermWrite == 0 {
			if _, ok := be.addrs[protocol.MasterID]; !ok && len(be.addrs) > 0 {
				// The slave with the smallest id stands in as master, so
				// clients can read through it (Apache pickupTopicRouteData).
				addrs := make(map[int64]string, len(be.addrs))
				for id, a := range be.addrs {
					addrs[id] = a
				}
				lo, _ := minID(addrs)
				addrs[protocol.MasterID] = addrs[lo]
				delete(addrs, lo)
				b = encodeBrokerData(b, be.name, be.cluster, addrs, be.enableActingMaster, be.zoneName)
				continue
			}
		}
		b = append(b, be.frag...)
	}
	b = append(b, `],"filterServerTable":`...)
	b = m.appendFilterServersLocked(b, t)
	queueOff := len(b)
	b = append(b, `,"queueDatas":[`...)
	for i, q := range t.queues {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m.slots[q.broker].queuePrefix...)
		b = appendQueueTail(b, q)
	}
	b = append(b, ']')
	if byBroker := m.mappings[topic]; len(byBroker) > 0 {
		infos := make(map[string]protocol.TopicQueueMappingInfo, len(byBroker))
		for name, info := range byBroker {
			infos[name] = *info
		}
		b = append(b, `,"topicQueueMappingByBroker":`...)
		b = append(b, protocol.MustMarshal(infos)...)
	}
	b = append(b, '}')
	return EncodedRoute{body: b, queueOff: queueOff}, true
}

// appendFilterServersLocked writes the filter servers of the route's broker
// addresses (a legacy feature: almost always {}).
func (m *Manager) appendFilterServersLocked(b []byte, t *topicEntry) []byte {
	if len(m.filters) == 0 {
		return append(b, "{}"...)
	}
	table := map[string][]string{}
	for _, q := range t.queues {
		be := m.slots[q.broker]
		for _, addr := range be.addrs {
			if list, ok := m.filters[addrKey{be.cluster, addr}]; ok {
				table[addr] = list
			}
		}
	}
	return append(b, protocol.MustMarshal(table)...)
}

// encodeBrokerData appends a BrokerData object. brokerAddrs keys are sorted
// as strings, the way encoding/json sorts map keys.
func encodeBrokerData(b []byte, name, cluster string, addrs map[int64]string, actingMaster bool, zone string) []byte {
	type kv struct {
		key  string
		addr string
	}
	entries := make([]kv, 0, len(addrs))
	for id, addr := range addrs {
		entries = append(entries, kv{strconv.FormatInt(id, 10), addr})
	}
	slices.SortFunc(entries, func(x, y kv) int { return strings.Compare(x.key, y.key) })
	b = append(b, `{"brokerAddrs":{`...)
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, e.key...)
		b = append(b, `":`...)
		b = appendString(b, e.addr)
	}
	b = append(b, `},"brokerName":`...)
	b = appendString(b, name)
	b = append(b, `,"cluster":`...)
	b = appendString(b, cluster)
	b = append(b, `,"enableActingMaster":`...)
	b = strconv.AppendBool(b, actingMaster)
	if zone != "" {
		b = append(b, `,"zoneName":`...)
		b = appendString(b, zone)
	}
	return append(b, '}')
}

// queuePrefix is the constant head of a broker's QueueData objects.
func queuePrefix(name string) []byte {
	b := appendString([]byte(`{"brokerName":`), name)
	return append(b, `,"perm":`...)
}

// appendQueueTail appends a QueueData after its queuePrefix.
func appendQueueTail(b []byte, q queueEntry) []byte {
	b = strconv.AppendInt(b, int64(q.perm), 10)
	b = append(b, `,"readQueueNums":`...)
	b = strconv.AppendInt(b, int64(q.readQueueNums), 10)
	b = append(b, `,"topicSysFlag":`...)
	b = strconv.AppendInt(b, int64(q.topicSysFlag), 10)
	b = append(b, `,"writeQueueNums":`...)
	b = strconv.AppendInt(b, int64(q.writeQueueNums), 10)
	return append(b, '}')
}

// appendString appends s as a JSON string. Names and addresses are plain
// ASCII in practice; anything else goes through encoding/json so escaping
// stays identical to protocol.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return append(b, protocol.MustMarshal(s)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
