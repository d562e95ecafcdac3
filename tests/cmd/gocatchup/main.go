// Command gocatchup times a catch-up read with rocketmq-client-go v2's push
// consumer (scripts/bench/vs-apache.sh, issue 18): a new group starts from
// the first offset of a topic holding a backlog and consumes until it has
// seen -count messages or -timeout passed. The last stdout line is one JSON
// object: {"ok","tps","messages","windowStart","windowEnd","client"}, the
// window running from the first message received to the one that reached
// the count (Unix seconds), tps the messages over it.
//
//	go run ./tests/cmd/gocatchup -n 127.0.0.1:9876 -t BenchVs -g catchup_1 -count 1000000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

type result struct {
	OK          bool    `json:"ok"`
	TPS         float64 `json:"tps"`
	Messages    int64   `json:"messages"`
	WindowStart float64 `json:"windowStart"`
	WindowEnd   float64 `json:"windowEnd"`
	Client      string  `json:"client"`
	Error       string  `json:"error,omitempty"`
}

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "BenchVs", "topic")
	group := flag.String("g", "", "consumer group (a new one starts from the first offset)")
	count := flag.Int64("count", 0, "messages to consume")
	threads := flag.Int("w", 20, "consuming goroutines")
	timeout := flag.Duration("timeout", 3*time.Minute, "give up after")
	flag.Parse()
	if *group == "" || *count <= 0 {
		fmt.Fprintln(os.Stderr, "gocatchup: -g and -count are required")
		os.Exit(2)
	}
	rlog.SetLogLevel("error")
	res := run(*ns, *topic, *group, *count, *threads, *timeout)
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if !res.OK {
		os.Exit(1)
	}
}

func run(ns, topic, group string, count int64, threads int, timeout time.Duration) result {
	res := result{Client: "rocketmq-client-go-push"}
	var (
		got        atomic.Int64
		first, end atomic.Int64 // unix nanos
		once       sync.Once
		done       = make(chan struct{})
	)
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName(group),
		consumer.WithConsumerModel(consumer.Clustering),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumeGoroutineNums(threads),
	)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		now := time.Now().UnixNano()
		first.CompareAndSwap(0, now)
		if got.Add(int64(len(msgs))) >= count {
			once.Do(func() { end.Store(now); close(done) })
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if err := c.Start(); err != nil {
		res.Error = err.Error()
		return res
	}
	select {
	case <-done:
		res.OK = true
	case <-time.After(timeout):
		res.Error = fmt.Sprintf("timed out with %d of %d messages", got.Load(), count)
		end.Store(time.Now().UnixNano())
	}
	_ = c.Shutdown()
	res.Messages = got.Load()
	res.WindowStart = float64(first.Load()) / 1e9
	res.WindowEnd = float64(end.Load()) / 1e9
	if d := res.WindowEnd - res.WindowStart; d > 0 && first.Load() > 0 {
		res.TPS = float64(res.Messages) / d
	}
	return res
}
