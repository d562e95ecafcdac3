package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqgo/rmq/internal/fsutil"
	pcfg "github.com/rmqgo/rmq/pkg/config"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Errors of Holder.Update; callers map them to response codes.
var (
	// ErrReadOnly: a key is black-listed (configBlackList) or cannot change
	// while the broker runs.
	ErrReadOnly = errors.New("can not update config")
	// ErrUnknownKey: a key matches no setting.
	ErrUnknownKey = errors.New("unknown config key")
	// ErrInvalidValue: a value does not parse or the result fails Validate.
	ErrInvalidValue = errors.New("invalid config value")
)

// Holder owns the live configuration. Readers take immutable snapshots with
// Get (a Config is never modified after it is published), so request
// handlers need no locks; Update publishes a new snapshot.
type Holder struct {
	cur atomic.Pointer[Config]

	mu          sync.Mutex // serialises Update and guards version
	version     protocol.DataVersion
	overlayPath string // "" disables persistence
}

// NewHolder publishes c. Updates persist to the overlay file of c's store
// unless persist is false.
func NewHolder(c *Config, persist bool) *Holder {
	h := &Holder{version: protocol.DataVersion{Timestamp: time.Now().UnixMilli()}}
	if persist {
		h.overlayPath = OverlayPath(c)
	}
	h.cur.Store(c)
	return h
}

// Get returns the current configuration; callers must not modify it.
func (h *Holder) Get() *Config { return h.cur.Load() }

// Version is the configuration's data version (GET_BROKER_CONFIG `version`).
func (h *Holder) Version() protocol.DataVersion {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.version
}

// Update applies key=value pairs atomically: either all of them take effect
// (and persist to the overlay file) or none. It returns the keys whose value
// actually changed, in their canonical spelling.
func (h *Holder) Update(kv map[string]string) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.cur.Load()

	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	black := map[string]bool{}
	for _, k := range strings.Split(old.ConfigBlackList, ";") {
		if k = strings.TrimSpace(k); k != "" {
			black[strings.ToLower(k)] = true
		}
	}
	var blocked, readOnly, unknown []string
	for _, k := range keys {
		switch {
		case black[strings.ToLower(k)]:
			blocked = append(blocked, k)
		case IsReadOnly(k):
			readOnly = append(readOnly, k)
		case !pcfg.Has(old, k):
			unknown = append(unknown, k)
		}
	}
	if len(blocked) > 0 {
		return nil, fmt.Errorf("%w: %s in configBlackList", ErrReadOnly, strings.Join(blocked, ", "))
	}
	if len(readOnly) > 0 {
		return nil, fmt.Errorf("%w: %s cannot change while the broker runs; edit the config file and restart",
			ErrReadOnly, strings.Join(readOnly, ", "))
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrUnknownKey, strings.Join(unknown, ", "))
	}

	next := old.Clone()
	for _, k := range keys {
		if err := pcfg.Set(next, k, kv[k]); err != nil {
			return nil, fmt.Errorf("%w: %s=%q: %v", ErrInvalidValue, k, kv[k], err)
		}
	}
	if err := next.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidValue, err)
	}

	before, after := old.Map(), next.Map()
	var changed []string
	for k, v := range after {
		if before[k] != v {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	if len(changed) == 0 {
		return nil, nil
	}
	if h.overlayPath != "" {
		if err := writeOverlay(h.overlayPath, after, changed); err != nil {
			return nil, err
		}
	}
	h.cur.Store(next)
	h.version.Counter++
	h.version.Timestamp = time.Now().UnixMilli()
	return changed, nil
}

// ReadOverlay reads a runtime overlay file; a missing file is empty.
func ReadOverlay(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: read runtime overlay %s: %w", path, err)
	}
	kv, err := pcfg.ParseProperties(b)
	if err != nil {
		return nil, fmt.Errorf("config: runtime overlay %s: %w", path, err)
	}
	return kv, nil
}

// writeOverlay merges the changed keys into the overlay file.
func writeOverlay(path string, values map[string]string, changed []string) error {
	cur, err := ReadOverlay(path)
	if err != nil {
		return err
	}
	if cur == nil {
		cur = map[string]string{}
	}
	for _, k := range changed {
		cur[k] = values[k]
	}
	keys := make([]string, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Broker settings changed at runtime (UPDATE_BROKER_CONFIG); applied over the\n")
	b.WriteString("# -c file at boot. Command-line flags still take precedence.\n")
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(escapeProperty(cur[k]))
		b.WriteByte('\n')
	}
	if err := fsutil.WriteFileAtomic(path, []byte(b.String()), false); err != nil {
		return fmt.Errorf("config: persist runtime overlay: %w", err)
	}
	return nil
}

func escapeProperty(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r", "\t", "\\t")
	s = r.Replace(s)
	if strings.HasPrefix(s, " ") {
		s = "\\" + s // a leading blank would be eaten by the parser
	}
	return s
}

// SetRole switches brokerRole and brokerId at runtime without persisting
// them (controller mode: the controller, not the file, decides the role).
// Readers of Get see the new role from the next call on.
func (h *Holder) SetRole(role string, id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := h.cur.Load().Clone()
	next.BrokerRole, next.BrokerID = role, id
	h.cur.Store(next)
	h.version.Counter++
	h.version.Timestamp = time.Now().UnixMilli()
}
