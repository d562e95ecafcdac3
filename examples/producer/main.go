// Command producer sends messages every way the SDK offers: sync, async,
// one-way, batch, with a delay level and as a timer message: 4×count+2
// messages in all. It exits 0 once every send succeeded, 1 otherwise.
//
//	producer [-n nameserver] [-t topic] [-count N]
//
// The nameserver defaults to $NAMESRV_ADDR, else 127.0.0.1:9876.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/examples/internal/example"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

func main() {
	ns, topic := example.TargetFlags(os.Getenv, "TopicTest", "topic")
	count := flag.Int("count", 10, "messages per kind of send (sync, async, one-way, batch)")
	flag.Parse()
	example.PositiveCount("producer", *count)
	log := example.Logger()
	example.Check("producer", run(*ns, *topic, *count, log))
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
	var failed atomic.Int32
	for i := range count {
		wg.Add(1)
		m := &message.Message{Topic: topic, Body: []byte("async " + strconv.Itoa(i))}
		err := p.SendAsync(ctx, m, func(res *client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				failed.Add(1)
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
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d of %d async sends failed", n, count)
	}

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

	delayed := &message.Message{Topic: topic, Body: []byte("delay level 1 (1 s)")}
	delayed.SetDelayTimeLevel(1)
	if res, err = p.SendSync(ctx, delayed); err != nil {
		return fmt.Errorf("delayed send: %w", err)
	}
	fmt.Printf("delayed %s %s, visible in 1 s\n", res.Status, res.MsgID)

	at := time.Now().Add(3 * time.Second)
	timer := &message.Message{Topic: topic, Body: []byte("timer message")}
	timer.SetDeliverTime(at)
	if res, err = p.SendSync(ctx, timer); err != nil {
		return fmt.Errorf("timer send: %w", err)
	}
	fmt.Printf("timer   %s %s, visible at %s\n", res.Status, res.MsgID, at.Format(time.TimeOnly))
	fmt.Printf("sent %d messages\n", 4*count+2)
	return nil
}
