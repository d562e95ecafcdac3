// Command sdkbench compares the producer throughput of our SDK
// (pkg/client) with rocketmq-client-go v2's against one running cluster:
// both send the same messages from the same number of goroutines with
// SendSync, in interleaved rounds.
//
//	make run   # in another terminal
//	go run ./tests/cmd/sdkbench -n 127.0.0.1:9876 -t BenchTopic -c 32 -s 1024 -d 10s -r 3
//
// Create the topic first for a fair spread over queues
// (bin/mqadmin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t BenchTopic -r 8 -w 8).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rmqgo/rmq/tests/internal/sdkbench"
)

func main() {
	var o sdkbench.Options
	flag.StringVar(&o.NameServer, "n", "127.0.0.1:9876", "nameserver address")
	flag.StringVar(&o.Topic, "t", "BenchTopic", "topic")
	flag.IntVar(&o.Goroutines, "c", 32, "sending goroutines per client")
	flag.IntVar(&o.BodySize, "s", 1024, "message body size in bytes")
	flag.DurationVar(&o.Round, "d", 10*time.Second, "length of one round")
	flag.IntVar(&o.Rounds, "r", 3, "rounds per client (interleaved)")
	flag.DurationVar(&o.Warmup, "w", 3*time.Second, "warmup per client")
	flag.Parse()
	o.Progress = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ours, theirs, err := sdkbench.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d goroutines, %d-byte bodies, %d × %v rounds each\n", o.Goroutines, o.BodySize, o.Rounds, o.Round)
	fmt.Println(ours)
	fmt.Println(theirs)
	fmt.Printf("ours / client-go = %.2f\n", ours.TPS/theirs.TPS)
}
