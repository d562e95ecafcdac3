package figures

import (
	"context"
	"fmt"
	"time"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/pkg/statictopic"
)

// HistoryQueue is one logic queue of a static topic: its newest leader
// and the mapping items (generations) that led to it.
type HistoryQueue struct {
	LogicQueue int                              `json:"logicQueue"`
	Leader     string                           `json:"leader"`
	Epoch      int64                            `json:"epoch"`
	Items      []protocol.LogicQueueMappingItem `json:"items"`
}

// History is staticTopicHistory: a static topic's brokers, its logic
// queues with their mapping history, the queues without a leader and
// what an interrupted change left.
type History struct {
	Topic       string          `json:"topic"`
	TotalQueues int             `json:"totalQueues"`
	Brokers     []HistoryBroker `json:"brokers"`
	Queues      []HistoryQueue  `json:"queues"`
	Missing     []int           `json:"missing"`
	Warnings    []string        `json:"warnings"`
}

// HistoryBroker is one broker holding the static topic.
type HistoryBroker struct {
	Broker         string `json:"broker"`
	Epoch          int64  `json:"epoch"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
}

// StaticHistory reads every broker's config of topic (a static topic)
// and builds its mapping history; state is what the brokers hold.
func StaticHistory(ctx context.Context, c *admin.Client, topic string, now func() time.Time) (*History, statictopic.Configs, error) {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	state, err := c.ExamineTopicConfigAll(ctx, topic, ci)
	if err != nil {
		return nil, nil, err
	}
	if len(state) == 0 {
		return nil, nil, fmt.Errorf("topic %s does not exist on any broker", topic)
	}
	if err := statictopic.CheckNames(topic, state); err != nil {
		return nil, nil, err
	}
	h := &History{Topic: topic, Brokers: []HistoryBroker{}, Queues: []HistoryQueue{}, Missing: []int{}, Warnings: []string{}}
	for _, b := range state.Brokers() {
		tc := state[b]
		h.TotalQueues = max(h.TotalQueues, tc.MappingDetail.TotalQueues)
		h.Brokers = append(h.Brokers, HistoryBroker{Broker: b, Epoch: tc.MappingDetail.Epoch, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums})
	}
	// The newest claim of each logic queue, as clients see it.
	leaders, err := statictopic.BuildLeaders(state, true, false)
	if err != nil {
		return nil, nil, err
	}
	for g := 0; g < h.TotalQueues; g++ {
		q, ok := leaders[g]
		if !ok {
			h.Missing = append(h.Missing, g)
			continue
		}
		h.Queues = append(h.Queues, HistoryQueue{LogicQueue: g, Leader: q.Leader, Epoch: q.Epoch, Items: q.Items})
	}
	if _, reasons, err := statictopic.Repair(topic, state, statictopic.Options{Now: now}); err != nil {
		h.Warnings = append(h.Warnings, err.Error())
	} else {
		h.Warnings = append(h.Warnings, reasons...)
	}
	return h, state, nil
}
