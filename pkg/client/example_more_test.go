package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

func ExamplePushConsumer() {
	c, err := client.NewPushConsumer(client.PushConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{"127.0.0.1:9876"}},
		Group:        "order_consumer",
		Handler: func(ctx context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			for _, m := range req.Messages {
				fmt.Println(req.Queue, m.QueueOffset, string(m.Body))
			}
			// ConsumeRetryLater redelivers through the retry topic.
			return client.ConsumeSuccess
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Subscribe("Orders", "created || paid", client.ExpressionTypeTag); err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	time.Sleep(time.Minute) // consume for a while
	if err := c.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func ExampleProducer_SendOrderly() {
	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{"127.0.0.1:9876"}}})
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	for _, step := range []string{"created", "paid", "shipped"} {
		// Same key, same queue: an orderly PushConsumer sees the steps in
		// this order.
		if _, err := p.SendOrderly(context.Background(), &message.Message{Topic: "Orders", Body: []byte(step)}, "order-42"); err != nil {
			log.Fatal(err)
		}
	}
}

func ExampleTransactionProducer() {
	checker := func(ctx context.Context, m *message.Message) (client.TransactionState, error) {
		// Look the transaction up (client.TransactionIDOf(m)) in the
		// application's own records.
		return client.TransactionCommit, nil
	}
	p, err := client.NewTransactionProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{"127.0.0.1:9876"}},
		Group:        "payment_tx",
	}, checker)
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	res, err := p.SendInTransaction(context.Background(), &message.Message{Topic: "Payments", Body: []byte("paid 42")},
		func(ctx context.Context, m *message.Message) (client.TransactionState, error) {
			// Update the database here; commit only if it worked.
			return client.TransactionCommit, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.MsgID, res.State)
}

func ExampleSimpleConsumer() {
	c, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{"127.0.0.1:9876"}},
		Group:        "pop_consumer",
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Subscribe("Orders", "*", ""); err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Shutdown(context.Background())
	msgs, err := c.Receive(context.Background(), 16, 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Println(string(m.Body))
		if err := c.Ack(context.Background(), m); err != nil {
			log.Println("ack:", err) // the handle expired: the message comes back
		}
	}
}
