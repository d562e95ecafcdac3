package broker

import (
	"fmt"

	"github.com/rmqgo/rmq/broker/lite"
	"github.com/rmqgo/rmq/broker/processor/sendback"
	"github.com/rmqgo/rmq/broker/schedule"
)

// wireRetry plugs in CONSUMER_SEND_MSG_BACK (36, on the send executor;
// package sendback): a failed message is copied to %RETRY%<group> through
// the schedule hook wired by wireSchedule (delay level 3 + reconsumeTimes),
// or to %DLQ%<group> past the group's retryMaxTimes. Clients' fallback (a
// SEND_MESSAGE to %RETRY%<group> with DELAY) goes through the send
// processor, which redirects to the DLQ and calls the same hook. A lite
// message goes to the DLQ or is refused, and is acked on its LMQ by the lite
// service (docs/lite-topics.md §6.10).
func (b *Broker) wireRetry(w *wiring, sched *schedule.Service, lite *lite.Service) error {
	p, err := sendback.New(sendback.Deps{
		Lite:      lite.Pop,
		Config:    b.cfg.Get,
		Topics:    b.topics,
		Groups:    w.m.subs,
		Store:     w.st,
		Schedule:  sched,
		StoreHost: b.storeHost,
		// As for the send path: register at once so consumers find the
		// new topic's route.
		TopicCreated: b.topicCreated,
		SentToDLQ:    b.metricsDLQ(),
		Logger:       w.log.With("component", "sendback"),
	})
	if err != nil {
		return fmt.Errorf("broker: send-back processor: %w", err)
	}
	p.Register(b)
	return nil
}
