package client

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
)

// Static topics (docs/static-topics.md §6): a route with topicQueueMappingByBroker
// has logic queues. Producers and consumers see them as MessageQueues of a
// mock broker ("__syslo__global__"); every request about one goes to the
// broker that leads it now, with the logic queue id in the header, and
// that broker translates. A remap changes the leaders: clients learn it
// from the periodic route refresh, or at once when a broker answers
// NOT_LEADER_FOR_QUEUE.

// notLeaderRefreshGap: a route fetched this recently is not fetched again
// when it names no leader for a logic queue.
const notLeaderRefreshGap = 500 * time.Millisecond

// staticQueues derives the logic queues of a static route: endpoints maps
// each to its leader broker (statictopic.MockBrokerNone when none), queues
// lists them by queue id.
func staticQueues(topic string, rd *protocol.TopicRouteData) (endpoints map[protocol.MessageQueue]string, queues []protocol.MessageQueue) {
	endpoints = statictopic.Endpoints(topic, rd.TopicQueueMappingByBroker)
	queues = slices.Collect(maps.Keys(endpoints))
	slices.SortFunc(queues, func(a, b protocol.MessageQueue) int {
		if a.QueueID != b.QueueID {
			return a.QueueID - b.QueueID
		}
		return cmp.Compare(a.BrokerName, b.BrokerName)
	})
	return endpoints, queues
}

// leaderName returns the broker a request about mq goes to: for a logic
// queue its current leader from the cached route ("" when unknown), else
// mq's own broker.
func (c *core) leaderName(mq protocol.MessageQueue) string {
	if !statictopic.IsMockBroker(mq.BrokerName) {
		return mq.BrokerName
	}
	tr := c.route(mq.Topic)
	if tr == nil {
		return ""
	}
	b := tr.endpoints[mq]
	if b == statictopic.MockBrokerNone {
		return ""
	}
	return b
}

// physicalQueue is mq with the broker name of its leader (Java's send
// header and SendResult carry it); mq itself when the leader is unknown.
func (c *core) physicalQueue(mq protocol.MessageQueue) protocol.MessageQueue {
	if b := c.leaderName(mq); b != "" {
		mq.BrokerName = b
	}
	return mq
}

// notLeader refreshes topic's route at once after a broker answered
// NOT_LEADER_FOR_QUEUE to a request sent at sent, unless the cached route
// was fetched since: it then already knows what the nameserver knew when
// the request went out (many requests in flight answer 501 together, and
// one refresh serves them all). A route fetched just before the old leader
// was fenced is refreshed, however recent: its retry would only be refused
// again.
func (c *core) notLeader(ctx context.Context, topic string, sent time.Time) {
	if _, err := c.updateRoute(ctx, topic, routeFetch{unlessFetchedSince: sent}); err != nil {
		c.log.Debug("client: route refresh after NOT_LEADER_FOR_QUEUE failed", "topic", topic, "err", err)
	}
}
