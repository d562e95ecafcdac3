package broker

import (
	"context"
	"errors"
	"fmt"
	"github.com/rmqgo/rmq/broker/pop/popcodec"
	"path/filepath"

	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// wirePop plugs pop consumption in (broker/pop): POP_MESSAGE, ACK_MESSAGE,
// BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, PEEK, NOTIFICATION,
// POLLING_INFO, QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE and the revive
// service. pop.New replays the pop journal (in the revive topic) before
// the broker takes requests. wireLite takes the returned processor and
// wraps its ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and NOTIFICATION to
// answer lite consumers itself; pop refuses requests that carry liteTopic.
func (b *Broker) wirePop(w *wiring, filters pop.FilterFactory, resets pop.ResetTaker) (*pop.Processor, error) {
	cfg := b.cfg.Get()
	p, err := pop.New(pop.Deps{
		Config:          b.cfg.Get,
		Store:           w.st,
		Topics:          b.topics,
		Groups:          w.m.subs,
		Consumers:       w.m.clients.Consumers(),
		Filters:         filters,
		StoreHost:       b.storeHost,
		TopicCreated:    b.topicCreated,
		Routes:          b.topicRoute,
		RequestModePath: filepath.Join(cfg.ConfigDir(), pop.RequestModeFileName),
		// Wired before HA: the waiter is read when a record is written.
		Replicas: func(ctx context.Context, end int64) error {
			if w.m.replicas == nil {
				return nil
			}
			return w.m.replicas.WaitReplicas(ctx, end)
		},
		Resets:      resets,
		ReviveRound: b.metricsPopScan(),
		Revive:      b.metricsRevive(),
		MessagesOut: b.metricsPopped(),
		Resumed:     b.metricsResumed(),
		Logger:      w.log.With("component", "pop"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: pop processor: %w", err)
	}
	p.Register(b)
	w.m.starters = append(w.m.starters, p.Start)
	w.m.closers = append(w.m.closers, p.Close)
	return p, nil
}

// topicRoute asks the nameservers for a topic's route (QUERY_ASSIGNMENT
// allocates the queues of every broker of the topic).
func (b *Broker) topicRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	addrs, err := b.cfg.Get().NamesrvAddrs()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, addr := range addrs {
		resp, err := b.client.Invoke(ctx, addr, remoting.NewRequest(code.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		if resp.Code != code.Success {
			errs = append(errs, fmt.Errorf("%s: %w", addr, remoting.Errorf(resp.Code, "code %d: %s", resp.Code, resp.Remark)))
			continue
		}
		var rd protocol.TopicRouteData
		if err := protocol.Unmarshal(resp.Body, &rd); err != nil {
			errs = append(errs, fmt.Errorf("%s: route body: %w", addr, err))
			continue
		}
		return &rd, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("no nameserver address")
	}
	return nil, errors.Join(errs...)
}

// popRetryTopicsOf names the pop retry topics (v2 and v1) of the groups
// with offsets on topic, which DELETE_TOPIC_IN_BROKER deletes with it under
// clearRetryTopicWhenDeleteTopic (Java's ConsumerOffsetManager.whichGroupByTopic).
func (b *Broker) popRetryTopicsOf(topic string) []string {
	if b.store == nil {
		return nil
	}
	var out []string
	for _, g := range b.store.Offsets().TopicGroups(topic) {
		out = append(out, popcodec.RetryTopicV2(topic, g), popcodec.RetryTopicV1(topic, g))
	}
	return out
}
