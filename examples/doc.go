// Package examples holds runnable programs for the Go client SDK
// (github.com/rmqgo/rmq/pkg/client). Each directory is a main package that
// talks to a local cluster started with `make run` (nameserver
// 127.0.0.1:9876); -n changes the address.
//
//	go run ./examples/producer        # sync, async, one-way, batch, delayed sends
//	go run ./examples/pushconsumer    # clustering push consumer with retries
//	go run ./examples/orderly         # ordered sends by key, orderly consumption
//	go run ./examples/transaction     # transactional messages with a checker
//	go run ./examples/simpleconsumer  # pop: receive, ack, change invisible time
//	go run ./examples/lite            # lite topics: lite producer, FIFO lite push consumer
//
// Topics are created on first send when the broker allows auto-creation
// (the default); otherwise create them first, e.g.
// bin/mqadmin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t TopicTest.
package examples
