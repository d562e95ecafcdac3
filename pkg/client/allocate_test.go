package client_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func queues(n int) []protocol.MessageQueue {
	var out []protocol.MessageQueue
	for i := range n {
		out = append(out, protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: i})
	}
	return out
}

func ids(mqs []protocol.MessageQueue) []int {
	out := []int{}
	for _, mq := range mqs {
		out = append(out, mq.QueueID)
	}
	return out
}

func TestAllocateAveragely(t *testing.T) {
	cids := []string{"c0", "c1", "c2", "c3"}
	tests := []struct {
		queues, consumers int
		self              string
		want              []int
	}{
		{8, 3, "c0", []int{0, 1, 2}},
		{8, 3, "c1", []int{3, 4, 5}},
		{8, 3, "c2", []int{6, 7}},
		{8, 4, "c3", []int{6, 7}},
		{2, 4, "c0", []int{0}},
		{2, 4, "c1", []int{1}},
		{2, 4, "c2", []int{}},
		{2, 4, "c3", []int{}},
		{4, 4, "c2", []int{2}},
		{5, 2, "c0", []int{0, 1, 2}},
		{5, 2, "c1", []int{3, 4}},
		{0, 2, "c0", []int{}},
		{4, 2, "stranger", []int{}}, // not in the list: nothing (Java's check)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%dq/%dc/%s", tt.queues, tt.consumers, tt.self), func(t *testing.T) {
			got := ids(client.AllocateAveragely(queues(tt.queues), cids[:tt.consumers], tt.self))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Every queue goes to exactly one consumer, whatever the counts.
func TestAllocateAveragelyPartitions(t *testing.T) {
	for q := 0; q <= 17; q++ {
		for n := 1; n <= 6; n++ {
			var cids []string
			for i := range n {
				cids = append(cids, fmt.Sprintf("c%d", i))
			}
			seen := map[int]int{}
			for _, c := range cids {
				for _, id := range ids(client.AllocateAveragely(queues(q), cids, c)) {
					seen[id]++
				}
			}
			if len(seen) != q {
				t.Fatalf("%d queues, %d consumers: %d allocated", q, n, len(seen))
			}
			for id, k := range seen {
				if k != 1 {
					t.Fatalf("%d queues, %d consumers: queue %d allocated %d times", q, n, id, k)
				}
			}
		}
	}
}
