package statictopic

import (
	"maps"
	"slices"
	"sort"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Endpoints computes which broker leads each logic queue of a route, as
// Java's ClientMetadata.topicRouteData2EndpointsForStaticTopic (docs/static-topics.md §6.2): per
// scope, the info of the highest epoch that lists a logic id in its
// currIdMap wins; ids below the largest totalQueues that nobody claims map
// to MockBrokerNone. Infos without a scope are ignored. The result is empty
// for a route without mapping info.
func Endpoints(topic string, infos map[string]protocol.TopicQueueMappingInfo) map[protocol.MessageQueue]string {
	out := map[protocol.MessageQueue]string{}
	byScope := map[string][]protocol.TopicQueueMappingInfo{}
	for _, key := range slices.Sorted(maps.Keys(infos)) {
		info := infos[key]
		if info.Scope == "" {
			continue
		}
		if info.Bname == "" {
			info.Bname = key
		}
		byScope[info.Scope] = append(byScope[info.Scope], info)
	}
	for scope, list := range byScope {
		sort.SliceStable(list, func(i, j int) bool { return list[i].Epoch > list[j].Epoch })
		type claim struct {
			broker string
			epoch  int64
		}
		claims := map[int]claim{}
		maxTotal := 0
		for _, info := range list {
			maxTotal = max(maxTotal, info.TotalQueues)
			for g := range info.CurrIDMap {
				if old, ok := claims[g]; !ok || old.epoch < info.Epoch {
					claims[g] = claim{info.Bname, info.Epoch}
				}
			}
		}
		mock := MockBrokerName(scope)
		for g := 0; g < maxTotal; g++ {
			mq := protocol.MessageQueue{Topic: topic, BrokerName: mock, QueueID: g}
			if c, ok := claims[g]; ok {
				out[mq] = c.broker
			} else {
				out[mq] = MockBrokerNone
			}
		}
	}
	return out
}
