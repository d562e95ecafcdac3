// Package example is what every example program does the same way: the
// -n flag, the logger, the context Ctrl-C ends and the exit on an error.
package example

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
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
