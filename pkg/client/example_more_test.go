package client_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

func ExamplePushConsumer() {
	ns, stop := exampleCluster("Orders", 2, func(b string) string { return b }, "created", "paid", "shipped", "paid")
	defer stop()

	var wg sync.WaitGroup
	wg.Add(3) // the messages tagged created or paid
	c, err := client.NewPushConsumer(client.PushConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}},
		Group:        "order_consumer",
		ConsumeFrom:  client.ConsumeFromFirstOffset,
		Handler: func(ctx context.Context, req *client.ConsumeRequest) client.ConsumeResult {
			for _, m := range req.Messages {
				fmt.Println(m.Tags(), string(m.Body))
				wg.Done()
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
	wg.Wait() // a real consumer runs until the program stops
	if err := c.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Unordered output:
	// created created
	// paid paid
	// paid paid
}

func ExampleProducer_SendOrderly() {
	ns, stop := exampleCluster("Orders", 8, nil)
	defer stop()

	p, err := client.NewProducer(client.ProducerConfig{CommonConfig: client.CommonConfig{NameServers: []string{ns}}})
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	queues := map[int]bool{}
	for _, step := range []string{"created", "paid", "shipped"} {
		// Same key, same queue: an orderly PushConsumer sees the steps in
		// this order.
		res, err := p.SendOrderly(context.Background(), &message.Message{Topic: "Orders", Body: []byte(step)}, "order-42")
		if err != nil {
			log.Fatal(err)
		}
		queues[res.Queue.QueueID] = true
	}
	fmt.Println("queues used:", len(queues))
	// Output: queues used: 1
}

func ExampleTransactionProducer() {
	ns, stop := exampleCluster("Payments", 1, nil)
	defer stop()

	checker := func(ctx context.Context, m *message.Message) (client.TransactionState, error) {
		// Look the transaction up (client.TransactionIDOf(m)) in the
		// application's own records.
		return client.TransactionCommit, nil
	}
	p, err := client.NewTransactionProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}},
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
	fmt.Println(res.Status, res.State)
	// Output: SEND_OK COMMIT_MESSAGE
}

func ExampleSimpleConsumer() {
	ns, stop := exampleCluster("Orders", 1, nil, "order 41", "order 42")
	defer stop()

	c, err := client.NewSimpleConsumer(client.SimpleConsumerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}},
		Group:        "pop_consumer",
		ConsumeFrom:  client.ConsumeFromFirstOffset, // a new group starts at the end otherwise
		Orderly:      false,                         // true: FIFO, a queue's messages in order
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
		fmt.Println(string(m.Body), m.ReconsumeTimes)
		if err := c.Ack(context.Background(), m); err != nil {
			log.Println("ack:", err) // the handle expired: the message comes back
		}
	}
	// Output:
	// order 41 0
	// order 42 0
}
