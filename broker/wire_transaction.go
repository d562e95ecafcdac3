package broker

import (
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
		Logger:    w.log.With("component", "transaction"),
	})
	if err != nil {
		return fmt.Errorf("broker: transaction service: %w", err)
	}
	svc.Register(b)
	w.m.starters = append(w.m.starters, svc.Start)
	w.m.closers = append(w.m.closers, svc.Close)
	return nil
}
