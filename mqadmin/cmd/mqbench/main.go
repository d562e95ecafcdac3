// Command mqbench benchmarks RocketMQ clusters over the remoting protocol
// with the options and report lines of Apache's benchmark tools
// (benchmark/producer.sh, batchproducer.sh and consumer.sh).
//
// MQBENCH_CPUPROFILE=FILE writes a Go CPU profile of the whole run to FILE
// (scripts/bench/tls.sh PPROF=1 profiles the client beside the broker).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/rmqgo/rmq/mqadmin/internal/bench"
)

func main() {
	// Ctrl-C ends the run: the final lines and the JSON summary still print.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile(os.Getenv("MQBENCH_CPUPROFILE"))
	code := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stopProfile()
	stop()
	os.Exit(code)
}

// startProfile starts a CPU profile into path ("" none) and returns what
// ends it.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mqbench: MQBENCH_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
