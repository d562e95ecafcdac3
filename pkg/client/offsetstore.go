package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// offsetStore keeps a push consumer's consumed offsets: in memory, written
// to their home (the brokers, or a local file) every commit interval.
type offsetStore interface {
	// load reads what the store holds at start.
	load() error
	// read returns the offset in memory, -1 if none.
	read(mq protocol.MessageQueue) int64
	// readStored returns the stored offset (and keeps it in memory);
	// ErrOffsetNotFound when there is none.
	readStored(ctx context.Context, mq protocol.MessageQueue) (int64, error)
	// update sets the offset in memory; with increaseOnly a smaller value
	// is ignored.
	update(mq protocol.MessageQueue, offset int64, increaseOnly bool)
	// persist writes the offsets of mqs that changed since last written.
	persist(ctx context.Context, mqs []protocol.MessageQueue)
	// remove forgets mq (its queue went to another consumer).
	remove(mq protocol.MessageQueue)
	// table returns a copy of the offsets in memory of topic ("" = all).
	table(topic string) map[protocol.MessageQueue]int64
}

// memOffsets is the in-memory part both stores share.
type memOffsets struct {
	mu      sync.Mutex
	offsets map[protocol.MessageQueue]int64
}

func (m *memOffsets) read(mq protocol.MessageQueue) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off, ok := m.offsets[mq]; ok {
		return off
	}
	return -1
}

func (m *memOffsets) update(mq protocol.MessageQueue, offset int64, increaseOnly bool) {
	if offset < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.offsets[mq]; ok && increaseOnly && offset < old {
		return
	}
	m.offsets[mq] = offset
}

func (m *memOffsets) remove(mq protocol.MessageQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.offsets, mq)
}

func (m *memOffsets) table(topic string) map[protocol.MessageQueue]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[protocol.MessageQueue]int64)
	for mq, off := range m.offsets {
		if topic == "" || mq.Topic == topic {
			out[mq] = off
		}
	}
	return out
}

// remoteOffsetStore keeps clustering offsets on the brokers
// (QUERY_CONSUMER_OFFSET / UPDATE_CONSUMER_OFFSET), as Java's
// RemoteBrokerOffsetStore.
type remoteOffsetStore struct {
	memOffsets
	pc     *PullConsumer
	log    *slog.Logger
	stored map[protocol.MessageQueue]int64 // last value written; guarded by mu
	pmu    sync.Mutex                      // serializes persist
}

func newRemoteOffsetStore(pc *PullConsumer, log *slog.Logger) *remoteOffsetStore {
	return &remoteOffsetStore{
		memOffsets: memOffsets{offsets: make(map[protocol.MessageQueue]int64)},
		pc:         pc,
		log:        log,
		stored:     make(map[protocol.MessageQueue]int64),
	}
}

func (s *remoteOffsetStore) load() error { return nil }

func (s *remoteOffsetStore) readStored(ctx context.Context, mq protocol.MessageQueue) (int64, error) {
	off, err := s.pc.QueryOffset(ctx, mq)
	if err != nil {
		return -1, err
	}
	s.mu.Lock()
	s.offsets[mq] = off
	s.stored[mq] = off
	s.mu.Unlock()
	return off, nil
}

func (s *remoteOffsetStore) persist(ctx context.Context, mqs []protocol.MessageQueue) {
	// One commit at a time, each awaited: the broker runs requests on a
	// pool, so two commits of one queue in flight together may land in
	// either order and the older one win.
	s.pmu.Lock()
	defer s.pmu.Unlock()
	for _, mq := range mqs {
		if ctx.Err() != nil {
			return // nothing sent, nothing to race; Shutdown commits again
		}
		s.mu.Lock()
		off, ok := s.offsets[mq]
		prev, written := s.stored[mq]
		s.mu.Unlock()
		if !ok || off < 0 || (written && prev == off) {
			continue
		}
		// Once sent, a commit is waited for (up to the request timeout) even
		// if ctx is cancelled meanwhile: abandoned, it could still land
		// after a later commit of a newer offset.
		if err := s.pc.updateOffset(context.WithoutCancel(ctx), mq, off); err != nil {
			s.log.Warn("client: commit offset failed", "queue", mq.String(), "offset", off, "err", err)
			continue
		}
		s.mu.Lock()
		s.stored[mq] = off
		s.mu.Unlock()
	}
}

func (s *remoteOffsetStore) remove(mq protocol.MessageQueue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.offsets, mq)
	delete(s.stored, mq)
}

// localOffsetStore keeps broadcasting offsets in a JSON file, as Java's
// LocalFileOffsetStore: <dir>/<clientID>/<group>/offsets.json holding
// {"offsetTable":{{"brokerName":…,"queueId":…,"topic":…}:offset,…}}, the
// previous version kept as offsets.json.bak.
type localOffsetStore struct {
	memOffsets
	path  string
	log   *slog.Logger
	wmu   sync.Mutex // serializes file writes
	dirty bool       // guarded by mu: changed since the last write
}

// offsetFile is Java's OffsetSerializeWrapper.
type offsetFile struct {
	OffsetTable protocol.MQMap[int64] `json:"offsetTable"`
}

func newLocalOffsetStore(dir, clientID, group string, log *slog.Logger) *localOffsetStore {
	return &localOffsetStore{
		memOffsets: memOffsets{offsets: make(map[protocol.MessageQueue]int64)},
		path:       filepath.Join(dir, clientID, group, "offsets.json"),
		log:        log,
	}
}

// load reads the file, falling back to the backup when the file is
// missing or unreadable (a crash between the two renames).
func (s *localOffsetStore) load() error {
	table, err := readOffsetFile(s.path)
	if err != nil {
		var berr error
		table, berr = readOffsetFile(s.path + ".bak")
		if berr != nil {
			if errors.Is(err, os.ErrNotExist) && errors.Is(berr, os.ErrNotExist) {
				return nil // first start
			}
			return fmt.Errorf("client: load offsets from %s: %w", s.path, err)
		}
		s.log.Warn("client: offset file unreadable, using its backup", "path", s.path, "err", err)
	}
	s.mu.Lock()
	maps.Copy(s.offsets, table)
	s.mu.Unlock()
	return nil
}

func readOffsetFile(path string) (map[protocol.MessageQueue]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f offsetFile
	if err := protocol.UnmarshalMQKeyed(b, &f); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return f.OffsetTable, nil
}

func (s *localOffsetStore) readStored(_ context.Context, mq protocol.MessageQueue) (int64, error) {
	if off := s.read(mq); off >= 0 {
		return off, nil
	}
	return -1, fmt.Errorf("%w: %s in %s", ErrOffsetNotFound, mq, s.path)
}

func (s *localOffsetStore) update(mq protocol.MessageQueue, offset int64, increaseOnly bool) {
	s.memOffsets.update(mq, offset, increaseOnly)
	s.mu.Lock()
	s.dirty = true
	s.mu.Unlock()
}

// persist writes the whole table (the file holds every queue) when
// anything changed.
func (s *localOffsetStore) persist(context.Context, []protocol.MessageQueue) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return
	}
	table := protocol.MQMap[int64](maps.Clone(s.offsets))
	s.dirty = false
	s.mu.Unlock()
	if err := s.write(table); err != nil {
		s.log.Warn("client: write offset file failed", "path", s.path, "err", err)
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
	}
}

// remove keeps the offset: a broadcasting consumer reads every queue, so a
// queue only goes away with its topic, and the file should remember it.
func (s *localOffsetStore) remove(protocol.MessageQueue) {}

// write replaces the file atomically: the new content goes to a temporary
// file first, the old file becomes the backup, then the new one takes its
// place.
func (s *localOffsetStore) write(table protocol.MQMap[int64]) error {
	b, err := protocol.MarshalMQKeyed(offsetFile{OffsetTable: table})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(s.path, s.path+".bak"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Rename(tmp, s.path)
}
