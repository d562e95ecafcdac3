package client

import (
	"context"
	"fmt"
	"slices"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// PullConsumer is a low-level consumer: the caller says which queue and
// offset to pull and keeps track of offsets itself (it may store them on the
// broker with UpdateOffset). ConsumeLoop runs a simple loop over all queues
// of a topic. Safe for concurrent use.
type PullConsumer struct {
	groupClient
	cfg PullConsumerConfig

	subs subscriptions // topics announced in heartbeats
}

// NewPullConsumer checks cfg and builds a consumer; nothing is dialled until
// the first request.
func NewPullConsumer(cfg PullConsumerConfig) (*PullConsumer, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	c := &PullConsumer{cfg: cfg}
	c.groupClient = newGroupClient(cfg.CommonConfig, "pull consumer", cfg.Group, c.heartbeatData)
	return c, nil
}

// Shutdown refuses new requests, stops running ConsumeLoops (they commit
// their offsets) and waits for requests in flight until ctx ends, then
// unregisters from the brokers and closes the connections.
func (c *PullConsumer) Shutdown(ctx context.Context) error {
	return c.shutdownConsumer(ctx, "consumer", !c.subs.empty())
}

// ClientID is the id brokers know this consumer by (ip@instance).
func (c *PullConsumer) ClientID() string { return c.core.clientID }

// Group is the consumer group.
func (c *PullConsumer) Group() string { return c.cfg.Group }

// Subscribe announces topic (with its filter expression) in this consumer's
// heartbeats, so brokers list the group as consuming it (consumerProgress,
// consumerConnection). Pulls do not need it: they carry their subscription.
func (c *PullConsumer) Subscribe(topic, expression, expressionType string) error {
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("client: subscribe: %w", err)
	}
	c.subs.add(topic, expression, expressionType)
	return nil
}

// Unsubscribe stops announcing topic.
func (c *PullConsumer) Unsubscribe(topic string) {
	c.subs.remove(topic)
}

// heartbeatData announces the group with its subscriptions, if any, as a
// pull ("CONSUME_ACTIVELY") clustering consumer.
func (c *PullConsumer) heartbeatData() *heartbeatData {
	return clusteringHeartbeat(c.core.clientID, c.cfg.Group, consumeActively, consumeFromLastOffset, c.subs.sorted())
}

// Queues lists the readable queues of topic (Java's
// fetchSubscribeMessageQueues), sorted, from the cached route or the
// nameserver.
func (c *PullConsumer) Queues(ctx context.Context, topic string) ([]protocol.MessageQueue, error) {
	if err := c.life.begin(); err != nil {
		return nil, err
	}
	defer c.life.end()
	return c.queues(ctx, topic)
}

func (c *PullConsumer) queues(ctx context.Context, topic string) ([]protocol.MessageQueue, error) {
	tr := c.core.route(topic)
	if tr == nil || len(tr.subscribe) == 0 {
		var err error
		if tr, err = c.core.updateRoute(ctx, topic, routeFetch{ifMissing: true}); err != nil {
			return nil, fmt.Errorf("%w: topic %s: %w", ErrNoRoute, topic, err)
		}
	}
	if len(tr.subscribe) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no readable queue", ErrNoRoute, topic)
	}
	return slices.Clone(tr.subscribe), nil
}
