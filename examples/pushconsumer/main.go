// Command pushconsumer consumes a topic with a clustering (or broadcasting)
// push consumer until interrupted, or until -count messages were consumed.
// Run two of them to see the queues shared out; a message whose body
// contains "fail" is retried through the retry topic twice.
//
//	pushconsumer [-n nameserver] [-t topic] [-g group] [-b] [-count N] [-timeout D]
//
// With -count it exits 0 once N messages were consumed, 1 if -timeout
// (default 1m) passes first. The nameserver defaults to $NAMESRV_ADDR,
// else 127.0.0.1:9876.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/examples/internal/example"
	"github.com/rmqgo/rmq/pkg/client"
)

func main() {
	ns, topic := example.TargetFlags(os.Getenv, "TopicTest", "topic")
	group := flag.String("g", "example_consumer", "consumer group")
	broadcast := flag.Bool("b", false, "broadcasting instead of clustering")
	count, timeout := example.UntilFlags("consuming", "consumed")
	flag.Parse()
	log := example.Logger()
	ctx, stop := example.Interruptible()
	defer stop()
	example.Check("pushconsumer", run(ctx, *ns, *topic, *group, *broadcast, *count, *timeout, log))
}

func run(ctx context.Context, ns, topic, group string, broadcast bool, count int, timeout time.Duration, log *slog.Logger) error {
	model := client.Clustering
	if broadcast {
		model = client.Broadcasting
	}
	var consumed atomic.Int64
	done := make(chan struct{})
	c, err := client.NewPushConsumer(client.PushConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}, Logger: log},
		Group:        group,
		Model:        model,
		ConsumeFrom:  client.ConsumeFromFirstOffset,
		Handler: func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			for _, m := range req.Messages {
				fmt.Printf("queue=%d offset=%d reconsume=%d id=%s body=%q\n",
					req.Queue.QueueID, m.QueueOffset, m.ReconsumeTimes, m.ClientMsgID(), m.Body)
				if strings.Contains(string(m.Body), "fail") && m.ReconsumeTimes < 2 {
					req.DelayLevel = 1 // retry in 1 s
					return client.ConsumeRetryLater
				}
			}
			if n := consumed.Add(int64(len(req.Messages))); count > 0 && n >= int64(count) && n-int64(len(req.Messages)) < int64(count) {
				close(done)
			}
			return client.ConsumeSuccess
		},
	})
	if err != nil {
		return err
	}
	if err := example.SubscribeAndStart(c, topic); err != nil {
		return err
	}
	fmt.Printf("consuming %s as %s (%s); Ctrl-C to stop\n", topic, c.ClientID(), model)
	var failure error
	var expired <-chan time.Time
	if count > 0 {
		expired = time.After(timeout)
	}
	select {
	case <-ctx.Done():
	case <-done:
	case <-expired:
		failure = fmt.Errorf("%d of %d messages consumed within %v", consumed.Load(), count, timeout)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Shutdown(sctx); err != nil && failure == nil {
		failure = err
	}
	if failure == nil {
		fmt.Printf("consumed %d messages\n", consumed.Load())
	}
	return failure
}
