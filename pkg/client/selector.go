package client

import (
	"sync/atomic"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// QueueSelector picks the queue of a message among the topic's writable
// queues (never empty), for ordered sends: messages that must stay in order
// go to the same queue. Sends through a selector are not retried on another
// queue, as in Java.
type QueueSelector func(queues []protocol.MessageQueue, msg *message.Message) protocol.MessageQueue

// SelectByHash returns a selector that maps key to a queue the way Java's
// SelectMessageQueueByHash does (|String.hashCode % n|), so Go and Java
// producers agree on the queue of a key.
func SelectByHash(key string) QueueSelector {
	h := int(tagHash(key)) // Java String.hashCode
	return func(queues []protocol.MessageQueue, _ *message.Message) protocol.MessageQueue {
		i := h % len(queues)
		if i < 0 {
			i = -i
		}
		return queues[i]
	}
}

// SendOption changes how one send picks its queue.
type SendOption func(*sendOptions)

type sendOptions struct {
	queue    *protocol.MessageQueue
	selector QueueSelector
}

// WithQueue sends to exactly mq (its topic must be the message's). No retry.
func WithQueue(mq protocol.MessageQueue) SendOption {
	return func(o *sendOptions) { o.queue = &mq; o.selector = nil }
}

// WithSelector lets sel choose the queue among the topic's writable queues.
// No retry.
func WithSelector(sel QueueSelector) SendOption {
	return func(o *sendOptions) { o.selector = sel; o.queue = nil }
}

func buildSendOptions(opts []SendOption) sendOptions {
	var o sendOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// explicit reports whether the caller chose the queue (no retries then).
func (o sendOptions) explicit() bool { return o.queue != nil || o.selector != nil }

// selectQueue is the default round-robin choice (Java's
// selectOneMessageQueue): the next queue, skipping queues of lastBroker (the
// broker that just failed) while another broker has one; with no other
// broker it falls back to plain round-robin.
func selectQueue(queues []protocol.MessageQueue, pos *atomic.Uint32, lastBroker string) protocol.MessageQueue {
	n := uint32(len(queues))
	if lastBroker != "" {
		for range n {
			mq := queues[pos.Add(1)%n]
			if mq.BrokerName != lastBroker {
				return mq
			}
		}
	}
	return queues[pos.Add(1)%n]
}
