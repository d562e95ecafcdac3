package broker

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rmqgo/rmq/broker/lite"
	"github.com/rmqgo/rmq/broker/lite/sharding"
	"github.com/rmqgo/rmq/remoting/code"
)

// envLiteExpirationUnit overrides the unit of the lite.topic.expiration
// topic attribute in milliseconds (a minute). It is not a broker.conf key:
// end-to-end tests shorten it so lite topics expire within seconds.
const envLiteExpirationUnit = "ROCKETMQ_LITE_TOPIC_EXPIRATION_UNIT_MS"

// wireLite plugs lite topics in (broker/lite): lifecycle sweeper,
// subscriptions, event dispatch, POP_LITE_MESSAGE and the lite admin codes.
// It also vets lite sends (wrapping the message-type check) and takes the
// lite branch of ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME / NOTIFICATION:
// its wrappers answer requests carrying liteTopic (liteConsumer) and pass
// the others to broker/pop, which refuses lite requests that reach it.
func (b *Broker) wireLite(w *wiring) error {
	var unit time.Duration
	if v := os.Getenv(envLiteExpirationUnit); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return fmt.Errorf("broker: %s=%q: want a positive number of milliseconds", envLiteExpirationUnit, v)
		}
		unit = time.Duration(ms) * time.Millisecond
	}
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
		ExpirationUnit: unit,
		Logger:         log,
	})
	if err != nil {
		routes.Close()
		return fmt.Errorf("broker: lite topics: %w", err)
	}
	if unit > 0 {
		log.Info("lite.topic.expiration unit overridden", "unit", unit)
	}
	b.lite = svc
	svc.Register(w.reg)
	w.sendDeps.MessageTypeCheck = svc.SendChecker(w.sendDeps.MessageTypeCheck)
	w.m.checkGroup = svc.CheckGroup
	b.topics.OnChange(svc.TopicsChanged)
	// Lite acks: whatever handles ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME
	// (broker/pop) keeps the other requests; without it they answer
	// REQUEST_CODE_NOT_SUPPORTED.
	if !b.WrapProcessor(code.AckMessage, svc.Pop.WrapAck) {
		w.reg.RegisterProcessor(code.AckMessage, svc.Pop.WrapAck(nil), int(PoolSend))
	}
	if !b.WrapProcessor(code.ChangeMessageInvisible, svc.Pop.WrapChangeInvisible) {
		w.reg.RegisterProcessor(code.ChangeMessageInvisible, svc.Pop.WrapChangeInvisible(nil), int(PoolSend))
	}
	// Lite simple consumers' NOTIFICATION (liteConsumer=true).
	if !b.WrapProcessor(code.Notification, svc.Pop.WrapNotification) {
		w.reg.RegisterProcessor(code.Notification, svc.Pop.WrapNotification(nil), int(PoolPull))
	}
	w.m.starters = append(w.m.starters, svc.Start)
	w.m.closers = append(w.m.closers, routes.Close, svc.Close)
	return nil
}
