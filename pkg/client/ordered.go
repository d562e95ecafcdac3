package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/pkg/message"
)

// SendOrderly sends msg to the queue its sharding key hashes to, so that
// messages with one key keep their order (consume them with an orderly
// PushConsumer). The key goes into the message as __SHARDINGKEY (the
// property Java's FIFO producers and proxies read) and picks the queue as
// Java's SelectMessageQueueByHash, so Go and Java producers agree. Like
// every explicit queue choice it is not retried on another queue: a retry
// elsewhere would break the order.
func (p *Producer) SendOrderly(ctx context.Context, msg *message.Message, shardingKey string) (*SendResult, error) {
	if shardingKey == "" {
		return nil, fmt.Errorf("%w: empty sharding key", ErrInvalidMessage)
	}
	if msg == nil {
		return nil, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	msg.SetProperty(message.PropertyShardingKey, shardingKey)
	return p.SendSync(ctx, msg, WithSelector(SelectByHash(shardingKey)))
}

// SetDelaySeconds makes msg a timer message delivered d after the broker
// stores it, in whole seconds (TIMER_DELAY_SEC, Java's setDelayTimeSec).
// message.Message has the millisecond (SetDelayTime), absolute
// (SetDeliverTime) and delay-level (SetDelayTimeLevel) forms.
func SetDelaySeconds(msg *message.Message, d time.Duration) {
	msg.SetProperty(message.PropertyTimerDelaySec, strconv.FormatInt(int64(d/time.Second), 10))
}

// checkDelivery rejects delay properties the broker would misread: a delay
// level or timer value that is not a non-negative integer, or more than
// one timer property (brokers honour only one, in an order clients cannot
// see).
func checkDelivery(m *message.Message) error {
	if v, ok := m.Properties[message.PropertyDelayTimeLevel]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return fmt.Errorf("%w: delay level %q is not a non-negative integer", ErrInvalidMessage, v)
		}
	}
	timers := 0
	for _, k := range [...]string{message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		v, ok := m.Properties[k]
		if !ok {
			continue
		}
		timers++
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return fmt.Errorf("%w: %s=%q is not a non-negative integer", ErrInvalidMessage, k, v)
		}
	}
	if timers > 1 {
		return fmt.Errorf("%w: set only one of %s, %s and %s", ErrInvalidMessage,
			message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS)
	}
	return nil
}
