// Command orderly sends the steps of a few orders with SendOrderly (one
// queue per order id) and consumes them with an orderly push consumer,
// checking that every order's steps arrive in sequence.
//
//	orderly [-n nameserver] [-t topic] [-count orders] [-timeout D]
//
// It exits 0 once every step of every order was consumed in order, 1 on a
// step out of order or when -timeout (default 1m) passes first. The
// nameserver defaults to $NAMESRV_ADDR, else 127.0.0.1:9876.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/examples/internal/example"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

var steps = []string{"created", "paid", "shipped", "delivered"}

func main() {
	ns, topic := example.TargetFlags(os.Getenv, "OrderTopicExample", "topic")
	orders := flag.Int("count", 5, "orders (each sent as "+strconv.Itoa(len(steps))+" steps)")
	timeout := flag.Duration("timeout", time.Minute, "fail if not everything is consumed within this time")
	flag.Parse()
	example.PositiveCount("orderly", *orders)
	log := example.Logger()
	example.Check("orderly", run(*ns, *topic, *orders, *timeout, log))
}

func run(ns, topic string, orders int, timeout time.Duration, log *slog.Logger) error {
	common := client.CommonConfig{NameServers: []string{ns}, Logger: log}
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: common, Group: "example_order_producer"})
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, step := range steps {
		for o := range orders {
			id := "order-" + strconv.Itoa(o)
			m := &message.Message{Topic: topic, Body: []byte(id + ":" + step)}
			res, err := p.SendOrderly(ctx, m, id)
			if err != nil {
				return fmt.Errorf("send %s %s: %w", id, step, err)
			}
			fmt.Printf("sent     %s %-9s → queue %d\n", id, step, res.Queue.QueueID)
		}
	}

	var mu sync.Mutex
	next := map[string]int{}
	var wrong []string
	done := make(chan struct{})
	var once sync.Once
	c, err := client.NewPushConsumer(client.PushConsumerConfig{
		CommonConfig: common,
		Group:        "example_order_consumer",
		Orderly:      true,
		ConsumeFrom:  client.ConsumeFromFirstOffset,
		Handler: func(_ context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range req.Messages {
				id, step, _ := strings.Cut(string(m.Body), ":")
				want := steps[next[id]%len(steps)]
				fmt.Printf("consumed %s %-9s from queue %d (expected %s)\n", id, step, req.Queue.QueueID, want)
				if step != want {
					wrong = append(wrong, id+": "+step+" where "+want+" was due")
				}
				next[id]++
			}
			total := 0
			for _, n := range next {
				total += n
			}
			if total >= orders*len(steps) {
				once.Do(func() { close(done) })
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
	defer c.Shutdown(context.Background())
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("not everything was consumed: %w", ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(wrong) > 0 {
		return fmt.Errorf("%d steps out of order: %s", len(wrong), strings.Join(wrong, "; "))
	}
	fmt.Println("every order consumed in order")
	return nil
}
