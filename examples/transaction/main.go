// Command transaction sends transactional messages: one committed, one
// rolled back and one left unknown, which the broker resolves later by
// asking the producer's checker (CHECK_TRANSACTION_STATE).
//
//	transaction [-n nameserver] [-t topic] [-count N] [-w wait]
//
// It sends -count such triples and exits 0 once the broker has asked about
// every unknown one, 1 if -w passes first. The nameserver defaults to
// $NAMESRV_ADDR, else 127.0.0.1:9876.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/rmqgo/rmq/examples/internal/example"
	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
)

func main() {
	ns, topic := example.TargetFlags(os.Getenv, "TopicTest", "topic")
	count := flag.Int("count", 1, "transactions of each outcome (commit, rollback, unknown)")
	wait := flag.Duration("w", 90*time.Second, "how long to wait for the broker's checks of the unknown transactions")
	flag.Parse()
	example.PositiveCount("transaction", *count)
	log := example.Logger()
	example.Check("transaction", run(*ns, *topic, *count, *wait, log))
}

func run(ns, topic string, count int, wait time.Duration, log *slog.Logger) error {
	var mu sync.Mutex
	checked := map[string]bool{} // transaction ids the broker asked about
	asked := make(chan struct{}, 1)
	// The checker answers for transactions whose outcome the broker does
	// not know; a real one would look the transaction id up in its own
	// database. (The broker may ask again until it has the answer.)
	checker := func(_ context.Context, m *message.Message) (client.TransactionState, error) {
		id := client.TransactionIDOf(m)
		fmt.Printf("broker asks about %s (%q): commit\n", id, m.Body)
		mu.Lock()
		checked[id] = true
		mu.Unlock()
		select {
		case asked <- struct{}{}:
		default:
		}
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
	var unknown []string
	for range count {
		for _, outcome := range []client.TransactionState{client.TransactionCommit, client.TransactionRollback, client.TransactionUnknown} {
			m := &message.Message{Topic: topic, Body: []byte("order update, local outcome " + outcome.String())}
			res, err := p.SendInTransaction(ctx, m, func(_ context.Context, m *message.Message) (client.TransactionState, error) {
				// The local transaction (e.g. a database update) runs
				// here, after the half message is stored and before
				// anyone sees it.
				return outcome, nil
			})
			if err != nil {
				return err
			}
			fmt.Printf("sent %s: %s\n", res.MsgID, res.State)
			if outcome == client.TransactionUnknown {
				id := res.TransactionID
				if id == "" {
					id = res.MsgID // what the checker's TransactionIDOf falls back to
				}
				unknown = append(unknown, id)
			}
		}
	}
	fmt.Printf("waiting up to %v for the checks of the unknown ones (the broker checks every 30 s after 6 s by default)\n", wait)
	pending := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, id := range unknown {
			if !checked[id] {
				out = append(out, id)
			}
		}
		return out
	}
	expired := time.After(wait)
	for len(pending()) > 0 {
		select {
		case <-asked:
		case <-expired:
			return fmt.Errorf("unknown transactions not checked within %v: %v", wait, pending())
		}
	}
	fmt.Printf("resolved %d unknown transactions\n", len(unknown))
	return nil
}
