// Command gosend sends one message with rocketmq-client-go v2's producer
// (SendSync) through the given nameserver. It exists to capture the frames
// client-go puts on the wire (scripts/capture-golden.sh) and as a manual
// smoke tool against our own nameserver and broker.
//
//	gosend -n 127.0.0.1:9876 -t TopicTest [-g group] [-body text] [-tag TagA] [-keys k1]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "TopicTest", "topic")
	group := flag.String("g", "golden_producer_group", "producer group")
	body := flag.String("body", "hello golden", "message body")
	tag := flag.String("tag", "TagA", "message tag (empty: none)")
	keys := flag.String("keys", "key1", "message keys (empty: none)")
	timeout := flag.Duration("timeout", 3*time.Second, "send timeout")
	flag.Parse()

	rlog.SetLogLevel("error")
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{*ns})),
		producer.WithGroupName(*group),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(*timeout),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosend: new producer:", err)
		os.Exit(1)
	}
	if err := p.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "gosend: start:", err)
		os.Exit(1)
	}
	msg := primitive.NewMessage(*topic, []byte(*body))
	if *tag != "" {
		msg.WithTag(*tag)
	}
	if *keys != "" {
		msg.WithKeys([]string{*keys})
	}
	res, err := p.SendSync(context.Background(), msg)
	code := 0
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosend: send:", err)
		code = 1
	} else {
		fmt.Println(res.String())
	}
	if err := p.Shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "gosend: shutdown:", err)
	}
	os.Exit(code)
}
