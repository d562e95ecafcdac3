package storetest

import (
	"log/slog"
	"testing"

	"github.com/rmqgo/rmq/broker/store"
)

// OpenDisk opens the real store in dir, set up for a test: 4 MiB
// commit-log files, no preallocation, no background cleaning, a
// discarding logger; mutate (if not nil) adjusts the configuration
// first. The caller closes the store: tests reopen it to restart.
func OpenDisk(t testing.TB, dir string, mutate func(*store.Config)) *store.Store {
	t.Helper()
	cfg := store.DefaultConfig(dir)
	cfg.CommitLog.FileSize = 4 << 20
	cfg.CommitLog.Preallocate = false
	cfg.CommitLog.CleanResourceInterval = 0
	cfg.Logger = slog.New(slog.DiscardHandler)
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
