package broker

import (
	"context"
	"fmt"

	"github.com/rmqgo/rmq/broker/schedule"
	"github.com/rmqgo/rmq/broker/transaction"
)

// wireTransaction plugs transactional messages in: END_TRANSACTION on the
// send executor and the check service (CHECK_TRANSACTION_STATE to a live
// channel of the producer group, else to a gRPC producer's Telemetry
// stream). Half messages are parked by the send path's default hook (send.HalfMessage); delayed committed messages are
// parked through sched.
func (b *Broker) wireTransaction(w *wiring, sched *schedule.Service) error {
	svc, err := transaction.New(transaction.Deps{
		Config: b.cfg.Get,
		Store:  w.st,
		Topics: b.topics,
		Producers: txCheckTargets{
			remoting: transaction.ChannelProducers(w.m.clients.Producers().AvailableChannel),
			grpc:     b.grpcProducers,
		},
		Schedule:  sched,
		StoreHost: b.storeHost,
		Ended:     b.metricsTxEnded(),
		Discarded: b.metricsTxDiscarded(),
		Logger:    w.log.With("component", "transaction"),
	})
	if err != nil {
		return fmt.Errorf("broker: transaction service: %w", err)
	}
	svc.Register(b)
	if b.metrics != nil {
		// rocketmq_half_messages starts from the half messages still
		// waiting (Java reloads its persisted count).
		pending, err := svc.PendingHalf(context.Background(), halfSeedLimit)
		if err != nil {
			w.log.Warn("metrics: count pending half messages", "err", err)
		}
		b.metrics.SeedHalfMessages(pending)
	}
	w.m.starters = append(w.m.starters, svc.Start)
	w.m.closers = append(w.m.closers, svc.Close)
	return nil
}

// halfSeedLimit bounds the half messages read at start to seed
// rocketmq_half_messages.
const halfSeedLimit = 1_000_000

// metricsTxDiscarded counts a transaction the check scan discarded (nil when
// metrics are off).
func (b *Broker) metricsTxDiscarded() func(string) {
	if b.metrics == nil {
		return nil
	}
	return b.metrics.TransactionDiscarded
}
