// Command producer sends messages every way the SDK offers: sync, async,
// one-way, batch, with a delay level and as a timer message.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "TopicTest", "topic")
	count := flag.Int("c", 10, "messages per kind of send")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(*ns, *topic, *count, log); err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

func run(ns, topic string, count int, log *slog.Logger) error {
	p, err := client.NewProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}, Logger: log},
		Group:        "example_producer",
	})
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for i := range count {
		m := &message.Message{Topic: topic, Body: []byte("sync " + strconv.Itoa(i))}
		m.SetTags("TagA")
		m.SetKeys("key-" + strconv.Itoa(i))
		res, err := p.SendSync(ctx, m)
		if err != nil {
			return fmt.Errorf("sync send: %w", err)
		}
		fmt.Printf("sync    %s %s queue=%d offset=%d\n", res.Status, res.MsgID, res.Queue.QueueID, res.QueueOffset)
	}

	var wg sync.WaitGroup
	for i := range count {
		wg.Add(1)
		m := &message.Message{Topic: topic, Body: []byte("async " + strconv.Itoa(i))}
		err := p.SendAsync(ctx, m, func(res *client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				fmt.Println("async   failed:", err)
				return
			}
			fmt.Printf("async   %s %s\n", res.Status, res.MsgID)
		})
		if err != nil {
			wg.Done()
			return fmt.Errorf("async send: %w", err)
		}
	}
	wg.Wait()

	for i := range count {
		if err := p.SendOneway(ctx, &message.Message{Topic: topic, Body: []byte("oneway " + strconv.Itoa(i))}); err != nil {
			return fmt.Errorf("one-way send: %w", err)
		}
	}
	fmt.Printf("oneway  %d sent (no answer by design)\n", count)

	var batch []*message.Message
	for i := range count {
		batch = append(batch, &message.Message{Topic: topic, Body: []byte("batch " + strconv.Itoa(i))})
	}
	res, err := p.SendBatch(ctx, batch)
	if err != nil {
		return fmt.Errorf("batch send: %w", err)
	}
	fmt.Printf("batch   %s %d messages from offset %d\n", res.Status, count, res.QueueOffset)

	delayed := &message.Message{Topic: topic, Body: []byte("delay level 2 (5 s)")}
	delayed.SetDelayTimeLevel(2)
	if res, err = p.SendSync(ctx, delayed); err != nil {
		return fmt.Errorf("delayed send: %w", err)
	}
	fmt.Printf("delayed %s %s, visible in 5 s\n", res.Status, res.MsgID)

	timer := &message.Message{Topic: topic, Body: []byte("timer message")}
	timer.SetDeliverTime(time.Now().Add(10 * time.Second))
	if res, err = p.SendSync(ctx, timer); err != nil {
		return fmt.Errorf("timer send: %w", err)
	}
	fmt.Printf("timer   %s %s, visible at %s\n", res.Status, res.MsgID, time.Now().Add(10*time.Second).Format(time.TimeOnly))
	return nil
}
