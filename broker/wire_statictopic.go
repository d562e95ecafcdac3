package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/broker/statictopic"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireStaticTopic plugs static topics in (broker/statictopic): the mapping
// manager, UPDATE_AND_CREATE_STATIC_TOPIC, and the logic-queue rewriting
// wrapped around the send, pull and offset handlers of handlers.
func (b *Broker) wireStaticTopic(w *wiring, handlers statictopic.Wrapper) error {
	mgr, ok := b.maps.(*statictopic.Manager)
	if !ok {
		return nil // a test plugged in its own mapping source
	}
	log := w.log.With("component", "statictopic")
	// Broker-to-broker reads get their own connections, apart from the
	// nameserver client.
	client := remoting.NewClient(b.clientConfig(), log.With("component", "statictopic-rpc"))
	b.signInner(client)
	rpc, err := statictopic.NewBrokerRPC(statictopic.RPCOptions{
		Invoker: client,
		NamesrvAddrs: func() []string {
			addrs, _ := b.cfg.Get().NamesrvAddrs()
			return addrs
		},
		Timeout: func() time.Duration { return b.cfg.Get().ForwardTimeout },
		Logger:  log,
	})
	if err != nil {
		_ = client.Close()
		return fmt.Errorf("broker: static topic rpc: %w", err)
	}
	clean, err := statictopic.NewCleanService(statictopic.CleanDeps{
		Mappings:   mgr,
		Store:      w.st,
		Remote:     rpc,
		Routes:     rpc,
		DeleteWhen: func() string { return b.cfg.Get().DeleteWhen },
		Changed:    b.TriggerRegistration,
		Logger:     log.With("component", "statictopic-clean"),
	})
	if err != nil {
		_ = client.Close()
		return fmt.Errorf("broker: static topic clean service: %w", err)
	}
	svc, err := statictopic.New(statictopic.Deps{
		Config:   b.cfg.Get,
		Mappings: mgr,
		Store:    w.st,
		Topics:   b.topics,
		Remote:   rpc,
		Registered: func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, b.cfg.Get().RegisterBrokerTimeoutMills)
			defer cancel()
			b.RegisterNow(ctx)
		},
		Updated: clean.Settle,
		Logger:  log,
	})
	if err != nil {
		_ = client.Close()
		return fmt.Errorf("broker: static topics: %w", err)
	}
	w.st.AddArrivalListener(svc.OnArrival)
	if missing := svc.Wrap(handlers); len(missing) > 0 {
		log.Warn("static topic rewriting: no handler to wrap", "codes", missing)
	}
	b.RegisterProcessor(code.UpdateAndCreateStaticTopic, svc.UpdateAndCreateStaticTopic, processor.PoolAdmin)
	w.m.starters = append(w.m.starters, svc.Start, clean.Start)
	w.m.closers = append(w.m.closers, func() {
		clean.Close()
		svc.Close()
		_ = client.Close()
	})
	return nil
}
