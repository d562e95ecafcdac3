package mapping

import (
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

func TestInfos(t *testing.T) {
	d := protocol.TopicQueueMappingDetail{
		Bname: "b1", Epoch: 7, Topic: "S", TotalQueues: 2, Dirty: true,
		HostedQueues: map[int][]protocol.LogicQueueMappingItem{
			0: {{Bname: "b1", QueueID: 3}},                            // led here
			1: {{Bname: "b1", QueueID: 0}, {Bname: "b2", QueueID: 1}}, // moved to b2
		},
	}
	info := Infos(map[string]protocol.TopicQueueMappingDetail{"S": d})["S"]
	if info.Scope != protocol.MappingScopeGlobal || info.Dirty || info.Epoch != 7 || info.TotalQueues != 2 {
		t.Errorf("info %+v", info)
	}
	if len(info.CurrIDMap) != 1 || info.CurrIDMap[0] != 3 {
		t.Errorf("currIdMap %v", info.CurrIDMap)
	}
	if got, _ := NewNone().All(); len(got) != 0 {
		t.Error("None has mappings")
	}
}
