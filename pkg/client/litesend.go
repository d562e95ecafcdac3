package client

import (
	"fmt"
	"strings"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Lite-topic sends (lite-topic.md §1.4, §4.6): a message that carries
// __LITE_TOPIC (message.SetLiteTopic) is sent to its LITE parent topic;
// the broker also files it under the lite topic's LMQ.

// checkLite validates the lite topic of m, if it has one, as Java's client
// does: a legal name, and none of message group (sharding key), delivery
// time (delay level or timer) and priority, which a lite message cannot
// have. Copies consumers re-send to %RETRY% and %DLQ% topics keep the
// property and are not checked (the broker does not check them either).
// It returns the lite topic ("" for none).
func checkLite(m *message.Message) (string, error) {
	lite, ok := m.Properties[message.PropertyLiteTopic]
	if !ok || strings.HasPrefix(m.Topic, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(m.Topic, protocol.DLQGroupTopicPrefix) {
		return "", nil
	}
	if err := protocol.ValidateLiteTopic(lite, 0); err != nil {
		return "", fmt.Errorf("%w: %s %q: %w", ErrInvalidMessage, message.PropertyLiteTopic, lite, err)
	}
	for _, k := range [...]string{message.PropertyShardingKey, message.PropertyShardingKeyGo} {
		if _, ok := m.Properties[k]; ok {
			return "", fmt.Errorf("%w: a lite topic message cannot have a message group (%s)", ErrInvalidMessage, k)
		}
	}
	for _, k := range [...]string{message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		if _, ok := m.Properties[k]; ok {
			return "", fmt.Errorf("%w: a lite topic message cannot have a delivery time (%s)", ErrInvalidMessage, k)
		}
	}
	if _, ok := m.Properties[message.PropertyPriority]; ok {
		return "", fmt.Errorf("%w: a lite topic message cannot have a priority", ErrInvalidMessage)
	}
	return lite, nil
}

// checkBatchLite: the messages of a batch all name the same lite topic
// (or none), so the batch can go to that lite topic's home queue.
func checkBatchLite(msgs []*message.Message) (string, error) {
	var lite string
	for i, m := range msgs {
		l, err := checkLite(m)
		if err != nil {
			return "", err
		}
		if i > 0 && l != lite {
			return "", fmt.Errorf("%w: the messages of one batch must name the same lite topic (%q, %q)", ErrInvalidMessage, lite, l)
		}
		lite = l
	}
	return lite, nil
}

// liteHomeQueue is where a lite message goes when the caller did not pick
// a queue: the write queue at the lite topic's home bucket (§4.6), so every
// message of one lite topic lands on one broker, in one LMQ, and is
// consumed in send order. Retries go to the same queue.
func liteHomeQueue(queues []protocol.MessageQueue, lite string) protocol.MessageQueue {
	return queues[protocol.LiteHomeBucket(lite, len(queues))]
}
