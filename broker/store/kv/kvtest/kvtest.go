// Package kvtest opens the broker's Pebble database for the tests of the
// stores built on it.
package kvtest

import (
	"testing"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// Open opens a database with the default configuration in dir, failing t
// when it cannot. The caller closes it: some tests reopen the same dir.
func Open(t testing.TB, dir string) *kv.DB {
	t.Helper()
	db, err := kv.Open(kv.DefaultConfig(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
