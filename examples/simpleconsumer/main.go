// Command simpleconsumer receives messages with pop: each one stays
// invisible to the group for a while, is processed and acked; a slow one
// gets more time with ChangeInvisibleTime.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
)

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "TopicTest", "topic")
	group := flag.String("g", "example_simple_consumer", "consumer group")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *ns, *topic, *group, log); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "simpleconsumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, ns, topic, group string, log *slog.Logger) error {
	c, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig:  client.CommonConfig{NameServers: []string{ns}, Logger: log},
		Group:         group,
		AwaitDuration: 10 * time.Second,
		ConsumeFrom:   client.ConsumeFromFirstOffset,
	})
	if err != nil {
		return err
	}
	if err := c.Subscribe(topic, "*", ""); err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer c.Shutdown(context.Background())
	fmt.Printf("receiving from %s as %s; Ctrl-C to stop\n", topic, group)
	for ctx.Err() == nil {
		msgs, err := c.Receive(ctx, 16, 30*time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
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
			}
		}
	}
	return ctx.Err()
}
