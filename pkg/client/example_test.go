package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func ExampleProducer() {
	p, err := client.NewProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{"127.0.0.1:9876"}},
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
	fmt.Println(res.Status, res.MsgID, res.Queue)

	// Messages of one order stay in order: same key, same queue.
	_, err = p.SendSync(context.Background(), &message.Message{Topic: "Orders", Body: []byte(`{"id":42,"paid":true}`)},
		client.WithSelector(client.SelectByHash("order-42")))
	if err != nil {
		log.Fatal(err)
	}
}

func ExamplePullConsumer_ConsumeLoop() {
	c, err := client.NewPullConsumer(client.PullConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{"127.0.0.1:9876"}},
		Group:        "order_consumer",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.ConsumeLoop(ctx, client.ConsumeLoopConfig{Topic: "Orders", Expression: "created || paid", From: client.FromFirstOffset()},
		func(_ context.Context, mq protocol.MessageQueue, msgs []*message.Message) error {
			for _, m := range msgs {
				fmt.Println(mq.QueueID, m.QueueOffset, m.ClientMsgID(), string(m.Body))
			}
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
}
