// Command capture listens on a loopback address and writes every RocketMQ
// remoting frame it receives (length prefix included) to its own file, for
// golden tests. See package tests/internal/capture and
// scripts/capture-golden.sh.
//
//	capture -listen 127.0.0.1:0 -out /tmp/frames [-answer] [-duration 30s]
//
// The first line on stdout is "listening on <host:port>"; one log line per
// frame follows on stderr. It runs until SIGINT/SIGTERM or -duration.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rmqgo/rmq/tests/internal/capture"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	out := flag.String("out", "", "directory for the captured frames (required)")
	answer := flag.Bool("answer", false, "answer with a self-pointing route, send success, heartbeat success")
	duration := flag.Duration("duration", 0, "stop after this long (0: until SIGINT/SIGTERM)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "capture: -out is required")
		os.Exit(2)
	}
	logger := log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds)
	l, err := capture.Listen(*listen, capture.Options{Dir: *out, Answer: *answer, Logf: logger.Printf})
	if err != nil {
		logger.Fatal(err)
	}
	fmt.Printf("listening on %s\n", l.Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var timeout <-chan time.Time
	if *duration > 0 {
		timeout = time.After(*duration)
	}
	select {
	case <-sig:
	case <-timeout:
	}
	l.Close()
	logger.Printf("capture: %d frames written to %s", len(l.Frames()), *out)
}
