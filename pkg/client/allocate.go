package client

import (
	"slices"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// AllocateStrategy picks the queues of one consumer: queues and consumers
// are the sorted lists of a topic's readable queues and of the group's
// client ids; self is this consumer's id. Every consumer of a group must
// use the same strategy or queues are consumed twice or not at all.
type AllocateStrategy func(queues []protocol.MessageQueue, consumers []string, self string) []protocol.MessageQueue

// AllocateAveragely is Java's AllocateMessageQueueAveragely (client-go's
// default too): consecutive blocks of queues, the first len%n consumers
// getting one more. A consumer missing from the list gets nothing.
func AllocateAveragely(queues []protocol.MessageQueue, consumers []string, self string) []protocol.MessageQueue {
	index := slices.Index(consumers, self)
	if index < 0 || len(queues) == 0 {
		return nil
	}
	n, q := len(consumers), len(queues)
	mod := q % n
	size := q / n
	switch {
	case q <= n:
		size = 1
	case mod > 0 && index < mod:
		size++
	}
	start := index*size + mod
	if mod > 0 && index < mod {
		start = index * size
	}
	count := min(size, q-start)
	if count <= 0 {
		return nil
	}
	return slices.Clone(queues[start : start+count])
}
