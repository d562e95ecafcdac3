// Command mqadmin administers RocketMQ clusters with the command names,
// options and output of Apache RocketMQ's Java mqadmin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rmqgo/rmq/mqadmin/command"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := command.Main(ctx, os.Args[1:], command.Env{
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		Getenv:   os.Getenv,
		Now:      time.Now,
		Location: time.Local,
	})
	stop()
	os.Exit(code)
}
