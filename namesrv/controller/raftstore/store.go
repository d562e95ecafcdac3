// Package raftstore is the controller's raft LogStore and StableStore on
// pebble (docs/replication.md §2.6): one database under controllerStorePath
// holding the log entries and raft's few durable variables (term, vote).
package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// Key spaces: log entries by big-endian index (so pebble's order is log
// order), stable keys by name.
const (
	prefixLog    byte = 'l'
	prefixStable byte = 's'
)

// errNotFound: hashicorp/raft recognises a missing stable key by this
// exact message (it compares err.Error() with "not found").
var errNotFound = errors.New("not found")

// Config configures a Store.
type Config struct {
	// Dir is the pebble directory; created if missing.
	Dir string
	// NoSync skips fsync on writes (tests only: a crash may lose
	// acknowledged raft entries, which raft's safety relies on).
	NoSync bool
}

// DefaultConfig returns a config for dir with synced writes.
func DefaultConfig(dir string) Config { return Config{Dir: dir} }

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	if c.Dir == "" {
		return errors.New("raftstore: Config.Dir is empty")
	}
	return nil
}

// Store implements raft.LogStore and raft.StableStore.
type Store struct {
	db   *pebble.DB
	sync *pebble.WriteOptions
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// Open opens (or creates) the store.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	db, err := pebble.Open(cfg.Dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", cfg.Dir, err)
	}
	wo := pebble.Sync
	if cfg.NoSync {
		wo = pebble.NoSync
	}
	return &Store{db: db, sync: wo}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("raftstore: close: %w", err)
	}
	return nil
}

func logKey(index uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], index)
	return k
}

func stableKey(key []byte) []byte { return append([]byte{prefixStable}, key...) }

// FirstIndex is the first stored index, 0 when the log is empty.
func (s *Store) FirstIndex() (uint64, error) {
	return s.edgeIndex(true)
}

// LastIndex is the last stored index, 0 when the log is empty.
func (s *Store) LastIndex() (uint64, error) {
	return s.edgeIndex(false)
}

func (s *Store) edgeIndex(first bool) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixLog}, UpperBound: []byte{prefixLog + 1}})
	if err != nil {
		return 0, fmt.Errorf("raftstore: iterate: %w", err)
	}
	defer it.Close()
	var ok bool
	if first {
		ok = it.First()
	} else {
		ok = it.Last()
	}
	if !ok {
		return 0, it.Error()
	}
	return binary.BigEndian.Uint64(it.Key()[1:]), nil
}

// GetLog reads entry index into out; raft.ErrLogNotFound if absent.
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	v, closer, err := s.db.Get(logKey(index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("raftstore: get log %d: %w", index, err)
	}
	defer closer.Close()
	if err := decodeLog(v, out); err != nil {
		return fmt.Errorf("raftstore: log %d: %w", index, err)
	}
	return nil
}

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs stores entries in one synced batch.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, l := range logs {
		if err := b.Set(logKey(l.Index), encodeLog(l), nil); err != nil {
			return fmt.Errorf("raftstore: store log %d: %w", l.Index, err)
		}
	}
	if err := b.Commit(s.sync); err != nil {
		return fmt.Errorf("raftstore: commit %d logs: %w", len(logs), err)
	}
	return nil
}

// DeleteRange removes entries min..max inclusive.
func (s *Store) DeleteRange(min, max uint64) error {
	if max < min {
		return nil
	}
	end := []byte{prefixLog + 1} // max+1 would wrap
	if max != ^uint64(0) {
		end = logKey(max + 1)
	}
	if err := s.db.DeleteRange(logKey(min), end, s.sync); err != nil {
		return fmt.Errorf("raftstore: delete logs %d..%d: %w", min, max, err)
	}
	return nil
}

// Set stores a stable value.
func (s *Store) Set(key, val []byte) error {
	if err := s.db.Set(stableKey(key), val, s.sync); err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	return nil
}

// Get reads a stable value; "not found" if absent.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(stableKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: get %q: %w", key, err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// SetUint64 stores a stable counter.
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 reads a stable counter; "not found" if absent.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: %q holds %d bytes, not a uint64", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Entry layout: index u64, term u64, type u8, appendedAt unix nanos i64,
// data length u32 + data, extensions length u32 + extensions.
func encodeLog(l *raft.Log) []byte {
	b := make([]byte, 0, 8+8+1+8+4+len(l.Data)+4+len(l.Extensions))
	b = binary.BigEndian.AppendUint64(b, l.Index)
	b = binary.BigEndian.AppendUint64(b, l.Term)
	b = append(b, byte(l.Type))
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(at))
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Data)))
	b = append(b, l.Data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(l.Extensions)))
	return append(b, l.Extensions...)
}

func decodeLog(b []byte, l *raft.Log) error {
	const fixed = 8 + 8 + 1 + 8
	if len(b) < fixed+4 {
		return io.ErrUnexpectedEOF
	}
	l.Index = binary.BigEndian.Uint64(b)
	l.Term = binary.BigEndian.Uint64(b[8:])
	l.Type = raft.LogType(b[16])
	l.AppendedAt = time.Time{}
	if at := int64(binary.BigEndian.Uint64(b[17:])); at != 0 {
		l.AppendedAt = time.Unix(0, at)
	}
	rest := b[fixed:]
	var err error
	if l.Data, rest, err = chunk(rest); err != nil {
		return err
	}
	if l.Extensions, rest, err = chunk(rest); err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d trailing bytes", len(rest))
	}
	return nil
}

// chunk splits a u32-length-prefixed field off b; the field is copied
// because pebble reuses b after the closer.
func chunk(b []byte) (field, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, io.ErrUnexpectedEOF
	}
	n := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	if len(b) < n {
		return nil, nil, io.ErrUnexpectedEOF
	}
	if n == 0 {
		return nil, b, nil
	}
	return append([]byte(nil), b[:n]...), b[n:], nil
}

// quietLogger drops pebble's informational chatter; errors reach us as
// returned errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
