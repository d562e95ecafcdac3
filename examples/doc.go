// Package examples holds runnable programs for the Go client SDK
// (github.com/rmqgo/rmq/pkg/client). Each directory is a main package that
// talks to a local cluster started with `make run`: the nameserver is -n,
// else $NAMESRV_ADDR, else 127.0.0.1:9876. Each exits 0 when its run
// succeeded and 1 when it did not; -count bounds the consumers' runs
// (without it they run until interrupted). What they all do alike (the -n
// flag, the logger, Ctrl-C, the exit codes) is in examples/internal/example.
//
//	go run ./examples/producer -count 10              # sync, async, one-way, batch, delayed sends
//	go run ./examples/pushconsumer [-count 42]        # clustering (-b: broadcasting) push consumer with retries
//	go run ./examples/orderly -count 5                # ordered sends by key, orderly consumption, checked
//	go run ./examples/transaction -count 1            # transactional messages with a checker
//	go run ./examples/simpleconsumer [-count 42]      # pop: receive, ack, change invisible time (-orderly: FIFO)
//	go run ./examples/lite -count 20                 # lite topics: lite producer, FIFO lite push consumer
//
// tests/e2e/examples_test.go (TestExamples) builds and runs all of them
// against a test cluster.
//
// Topics are created on first send when the broker allows auto-creation
// (the default); otherwise create them first, e.g.
// bin/mqadmin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t TopicTest.
package examples
