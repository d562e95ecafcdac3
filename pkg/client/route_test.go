package client

import (
	"slices"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

func TestNewTopicRoute(t *testing.T) {
	bd := func(name string, ids ...int64) protocol.BrokerData {
		m := map[int64]string{}
		for _, id := range ids {
			m[id] = name + "-addr"
		}
		return protocol.BrokerData{BrokerName: name, BrokerAddrs: m}
	}
	qd := func(name string, perm, r, w int) protocol.QueueData {
		return protocol.QueueData{BrokerName: name, Perm: perm, ReadQueueNums: r, WriteQueueNums: w}
	}
	names := func(mqs []protocol.MessageQueue) []string {
		var out []string
		for _, mq := range mqs {
			out = append(out, mq.BrokerName+string(rune('0'+mq.QueueID)))
		}
		return out
	}
	tests := []struct {
		name      string
		rd        protocol.TopicRouteData
		publish   []string
		subscribe []string
		order     bool
	}{
		{
			name:      "brokers sorted, write and read counts apart",
			rd:        protocol.TopicRouteData{BrokerDatas: []protocol.BrokerData{bd("b", 0), bd("a", 0)}, QueueDatas: []protocol.QueueData{qd("b", 6, 1, 2), qd("a", 6, 2, 1)}},
			publish:   []string{"a0", "b0", "b1"},
			subscribe: []string{"a0", "a1", "b0"},
		},
		{
			name:      "no write perm, no master",
			rd:        protocol.TopicRouteData{BrokerDatas: []protocol.BrokerData{bd("a", 0), bd("b", 1)}, QueueDatas: []protocol.QueueData{qd("a", 4, 1, 1), qd("b", 6, 1, 1)}},
			publish:   nil,
			subscribe: []string{"a0", "b0"},
		},
		{
			name:      "no read perm",
			rd:        protocol.TopicRouteData{BrokerDatas: []protocol.BrokerData{bd("a", 0)}, QueueDatas: []protocol.QueueData{qd("a", 2, 2, 2)}},
			publish:   []string{"a0", "a1"},
			subscribe: nil,
		},
		{
			name:      "orderTopicConf wins for publishing",
			rd:        protocol.TopicRouteData{OrderTopicConf: "b:2;a:1", BrokerDatas: []protocol.BrokerData{bd("a", 0)}, QueueDatas: []protocol.QueueData{qd("a", 6, 4, 4)}},
			publish:   []string{"b0", "b1", "a0"},
			subscribe: []string{"a0", "a1", "a2", "a3"},
			order:     true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTopicRoute("T", &tt.rd, false)
			if got := names(tr.publish.queues); !slices.Equal(got, tt.publish) {
				t.Errorf("publish = %v, want %v", got, tt.publish)
			}
			if got := names(tr.subscribe); !slices.Equal(got, tt.subscribe) {
				t.Errorf("subscribe = %v, want %v", got, tt.subscribe)
			}
			if tr.publish.order != tt.order {
				t.Errorf("order = %v", tr.publish.order)
			}
			for _, mq := range append(tr.publish.queues, tr.subscribe...) {
				if mq.Topic != "T" {
					t.Fatalf("queue %v has the wrong topic", mq)
				}
			}
		})
	}
}
