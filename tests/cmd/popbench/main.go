// Command popbench measures pop consumption through our SDK's simple
// consumer (POP_MESSAGE, then one ACK_MESSAGE per message, as the Java 5.x
// SimpleConsumer acks): goroutines receive batches and ack every message
// until the duration ends or the topic is drained, then it prints one JSON
// line with the messages acked and the rate.
//
//	go run ./tests/cmd/popbench -n 127.0.0.1:9876 -t BenchHA -g pop_bench_cg -c 8 -d 20s
//
// scripts/bench/ha.sh runs it (PHASES=pop) against a lone master and a
// SYNC_MASTER with two slaves, whose pops and acks wait for the slaves.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
)

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "BenchTopic", "topic")
	group := flag.String("g", "pop_bench_cg", "consumer group")
	workers := flag.Int("c", 8, "receiving goroutines")
	batch := flag.Int("b", 32, "messages per receive")
	d := flag.Duration("d", 20*time.Second, "how long to consume")
	idle := flag.Duration("idle", 3*time.Second, "stop after receiving nothing for this long")
	flag.Parse()

	sc, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{*ns}, InstanceName: fmt.Sprintf("popbench-%d", os.Getpid()),
			Logger: slog.New(slog.DiscardHandler)},
		Group: *group, AwaitDuration: time.Second, ConsumeFrom: client.ConsumeFromFirstOffset})
	if err == nil {
		err = sc.Start()
	}
	if err == nil {
		err = sc.Subscribe(*topic, "*", "TAG")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "popbench:", err)
		os.Exit(1)
	}
	defer sc.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), *d)
	defer cancel()
	var acked, failed atomic.Int64
	var last atomic.Int64
	start := time.Now()
	last.Store(start.UnixNano())
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Since(time.Unix(0, last.Load())) < *idle {
				msgs, err := sc.Receive(ctx, *batch, 30*time.Second)
				if err != nil && len(msgs) == 0 && !errors.Is(err, context.DeadlineExceeded) {
					time.Sleep(10 * time.Millisecond)
				}
				if len(msgs) > 0 {
					last.Store(time.Now().UnixNano())
				}
				for _, m := range msgs {
					if err := sc.Ack(context.WithoutCancel(ctx), m); err != nil {
						failed.Add(1)
					} else {
						acked.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	end := time.Unix(0, last.Load())
	secs := end.Sub(start).Seconds()
	out, _ := json.Marshal(map[string]any{"acked": acked.Load(), "ackFailed": failed.Load(), "seconds": secs, "tps": float64(acked.Load()) / max(secs, 1e-9)})
	fmt.Println(string(out))
}
