// Command pushconsumer consumes a topic with a clustering push consumer
// until interrupted. Run two of them to see the queues shared out; a
// message whose body contains "fail" is retried through the retry topic.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
)

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "TopicTest", "topic")
	group := flag.String("g", "example_consumer", "consumer group")
	broadcast := flag.Bool("b", false, "broadcasting instead of clustering")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *ns, *topic, *group, *broadcast, log); err != nil {
		fmt.Fprintln(os.Stderr, "pushconsumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, ns, topic, group string, broadcast bool, log *slog.Logger) error {
	model := client.Clustering
	if broadcast {
		model = client.Broadcasting
	}
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
			return client.ConsumeSuccess
		},
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
	fmt.Printf("consuming %s as %s (%s); Ctrl-C to stop\n", topic, c.ClientID(), model)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Shutdown(sctx)
}
