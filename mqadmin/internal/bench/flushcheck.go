package bench

import (
	"context"
	"errors"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// flushChecker verifies, after a run, that the topic's queues grew by at
// least as many messages as the brokers acknowledged: every acknowledged
// message must be stored and dispatched. Other producers writing to the
// topic meanwhile only make the growth larger. Delay messages are parked in
// SCHEDULE_TOPIC_XXXX first, so they do not count until delivered.
type flushChecker struct {
	c        *client.PullConsumer
	topic    string
	baseline map[protocol.MessageQueue]int64
	err      error
}

func newFlushChecker(ctx context.Context, o ProducerOptions) *flushChecker {
	f := &flushChecker{topic: o.Topic, baseline: map[protocol.MessageQueue]int64{}}
	f.c, f.err = client.NewPullConsumer(client.PullConsumerConfig{
		CommonConfig: runClientConfig(o.RunOptions, "flushcheck", remoting.SerializeRocketMQ),
		Group:        DefaultProducerGroup + "_flush_check",
	})
	if f.err != nil {
		return f
	}
	if f.err = f.c.Start(); f.err != nil {
		return f
	}
	queues, err := f.c.Queues(ctx, o.Topic)
	if errors.Is(err, client.ErrNoRoute) {
		return f // the run creates the topic: every queue starts at 0
	}
	if err != nil {
		f.err = err
		return f
	}
	f.baseline, f.err = f.maxOffsets(ctx, queues)
	return f
}

func (f *flushChecker) maxOffsets(ctx context.Context, queues []protocol.MessageQueue) (map[protocol.MessageQueue]int64, error) {
	out := make(map[protocol.MessageQueue]int64, len(queues))
	for _, mq := range queues {
		off, err := f.c.GetMaxOffset(ctx, mq)
		if err != nil {
			return nil, err
		}
		out[mq] = off
	}
	return out, nil
}

// check measures the growth, retrying for a few seconds because brokers
// dispatch to consume queues asynchronously.
func (f *flushChecker) check(ctx context.Context, acked int64) *FlushCheck {
	res := &FlushCheck{Acked: acked}
	if f.err != nil {
		res.Error = f.err.Error()
		return res
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		queues, err := f.c.Queues(ctx, f.topic)
		var now map[protocol.MessageQueue]int64
		if err == nil {
			now, err = f.maxOffsets(ctx, queues)
		}
		if err != nil {
			if acked == 0 && errors.Is(err, client.ErrNoRoute) {
				res.OK = true
				return res
			}
			res.Error = err.Error()
			return res
		}
		res.Advanced = 0
		for mq, off := range now {
			res.Advanced += off - f.baseline[mq]
		}
		res.OK = res.Advanced >= acked
		if res.OK || time.Now().After(deadline) || ctx.Err() != nil {
			return res
		}
		sleepUntil(ctx, 200*time.Millisecond)
	}
}

func (f *flushChecker) close() {
	if f.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = f.c.Shutdown(ctx)
	}
}
