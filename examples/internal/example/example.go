// Package example is what every example program does the same way: the
// -n and -t flags, the logger, the context Ctrl-C ends and the exit on an
// error.
package example

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// NameServerFlag registers -n, the nameserver address: by default
// getenv("NAMESRV_ADDR"), else 127.0.0.1:9876.
func NameServerFlag(getenv func(string) string) *string {
	def := getenv("NAMESRV_ADDR")
	if def == "" {
		def = "127.0.0.1:9876"
	}
	return flag.String("n", def, "nameserver address (default $NAMESRV_ADDR, else 127.0.0.1:9876)")
}

// TargetFlags registers -n (see NameServerFlag) and -t, the topic the
// example works on, with its default and usage text.
func TargetFlags(getenv func(string) string, topic, usage string) (ns, t *string) {
	return NameServerFlag(getenv), flag.String("t", topic, usage)
}

// UntilFlags registers -count and -timeout of a consumer that runs until
// interrupted or until -count messages were handled: doing and done name
// the handling in the usage texts ("acking", "acked").
func UntilFlags(doing, done string) (count *int, timeout *time.Duration) {
	count = flag.Int("count", 0, "exit after "+doing+" this many messages (0: run until interrupted)")
	timeout = flag.Duration("timeout", time.Minute, "with -count: fail if they are not "+done+" within this time")
	return count, timeout
}

// Consumer is what the SDK's push and simple consumers have in common to
// get going.
type Consumer interface {
	Subscribe(topic, expression, expressionType string) error
	Start() error
}

// SubscribeAndStart subscribes c to every message of topic (tag
// expression "*") and starts it.
func SubscribeAndStart(c Consumer, topic string) error {
	if err := c.Subscribe(topic, "*", ""); err != nil {
		return err
	}
	return c.Start()
}

// Logger logs the client's warnings and errors as text on stderr.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Interruptible returns a context that Ctrl-C or SIGTERM ends.
func Interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Check ends the program with exit code 1 and "name: err" on stderr when
// err is not nil.
func Check(name string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// PositiveCount ends the program with exit code 2 (bad usage) when the
// -count value n is below 1.
func PositiveCount(name string, n int) {
	if n < 1 {
		fmt.Fprintln(os.Stderr, name+": -count must be at least 1")
		os.Exit(2)
	}
}
