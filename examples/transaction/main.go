// Command transaction sends transactional messages: one committed, one
// rolled back and one left unknown, which the broker resolves later by
// asking the producer's checker (CHECK_TRANSACTION_STATE).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

func main() {
	ns := flag.String("n", "127.0.0.1:9876", "nameserver address")
	topic := flag.String("t", "TopicTest", "topic")
	wait := flag.Duration("w", 90*time.Second, "how long to wait for the broker's check of the unknown transaction")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(*ns, *topic, *wait, log); err != nil {
		fmt.Fprintln(os.Stderr, "transaction:", err)
		os.Exit(1)
	}
}

func run(ns, topic string, wait time.Duration, log *slog.Logger) error {
	checked := make(chan string, 8)
	var once sync.Once
	// The checker answers for transactions whose outcome the broker does
	// not know; a real one would look the transaction id up in its own
	// database.
	checker := func(_ context.Context, m *message.Message) (client.TransactionState, error) {
		fmt.Printf("broker asks about %s (%q): commit\n", client.TransactionIDOf(m), m.Body)
		once.Do(func() { checked <- client.TransactionIDOf(m) })
		return client.TransactionCommit, nil
	}
	p, err := client.NewTransactionProducer(client.ProducerConfig{
		CommonConfig: client.CommonConfig{NameServers: []string{ns}, Logger: log},
		Group:        "example_tx_producer",
	}, checker)
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Shutdown(context.Background())
	ctx := context.Background()
	for _, outcome := range []client.TransactionState{client.TransactionCommit, client.TransactionRollback, client.TransactionUnknown} {
		m := &message.Message{Topic: topic, Body: []byte("order update, local outcome " + outcome.String())}
		res, err := p.SendInTransaction(ctx, m, func(_ context.Context, m *message.Message) (client.TransactionState, error) {
			// The local transaction (e.g. a database update) runs here,
			// after the half message is stored and before anyone sees it.
			return outcome, nil
		})
		if err != nil {
			return err
		}
		fmt.Printf("sent %s: %s\n", res.MsgID, res.State)
	}
	fmt.Printf("waiting up to %v for the check of the unknown one (the broker checks every 30 s after 6 s by default)\n", wait)
	select {
	case id := <-checked:
		fmt.Println("resolved", id)
	case <-time.After(wait):
		return fmt.Errorf("no transaction check within %v", wait)
	}
	return nil
}
