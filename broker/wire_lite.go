package broker

import (
	"fmt"
	"time"

	"github.com/rmqgo/rmq/broker/lite"
	"github.com/rmqgo/rmq/broker/lite/sharding"
	"github.com/rmqgo/rmq/broker/pop"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// wireLite plugs lite topics in (broker/lite): lifecycle sweeper,
// subscriptions, event dispatch, POP_LITE_MESSAGE and the lite admin codes.
// It takes the lite branch of ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME /
// NOTIFICATION: its wrappers around pops' handlers answer requests carrying
// liteTopic (liteConsumer) and pass the others to broker/pop, which refuses
// lite requests that reach it. The returned service vets lite sends and
// lite groups. expirationUnit overrides the unit of the
// lite.topic.expiration topic attribute (WithLiteExpirationUnit); zero
// keeps a minute.
func (b *Broker) wireLite(w *wiring, pops *pop.Processor, expirationUnit time.Duration) (*lite.Service, error) {
	log := w.log.With("component", "lite")
	// Sharding (docs/lite-topics.md §4.6): a lite topic's home is a broker of its parent's
	// route, which this broker learns from the nameservers as the pop
	// processor does for QUERY_ASSIGNMENT.
	routes := sharding.New(sharding.Options{
		Fetch:   b.topicRoute,
		Refresh: b.cfg.Get().LoadBalancePollNameServerInterval,
		Logger:  log.With("part", "sharding"),
	})
	svc, err := lite.New(lite.Deps{
		Config:         b.cfg.Get,
		Store:          w.st,
		Topics:         b.topics,
		Groups:         w.m.subs,
		Routes:         routes.WriteQueueBrokers,
		Started:        b.boot,
		ExpirationUnit: expirationUnit,
		MessagesOut:    b.metricsLitePopped(),
		LagCollect:     b.metricsLiteLag(w.st),
		Deleted:        b.metricsLiteDeleted(),
		Logger:         log,
	})
	if err != nil {
		routes.Close()
		return nil, fmt.Errorf("broker: lite topics: %w", err)
	}
	if expirationUnit > 0 {
		log.Info("lite.topic.expiration unit overridden", "unit", expirationUnit)
	}
	svc.Register(b)
	b.topics.OnChange(svc.TopicsChanged)
	// Lite acks and notifications (liteConsumer=true) replace pop's
	// registrations, on pop's executors.
	popHandlers := pops.Handlers()
	for c, wrap := range map[int32]func(remoting.Handler) remoting.Handler{
		code.AckMessage:             svc.Pop.WrapAck,
		code.ChangeMessageInvisible: svc.Pop.WrapChangeInvisible,
		code.Notification:           svc.Pop.WrapNotification,
	} {
		h := popHandlers[c]
		b.RegisterProcessor(c, wrap(h.H), h.Pool)
	}
	w.m.starters = append(w.m.starters, svc.Start)
	w.m.closers = append(w.m.closers, routes.Close, svc.Close)
	return svc, nil
}
