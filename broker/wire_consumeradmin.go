package broker

import (
	"fmt"

	"github.com/rmqgo/rmq/broker/processor/consumeradmin"
	"github.com/rmqgo/rmq/broker/processor/pull"
)

// wireConsumerAdmin registers the consumer administration requests that
// the message-path processors do not answer (package consumeradmin):
// QUERY_TOPIC_CONSUME_BY_WHO, QUERY_TOPICS_BY_CONSUMER,
// GET_BROKER_CONSUME_STATS, INVOKE_BROKER_TO_RESET_OFFSET (a server-side
// reset answers the queues' next pulls with PULL_OFFSET_MOVED through the
// pull processor's reset table; non-Java clients are also pushed
// RESET_CONSUMER_CLIENT_OFFSET),
// INVOKE_BROKER_TO_GET_CONSUMER_STATUS, and the forwarding of
// GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY to a client.
// It returns the reset table for the pull processor: server-side resets
// (useServerSideResetOffset) reach the clients through their next pulls.
func (b *Broker) wireConsumerAdmin(w *wiring) (*pull.ResetTable, error) {
	resets := pull.NewResetTable()
	p, err := consumeradmin.New(consumeradmin.Deps{
		Resets:        resets,
		Config:        b.cfg.Get,
		Store:         w.st,
		Offsets:       consumeradmin.IndexOf(w.st.Offsets()),
		Topics:        b.topics,
		Subscriptions: w.m.subs,
		Consumers:     w.m.clients.Consumers(),
		BrokerAddr:    b.Addr,
		Logger:        w.log.With("component", "consumeradmin"),
	})
	if err != nil {
		return nil, fmt.Errorf("broker: consumer admin processor: %w", err)
	}
	p.Register(b)
	return resets, nil
}
