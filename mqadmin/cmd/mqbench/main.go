// Command mqbench benchmarks RocketMQ clusters over the remoting protocol
// with the options and report lines of Apache's benchmark tools
// (benchmark/producer.sh, batchproducer.sh and consumer.sh).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/rmqgo/rmq/mqadmin/internal/bench"
)

func main() {
	// Ctrl-C ends the run: the final lines and the JSON summary still print.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
