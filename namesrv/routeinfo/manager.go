// Package routeinfo is the nameserver's route table (Apache's
// RouteInfoManager): which brokers exist, which topics they serve, which are
// alive, and the static-topic mappings they registered.
//
// One RWMutex guards everything. Route lookups, the hot path, take the read
// lock and are answered from a per-topic cache of the encoded route; writers
// invalidate what they change. Broker-level changes (addresses, liveness)
// bump a generation number instead of touching every cached topic.
package routeinfo

import (
	"errors"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// DefaultBrokerTimeout expires a broker that neither registers nor sends a
// heartbeat for this long (Apache's DEFAULT_BROKER_CHANNEL_EXPIRED_TIME).
const DefaultBrokerTimeout = 120 * time.Second

// DefaultRouteCacheBytes bounds the memory spent on cached encoded routes.
const DefaultRouteCacheBytes = 256 << 20

// Topic sysflag bits (Apache TopicSysFlag).
const (
	FlagUnit    = 1 << 0
	FlagUnitSub = 1 << 1
)

// Conn is the connection a broker registered through: closing it ends the
// broker's registration, and expiry closes it.
type Conn interface {
	ID() uint64
	Close() error
}

// Policy holds the behaviour switches that may change at runtime.
type Policy struct {
	// DeleteTopicWithBrokerRegistration drops a broker's queue data for
	// topics missing from its full registration.
	DeleteTopicWithBrokerRegistration bool
	// SupportActingMaster lets the slave with the smallest id act as master
	// in routes when the master is gone.
	SupportActingMaster bool
}

// Options configures a Manager.
type Options struct {
	// Clock defaults to time.Now; tests inject a fake one for expiry.
	Clock  func() time.Time
	Logger *slog.Logger
	Policy Policy
	// RouteCacheBytes bounds cached encoded routes; 0 means
	// DefaultRouteCacheBytes, negative disables caching.
	RouteCacheBytes int64
}

// Manager is the route table. It is safe for concurrent use.
type Manager struct {
	clock      func() time.Time
	log        *slog.Logger
	cacheLimit int64
	cacheUsed  atomic.Int64

	mu      sync.RWMutex
	policy  Policy
	topics  map[string]*topicEntry
	brokers map[string]*brokerEntry // by broker name
	// slots index broker entries by a small number, so that queue entries
	// (10M of them at 100k topics × 100 brokers) hold no pointers and the
	// garbage collector never scans them.
	slots     []*brokerEntry
	freeSlots []uint32
	cluster   map[string]map[string]struct{} // cluster → broker names
	live      map[addrKey]*liveInfo
	filters   map[addrKey][]string
	// mappings: topic → broker name → static-topic mapping info.
	mappings map[string]map[string]*protocol.TopicQueueMappingInfo
	// gen changes whenever something every route may include changes
	// (broker addresses, filter servers, policy); cached routes of an older
	// generation are stale.
	gen uint64
	// mutations counts changes to what RegisterBroker checks under the read
	// lock (topics, mappings, broker addresses, data versions), so that it
	// can tell whether its check still holds once it has the write lock.
	mutations uint64
}

type addrKey struct{ cluster, addr string }

type liveInfo struct {
	lastUpdate   atomic.Int64 // unix ms; heartbeats update it under the read lock
	timeout      time.Duration
	dataVersion  protocol.DataVersion
	conn         Conn
	haServerAddr string
}

type brokerEntry struct {
	slot               uint32
	name               string
	cluster            string
	addrs              map[int64]string
	enableActingMaster bool
	zoneName           string
	// frag is this broker's encoded BrokerData, rebuilt on every change,
	// and queuePrefix the constant start of its QueueData objects, so that
	// encoding a route is mostly copying.
	frag        []byte
	queuePrefix []byte
}

type topicEntry struct {
	queues []queueEntry // sorted by broker name
	cache  atomic.Pointer[routeCache]
}

// queueEntry is a QueueData with the broker name replaced by its slot.
type queueEntry struct {
	broker         uint32
	perm           int32
	readQueueNums  int32
	writeQueueNums int32
	topicSysFlag   int32
}

func newQueueEntry(b *brokerEntry, perm, read, write, sysFlag int) queueEntry {
	return queueEntry{broker: b.slot, perm: int32(perm), readQueueNums: int32(read), writeQueueNums: int32(write), topicSysFlag: int32(sysFlag)}
}

func (m *Manager) queueData(q queueEntry) protocol.QueueData {
	return protocol.QueueData{BrokerName: m.slots[q.broker].name, Perm: int(q.perm), ReadQueueNums: int(q.readQueueNums),
		TopicSysFlag: int(q.topicSysFlag), WriteQueueNums: int(q.writeQueueNums)}
}

type routeCache struct {
	gen      uint64
	body     []byte
	queueOff int
}

// New returns an empty route table.
func New(opts Options) *Manager {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	limit := opts.RouteCacheBytes
	if limit == 0 {
		limit = DefaultRouteCacheBytes
	}
	return &Manager{
		clock:      opts.Clock,
		log:        opts.Logger,
		cacheLimit: limit,
		policy:     opts.Policy,
		topics:     map[string]*topicEntry{},
		brokers:    map[string]*brokerEntry{},
		cluster:    map[string]map[string]struct{}{},
		live:       map[addrKey]*liveInfo{},
		filters:    map[addrKey][]string{},
		mappings:   map[string]map[string]*protocol.TopicQueueMappingInfo{},
	}
}

// SetPolicy installs runtime switches (UPDATE_NAMESRV_CONFIG).
func (m *Manager) SetPolicy(p Policy) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p != m.policy {
		m.policy = p
		m.changedAll()
	}
}

func (m *Manager) nowMillis() int64 { return m.clock().UnixMilli() }

// changedAll marks every cached route stale; the caller holds the write lock.
func (m *Manager) changedAll() {
	m.gen++
	m.mutations++
}

// changedTopic drops a topic's cached route; the caller holds the write lock.
func (m *Manager) changedTopic(t *topicEntry) {
	m.mutations++
	if old := t.cache.Swap(nil); old != nil {
		m.cacheUsed.Add(-int64(len(old.body)))
	}
}

// findQueue returns the position of a broker name in a topic's queues.
func (m *Manager) findQueue(queues []queueEntry, brokerName string) (int, bool) {
	return sort.Find(len(queues), func(i int) int { return strings.Compare(brokerName, m.slots[queues[i].broker].name) })
}

// newBroker creates a broker entry in a free slot; the caller holds the
// write lock.
func (m *Manager) newBroker(name, cluster string) *brokerEntry {
	b := &brokerEntry{name: name, cluster: cluster, addrs: map[int64]string{}, queuePrefix: queuePrefix(name)}
	if n := len(m.freeSlots); n > 0 {
		b.slot = m.freeSlots[n-1]
		m.freeSlots = m.freeSlots[:n-1]
		m.slots[b.slot] = b
	} else {
		b.slot = uint32(len(m.slots))
		m.slots = append(m.slots, b)
	}
	m.brokers[name] = b
	return b
}

// releaseSlot frees a removed broker's slot once no queue refers to it.
func (m *Manager) releaseSlot(b *brokerEntry) {
	m.slots[b.slot] = nil
	m.freeSlots = append(m.freeSlots, b.slot)
}

// upsertQueue sets a broker's queue data of a topic; the caller holds the
// write lock.
func (m *Manager) upsertQueue(topic string, q queueEntry) {
	t := m.topics[topic]
	if t == nil {
		t = &topicEntry{queues: make([]queueEntry, 0, 2)}
		m.topics[topic] = t
		m.log.Debug("new topic registered", "topic", topic, "queueData", m.queueData(q))
	}
	i, found := m.findQueue(t.queues, m.slots[q.broker].name)
	if found {
		if t.queues[i] == q {
			return
		}
		m.log.Debug("topic changed", "topic", topic, "old", m.queueData(t.queues[i]), "new", m.queueData(q))
		t.queues[i] = q
	} else {
		t.queues = slices.Insert(t.queues, i, q)
	}
	m.changedTopic(t)
}

// removeQueue drops a broker's queue data of a topic and the topic when it
// has none left; the caller holds the write lock.
func (m *Manager) removeQueue(topic string, t *topicEntry, brokerName string) bool {
	i, found := m.findQueue(t.queues, brokerName)
	if !found {
		return false
	}
	t.queues = slices.Delete(t.queues, i, i+1)
	m.changedTopic(t)
	if len(t.queues) == 0 {
		delete(m.topics, topic)
	}
	m.dropMapping(topic, brokerName)
	return true
}

// dropMapping forgets a broker's static-topic mapping of a topic.
func (m *Manager) dropMapping(topic, brokerName string) {
	byBroker, ok := m.mappings[topic]
	if !ok {
		return
	}
	if _, ok := byBroker[brokerName]; !ok {
		return
	}
	delete(byBroker, brokerName)
	if len(byBroker) == 0 {
		delete(m.mappings, topic)
	}
	if t := m.topics[topic]; t != nil {
		m.changedTopic(t)
	}
}

func minID(addrs map[int64]string) (int64, bool) {
	first := true
	var lo int64
	for id := range addrs {
		if first || id < lo {
			lo, first = id, false
		}
	}
	return lo, !first
}

// Registration is one REGISTER_BROKER request, decoded.
type Registration struct {
	Cluster      string
	BrokerAddr   string
	BrokerName   string
	BrokerID     int64
	HAServerAddr string
	ZoneName     string
	// Timeout is the header's heartbeatTimeoutMillis; 0 means the default.
	Timeout time.Duration
	// EnableActingMaster is nil for brokers too old to send the header.
	EnableActingMaster *bool
	DataVersion        protocol.DataVersion
	TopicConfigs       map[string]protocol.TopicConfig
	MappingInfos       map[string]protocol.TopicQueueMappingInfo
	FilterServers      []string
	Conn               Conn
}

// RegisterResult tells a slave where its master is.
type RegisterResult struct {
	MasterAddr   string
	HAServerAddr string
}

// RegisterBroker records a broker registration (Apache
// RouteInfoManager.registerBroker): cluster membership, address, liveness,
// and — for a master or prime slave whose data version changed or that
// registers first — its topics' queue data and static-topic mappings.
func (m *Manager) RegisterBroker(r Registration) RegisterResult {
	// A periodic registration usually changes no topic; finding that out
	// under the read lock keeps route lookups flowing during the scan of a
	// large topic table.
	m.mu.RLock()
	skipTopics := m.topicsUnchangedLocked(&r)
	seen := m.mutations
	m.mu.RUnlock()

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mutations != seen {
		skipTopics = false
	}
	return m.registerLocked(&r, skipTopics)
}

// topicsUnchangedLocked reports whether registering r would leave every
// topic's queue data as it is; the caller holds the read lock.
func (m *Manager) topicsUnchangedLocked(r *Registration) bool {
	b := m.brokers[r.BrokerName]
	if b == nil || b.addrs[r.BrokerID] != r.BrokerAddr || m.policy.DeleteTopicWithBrokerRegistration || len(r.MappingInfos) > 0 {
		return false
	}
	li := m.live[addrKey{r.Cluster, r.BrokerAddr}]
	if li == nil || !li.dataVersion.Equal(r.DataVersion) {
		return false
	}
	for name, tc := range r.TopicConfigs {
		if tc.TopicName != "" {
			name = tc.TopicName
		}
		t := m.topics[name]
		if t == nil {
			return false
		}
		if _, found := m.findQueue(t.queues, r.BrokerName); !found {
			return false
		}
	}
	// Mappings of topics this broker registers without one are dropped below.
	for topic, byBroker := range m.mappings {
		if _, ok := byBroker[r.BrokerName]; ok {
			if _, ok := r.TopicConfigs[topic]; ok {
				return false
			}
		}
	}
	return true
}

func (m *Manager) registerLocked(r *Registration, skipTopics bool) RegisterResult {
	var res RegisterResult
	b := m.brokers[r.BrokerName]

	// An address already registered under this id by another process with a
	// newer state version wins (Apache: "Registering Broker conflicts with
	// the existed one").
	if b != nil {
		if old, ok := b.addrs[r.BrokerID]; ok && old != r.BrokerAddr {
			if li := m.live[addrKey{r.Cluster, old}]; li != nil && li.dataVersion.StateVersion > r.DataVersion.StateVersion {
				m.log.Warn("registering broker conflicts with the existing one, ignored",
					"cluster", r.Cluster, "brokerName", r.BrokerName, "brokerId", r.BrokerID,
					"oldAddr", old, "oldStateVersion", li.dataVersion.StateVersion,
					"newAddr", r.BrokerAddr, "newStateVersion", r.DataVersion.StateVersion)
				if _, ok := m.live[addrKey{r.Cluster, r.BrokerAddr}]; ok {
					delete(m.live, addrKey{r.Cluster, r.BrokerAddr})
					m.mutations++
				}
				return res
			}
		}
	}
	// Apache also refuses a first registration that carries exactly one
	// topic (taking it for an incremental one that overtook the full one).
	// We accept it: the broker is merely visible a moment early, while the
	// refusal would break any broker that really has a single topic.

	names := m.cluster[r.Cluster]
	if names == nil {
		names = map[string]struct{}{}
		m.cluster[r.Cluster] = names
	}
	names[r.BrokerName] = struct{}{}

	registerFirst := false
	brokerChanged := false
	if b == nil {
		registerFirst, brokerChanged = true, true
		b = m.newBroker(r.BrokerName, r.Cluster)
	}
	oldVersionBroker := r.EnableActingMaster == nil
	actingMaster := !oldVersionBroker && *r.EnableActingMaster
	if b.enableActingMaster != actingMaster || b.zoneName != r.ZoneName {
		b.enableActingMaster, b.zoneName = actingMaster, r.ZoneName
		brokerChanged = true
	}
	// One address has one id: a slave switching to master first drops its
	// old <id, addr>.
	for id, addr := range b.addrs {
		if addr == r.BrokerAddr && id != r.BrokerID {
			delete(b.addrs, id)
			brokerChanged = true
		}
	}
	if old, ok := b.addrs[r.BrokerID]; !ok || old != r.BrokerAddr {
		b.addrs[r.BrokerID] = r.BrokerAddr
		brokerChanged = true
		if !ok {
			registerFirst = true
		}
	}

	key := addrKey{r.Cluster, r.BrokerAddr}
	prev := m.live[key]
	isMaster := r.BrokerID == protocol.MasterID
	lo, _ := minID(b.addrs)
	isPrimeSlave := !oldVersionBroker && !isMaster && r.BrokerID == lo
	if isMaster || isPrimeSlave {
		dvChanged := prev == nil || !prev.dataVersion.Equal(r.DataVersion)
		if !skipTopics {
			m.applyTopicsLocked(r, b, registerFirst || dvChanged, isPrimeSlave)
		}
	}

	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultBrokerTimeout
	}
	if prev == nil || !prev.dataVersion.Equal(r.DataVersion) {
		m.mutations++
	}
	li := &liveInfo{timeout: timeout, dataVersion: r.DataVersion, conn: r.Conn, haServerAddr: r.HAServerAddr}
	li.lastUpdate.Store(m.nowMillis())
	m.live[key] = li
	if prev == nil {
		m.log.Info("new broker registered", "cluster", r.Cluster, "brokerName", r.BrokerName, "brokerId", r.BrokerID,
			"brokerAddr", r.BrokerAddr, "haServerAddr", r.HAServerAddr, "topics", len(r.TopicConfigs))
	}

	if len(r.FilterServers) == 0 {
		if _, ok := m.filters[key]; ok {
			delete(m.filters, key)
			brokerChanged = true
		}
	} else if !slices.Equal(m.filters[key], r.FilterServers) {
		m.filters[key] = slices.Clone(r.FilterServers)
		brokerChanged = true
	}

	if !isMaster {
		if masterAddr := b.addrs[protocol.MasterID]; masterAddr != "" {
			if ml := m.live[addrKey{r.Cluster, masterAddr}]; ml != nil {
				res.MasterAddr, res.HAServerAddr = masterAddr, ml.haServerAddr
			}
		}
	}
	if brokerChanged {
		b.frag = encodeBrokerData(nil, b.name, b.cluster, b.addrs, b.enableActingMaster, b.zoneName)
		m.changedAll()
	}
	return res
}

// applyTopicsLocked updates queue data and mappings from a master's (or
// prime slave's) registration. rebuild is Apache's "registerFirst or data
// version changed": every topic is rewritten; otherwise only topics the
// table lacks for this broker are added.
func (m *Manager) applyTopicsLocked(r *Registration, b *brokerEntry, rebuild, primeSlave bool) {
	if m.policy.DeleteTopicWithBrokerRegistration && len(r.MappingInfos) == 0 {
		// Static topics opt out: their non-leader brokers must stay listed.
		for topic, t := range m.topics {
			if _, ok := r.TopicConfigs[topic]; ok {
				continue
			}
			if m.removeQueue(topic, t, b.name) {
				m.log.Info("topic removed with broker registration", "topic", topic, "brokerName", b.name)
			}
		}
	}
	for name, tc := range r.TopicConfigs {
		if tc.TopicName != "" {
			name = tc.TopicName
		}
		if !rebuild {
			if t := m.topics[name]; t != nil {
				if _, found := m.findQueue(t.queues, b.name); found {
					continue
				}
			}
		}
		perm := tc.Perm
		if primeSlave && b.enableActingMaster {
			// A slave acting for a missing master serves reads only.
			perm &^= protocol.PermWrite
		}
		m.upsertQueue(name, newQueueEntry(b, perm, tc.ReadQueueNums, tc.WriteQueueNums, tc.TopicSysFlag))
	}

	// A topic the broker registers without a mapping is no longer static on
	// it (deleted and re-created as a normal topic): forget the old mapping.
	for topic, byBroker := range m.mappings {
		if _, ok := byBroker[b.name]; !ok {
			continue
		}
		if _, ok := r.TopicConfigs[topic]; !ok {
			continue
		}
		if _, ok := r.MappingInfos[topic]; !ok {
			m.dropMapping(topic, b.name)
		}
	}
	for topic, info := range r.MappingInfos {
		m.putMappingLocked(topic, b.name, info)
	}
}

// putMappingLocked stores a mapping unless the stored one has a newer epoch:
// registrations may arrive out of order (periodic full registration racing
// the incremental one after a remapping), and a stale epoch must not undo a
// remapping.
func (m *Manager) putMappingLocked(topic, brokerName string, info protocol.TopicQueueMappingInfo) {
	if info.Topic == "" {
		info.Topic = topic
	}
	bname := info.Bname
	if bname == "" {
		bname = brokerName
		info.Bname = brokerName
	}
	if bname != brokerName {
		m.log.Warn("mapping info names another broker", "topic", topic, "registeringBroker", brokerName, "bname", bname)
	}
	byBroker := m.mappings[topic]
	if byBroker == nil {
		byBroker = map[string]*protocol.TopicQueueMappingInfo{}
		m.mappings[topic] = byBroker
	}
	if old := byBroker[bname]; old != nil {
		if info.Epoch < old.Epoch {
			m.log.Warn("stale static-topic mapping ignored", "topic", topic, "bname", bname,
				"storedEpoch", old.Epoch, "registeredEpoch", info.Epoch)
			return
		}
		if mappingEqual(old, &info) {
			return
		}
	}
	byBroker[bname] = &info
	m.mutations++
	if t := m.topics[topic]; t != nil {
		m.changedTopic(t)
	}
}

func mappingEqual(a, b *protocol.TopicQueueMappingInfo) bool {
	if a.Bname != b.Bname || a.Dirty != b.Dirty || a.Epoch != b.Epoch || a.Scope != b.Scope ||
		a.Topic != b.Topic || a.TotalQueues != b.TotalQueues || len(a.CurrIDMap) != len(b.CurrIDMap) {
		return false
	}
	for k, v := range a.CurrIDMap {
		if bv, ok := b.CurrIDMap[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// Mapping returns the stored mapping of (topic, broker), for tests and tools.
func (m *Manager) Mapping(topic, brokerName string) (protocol.TopicQueueMappingInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	info := m.mappings[topic][brokerName]
	if info == nil {
		return protocol.TopicQueueMappingInfo{}, false
	}
	return cloneMapping(info), true
}

func cloneMapping(info *protocol.TopicQueueMappingInfo) protocol.TopicQueueMappingInfo {
	c := *info
	if info.CurrIDMap != nil {
		c.CurrIDMap = make(map[int]int, len(info.CurrIDMap))
		for k, v := range info.CurrIDMap {
			c.CurrIDMap[k] = v
		}
	}
	return c
}

// Unregistration names one broker address to remove.
type Unregistration struct {
	Cluster    string
	BrokerAddr string
	BrokerName string
	BrokerID   int64
}

// UnregisterBroker removes broker addresses (UNREGISTER_BROKER). When the
// last address of a broker name goes, its queue data leave every topic, and
// topics left without queue data disappear.
func (m *Manager) UnregisterBroker(reqs ...Unregistration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unregisterLocked(reqs)
}

func (m *Manager) unregisterLocked(reqs []Unregistration) {
	if len(reqs) == 0 {
		return
	}
	m.changedAll()
	removed := map[string]*brokerEntry{}
	reduced := map[string]bool{}
	for _, u := range reqs {
		key := addrKey{u.Cluster, u.BrokerAddr}
		_, wasLive := m.live[key]
		delete(m.live, key)
		delete(m.filters, key)
		b := m.brokers[u.BrokerName]
		if b == nil {
			m.log.Info("unregister broker: unknown broker name", "cluster", u.Cluster, "brokerName", u.BrokerName, "brokerAddr", u.BrokerAddr, "wasLive", wasLive)
			continue
		}
		for id, addr := range b.addrs {
			if addr == u.BrokerAddr {
				delete(b.addrs, id)
			}
		}
		m.log.Info("broker unregistered", "cluster", u.Cluster, "brokerName", u.BrokerName, "brokerId", u.BrokerID, "brokerAddr", u.BrokerAddr)
		if len(b.addrs) > 0 {
			b.frag = encodeBrokerData(nil, b.name, b.cluster, b.addrs, b.enableActingMaster, b.zoneName)
			reduced[b.name] = true
			continue
		}
		delete(m.brokers, u.BrokerName)
		removed[u.BrokerName] = b
		delete(reduced, u.BrokerName)
		if names := m.cluster[u.Cluster]; names != nil {
			delete(names, u.BrokerName)
			if len(names) == 0 {
				delete(m.cluster, u.Cluster)
			}
		}
		// Apache keeps the broker name under the cluster it first registered
		// with; clean that one too.
		if names := m.cluster[b.cluster]; names != nil {
			delete(names, u.BrokerName)
			if len(names) == 0 {
				delete(m.cluster, b.cluster)
			}
		}
		m.log.Info("broker name removed, its topics go with it", "brokerName", u.BrokerName)
	}

	// Acting-master brokers that lost their master stop taking writes.
	wipe := map[string]bool{}
	for name := range reduced {
		if b := m.brokers[name]; b != nil && b.enableActingMaster {
			if lo, ok := minID(b.addrs); !ok || lo > 0 {
				wipe[name] = true
			}
		}
	}
	if len(removed) == 0 && len(wipe) == 0 {
		return
	}
	gone := make([]bool, len(m.slots))
	for _, b := range removed {
		gone[b.slot] = true
	}
	for topic, t := range m.topics {
		if len(removed) > 0 {
			n := len(t.queues)
			t.queues = slices.DeleteFunc(t.queues, func(q queueEntry) bool { return gone[q.broker] })
			if len(t.queues) != n {
				m.changedTopic(t)
				if len(t.queues) == 0 {
					delete(m.topics, topic)
					continue
				}
			}
		}
		for name := range wipe {
			if i, found := m.findQueue(t.queues, name); found && t.queues[i].perm&protocol.PermWrite != 0 {
				t.queues[i].perm &^= protocol.PermWrite
				m.changedTopic(t)
			}
		}
	}
	for topic, byBroker := range m.mappings {
		for name := range removed {
			delete(byBroker, name)
		}
		if len(byBroker) == 0 {
			delete(m.mappings, topic)
		}
	}
	for _, b := range removed {
		m.releaseSlot(b)
	}
}

// brokerOfAddrLocked finds the broker name and id an address is registered
// under in a cluster (Apache setupUnRegisterRequest).
func (m *Manager) brokerOfAddrLocked(key addrKey) (Unregistration, bool) {
	for _, b := range m.brokers {
		if b.cluster != key.cluster {
			continue
		}
		for id, addr := range b.addrs {
			if addr == key.addr {
				return Unregistration{Cluster: key.cluster, BrokerAddr: key.addr, BrokerName: b.name, BrokerID: id}, true
			}
		}
	}
	return Unregistration{}, false
}

// ConnClosed unregisters at once every broker registered through the
// connection with this id.
func (m *Manager) ConnClosed(id uint64) int {
	// Most closing connections are clients, not brokers: check under the
	// read lock before stalling route lookups with the write lock.
	if !m.hasConn(id) {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var reqs []Unregistration
	for key, li := range m.live {
		if li.conn == nil || li.conn.ID() != id {
			continue
		}
		reqs = m.dropAddrLocked(key, reqs)
		m.log.Info("broker connection closed, unregistering", "cluster", key.cluster, "brokerAddr", key.addr)
	}
	m.unregisterLocked(reqs)
	return len(reqs)
}

// dropAddrLocked appends to reqs the unregistration of the broker at key,
// or, when no broker is registered at that address any more, forgets its
// liveness and filter servers; it returns reqs.
func (m *Manager) dropAddrLocked(key addrKey, reqs []Unregistration) []Unregistration {
	if u, ok := m.brokerOfAddrLocked(key); ok {
		return append(reqs, u)
	}
	delete(m.live, key)
	delete(m.filters, key)
	m.mutations++
	return reqs
}

func (m *Manager) hasConn(id uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, li := range m.live {
		if li.conn != nil && li.conn.ID() == id {
			return true
		}
	}
	return false
}

// ScanNotActive expires brokers whose last registration or heartbeat is older
// than their timeout, and closes their connections.
func (m *Manager) ScanNotActive() int {
	now := m.nowMillis()
	var conns []Conn
	m.mu.Lock()
	var reqs []Unregistration
	for key, li := range m.live {
		if li.lastUpdate.Load()+li.timeout.Milliseconds() >= now {
			continue
		}
		m.log.Warn("broker expired", "cluster", key.cluster, "brokerAddr", key.addr, "timeout", li.timeout)
		if li.conn != nil {
			conns = append(conns, li.conn)
		}
		reqs = m.dropAddrLocked(key, reqs)
	}
	m.unregisterLocked(reqs)
	m.mu.Unlock()
	// Closing outside the lock: the close callback calls ConnClosed.
	for _, c := range conns {
		_ = c.Close()
	}
	return len(reqs)
}

// Touch refreshes a broker's liveness (BROKER_HEARTBEAT, QUERY_DATA_VERSION);
// false when the address is not registered.
func (m *Manager) Touch(cluster, brokerAddr string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	li := m.live[addrKey{cluster, brokerAddr}]
	if li == nil {
		return false
	}
	li.lastUpdate.Store(m.nowMillis())
	return true
}

// QueryDataVersion compares a broker's data version with the registered one
// and refreshes its liveness. ours is nil when the broker is not registered.
func (m *Manager) QueryDataVersion(cluster, brokerAddr string, dv protocol.DataVersion) (changed bool, ours *protocol.DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	li := m.live[addrKey{cluster, brokerAddr}]
	if li == nil {
		return true, nil
	}
	li.lastUpdate.Store(m.nowMillis())
	v := li.dataVersion
	return !v.Equal(dv), &v
}

// RegisterTopic adds queue data for a topic (REGISTER_TOPIC_IN_NAMESRV).
// Every named broker must be registered; otherwise nothing changes.
func (m *Manager) RegisterTopic(topic string, queues []protocol.QueueData) error {
	if len(queues) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, qd := range queues {
		if m.brokers[qd.BrokerName] == nil {
			return errors.New("routeinfo: register topic " + topic + ": unknown broker " + qd.BrokerName)
		}
	}
	for _, qd := range queues {
		m.upsertQueue(topic, newQueueEntry(m.brokers[qd.BrokerName], qd.Perm, qd.ReadQueueNums, qd.WriteQueueNums, qd.TopicSysFlag))
	}
	m.log.Info("topic registered", "topic", topic, "queueDatas", queues)
	return nil
}

// DeleteTopic removes a topic (DELETE_TOPIC_IN_NAMESRV): everywhere when
// cluster is empty, else only its queue data on that cluster's brokers. Its
// static-topic mappings go too (Apache keeps them, which makes a re-created
// normal topic look static). It reports whether anything was removed.
func (m *Manager) DeleteTopic(topic, cluster string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.topics[topic]
	if cluster == "" {
		_, hadMapping := m.mappings[topic]
		delete(m.mappings, topic)
		if t == nil {
			if hadMapping {
				m.mutations++
			}
			return hadMapping
		}
		m.changedTopic(t)
		delete(m.topics, topic)
		m.log.Info("topic deleted", "topic", topic)
		return true
	}
	names := m.cluster[cluster]
	removed := false
	for name := range names {
		if t != nil && m.removeQueue(topic, t, name) {
			removed = true
		}
		if byBroker := m.mappings[topic]; byBroker != nil {
			if _, ok := byBroker[name]; ok {
				m.dropMapping(topic, name)
				removed = true
			}
		}
	}
	if removed {
		m.log.Info("topic deleted from cluster", "topic", topic, "cluster", cluster)
	}
	return removed
}

// WipeWritePerm clears the write bit of every queue data of a broker name
// (WIPE_WRITE_PERM_OF_BROKER) and returns how many topics it touched.
func (m *Manager) WipeWritePerm(brokerName string) int {
	return m.setWritePerm(brokerName, func(perm int) int { return perm &^ protocol.PermWrite })
}

// AddWritePerm sets every queue data of a broker name to read+write
// (ADD_WRITE_PERM_OF_BROKER, as Apache: other bits are dropped).
func (m *Manager) AddWritePerm(brokerName string) int {
	return m.setWritePerm(brokerName, func(int) int { return protocol.PermRead | protocol.PermWrite })
}

func (m *Manager) setWritePerm(brokerName string, f func(int) int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.topics {
		i, found := m.findQueue(t.queues, brokerName)
		if !found {
			continue
		}
		n++
		if p := int32(f(int(t.queues[i].perm))); p != t.queues[i].perm {
			t.queues[i].perm = p
			m.changedTopic(t)
		}
	}
	return n
}
