package broker

import (
	"reflect"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// TestStaticLeaders: the logic queues each broker of a static topic's
// route leads, as remoting clients compute them (docs/static-topics.md
// §6.2): the highest epoch wins a logic id two brokers claim (mid-remap),
// unclaimed ids are nobody's; a normal topic has none.
func TestStaticLeaders(t *testing.T) {
	info := func(b string, epoch int64, ids map[int]int) protocol.TopicQueueMappingInfo {
		return protocol.TopicQueueMappingInfo{Bname: b, Epoch: epoch, Scope: "__global__", Topic: "S", TotalQueues: 4, CurrIDMap: ids}
	}
	tests := []struct {
		name  string
		infos map[string]protocol.TopicQueueMappingInfo
		want  map[string][]int32
	}{
		{"normal topic", nil, nil},
		{"spread", map[string]protocol.TopicQueueMappingInfo{
			"a": info("a", 1000, map[int]int{0: 0, 2: 1}),
			"b": info("b", 1000, map[int]int{1: 0, 3: 1}),
			"c": info("c", 1000, map[int]int{}),
		}, map[string][]int32{"a": {0, 2}, "b": {1, 3}}},
		{"mid remap: b took 2 at a higher epoch; 3 unclaimed", map[string]protocol.TopicQueueMappingInfo{
			"a": info("a", 1000, map[int]int{0: 0, 2: 1}),
			"b": info("b", 2000, map[int]int{1: 0, 2: 2}),
		}, map[string][]int32{"a": {0}, "b": {1, 2}}},
	}
	for _, tc := range tests {
		got := staticLeaders("S", &protocol.TopicRouteData{TopicQueueMappingByBroker: tc.infos})
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
