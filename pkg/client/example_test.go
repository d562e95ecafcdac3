package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/client/clienttest"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// The examples run under go test against an in-process fake cluster
// (clienttest) so that their output is checked; a program names its
// nameservers instead, e.g. NameServers: []string{"127.0.0.1:9876"}.

// exampleCluster starts a fake nameserver and broker-a with topic (queues
// queues) holding bodies (tags from tagOf, if not nil); it exits the
// example on failure.
func exampleCluster(topic string, queues int, tagOf func(string) string, bodies ...string) (nameserver string, stop func()) {
	c, err := clienttest.StartCluster("broker-a")
	if err != nil {
		log.Fatal(err)
	}
	c.CreateTopic(topic, queues)
	for _, b := range bodies {
		m := &message.Message{Topic: topic, Body: []byte(b)}
		if tagOf != nil {
			m.SetTags(tagOf(b))
		}
		if err := c.Brokers[0].Store(m); err != nil {
			log.Fatal(err)
		}
	}
	return c.Namesrv.Addr(), func() { _ = c.Close() }
}

func ExampleProducer() {
	ns, stop := exampleCluster("Orders", 4, nil)
	defer stop()

	p, err := client.NewProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}},
		Group:        "order_producer",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Shutdown(context.Background())

	m := &message.Message{Topic: "Orders", Body: []byte(`{"id":42}`)}
	m.SetTags("created")
	m.SetKeys("order-42")
	res, err := p.SendSync(context.Background(), m)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, res.Queue.Topic, res.Queue.BrokerName)

	// Messages of one order stay in order: same key, same queue.
	first, err := p.SendSync(context.Background(), &message.Message{Topic: "Orders", Body: []byte(`{"id":42,"paid":true}`)},
		client.WithSelector(client.SelectByHash("order-42")))
	if err != nil {
		log.Fatal(err)
	}
	second, err := p.SendSync(context.Background(), &message.Message{Topic: "Orders", Body: []byte(`{"id":42,"shipped":true}`)},
		client.WithSelector(client.SelectByHash("order-42")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same queue:", first.Queue == second.Queue)
	// Output:
	// SEND_OK Orders broker-a
	// same queue: true
}

func ExamplePullConsumer_ConsumeLoop() {
	ns, stop := exampleCluster("Orders", 1, func(b string) string { return b }, "created", "paid", "shipped")
	defer stop()

	c, err := client.NewPullConsumer(client.PullConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}},
		Group:        "order_consumer",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(context.Background())

	// The loop runs until ctx ends: here, once both wanted messages came.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen := 0
	err = c.ConsumeLoop(ctx, client.ConsumeLoopConfig{Topic: "Orders", Expression: "created || paid", From: client.FromFirstOffset()},
		func(_ context.Context, mq protocol.MessageQueue, msgs []*message.Message) error {
			for _, m := range msgs {
				fmt.Println(mq.QueueID, m.QueueOffset, string(m.Body))
				if seen++; seen == 2 {
					cancel()
				}
			}
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 0 0 created
	// 0 1 paid
}
