package admintest

import (
	"maps"
	"slices"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Static topics in the fake: UPDATE_AND_CREATE_STATIC_TOPIC (513) with the
// broker's acceptance rules (docs/static-topics.md §3.2, applied all or nothing,
// as the Go broker does), and mapping info in routes (§5.3).

// topicConfigOf reads the topic config of a topic create (17, 513) header;
// f.Err reports what was missing or malformed.
func topicConfigOf(f *protocol.Fields) protocol.TopicConfig {
	return protocol.TopicConfig{
		TopicName:       f.Str("topic"),
		ReadQueueNums:   int(f.Int32("readQueueNums")),
		WriteQueueNums:  int(f.Int32("writeQueueNums")),
		Perm:            int(f.Int32("perm")),
		TopicFilterType: f.OptStr("topicFilterType", protocol.SingleTag),
		TopicSysFlag:    int(f.OptInt32("topicSysFlag", 0)),
		Attributes:      map[string]string{},
	}
}

func (c *Cluster) createStaticTopic(b *Broker, req *remoting.Command) *remoting.Command {
	f := protocol.FieldsOf(req.ExtFields)
	tc := topicConfigOf(f)
	force := f.OptBool("force", false)
	if err := f.Err(); err != nil {
		return fail(req, code.InvalidParameter, "%v", err)
	}
	if err := protocol.ValidateTopic(tc.TopicName); err != nil {
		return fail(req, code.InvalidParameter, "%v", err)
	}
	var nd protocol.TopicQueueMappingDetail
	if err := protocol.Unmarshal(req.Body, &nd); err != nil {
		return fail(req, code.SystemError, "decode mapping: %v", err)
	}
	if nd.Bname != b.Name {
		return fail(req, code.SystemError, "the mapping is for broker %s, this is %s", nd.Bname, b.Name)
	}
	if nd.HostedQueues == nil {
		nd.HostedQueues = map[int][]protocol.LogicQueueMappingItem{}
	}
	for g, items := range nd.HostedQueues {
		if err := statictopic.CheckItems(items); err != nil {
			return fail(req, code.SystemError, "logic queue %d: %v", g, err)
		}
	}
	if old := b.Mapping[tc.TopicName]; old != nil {
		if force {
			for g, items := range old.HostedQueues {
				if _, ok := nd.HostedQueues[g]; !ok {
					nd.HostedQueues[g] = items
				}
			}
		} else {
			if nd.Epoch < old.Epoch {
				return fail(req, code.SystemError, "the epoch %d is smaller than the stored one %d", nd.Epoch, old.Epoch)
			}
			if nd.Scope != old.Scope {
				return fail(req, code.SystemError, "the scope %s differs from the stored %s", nd.Scope, old.Scope)
			}
			equal := nd.Epoch == old.Epoch
			for _, g := range slices.Sorted(maps.Keys(old.HostedQueues)) {
				items, ok := nd.HostedQueues[g]
				if !ok {
					if equal {
						return fail(req, code.SystemError, "logic queue %d is missing at the same epoch", g)
					}
					nd.HostedQueues[g] = old.HostedQueues[g]
					continue
				}
				if err := statictopic.CheckImmutable(old.HostedQueues[g], items, equal); err != nil {
					return fail(req, code.SystemError, "logic queue %d: %v", g, err)
				}
			}
		}
	}
	if prev, ok := b.Topics[tc.TopicName]; ok {
		tc.Attributes = prev.Attributes
	}
	b.Topics[tc.TopicName] = tc
	nd.CurrIDMap = map[int]int{}
	b.Mapping[tc.TopicName] = &nd
	return ok(req, nil)
}

// addMappingInfo puts the masters' mapping infos of topic into a route.
func (c *Cluster) addMappingInfo(topic string, r *protocol.TopicRouteData) {
	for _, b := range c.Brokers {
		if b.ID != protocol.MasterID {
			continue
		}
		if d := b.Mapping[topic]; d != nil {
			if r.TopicQueueMappingByBroker == nil {
				r.TopicQueueMappingByBroker = map[string]protocol.TopicQueueMappingInfo{}
			}
			info := d.Info()
			if info.Scope == "" {
				info.Scope = protocol.MappingScopeGlobal
			}
			r.TopicQueueMappingByBroker[b.Name] = info
		}
	}
}
