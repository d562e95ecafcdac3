package kv_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/kv/kvfault"
)

// Disk faults under the Pebble database, with Pebble's WAL off as the
// broker runs it: what is committed becomes durable when a memtable flush
// writes it to a table and records the table in the MANIFEST. Flush
// returning nil is the acknowledgement; every acknowledged key must
// survive a reopen.

// faultChildEnv makes the test binary run one fatal-fault scenario
// (runFaultChild) instead of the tests: a Pebble fatal error stops the
// process, which only another process can watch.
const faultChildEnv = "KV_FAULT_CHILD"

func TestMain(m *testing.M) { kvfault.Main(m, faultChildEnv, runFaultChild) }

func openFaulty(t *testing.T, dir string, fs vfs.FS, wal bool) *kv.DB {
	t.Helper()
	cfg := kv.DefaultConfig(dir)
	cfg.FS = fs
	cfg.DisableWAL = !wal
	db, err := kv.Open(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// writeKeys commits n keys prefix-0000.. without syncing.
func writeKeys(db *kv.DB, prefix string, n int, opts *pebble.WriteOptions) error {
	b := db.NewBatch()
	defer b.Close()
	for i := range n {
		if err := b.Set(fmt.Appendf(nil, "%s-%04d", prefix, i), fmt.Appendf(nil, "v-%s-%d", prefix, i), nil); err != nil {
			return err
		}
	}
	return b.Commit(opts)
}

// checkKeys fails unless all n keys of prefix are readable.
func checkKeys(t *testing.T, db *kv.DB, prefix string, n int) {
	t.Helper()
	for i := range n {
		v, closer, err := db.Get(fmt.Appendf(nil, "%s-%04d", prefix, i))
		if err != nil {
			t.Fatalf("key %s-%04d: %v", prefix, i, err)
		}
		if want := fmt.Sprintf("v-%s-%d", prefix, i); string(v) != want {
			t.Fatalf("key %s-%04d = %q, want %q", prefix, i, v, want)
		}
		closer.Close()
	}
}

// within fails the test if f has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestFlushFaults: a table write, sync or creation failing during a
// flush makes Flush fail with the errno (it does not hang, as
// pebble.DB.Flush does while Pebble retries), Err report it, reads go on;
// once the fault clears Pebble's retry persists everything, and closing
// while it lasts keeps everything acknowledged before.
func TestFlushFaults(t *testing.T) {
	for _, target := range []kvfault.Target{kvfault.FlushTableCreate, kvfault.FlushTableWrite, kvfault.FlushTableSync} {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			for _, heal := range []bool{true, false} {
				name := fmt.Sprintf("%v/%v/heal=%v", target, errno, heal)
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					in := kvfault.New(vfs.Default)
					db := openFaulty(t, dir, in.FS(), false)
					if err := writeKeys(db, "a", 100, pebble.NoSync); err != nil {
						t.Fatal(err)
					}
					if err := db.Flush(); err != nil {
						t.Fatalf("flush before the fault: %v", err)
					}
					in.Arm(target, errno)
					if err := writeKeys(db, "b", 100, pebble.NoSync); err != nil {
						t.Fatalf("commit to the memtable under a disk fault: %v", err)
					}
					var err error
					within(t, 10*time.Second, "Flush under a fault", func() { err = db.Flush() })
					if err == nil {
						t.Fatal("Flush acknowledged a flush that failed")
					}
					if !errors.Is(err, errno) || !strings.Contains(err.Error(), "kv: flush") {
						t.Fatalf("Flush error %q: want kv context wrapping %v", err, errno)
					}
					if in.Hits() == 0 {
						t.Fatal("the fault never fired")
					}
					if e := db.Err(); !errors.Is(e, errno) {
						t.Fatalf("Err() = %v, want %v", e, errno)
					}
					// Refused at once while failing: no memtable queued per call.
					within(t, 2*time.Second, "second Flush", func() { err = db.Flush() })
					if !errors.Is(err, errno) {
						t.Fatalf("second Flush: %v", err)
					}
					checkKeys(t, db, "a", 100)
					checkKeys(t, db, "b", 100)
					if heal {
						in.Clear()
						deadline := time.Now().Add(10 * time.Second)
						for db.Err() != nil {
							if time.Now().After(deadline) {
								t.Fatalf("Err still %v after the fault cleared", db.Err())
							}
							time.Sleep(10 * time.Millisecond)
						}
						if err := db.Flush(); err != nil {
							t.Fatalf("flush after the fault cleared: %v", err)
						}
					}
					within(t, 10*time.Second, "Close", func() { db.Close() })
					db = openFaulty(t, dir, vfs.Default, false)
					defer db.Close()
					checkKeys(t, db, "a", 100)
					if heal {
						checkKeys(t, db, "b", 100)
					}
				})
			}
		}
	}
}

// TestCompactionFaults: a failing compaction loses nothing (its inputs
// stay) and does not make the database unwritable. (A manual
// pebble.DB.Compact would retry for as long as the fault lasts; the broker
// runs none, so the automatic ones are what a fault hits.)
func TestCompactionFaults(t *testing.T) {
	for _, target := range []kvfault.Target{kvfault.CompactionTableCreate, kvfault.CompactionTableWrite, kvfault.CompactionTableSync} {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			t.Run(fmt.Sprintf("%v/%v", target, errno), func(t *testing.T) {
				dir := t.TempDir()
				in := kvfault.New(vfs.Default)
				db := openFaulty(t, dir, in.FS(), false)
				in.Arm(target, errno)
				// Overlapping tables in L0, more than the compaction
				// threshold (4): Pebble starts a compaction.
				const rounds = 6
				for round := range rounds {
					if err := writeKeys(db, "k", 200, pebble.NoSync); err != nil {
						t.Fatal(err)
					}
					if err := writeKeys(db, fmt.Sprint("r", round), 50, pebble.NoSync); err != nil {
						t.Fatal(err)
					}
					if err := db.Flush(); err != nil {
						t.Fatalf("flush %d: %v", round, err)
					}
				}
				deadline := time.Now().Add(20 * time.Second)
				for in.Hits() == 0 {
					if time.Now().After(deadline) {
						t.Fatal("no compaction ran into the fault")
					}
					time.Sleep(10 * time.Millisecond)
				}
				if e := db.Err(); e != nil {
					t.Fatalf("a failed compaction made the database report %v", e)
				}
				if err := writeKeys(db, "after", 10, pebble.NoSync); err != nil {
					t.Fatal(err)
				}
				if err := db.Flush(); err != nil {
					t.Fatalf("flush after a failed compaction: %v", err)
				}
				checkKeys(t, db, "k", 200)
				in.Clear()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := db.Compact(ctx, []byte("a"), []byte("z"), false); err != nil {
					t.Fatalf("compaction after the fault cleared: %v", err)
				}
				db.Close()
				db = openFaulty(t, dir, vfs.Default, false)
				defer db.Close()
				checkKeys(t, db, "k", 200)
				checkKeys(t, db, "after", 10)
				for round := range rounds {
					checkKeys(t, db, fmt.Sprint("r", round), 50)
				}
			})
		}
	}
}

// TestOpenFaults: a MANIFEST that cannot be created, written or synced
// while a new database is created fails Open with the errno; Pebble's
// fatal error does not escape as a panic. (Reopening an existing database
// writes its new MANIFEST with the first flush, in the background: see
// TestFatalFaults.)
func TestOpenFaults(t *testing.T) {
	for _, target := range []kvfault.Target{kvfault.ManifestCreate, kvfault.ManifestWrite, kvfault.ManifestSync} {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			t.Run(fmt.Sprintf("%v/%v", target, errno), func(t *testing.T) {
				in := kvfault.New(vfs.Default)
				in.Arm(target, errno)
				cfg := kv.DefaultConfig(t.TempDir())
				cfg.FS = in.FS()
				db, err := kv.Open(cfg, slog.New(slog.DiscardHandler))
				if err == nil {
					db.Close()
					t.Fatal("opened with a failing MANIFEST")
				}
				if !errors.Is(err, errno) || !strings.Contains(err.Error(), "kv: open") {
					t.Fatalf("open error %q: want kv context wrapping %v", err, errno)
				}
			})
		}
	}
}

// TestEmptyFlushIsHealthy: flushing an empty memtable ends in Pebble's
// "empty table" FlushEnd error, which is no failure (isEmptyFlush
// recognises it by its text: this notices a Pebble that changes it).
func TestEmptyFlushIsHealthy(t *testing.T) {
	db := openFaulty(t, t.TempDir(), vfs.Default, false)
	defer db.Close()
	for range 2 {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Err(); err != nil {
		t.Fatalf("an empty flush counted as a failure: %v", err)
	}
}

// TestFatalFaults: Pebble treats a failed MANIFEST write or sync (after a
// flush) and a failed WAL write or sync (under a synced commit, WAL on) as
// fatal. The process stops with the error logged — no acknowledgement of
// what was not persisted, no silent exit — and a reopen on a healthy disk
// finds every acknowledged key.
func TestFatalFaults(t *testing.T) {
	cases := []struct {
		target kvfault.Target
		wal    bool
		want   string // in the child's log
	}{
		{kvfault.ManifestCreate, false, "MANIFEST create failed"}, // the first flush after a reopen
		{kvfault.ManifestWrite, false, "MANIFEST flush failed"},   // the record writer writes the file when flushed
		{kvfault.ManifestSync, false, "MANIFEST sync failed"},
		{kvfault.WALWrite, true, "fatal commit error"},
		{kvfault.WALSync, true, "fatal commit error"},
	}
	for _, c := range cases {
		for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
			t.Run(fmt.Sprintf("%v/%v", c.target, errno), func(t *testing.T) {
				dir := t.TempDir()
				log, err := kvfault.RunChild(t, fmt.Sprintf("%s=%s|%d|%d|%v", faultChildEnv, dir, c.target, errno, c.wal), 60*time.Second)
				if err == nil || strings.Contains(log, "SURVIVED") {
					t.Fatalf("the process went on after a fatal Pebble error (exit %v):\n%s", err, log)
				}
				if !strings.Contains(log, "ACKED") {
					t.Fatalf("child failed before the fault:\n%s", log)
				}
				if !strings.Contains(log, "pebble fatal error: the broker stops") || !strings.Contains(log, c.want) || !strings.Contains(log, errno.Error()) {
					t.Fatalf("child log does not name the fatal error (%q, %v):\n%s", c.want, errno, log)
				}
				db := openFaulty(t, dir, vfs.Default, c.wal)
				defer db.Close()
				checkKeys(t, db, "a", 100)
			})
		}
	}
}

// runFaultChild runs one TestFatalFaults scenario: spec is
// dir|target|errno|wal. It prints ACKED once the keys "a" are
// acknowledged, then arms the fault and writes more; reaching the end
// (printing SURVIVED) is the failure the parent looks for.
func runFaultChild(spec string) int {
	var (
		dir           string
		target, errno int
		wal           bool
	)
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		fmt.Println("bad spec", spec)
		return 3
	}
	dir = parts[0]
	fmt.Sscan(parts[1], &target)
	fmt.Sscan(parts[2], &errno)
	wal = parts[3] == "true"
	in := kvfault.New(vfs.Default)
	cfg := kv.DefaultConfig(dir)
	cfg.FS = in.FS()
	cfg.DisableWAL = !wal
	db, err := kv.Open(cfg, slog.New(slog.NewTextHandler(os.Stdout, nil)))
	if err != nil {
		fmt.Println("open:", err)
		return 3
	}
	// persist acknowledges keys: a synced commit with the WAL on, a
	// flush with it off.
	persist := func(prefix string) error {
		if wal {
			return writeKeys(db, prefix, 100, pebble.Sync)
		}
		if err := writeKeys(db, prefix, 100, pebble.NoSync); err != nil {
			return err
		}
		return db.Flush()
	}
	if err := persist("a"); err != nil {
		fmt.Println("before the fault:", err)
		return 3
	}
	fmt.Println("ACKED")
	in.Arm(kvfault.Target(target), syscall.Errno(errno))
	if kvfault.Target(target) == kvfault.ManifestCreate {
		// Pebble creates a MANIFEST when it opens an existing database.
		db.Close()
		if db, err = kv.Open(cfg, slog.New(slog.NewTextHandler(os.Stdout, nil))); err != nil {
			fmt.Println("reopen:", err)
			return 3
		}
	}
	err = persist("b")
	// A background fatal error may take a moment to stop the process.
	time.Sleep(5 * time.Second)
	fmt.Println("SURVIVED", err, "hits", in.Hits())
	return 0
}
