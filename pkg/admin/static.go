package admin

import (
	"math"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
)

// Static topics (docs/static-topics.md): admin-side conversion of physical queue
// stats into logic queue stats (§8.7).

// MockBrokerPrefix prefixes the fake broker name of logic queues.
const MockBrokerPrefix = statictopic.MockBrokerPrefix

// MockBrokerName is the broker name clients see for the logic queues of a
// mapping scope: "__syslo__global__" for the global scope.
func MockBrokerName(scope string) string { return statictopic.MockBrokerName(scope) }

type logicQueue struct {
	items []protocol.LogicQueueMappingItem
	scope string
}

// leaderLists builds logic queue id → leader item list from the details,
// highest epoch first; a later claim of the same id is ignored
// (checkAndBuildMappingItems with replace=true, checkConsistence=false).
func leaderLists(configs map[string]*protocol.TopicConfigAndQueueMapping) map[int]logicQueue {
	out := map[int]logicQueue{}
	for _, d := range statictopic.Configs(configs).Details() {
		for g, items := range d.HostedQueues {
			if len(items) == 0 || items[len(items)-1].Bname != d.Bname {
				continue
			}
			if _, ok := out[g]; ok {
				continue
			}
			out[g] = logicQueue{items: items, scope: d.Scope}
		}
	}
	return out
}

// findItem returns the item holding logic offset x (statictopic.Find).
func findItem(items []protocol.LogicQueueMappingItem, x int64, ignoreNegative bool) *protocol.LogicQueueMappingItem {
	if i := statictopic.Find(items, x, ignoreNegative); i >= 0 {
		return &items[i]
	}
	return nil
}

func staticOffsetLoosely(it *protocol.LogicQueueMappingItem, p int64) int64 {
	return statictopic.LogicLoosely(*it, p)
}

func staticOffsetStrictly(it *protocol.LogicQueueMappingItem, p int64) int64 {
	return statictopic.LogicStrictly(*it, p)
}

// convertStaticTopicStats adds one entry per logic queue, keyed by the mock
// broker name, computed from the physical entries already in st.
func convertStaticTopicStats(topic string, configs map[string]*protocol.TopicConfigAndQueueMapping, st *protocol.TopicStatsTable) {
	for g, lq := range leaderLists(configs) {
		minItem := findItem(lq.items, 0, true)
		maxItem := findItem(lq.items, math.MaxInt64, true)
		if minItem == nil || maxItem == nil {
			continue
		}
		minPhys, ok1 := st.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: minItem.Bname, QueueID: minItem.QueueID}]
		maxPhys, ok2 := st.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: maxItem.Bname, QueueID: maxItem.QueueID}]
		if !ok1 || !ok2 {
			continue
		}
		lo := max(staticOffsetLoosely(minItem, minPhys.MinOffset), 0)
		hi := max(staticOffsetStrictly(maxItem, maxPhys.MaxOffset), 0)
		st.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: MockBrokerName(lq.scope), QueueID: g}] = protocol.TopicOffset{
			LastUpdateTimestamp: maxPhys.LastUpdateTimestamp,
			MaxOffset:           hi,
			MinOffset:           lo,
		}
	}
}
