package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting/code"
)

// topicRoute is one topic's route and the queue lists derived from it.
type topicRoute struct {
	data        *protocol.TopicRouteData
	publish     *publishInfo
	subscribe   []protocol.MessageQueue
	fromDefault bool // built from the TBW102 route: the topic does not exist yet
	// endpoints maps each logic queue of a static topic to its leader
	// broker (staticroute.go); nil for other topics.
	endpoints map[protocol.MessageQueue]string
	fetchedAt time.Time
}

// publishInfo is the writable queues of a topic in send order, with the
// round-robin position shared by all sends to it.
type publishInfo struct {
	queues []protocol.MessageQueue
	order  bool // built from orderTopicConf
	next   atomic.Uint32
}

func (p *publishInfo) ok() bool { return p != nil && len(p.queues) > 0 }

// newTopicRoute derives the queue lists (docs/protocol.md §4.2): publish queues
// from orderTopicConf when set, else from every WRITE QueueData whose broker
// has a master, brokers in name order; subscribe queues from READ QueueData.
// A static topic (mapping info in the route) has its logic queues instead
// (docs/static-topics.md §6): all of them to subscribe, those with a leader to
// publish (unless orderTopicConf is set, which wins for publishing, as in
// Java).
func newTopicRoute(topic string, rd *protocol.TopicRouteData, fromDefault bool) *topicRoute {
	tr := &topicRoute{data: rd, fromDefault: fromDefault, publish: &publishInfo{}, fetchedAt: time.Now()}
	// Start each topic at a random queue so that many producers do not all
	// hit queue 0 of the first broker (Java: random thread-local start).
	tr.publish.next.Store(rand.Uint32())

	conf := strings.TrimSpace(rd.OrderTopicConf)
	if len(rd.TopicQueueMappingByBroker) > 0 {
		var queues []protocol.MessageQueue
		tr.endpoints, queues = staticQueues(topic, rd)
		tr.subscribe = queues
		if conf == "" {
			for _, mq := range queues {
				if b := tr.endpoints[mq]; b != statictopic.MockBrokerNone && rd.HasMaster(b) {
					tr.publish.queues = append(tr.publish.queues, mq)
				}
			}
			return tr
		}
	}
	if conf != "" {
		tr.publish.order = true
		for _, item := range strings.Split(conf, ";") {
			name, num, ok := strings.Cut(item, ":")
			n, err := strconv.Atoi(strings.TrimSpace(num))
			if !ok || err != nil {
				continue
			}
			for i := range n {
				tr.publish.queues = append(tr.publish.queues, protocol.MessageQueue{Topic: topic, BrokerName: strings.TrimSpace(name), QueueID: i})
			}
		}
	} else {
		qds := slices.Clone(rd.QueueDatas)
		slices.SortFunc(qds, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
		for _, qd := range qds {
			if qd.Perm&protocol.PermWrite == 0 || !rd.HasMaster(qd.BrokerName) {
				continue
			}
			for i := range qd.WriteQueueNums {
				tr.publish.queues = append(tr.publish.queues, protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
			}
		}
	}
	if tr.endpoints != nil {
		return tr // subscribe to the logic queues
	}
	for _, qd := range rd.QueueDatas {
		if qd.Perm&protocol.PermRead == 0 {
			continue
		}
		for i := range qd.ReadQueueNums {
			tr.subscribe = append(tr.subscribe, protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
		}
	}
	protocol.SortMessageQueues(tr.subscribe)
	return tr
}

// route returns the cached route of topic, or nil.
func (c *core) route(topic string) *topicRoute {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.routes[topic]
}

// fetchRoute asks the nameserver for topic's route (GET_ROUTEINFO_BY_TOPIC).
// An unknown topic is a *ResponseError with code TOPIC_NOT_EXIST.
func (c *core) fetchRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	resp, addr, err := c.invokeNamesrv(ctx, code.GetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		return nil, fmt.Errorf("client: route of topic %s: %w", topic, err)
	}
	if resp.Code != code.Success {
		return nil, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr, Request: code.GetRouteInfoByTopic}
	}
	var rd protocol.TopicRouteData
	if err := protocol.Unmarshal(resp.Body, &rd); err != nil {
		return nil, fmt.Errorf("client: route of topic %s from %s: %w", topic, addr, err)
	}
	return &rd, nil
}

// routeFetch says how updateRoute may answer.
type routeFetch struct {
	// defaultTopic, when set, is the template topic whose route stands in
	// for a topic the nameserver does not know (producers, docs/protocol.md §5.2),
	// capped to defaultQueues queues per broker.
	defaultTopic  string
	defaultQueues int
	// ifMissing reuses a usable cached route (one fetched meanwhile by a
	// concurrent caller) instead of asking again.
	ifMissing bool
	// unlessFetchedSince, when set, reuses a cached route whose fetch
	// started at or after it.
	unlessFetchedSince time.Time
}

// updateRoute fetches topic's route, caches it and returns it. When the
// nameserver does not know the topic, a cached route is kept (Java keeps the
// old route too) and returned along with the error.
func (c *core) updateRoute(ctx context.Context, topic string, how routeFetch) (*topicRoute, error) {
	select {
	case c.fetchSem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("client: route of topic %s: %w", topic, ctx.Err())
	}
	defer func() { <-c.fetchSem }()

	if how.ifMissing {
		if tr := c.route(topic); tr != nil && (tr.publish.ok() || len(tr.subscribe) > 0) {
			return tr, nil
		}
	}
	if !how.unlessFetchedSince.IsZero() {
		if tr := c.route(topic); tr != nil && !tr.fetchedAt.Before(how.unlessFetchedSince) {
			return tr, nil
		}
	}
	start := time.Now()
	rd, err := c.fetchRoute(ctx, topic)
	if err == nil {
		tr := newTopicRoute(topic, rd, false)
		tr.fetchedAt = start // the nameserver's answer is at least this new
		c.storeRoute(topic, tr)
		return tr, nil
	}
	if how.defaultTopic == "" || !IsCode(err, code.TopicNotExist) {
		return nil, err
	}
	def, derr := c.fetchRoute(ctx, how.defaultTopic)
	if derr != nil {
		c.log.Debug("client: no route for topic nor its default", "topic", topic, "default", how.defaultTopic, "err", derr)
		return nil, err
	}
	for i := range def.QueueDatas {
		n := min(how.defaultQueues, def.QueueDatas[i].ReadQueueNums)
		def.QueueDatas[i].ReadQueueNums = n
		def.QueueDatas[i].WriteQueueNums = n
	}
	tr := newTopicRoute(topic, def, true)
	c.storeRoute(topic, tr)
	return tr, nil
}

// storeRoute caches tr and learns its brokers; a broker address not seen
// before gets a heartbeat right away.
func (c *core) storeRoute(topic string, tr *topicRoute) {
	c.mu.Lock()
	c.routes[topic] = tr
	fresh := false
	for _, bd := range tr.data.BrokerDatas {
		old, known := c.brokers[bd.BrokerName]
		for id, addr := range bd.BrokerAddrs {
			if !known || old.BrokerAddrs[id] != addr {
				fresh = true
			}
		}
		c.brokers[bd.BrokerName] = bd
	}
	c.mu.Unlock()
	if fresh {
		c.wakeHeartbeat()
	}
}

// refreshRoutes re-fetches every cached route. Failures keep the old route,
// including a TBW102 stand-in while the topic still does not exist.
func (c *core) refreshRoutes(ctx context.Context) {
	c.mu.RLock()
	topics := make([]string, 0, len(c.routes))
	for t := range c.routes {
		topics = append(topics, t)
	}
	c.mu.RUnlock()
	for _, t := range topics {
		if ctx.Err() != nil {
			return
		}
		if _, err := c.updateRoute(ctx, t, routeFetch{}); err != nil && !IsCode(err, code.TopicNotExist) {
			c.log.Warn("client: route refresh failed", "topic", t, "err", err)
		}
	}
}

// brokerAddr returns the address of broker name: the master, or with
// anyReplica the master else the lowest-id replica (reads may go to a slave).
func (c *core) brokerAddr(name string, anyReplica bool) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	bd, ok := c.brokers[name]
	if !ok {
		return ""
	}
	if a := bd.BrokerAddrs[protocol.MasterID]; a != "" || !anyReplica {
		return a
	}
	ids := make([]int64, 0, len(bd.BrokerAddrs))
	for id := range bd.BrokerAddrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if a := bd.BrokerAddrs[id]; a != "" {
			return a
		}
	}
	return ""
}

// brokerAddrFor is brokerAddr that refreshes mq's topic route once when the
// broker is unknown. A logic queue of a static topic resolves to the
// master of its current leader (static topics are not read from slaves).
func (c *core) brokerAddrFor(ctx context.Context, mq protocol.MessageQueue, anyReplica bool, how routeFetch) (string, error) {
	logic := statictopic.IsMockBroker(mq.BrokerName)
	anyReplica = anyReplica && !logic
	if a := c.brokerAddr(c.leaderName(mq), anyReplica); a != "" {
		return a, nil
	}
	if logic {
		if tr := c.route(mq.Topic); tr != nil && time.Since(tr.fetchedAt) < notLeaderRefreshGap {
			return "", fmt.Errorf("%w: logic queue %s has no leader broker", ErrNoRoute, mq)
		}
		how.ifMissing = false // the cached route does not know the leader: fetch it
	}
	if _, err := c.updateRoute(ctx, mq.Topic, how); err != nil {
		return "", fmt.Errorf("client: find broker %s: %w", mq.BrokerName, err)
	}
	name := c.leaderName(mq)
	if a := c.brokerAddr(name, anyReplica); a != "" {
		return a, nil
	}
	if logic && name == "" {
		return "", fmt.Errorf("%w: logic queue %s has no leader broker", ErrNoRoute, mq)
	}
	return "", fmt.Errorf("%w: broker %s of %s has no usable address", ErrNoRoute, name, mq)
}

// brokerAddrs lists the addresses to heartbeat: masters only, or every
// replica.
func (c *core) brokerAddrs(mastersOnly bool) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, bd := range c.brokers {
		for id, a := range bd.BrokerAddrs {
			if a != "" && (!mastersOnly || id == protocol.MasterID) {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
