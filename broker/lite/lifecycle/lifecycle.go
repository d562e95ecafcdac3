// Package lifecycle expires idle lite topics (docs/lite-topics.md §4): every
// liteTtlCheckInterval it walks the in-memory table of queue states (never
// the disk), picks the lite LMQs whose newest message is older than their
// parent's lite.topic.expiration (and than minLiteTTl), and deletes them:
// store entries, counters, and through the Cascade the groups'
// offsets, pending resets, order state and subscriptions. It also keeps the
// parent → lite-topic index.
package lifecycle

import (
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/internal/pace"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
)

// Store is what the lifecycle needs from the message store.
type Store interface {
	// Range visits every queue state in memory (consumequeue.Store.Range).
	Range(f func(id consumequeue.QueueID, st consumequeue.QueueState) bool)
	// DeleteLmqs deletes LMQs for which del agrees (store.Store.DeleteLmqs).
	DeleteLmqs(names []string, del func(lmq string, st consumequeue.QueueState) bool) ([]string, error)
	// DeleteLmqsWhere deletes the LMQs pick chooses in one pass over the
	// table, re-checked under the store's LMQ lock
	// (store.Store.DeleteLmqsWhere).
	DeleteLmqsWhere(pick, recheck func(lmq string, st consumequeue.QueueState) bool) ([]string, error)
}

// Config are the tunables.
type Config struct {
	// CheckInterval is liteTtlCheckInterval.
	CheckInterval time.Duration
	// MinTTL is minLiteTTl: no lite topic idle for less expires, and no
	// sweep runs before the broker has been up this long.
	MinTTL time.Duration
	// ExpirationUnit is the unit of lite.topic.expiration (a minute; tests
	// shorten it).
	ExpirationUnit time.Duration
	// PaceWork / PaceRest pace the cascade (liteSweepWorkMs /
	// liteSweepRestMs; see package pace).
	PaceWork, PaceRest time.Duration
}

// invalidLimit is the debounce of unreadable states (§4.3 steps 1–2): an
// lmq whose max offset or newest store time reads ≤ 0 expires only after
// more than this many consecutive sweeps saw it so.
const invalidLimit = 5

// Expired is the expiry rule for a healthy lmq (§4.3 steps 3–6): idle for
// at least minTTL and for more than ttl units (≤ 0: never expires; the
// unit is a minute, ≤ 0 means a minute).
func Expired(nowMs, latestMs, ttl int64, unit, minTTL time.Duration) bool {
	idle := nowMs - latestMs
	if idle < minTTL.Milliseconds() {
		return false
	}
	if ttl <= 0 {
		return false
	}
	if unit <= 0 {
		unit = time.Minute
	}
	return idle > ttl*unit.Milliseconds()
}

// Options configure a Manager. Store, Meta and Config are required.
type Options struct {
	Store  Store
	Meta   *meta.Source
	Config func() Config
	// Cascade are the independent parts of the clean-up of deleted lmqs
	// (§4.5 steps 1, 3–5), each called once per deletion with the deleted
	// names and the same names in batches of one parent, with the lite
	// groups bound to it. Different parts may run at the same time on
	// different goroutines.
	// Each gets a yield function to call every few milliseconds of work.
	Cascade []func(deleted []string, batches []Batch, yield func())
	// Flush makes the deletions durable (§4.5 step 7; Pebble's WAL is off);
	// nil: nothing is flushed.
	Flush func() error
	// Started is the broker's start time (default: New's time).
	Started time.Time
	Now     func() time.Time
	Logger  *slog.Logger
}

// Manager is safe for concurrent use; Sweep runs one at a time.
type Manager struct {
	opts  Options
	index *Index
	log   *slog.Logger

	sweepMu sync.Mutex
	invalid map[string]int

	sweeper loop.Runner
}

// New returns a manager; Load fills the index, Start runs the sweeper.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil || opts.Meta == nil || opts.Config == nil {
		return nil, errors.New("lifecycle: Store, Meta and Config are required")
	}
	defaults.Clock(&opts.Now)
	if opts.Started.IsZero() {
		opts.Started = opts.Now()
	}
	defaults.Logger(&opts.Logger)
	return &Manager{opts: opts, index: NewIndex(opts.Store.Range), log: opts.Logger, invalid: map[string]int{}}, nil
}

// Index is the parent → lite-topic index.
func (m *Manager) Index() *Index { return m.index }

// Load counts the lite LMQs the store holds (at start, for the log; the
// index reads the store's table itself).
func (m *Manager) Load() int { return m.index.Count("") }

// expired applies §4.3 to one state, debouncing unreadable ones; ttls is
// the parents' TTLs as of the sweep's start.
func (m *Manager) expired(lmq, parent string, st consumequeue.QueueState, now int64, cfg Config, ttls map[string]int64) bool {
	if st.Max <= 0 || st.LastStoreTime <= 0 {
		m.invalid[lmq]++
		return m.invalid[lmq] > invalidLimit
	}
	if len(m.invalid) > 0 {
		delete(m.invalid, lmq)
	}
	ttl, ok := ttls[parent]
	if !ok {
		return false
	}
	return Expired(now, st.LastStoreTime, ttl, cfg.ExpirationUnit, cfg.MinTTL)
}

// SweepResult reports one sweep.
type SweepResult struct {
	Scanned int
	Expired int
	Deleted int
	Took    time.Duration
	// Cascade is the part of Took spent after the store deleted the LMQs:
	// the Pebble flush and the offsets, subscriptions and order info.
	Cascade time.Duration
	// Flush is the Pebble flush that makes the deletions durable; it runs
	// during the cascade.
	Flush time.Duration
}

// Sweep runs one expiry pass (§4.4 step 2): refresh metadata, pick the
// expired LMQs in one pass over the in-memory queue states, then delete
// them. Deletion re-checks each LMQ under the store's LMQ lock, so a
// message that arrived meanwhile keeps it.
func (m *Manager) Sweep() (SweepResult, error) {
	m.sweepMu.Lock()
	defer m.sweepMu.Unlock()
	start := time.Now()
	cfg := m.opts.Config()
	m.opts.Meta.Refresh()
	now := m.opts.Now().UnixMilli()
	ttls := m.opts.Meta.TTLMap() // one lock, not one per LMQ
	var res SweepResult
	// Debounce counters of LMQs that no longer exist are dropped.
	stale := make(map[string]bool, len(m.invalid))
	for k := range m.invalid {
		stale[k] = true
	}
	// The parent of every picked lmq when they all have one (the usual
	// case): the cascade then need not read a million names again.
	var only string
	several := false
	pick := func(lmq string, st consumequeue.QueueState) bool {
		parent, _, ok := naming.Parse(lmq)
		if !ok {
			return false
		}
		res.Scanned++
		if len(stale) > 0 {
			delete(stale, lmq)
		}
		if m.expired(lmq, parent, st, now, cfg, ttls) {
			res.Expired++
			if parent != only {
				several = several || only != ""
				only = parent
			}
			return true
		}
		return false
	}
	recheck := func(lmq string, st consumequeue.QueueState) bool {
		if st.Max <= 0 || st.LastStoreTime <= 0 {
			return true // debounced by pick
		}
		ttl, ok := m.opts.Meta.TTL(naming.ParentOf(lmq))
		return ok && Expired(m.opts.Now().UnixMilli(), st.LastStoreTime, ttl, cfg.ExpirationUnit, cfg.MinTTL)
	}
	deleted, err := m.opts.Store.DeleteLmqsWhere(pick, recheck)
	for k := range stale {
		delete(m.invalid, k)
	}
	cascade := time.Now()
	if several {
		only = ""
	}
	flush, ferr := m.afterDelete(deleted, only)
	if err == nil {
		err = ferr
	}
	res.Deleted = len(deleted)
	res.Took = time.Since(start)
	res.Cascade = time.Since(cascade)
	res.Flush = flush
	return res, err
}

func (m *Manager) delete(names []string, del func(string, consumequeue.QueueState) bool) (int, error) {
	if len(names) == 0 {
		return 0, nil
	}
	deleted, err := m.opts.Store.DeleteLmqs(names, del)
	if _, ferr := m.afterDelete(deleted, ""); err == nil {
		err = ferr
	}
	return len(deleted), err
}

// afterDelete makes the deletions durable and runs the cascade; it
// returns how long the flush took. parent, if not "", is the parent of
// every deleted lmq.
func (m *Manager) afterDelete(deleted []string, parent string) (time.Duration, error) {
	if len(deleted) == 0 {
		return 0, nil
	}
	if len(m.invalid) > 0 {
		for _, lmq := range deleted {
			delete(m.invalid, lmq)
		}
	}
	// The names are read once here, into batches of one parent each (a
	// million names scattered over the heap cost a cache miss each per
	// pass); the parts then work batch by batch.
	batches := m.batches(deleted, parent)
	// A large cascade runs its first part on another goroutine: each part
	// has its own structures (no lock shared between the two goroutines).
	parts := m.opts.Cascade
	if len(deleted) >= parallelCascadeMin && len(parts) > 1 && runtime.GOMAXPROCS(0) > 1 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.cascade(deleted, batches, parts[:1])
		}()
		m.cascade(deleted, batches, parts[1:])
		<-done
	} else {
		m.cascade(deleted, batches, parts)
	}
	// The flush makes the deletions durable. It goes after the cascade:
	// flushing a million range-deleted LMQs sets off a compaction that
	// takes a processor for about half a second, and while it ran beside
	// the cascade (both giving way to requests) the cascade took 1-1.3 s
	// instead of 0.2-0.6 s (make bench-lite, two cores).
	if m.opts.Flush == nil {
		return 0, nil
	}
	t0 := time.Now()
	err := m.opts.Flush()
	return time.Since(t0), err
}

// parallelCascadeMin is the number of deleted LMQs from which afterDelete
// runs the cascade's parts on two goroutines.
const parallelCascadeMin = 100_000

// cascadeBatch bounds a batch: a part holds its locks for one batch, and
// sends run between batches.
const cascadeBatch = 4096

// Batch is a run of deleted lmqs of one parent, with the lite groups bound
// to the parent.
type Batch struct {
	Parent string
	LMQs   []string
	Groups []string
}

// batches splits deleted into runs of one parent (sorted names: one run
// per parent and cascadeBatch names). With parent not "" every name is
// known to be one of parent's lite LMQs.
func (m *Manager) batches(deleted []string, parent string) []Batch {
	if parent != "" {
		groups := m.opts.Meta.SubscriberGroups(parent)
		out := make([]Batch, 0, (len(deleted)+cascadeBatch-1)/cascadeBatch)
		for start := 0; start < len(deleted); start += cascadeBatch {
			out = append(out, Batch{Parent: parent, LMQs: deleted[start:min(start+cascadeBatch, len(deleted))], Groups: groups})
		}
		return out
	}
	groups := map[string][]string{} // per parent, read once
	var out []Batch
	start, cur := 0, ""
	flush := func(end int) {
		if end > start {
			out = append(out, Batch{Parent: cur, LMQs: deleted[start:end], Groups: groups[cur]})
		}
		start = end
	}
	for i, lmq := range deleted {
		parent, _, ok := naming.Parse(lmq)
		if !ok {
			flush(i)
			start = i + 1
			continue
		}
		if parent != cur || i-start >= cascadeBatch {
			flush(i)
			cur = parent
			if _, ok := groups[parent]; !ok {
				groups[parent] = m.opts.Meta.SubscriberGroups(parent)
			}
		}
	}
	flush(len(deleted))
	return out
}

// cascade runs parts one after the other, paced.
func (m *Manager) cascade(deleted []string, batches []Batch, parts []func([]string, []Batch, func())) {
	cfg := m.opts.Config()
	p := pace.New(cfg.PaceWork, cfg.PaceRest)
	for _, f := range parts {
		f(deleted, batches, p.Yield)
	}
}

// CleanParent deletes every LMQ of a parent topic (the parent was deleted,
// §4.4 step 3).
func (m *Manager) CleanParent(parent string) (int, error) {
	m.sweepMu.Lock()
	defer m.sweepMu.Unlock()
	return m.delete(m.index.LMQs(parent), nil)
}

// Start runs the sweeper: every CheckInterval, once the broker has been up
// for MinTTL.
func (m *Manager) Start() {
	m.sweeper.Start(func(stop <-chan struct{}) {
		loop.Repeat(stop, func() time.Duration {
			return defaults.Or(m.opts.Config().CheckInterval, 2*time.Minute)
		}, m.sweepOnce)
	})
}

// sweepOnce is one round of the sweeper, skipped until the broker has been
// up for MinTTL.
func (m *Manager) sweepOnce() {
	if m.opts.Now().Sub(m.opts.Started) < m.opts.Config().MinTTL {
		return
	}
	res, err := m.Sweep()
	if err != nil {
		m.log.Error("lite topic expiry sweep", "err", err, "deleted", res.Deleted)
		return
	}
	if res.Deleted > 0 || res.Expired > 0 {
		m.log.Info("expired lite topics", "scanned", res.Scanned, "expired", res.Expired, "deleted", res.Deleted, "took", res.Took, "cascade", res.Cascade, "flush", res.Flush)
	}
}

// Close stops the sweeper.
func (m *Manager) Close() {
	m.sweeper.Stop()
}
