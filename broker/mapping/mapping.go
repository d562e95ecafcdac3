// Package mapping is the seam for static-topic queue mappings
// (docs/static-topics.md): the broker registers them with nameservers (§5.1) and
// returns them from GET_TOPIC_CONFIG / GET_ALL_TOPIC_CONFIG. The broker's
// Source is statictopic.Manager, which persists
// <store>/config/topicQueueMapping.json; None says "no static topics".
package mapping

import (
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Source reads the broker's static-topic mappings.
type Source interface {
	// Get returns the mapping detail of one topic.
	Get(topic string) (protocol.TopicQueueMappingDetail, bool)
	// All returns every detail and the mapping table's data version.
	All() (map[string]protocol.TopicQueueMappingDetail, protocol.DataVersion)
}

// None is a Source without mappings.
type None struct{ version protocol.DataVersion }

// NewNone returns an empty Source whose version is stamped now, like a fresh
// Java DataVersion.
func NewNone() *None {
	return &None{version: protocol.DataVersion{Timestamp: time.Now().UnixMilli()}}
}

// Get implements Source.
func (*None) Get(string) (protocol.TopicQueueMappingDetail, bool) {
	return protocol.TopicQueueMappingDetail{}, false
}

// All implements Source.
func (n *None) All() (map[string]protocol.TopicQueueMappingDetail, protocol.DataVersion) {
	return map[string]protocol.TopicQueueMappingDetail{}, n.version
}

// Infos derives what a registration carries for each topic: the detail's
// info with currIdMap recomputed from hostedQueues (docs/static-topics.md §5.1).
// The scope is copied from the detail (Java always sends __global__).
func Infos(details map[string]protocol.TopicQueueMappingDetail) map[string]protocol.TopicQueueMappingInfo {
	out := make(map[string]protocol.TopicQueueMappingInfo, len(details))
	for topic, d := range details {
		info := d.Info()
		info.Dirty = false
		if info.Scope == "" {
			info.Scope = protocol.MappingScopeGlobal
		}
		out[topic] = info
	}
	return out
}
