package pop

import (
	"slices"

	"github.com/rmqgo/rmq/pkg/protocol"
)

type mqT = protocol.MessageQueue

func makeQueues(n int) []mqT {
	out := make([]mqT, n)
	for i := range out {
		out[i] = mqT{Topic: "T", BrokerName: "b", QueueID: i}
	}
	return out
}

func ids(q []mqT) []int {
	var out []int
	for _, m := range q {
		out = append(out, m.QueueID)
	}
	return out
}

func equalInts(a, b []int) bool { return slices.Equal(a, b) }
