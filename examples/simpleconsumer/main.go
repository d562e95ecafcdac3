// Command simpleconsumer receives messages with pop: each one stays
// invisible to the group for a while, is processed and acked; a slow one
// gets more time with ChangeInvisibleTime. -orderly pops FIFO: a queue's
// messages in order, one un-acked message holding back the rest of its
// queue.
//
//	simpleconsumer [-n nameserver] [-t topic] [-g group] [-orderly] [-count N] [-timeout D]
//
// With -count it exits 0 once N messages were acked, 1 if -timeout
// (default 1m) passes first; without, it runs until interrupted. The
// nameserver defaults to $NAMESRV_ADDR, else 127.0.0.1:9876.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/rmqgo/rmq/examples/internal/example"
	"github.com/rmqgo/rmq/pkg/client"
)

func main() {
	ns, topic := example.TargetFlags(os.Getenv, "TopicTest", "topic")
	group := flag.String("g", "example_simple_consumer", "consumer group")
	orderly := flag.Bool("orderly", false, "FIFO pops (order=true)")
	count, timeout := example.UntilFlags("acking", "acked")
	flag.Parse()
	log := example.Logger()
	ctx, stop := example.Interruptible()
	defer stop()
	if *count > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	acked, err := run(ctx, *ns, *topic, *group, *orderly, *count, log)
	switch {
	case *count > 0 && acked < *count:
		fmt.Fprintf(os.Stderr, "simpleconsumer: %d of %d messages acked: %v\n", acked, *count, err)
		os.Exit(1)
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "simpleconsumer:", err)
		os.Exit(1)
	}
	fmt.Printf("acked %d messages\n", acked)
}

// run receives and acks until ctx ends or count messages (if > 0) are
// acked, and returns how many it acked.
func run(ctx context.Context, ns, topic, group string, orderly bool, count int, log *slog.Logger) (int, error) {
	c, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig:  client.CommonConfig{NameServers: []string{ns}, Logger: log},
		Group:         group,
		AwaitDuration: 10 * time.Second,
		ConsumeFrom:   client.ConsumeFromFirstOffset,
		Orderly:       orderly,
	})
	if err != nil {
		return 0, err
	}
	if err := example.SubscribeAndStart(c, topic); err != nil {
		return 0, err
	}
	defer c.Shutdown(context.Background())
	fmt.Printf("receiving from %s as %s; Ctrl-C to stop\n", topic, group)
	acked := 0
	for ctx.Err() == nil && (count == 0 || acked < count) {
		msgs, err := c.Receive(ctx, 16, 30*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return acked, ctx.Err()
			}
			fmt.Println("receive:", err)
			time.Sleep(time.Second)
			continue
		}
		for _, m := range msgs {
			if len(m.Body) > 1<<20 {
				// Big work: ask for more time before the handle expires.
				if err := c.ChangeInvisibleTime(ctx, m, 2*time.Minute); err != nil {
					fmt.Println("extend:", err)
				}
			}
			fmt.Printf("queue=%d offset=%d reconsume=%d body=%q\n", m.QueueID, m.QueueOffset, m.ReconsumeTimes, m.Body)
			if err := c.Ack(ctx, m); err != nil {
				fmt.Println("ack:", err)
				continue
			}
			acked++
		}
	}
	return acked, ctx.Err()
}
