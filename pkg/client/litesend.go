package client

import (
	"fmt"
	"strings"

	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Lite-topic sends (docs/lite-topics.md §1.4, §4.6): a message that carries
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

// checkBatchLite vets the lite messages of a batch; it returns their
// distinct lite topics, first the first message's ("" entries for none are
// not allowed to mix with lite ones: a batch is lite or it is not).
func checkBatchLite(msgs []*message.Message) ([]string, error) {
	var lites []string
	seen := map[string]bool{}
	for i, m := range msgs {
		l, err := checkLite(m)
		if err != nil {
			return nil, err
		}
		if i > 0 && (l == "") != (len(lites) == 0) {
			return nil, fmt.Errorf("%w: a batch mixes lite topic messages with plain ones", ErrInvalidMessage)
		}
		if l != "" && !seen[l] {
			seen[l] = true
			lites = append(lites, l)
		}
	}
	return lites, nil
}

// liteBatchQueue is the home queue of a batch's first lite topic, provided
// every lite topic of the batch has its home on that queue's broker: one
// batch is stored by one broker, and a lite topic's messages belong on its
// home broker, where its subscriptions are active (§4.6).
func liteBatchQueue(queues []protocol.MessageQueue, lites []string) (protocol.MessageQueue, error) {
	mq := liteHomeQueue(queues, lites[0])
	for _, l := range lites[1:] {
		if h := liteHomeQueue(queues, l); h.BrokerName != mq.BrokerName {
			return mq, fmt.Errorf("%w: lite topics %q and %q of one batch live on different brokers (%s, %s): send them in separate batches",
				ErrInvalidMessage, lites[0], l, mq.BrokerName, h.BrokerName)
		}
	}
	return mq, nil
}

// liteHomeQueue is where a lite message goes when the caller did not pick
// a queue: the write queue at the lite topic's home bucket (§4.6), so every
// message of one lite topic lands on one broker, in one LMQ, and is
// consumed in send order. Retries go to the same queue.
func liteHomeQueue(queues []protocol.MessageQueue, lite string) protocol.MessageQueue {
	return queues[protocol.LiteHomeBucket(lite, len(queues))]
}
