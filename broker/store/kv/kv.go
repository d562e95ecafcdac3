// Package kv opens the broker's one Pebble database and owns its key spaces.
//
// Every store component (consume queue, consumer offsets, timers, pop state,
// lite metadata) keeps its keys under a one-byte prefix in the same
// database, so one batch can update several of them atomically and one
// checkpoint covers them all. Pebble's WAL is off: the CommitLog is the
// write-ahead log, and each component re-derives what a crash lost from the
// dispatch checkpoint written in the same batch as its data.
package kv

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Key-space prefixes. A new component takes a new byte; never reuse one.
const (
	PrefixConsumeQueue byte = 'q' // consume-queue entries
	PrefixQueueMeta    byte = 'o' // per-queue min/max offsets
	PrefixCheckpoint   byte = 'k' // dispatch checkpoint and other single values
	PrefixOffset       byte = 'c' // consumer offsets
	PrefixIndex        byte = 'i' // message key / unique key index
	PrefixTimer        byte = 't' // pending timers by delivery time
	PrefixPop          byte = 'p' // pop checkpoints and ack state
	PrefixLite         byte = 'l' // lite topic metadata
)

// Config configures the database.
type Config struct {
	// Dir is the database directory.
	Dir string
	// CacheSize is the block cache size in bytes.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes. The broker is
	// built without cgo, so Pebble's memtables (and block cache) are Go
	// heap: each byte of them counts twice toward the broker's anonymous
	// memory (GOGC=100 lets the heap grow to twice what is live). Up to
	// two are held (one filling, one flushing).
	MemTableSize uint64
	// DisableWAL turns Pebble's own WAL off (the default: see package doc).
	DisableWAL bool
	// LockWait is how long Open waits for another process to release the
	// directory lock.
	LockWait time.Duration
	// FS is the file system Pebble runs on; nil is the OS's (vfs.Default).
	// Tests put a fault-injecting one (vfs/errorfs) here.
	FS vfs.FS
}

// DefaultConfig returns the broker's defaults for dir. 8 MiB memtables
// hold ≈ 150k consume-queue entries each (a few seconds of a saturated
// broker): 16 MiB of Go heap where 32 MiB ones took 64 MiB, for the same
// bytes flushed (docs/operations.md, "Memory"). The block cache is Go
// heap as well and counts twice: a catch-up read fills any size of it, and
// 64 MiB made a broker that had served one 170 MiB of anonymous memory
// where 16 MiB make 67, for ~15% more CPU per message read (more garbage
// collections with less headroom).
func DefaultConfig(dir string) Config {
	return Config{Dir: dir, CacheSize: 16 << 20, MemTableSize: 8 << 20, DisableWAL: true, LockWait: 10 * time.Second, FS: vfs.Default}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Dir == "" {
		return fmt.Errorf("kv: Dir is empty")
	}
	if c.CacheSize < 0 {
		return fmt.Errorf("kv: CacheSize %d < 0", c.CacheSize)
	}
	if c.LockWait < 0 {
		return fmt.Errorf("kv: LockWait %v < 0", c.LockWait)
	}
	return nil
}

// DB is the broker's Pebble database together with what its background
// work reports: Pebble persists (the WAL is off) only by flushing
// memtables, and it reports a failed flush to an event listener only.
type DB struct {
	*pebble.DB
	mon    *monitor
	health io.Closer // the disk-health checks of the FS
	spans  *spans
}

// Open opens (creating if needed) the database.
func Open(cfg Config, log *slog.Logger) (*DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := cfg.FS
	if base == nil {
		base = vfs.Default
	}
	mon := newMonitor(log)
	cache := pebble.NewCache(cfg.CacheSize)
	defer cache.Unref()
	listener := mon.listener()
	sp := &spans{}
	// Disk-health checks report a write stuck for seconds (DiskSlow), as
	// Options.WithFSDefaults sets them up; done here because Pebble stops
	// its own only in DB.Close, so a failed Open would leave them running.
	fs, health := vfs.WithDiskHealthChecks(yieldFS{backoffFS{base, mon}}, diskSlowThreshold, nil, listener.DiskSlow)
	opts := &pebble.Options{
		FS:           fs,
		Cache:        cache,
		DisableWAL:   cfg.DisableWAL,
		MemTableSize: cfg.MemTableSize,
		// With 8 MiB memtables (DefaultConfig) a burst of writes queues
		// up to four of them (32 MiB) before writes stall, and flushes
		// make four times as many L0 sublevels for the same bytes as 32
		// MiB memtables did: L0 may hold 4 × Pebble's default of 12
		// sublevels before writes stall (seen creating 10M lite topics).
		MemTableStopWritesThreshold: 4,
		L0StopWritesThreshold:       48,
		// Tables end at the edges of key spaces and hot ranges (see
		// spans): a flush writes a table per hot consume queue, one
		// sublevel deep, and L0 compacts once it holds this many
		// tables, merging each queue's into larger ones (Pebble's
		// default, 500, leaves ≈ 50 flushes' worth in L0).
		L0CompactionFileThreshold: 200,
		Logger:                    fatalLogger{slogAdapter{log}, mon},
		EventListener:             listener,
	}
	opts.Experimental.SpanPolicyFunc = sp.policy
	// No block compression: consume-queue entries and index keys compress
	// little (offsets, hashes, ids), and Snappy on every flushed and
	// compacted block was ~3.5% of the broker's CPU under batch sends
	// (docs/operations.md). Tables written before stay readable.
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	// A broker restarted right after a kill -9 can find the old process
	// still exiting and holding the directory lock for a moment: retry
	// briefly rather than fail the restart.
	deadline := time.Now().Add(cfg.LockWait)
	for {
		db, err := openOnce(cfg.Dir, opts)
		if err == nil {
			return &DB{DB: db, mon: mon, health: health, spans: sp}, nil
		}
		if !errors.Is(err, syscall.EAGAIN) || time.Now().After(deadline) {
			_ = health.Close()
			return nil, fmt.Errorf("kv: open %s: %w", cfg.Dir, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// openOnce is pebble.Open with its fatal errors returned: opening writes a
// MANIFEST, and a failed MANIFEST write is fatal to Pebble (see
// fatalLogger), but at open nothing runs yet that the failure could leave
// inconsistent, so the broker reports it and does not start.
func openOnce(dir string, opts *pebble.Options) (db *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			db, err = nil, f.err
		}
	}()
	return pebble.Open(dir, opts)
}

// diskSlowThreshold is how long a disk operation may take before Pebble
// reports it (its own default).
const diskSlowThreshold = 5 * time.Second

// Close closes the database, then stops its disk-health checks.
func (d *DB) Close() error {
	err := d.DB.Close()
	_ = d.health.Close()
	return err
}

// Err reports why the database cannot persist writes now: the latest
// memtable flush failed (Pebble keeps the memtable and retries; Err turns
// nil when a retry succeeds), or Pebble hit a fatal error. Writes that
// commit meanwhile are readable but live only in memory.
func (d *DB) Err() error { return d.mon.err() }

// Flush persists everything committed so far. Unlike pebble.DB.Flush,
// which waits for as long as flushes keep failing, it returns the error
// of a failed flush; while one has failed it queues no further memtable
// (each would be one more to hold in memory) and fails at once.
func (d *DB) Flush() error {
	if err := d.mon.err(); err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	failed := d.mon.flushFailed()
	done, err := d.DB.AsyncFlush()
	if err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-failed:
		return fmt.Errorf("kv: flush: %w", d.mon.err())
	}
}

// PrefixEnd returns the smallest key greater than every key starting with p.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // p is all 0xFF: no upper bound
}

type slogAdapter struct{ log *slog.Logger }

func (a slogAdapter) Infof(format string, args ...any) {
	if a.log != nil {
		a.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (a slogAdapter) Errorf(format string, args ...any) {
	if a.log != nil {
		a.log.Error(fmt.Sprintf(format, args...), "component", "pebble")
	}
}
