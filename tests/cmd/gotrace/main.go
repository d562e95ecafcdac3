// Command gotrace sends one message with rocketmq-client-go v2's producer and
// consumes it with a push consumer, both with message trace on, then stays
// up (so their trace records get sent) until its standard input closes.
//
// It exists because client-go keeps one trace client per process, named
// INNER_TRACE_CLIENT_DEFAULT whatever the nameserver: a second test in one
// process tracing against another cluster gets a nil trace dispatcher and
// panics on its first send. A process of its own per traced test avoids it.
//
//	gotrace -n 127.0.0.1:9876 -t Topic -pg producerGroup -cg consumerGroup
//
// Stdout: "sent <msgId>", then "consumed" once the consumer got it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "TopicTest", "topic")
	pg := flag.String("pg", "gotrace_pg", "producer group")
	cg := flag.String("cg", "gotrace_cg", "consumer group")
	body := flag.String("body", "traced by client-go", "message body")
	timeout := flag.Duration("timeout", time.Minute, "how long to wait for the consumer")
	flag.Parse()
	rlog.SetLogLevel("error")
	if err := run(*ns, *topic, *pg, *cg, *body, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "gotrace:", err)
		os.Exit(1)
	}
}

func run(ns, topic, pg, cg, body string, timeout time.Duration) error {
	res := primitive.NewPassthroughResolver([]string{ns})
	trace := &primitive.TraceConfig{Resolver: res, Access: primitive.Local}
	p, err := rocketmq.NewProducer(producer.WithNsResolver(res), producer.WithGroupName(pg),
		producer.WithRetry(1), producer.WithSendMsgTimeout(5*time.Second), producer.WithTrace(trace))
	if err != nil {
		return fmt.Errorf("new producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return fmt.Errorf("start producer: %w", err)
	}
	defer p.Shutdown()
	sent, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if sent.Status != primitive.SendOK {
		return fmt.Errorf("send: %v", sent)
	}
	fmt.Println("sent", sent.MsgID)

	got := make(chan struct{}, 1)
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(res), consumer.WithGroupName(cg),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset), consumer.WithTrace(trace))
	if err != nil {
		return fmt.Errorf("new consumer: %w", err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				if m.MsgId == sent.MsgID {
					select {
					case got <- struct{}{}:
					default:
					}
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start consumer: %w", err)
	}
	defer c.Shutdown()
	select {
	case <-got:
		fmt.Println("consumed")
	case <-time.After(timeout):
		return fmt.Errorf("message %s not consumed in %v", sent.MsgID, timeout)
	}
	// Trace records leave in batches: stay up until told to stop.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}
