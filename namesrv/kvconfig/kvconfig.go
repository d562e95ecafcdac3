// Package kvconfig is the nameserver's namespaced key/value store (PUT /
// GET / DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE). It is persisted to a
// JSON file in the format of Apache's kvConfig.json, so an Apache nameserver
// data directory can be reused:
//
//	{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4;broker-b:4"}}}
package kvconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"

	"github.com/rmqgo/rmq/pkg/protocol"

	"github.com/rmqgo/rmq/internal/fsutil"
)

// NamespaceOrderTopicConfig holds per-topic order configuration
// ("brokerA:4;brokerB:4"), returned in routes when orderMessageEnable is set.
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// fileFormat is the on-disk layout (Apache's KVConfigSerializeWrapper).
type fileFormat struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// Store is safe for concurrent use.
type Store struct {
	path string // "" = memory only
	log  *slog.Logger

	mu    sync.RWMutex
	table map[string]map[string]string
}

// Open loads path (a missing file is an empty store). An unreadable or
// corrupt file is an error: starting empty would overwrite it on the next
// write and lose the data. path "" keeps the store in memory only.
func Open(path string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Store{path: path, log: log, table: map[string]map[string]string{}}
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("kv config file not found, starting empty", "path", path)
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kvconfig: read %s: %w", path, err)
	}
	var f fileFormat
	if len(data) > 0 {
		if err := protocol.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("kvconfig: parse %s: %w", path, err)
		}
	}
	n := 0
	for ns, kv := range f.ConfigTable {
		if kv == nil {
			kv = map[string]string{}
		}
		s.table[ns] = kv
		n += len(kv)
	}
	log.Info("kv config loaded", "path", path, "namespaces", len(s.table), "items", n)
	return s, nil
}

// Path returns the backing file ("" when in memory).
func (s *Store) Path() string { return s.path }

// Put sets namespace/key. If persisting fails the change is rolled back, so
// memory never holds what the file would lose on restart.
func (s *Store) Put(namespace, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, nsExisted := s.table[namespace]
	if !nsExisted {
		kv = map[string]string{}
		s.table[namespace] = kv
	}
	prev, existed := kv[key]
	kv[key] = value
	if err := s.persistLocked(); err != nil {
		if existed {
			kv[key] = prev
		} else {
			delete(kv, key)
		}
		if !nsExisted {
			delete(s.table, namespace)
		}
		return err
	}
	s.log.Info("kv config put", "namespace", namespace, "key", key, "value", value, "update", existed)
	return nil
}

// Get returns the value of namespace/key.
func (s *Store) Get(namespace, key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.table[namespace][key]
	return v, ok
}

// Delete removes namespace/key; deleting what does not exist succeeds. The
// namespace itself stays (as in Apache), listing then returns an empty table.
func (s *Store) Delete(namespace, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, ok := s.table[namespace]
	if !ok {
		return nil
	}
	prev, existed := kv[key]
	if !existed {
		return nil
	}
	delete(kv, key)
	if err := s.persistLocked(); err != nil {
		kv[key] = prev
		return err
	}
	s.log.Info("kv config deleted", "namespace", namespace, "key", key, "value", prev)
	return nil
}

// List returns a copy of a namespace's table; false when the namespace has
// never been written.
func (s *Store) List(namespace string) (map[string]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	kv, ok := s.table[namespace]
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(kv))
	for k, v := range kv {
		out[k] = v
	}
	return out, true
}

// persistLocked writes the whole table; the caller holds s.mu. Writes are
// rare (admin operations), so holding the lock across the write keeps the
// file and memory in step without a second lock.
func (s *Store) persistLocked() error {
	if s.path == "" {
		return nil
	}
	data, err := protocol.Marshal(fileFormat{ConfigTable: s.table})
	if err != nil {
		return fmt.Errorf("kvconfig: encode: %w", err)
	}
	if err := fsutil.WriteFileAtomic(s.path, data, false); err != nil {
		return fmt.Errorf("kvconfig: persist: %w", err)
	}
	return nil
}
