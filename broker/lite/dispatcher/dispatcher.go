// Package dispatcher delivers lite events (docs/lite-topics.md §5.6–§5.9): when a
// message lands in an LMQ, exactly one subscribed client of each interested
// group gets the LMQ's name in its bounded event set and its long-polling
// pop is woken. Events that cannot be placed (sets full, clients stalled)
// are recovered by a periodic full dispatch, which compares each
// subscription's in-memory max offset with the group's committed offset.
//
// No goroutine is held per client or per LMQ: one loop scans for stalled
// clients and runs due full dispatches every liteEventCheckInterval.
package dispatcher

import (
	"container/heap"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/internal/loop"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/lite/registry"
)

// Config are the tunables (§2.3, §5.6 constants).
type Config struct {
	// MaxClientEventCount is the default soft cap of an event set.
	MaxClientEventCount int64
	// CapacityCacheTTL is how long a client's resolved soft cap is kept.
	CapacityCacheTTL time.Duration
	// FullDispatchDelay and FullDispatchDelayWildcard are the base delays
	// of a scheduled full dispatch.
	FullDispatchDelay         time.Duration
	FullDispatchDelayWildcard time.Duration
	// CheckInterval is the period of the scan (liteEventCheckInterval).
	CheckInterval time.Duration
	// InactiveInterval: a client with events that has not popped for this
	// long (and has not long-polled within LongPollWindow) is stalled.
	InactiveInterval time.Duration
	LongPollWindow   time.Duration
	// ActiveConsumeWindow: a client that consumed this recently gets its
	// full dispatch rescheduled without jitter.
	ActiveConsumeWindow time.Duration
	// BlacklistDuration: a stalled client gets no events this long.
	BlacklistDuration time.Duration
}

// DefaultConfig returns upstream's values.
func DefaultConfig() Config {
	return Config{
		MaxClientEventCount:       100,
		CapacityCacheTTL:          5 * time.Second,
		FullDispatchDelay:         10 * time.Second,
		FullDispatchDelayWildcard: 10 * time.Second,
		CheckInterval:             10 * time.Second,
		InactiveInterval:          10 * time.Second,
		LongPollWindow:            35 * time.Second,
		ActiveConsumeWindow:       5 * time.Second,
		BlacklistDuration:         10 * time.Second,
	}
}

// Jitters and floors of rescheduling (§5.6).
const (
	blockedJitter     = 15 * time.Second
	busyJitter        = 10 * time.Second
	minDelay          = 50 * time.Millisecond
	wildcardRegDelay  = 5 * time.Second
	wakeEvery         = 10
	lowWaterPercent   = 20
	groupCacheEntries = 4096
)

// Options are the dispatcher's collaborators. Registry, Group, MaxOffset
// and Committed are required.
type Options struct {
	Registry *registry.Registry
	// Group returns a group's lite settings.
	Group func(group string) (meta.Group, bool)
	// MaxOffset is an lmq's max offset (in memory).
	MaxOffset func(lmq string) int64
	// Committed is a group's committed offset of an lmq (-1: none).
	Committed func(group, lmq string) int64
	// ResetPending reports a pending offset reset of (group, lmq).
	ResetPending func(group, lmq string) bool
	// LMQsOf lists the LMQs of a parent (wildcard full dispatch).
	LMQsOf func(parent string) []string
	// Config returns the live tunables (nil: DefaultConfig).
	Config func() Config
	Now    func() time.Time
	// IntN picks a random start index (nil: math/rand/v2).
	IntN func(n int) int
}

// fullKey names a pending full dispatch: one client, or one wildcard group
// of a parent.
type fullKey struct {
	client   registry.ClientKey
	parent   string
	wildcard bool
}

type fullReq struct {
	key fullKey
	due int64
	pos int
}

type fullHeap []*fullReq

func (h fullHeap) Len() int           { return len(h) }
func (h fullHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h fullHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].pos, h[j].pos = i, j }
func (h *fullHeap) Push(x any)        { r := x.(*fullReq); r.pos = len(*h); *h = append(*h, r) }
func (h *fullHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

type cachedGroup struct {
	g  meta.Group
	ok bool
	at int64
}

// Dispatcher is safe for concurrent use.
type Dispatcher struct {
	opts Options
	wake func(registry.ClientKey)

	mu        sync.RWMutex
	clients   map[registry.ClientKey]*eventSet
	blacklist map[registry.ClientKey]int64 // until (ms)

	fullMu  sync.Mutex
	pending map[fullKey]*fullReq
	queue   fullHeap

	groupMu sync.Mutex
	groups  map[string]cachedGroup

	// kick wakes the loop when a full dispatch is queued ahead of the one
	// it is sleeping for.
	kick chan struct{}

	scanner loop.Runner
}

// New returns a dispatcher; call SetWaker before events flow.
func New(opts Options) (*Dispatcher, error) {
	if opts.Registry == nil || opts.Group == nil || opts.MaxOffset == nil || opts.Committed == nil {
		return nil, errors.New("dispatcher: Registry, Group, MaxOffset and Committed are required")
	}
	if opts.Config == nil {
		opts.Config = DefaultConfig
	}
	defaults.Clock(&opts.Now)
	if opts.IntN == nil {
		opts.IntN = rand.IntN
	}
	d := &Dispatcher{
		opts:      opts,
		wake:      func(registry.ClientKey) {},
		clients:   map[registry.ClientKey]*eventSet{},
		blacklist: map[registry.ClientKey]int64{},
		pending:   map[fullKey]*fullReq{},
		groups:    map[string]cachedGroup{},
		kick:      make(chan struct{}, 1),
	}
	opts.Registry.AddListener(d)
	return d, nil
}

// SetWaker installs the long-poll wake-up (the pop processor).
func (d *Dispatcher) SetWaker(f func(registry.ClientKey)) { d.wake = f }

func (d *Dispatcher) now() int64 { return d.opts.Now().UnixMilli() }

func (d *Dispatcher) cfg() Config { return d.opts.Config() }

// group returns a group's settings, cached for the capacity cache TTL so
// the dispatch hot path does not copy group configs.
func (d *Dispatcher) group(name string) (meta.Group, bool) {
	now := d.now()
	ttl := d.cfg().CapacityCacheTTL.Milliseconds()
	d.groupMu.Lock()
	c, ok := d.groups[name]
	d.groupMu.Unlock()
	if ok && now-c.at < ttl {
		return c.g, c.ok
	}
	g, found := d.opts.Group(name)
	d.groupMu.Lock()
	if len(d.groups) >= groupCacheEntries {
		clear(d.groups)
	}
	d.groups[name] = cachedGroup{g, found, now}
	d.groupMu.Unlock()
	return g, found
}

func (d *Dispatcher) set(k registry.ClientKey, create bool) *eventSet {
	d.mu.RLock()
	e := d.clients[k]
	d.mu.RUnlock()
	if e != nil || !create {
		return e
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e = d.clients[k]; e == nil {
		e = newEventSet(d.now())
		d.clients[k] = e
	}
	return e
}

// softCap resolves a client's event-set cap (group attribute, else the
// broker's maxClientEventCount), re-read at most every CapacityCacheTTL.
func (d *Dispatcher) softCap(k registry.ClientKey, e *eventSet) int {
	now := d.now()
	cfg := d.cfg()
	e.mu.Lock()
	if e.softCap > 0 && now-e.capAt < cfg.CapacityCacheTTL.Milliseconds() {
		c := e.softCap
		e.mu.Unlock()
		return c
	}
	e.mu.Unlock()
	c := cfg.MaxClientEventCount
	if g, ok := d.group(k.Group); ok && g.MaxEventCount >= 0 {
		c = g.MaxEventCount
	}
	c = max(min(c, HardEventCap), 1)
	e.mu.Lock()
	e.softCap, e.capAt = int(c), now
	e.mu.Unlock()
	return int(c)
}

func (d *Dispatcher) offer(k registry.ClientKey, lmq string) bool {
	e := d.set(k, true)
	if e.offer(lmq, d.softCap(k, e)) {
		return true
	}
	e.more.Store(true)
	return false
}

// lowWater is the event count at or below which a client gets more
// events from a full dispatch.
func (d *Dispatcher) lowWater(k registry.ClientKey, e *eventSet) int {
	return d.softCap(k, e) * lowWaterPercent / 100
}

func (d *Dispatcher) blacklisted(k registry.ClientKey, now int64) bool {
	d.mu.RLock()
	until, ok := d.blacklist[k]
	d.mu.RUnlock()
	return ok && now < until
}

// OnLmqAppended is the store hook: a message landed in lmq.
func (d *Dispatcher) OnLmqAppended(lmq string, _, _ int64) { d.Dispatch("", lmq) }

// Dispatch announces lmq to one client of each interested group (of group
// only, unless it is ""): §5.7 dispatch.
func (d *Dispatcher) Dispatch(group, lmq string) {
	parent, _, ok := naming.Parse(lmq)
	if !ok {
		return
	}
	if !d.opts.Registry.HasSubscribers(lmq) && !d.opts.Registry.HasWildcard(parent) {
		return
	}
	for g, clients := range d.opts.Registry.Subscribers(lmq, parent, group) {
		d.selectAndDispatch(g, parent, clients, lmq, registry.ClientKey{})
	}
}

// selectAndDispatch gives lmq to exactly one client of group (§5.7).
func (d *Dispatcher) selectAndDispatch(group, parent string, clients []registry.ClientKey, lmq string, exclude registry.ClientKey) bool {
	if len(clients) == 0 {
		return false
	}
	g, _ := d.group(group)
	now := d.now()
	start := d.opts.IntN(len(clients))
	var fallback []registry.ClientKey
	for i := range clients {
		c := clients[(start+i)%len(clients)]
		if c == exclude {
			continue
		}
		if d.blacklisted(c, now) {
			if !g.Wildcard {
				fallback = append(fallback, c)
			}
			continue
		}
		if d.offer(c, lmq) {
			d.wake(c)
			return true
		}
		if !g.Wildcard {
			d.scheduleFull(fullKey{client: c}, d.cfg().FullDispatchDelay, false)
		}
	}
	for _, c := range fallback {
		if d.offer(c, lmq) {
			d.wake(c)
			return true
		}
	}
	if g.Wildcard {
		d.scheduleFull(fullKey{client: registry.ClientKey{Group: group}, parent: parent, wildcard: true}, d.cfg().FullDispatchDelayWildcard, false)
	}
	return false
}

// Poll takes the oldest event of a client. When that drains a set that
// once overflowed to its low-water mark, a full dispatch refills it right
// away [our choice: upstream waits for a timer with up to 10 s of jitter,
// so a client subscribed to many lite topics with backlog gets about a
// set's worth of messages per 5 s].
func (d *Dispatcher) Poll(k registry.ClientKey) (string, bool) {
	e := d.set(k, false)
	if e == nil {
		return "", false
	}
	lmq, ok := e.poll()
	if e.more.Load() && e.size() <= d.lowWater(k, e) && e.more.CompareAndSwap(true, false) {
		// Due now, without the 50 ms floor: this fires once per overflow,
		// not in a loop, and the client is draining its last events.
		d.queueFull(fullKey{client: k}, d.now())
	}
	return lmq, ok
}

// Pending is the number of events of a client.
func (d *Dispatcher) Pending(k registry.ClientKey) int {
	if e := d.set(k, false); e != nil {
		return e.size()
	}
	return 0
}

// Touch records a pop of k (consumed: it returned messages).
func (d *Dispatcher) Touch(k registry.ClientKey, consumed bool) {
	e := d.set(k, false)
	if e == nil {
		if _, ok := d.opts.Registry.Get(k, 0); !ok {
			return // not a subscriber: keep no state for it
		}
		e = d.set(k, true)
	}
	now := d.now()
	e.lastAccess.Store(now)
	if consumed {
		e.lastConsume.Store(now)
	}
}

// MarkLongPoll records that k's pop was parked.
func (d *Dispatcher) MarkLongPoll(k registry.ClientKey) {
	if e := d.set(k, false); e != nil {
		e.lastLongPoll.Store(d.now())
	}
}

// Activity returns k's last pop and last consuming pop (ms, 0: never).
func (d *Dispatcher) Activity(k registry.ClientKey) (lastAccess, lastConsume int64) {
	if e := d.set(k, false); e != nil {
		return e.lastAccess.Load(), e.lastConsume.Load()
	}
	return 0, 0
}

// EventMapSize is the number of clients with an event set.
func (d *Dispatcher) EventMapSize() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.clients)
}

// OnRegister implements registry.Listener: announce existing backlog.
func (d *Dispatcher) OnRegister(k registry.ClientKey, lmq string) {
	if !naming.IsLite(lmq) {
		// A wildcard client registered WildcardKey(parent, group).
		if parent, _, ok := strings.Cut(lmq, "@"); ok {
			d.scheduleFull(fullKey{client: registry.ClientKey{Group: k.Group}, parent: parent, wildcard: true}, wildcardRegDelay, true)
		}
		return
	}
	if d.opts.MaxOffset(lmq) > 0 {
		d.Dispatch(k.Group, lmq)
	}
}

// OnUnregister implements registry.Listener.
func (d *Dispatcher) OnUnregister(registry.ClientKey, string) {}

// OnRemoveAll implements registry.Listener: the client's pending events go
// to the other clients of its group.
func (d *Dispatcher) OnRemoveAll(k registry.ClientKey) {
	d.mu.Lock()
	e := d.clients[k]
	delete(d.clients, k)
	delete(d.blacklist, k)
	d.mu.Unlock()
	d.fullMu.Lock()
	if r := d.pending[fullKey{client: k}]; r != nil {
		heap.Remove(&d.queue, r.pos)
		delete(d.pending, fullKey{client: k})
	}
	d.fullMu.Unlock()
	if e == nil {
		return
	}
	for _, lmq := range e.drain() {
		d.redispatch(k, lmq)
	}
}

// redispatch gives lmq to another client of from's group.
func (d *Dispatcher) redispatch(from registry.ClientKey, lmq string) {
	parent := naming.ParentOf(lmq)
	subs := d.opts.Registry.Subscribers(lmq, parent, from.Group)
	d.selectAndDispatch(from.Group, parent, subs[from.Group], lmq, from)
}

// maybeBlocked: events pending, no pop for InactiveInterval and no long
// poll within LongPollWindow (§5.6).
func (d *Dispatcher) maybeBlocked(e *eventSet, now int64, cfg Config) bool {
	return e.size() > 0 &&
		now-e.lastAccess.Load() > cfg.InactiveInterval.Milliseconds() &&
		now-e.lastLongPoll.Load() > cfg.LongPollWindow.Milliseconds()
}

// Scan moves the events of stalled clients to their siblings (blacklisting
// the stalled ones) and runs the due full dispatches (§5.7 scan).
func (d *Dispatcher) Scan() {
	now := d.now()
	cfg := d.cfg()
	type stalled struct {
		k registry.ClientKey
		e *eventSet
	}
	var blocked []stalled
	d.mu.Lock()
	for k, until := range d.blacklist {
		if now >= until {
			delete(d.blacklist, k)
		}
	}
	for k, e := range d.clients {
		if d.maybeBlocked(e, now, cfg) {
			blocked = append(blocked, stalled{k, e})
			d.blacklist[k] = now + cfg.BlacklistDuration.Milliseconds()
		}
	}
	d.mu.Unlock()
	for _, s := range blocked {
		for _, lmq := range s.e.drain() {
			d.redispatch(s.k, lmq)
		}
	}
	d.runDue()
}

// runDue runs the full dispatches whose time has come.
func (d *Dispatcher) runDue() {
	now := d.now()
	for {
		d.fullMu.Lock()
		if len(d.queue) == 0 || d.queue[0].due > now {
			d.fullMu.Unlock()
			return
		}
		r := heap.Pop(&d.queue).(*fullReq)
		delete(d.pending, r.key)
		d.fullMu.Unlock()
		if r.key.wildcard {
			d.fullDispatchWildcard(r.key)
		} else {
			d.FullDispatch(r.key.client)
		}
	}
}

// scheduleFull queues a full dispatch after delay; one already pending
// for k is kept, moved earlier if this one is due first (exact: the delay
// is taken as is, without blacklist jitter).
func (d *Dispatcher) scheduleFull(k fullKey, delay time.Duration, exact bool) {
	if !exact && !k.wildcard && d.blacklisted(k.client, d.now()) {
		delay += time.Duration(d.opts.IntN(int(blockedJitter/time.Millisecond)+1)) * time.Millisecond
	}
	delay = max(delay, minDelay)
	d.queueFull(k, d.now()+delay.Milliseconds())
}

// queueFull queues a full dispatch of k due at due (ms), or moves the one
// pending earlier.
func (d *Dispatcher) queueFull(k fullKey, due int64) {
	d.fullMu.Lock()
	r, ok := d.pending[k]
	switch {
	case ok && r.due <= due:
		d.fullMu.Unlock()
		return
	case ok:
		r.due = due
		heap.Fix(&d.queue, r.pos)
	default:
		r = &fullReq{key: k, due: due}
		d.pending[k] = r
		heap.Push(&d.queue, r)
	}
	head := r.pos == 0
	d.fullMu.Unlock()
	if head {
		loop.Wake(d.kick)
	}
}

// ScheduleFullDispatch queues a full dispatch of a client after delay.
func (d *Dispatcher) ScheduleFullDispatch(k registry.ClientKey, delay time.Duration) {
	d.scheduleFull(fullKey{client: k}, delay, true)
}

// FullDispatch offers every subscribed lmq of k that has messages the
// group has not consumed (§5.8 doFullDispatch).
func (d *Dispatcher) FullDispatch(k registry.ClientKey) {
	c, ok := d.opts.Registry.Get(k, 0) // the names only if a walk is due
	if !ok {
		return
	}
	if c.Wildcard {
		d.fullDispatchWildcard(fullKey{client: registry.ClientKey{Group: k.Group}, parent: c.Parent, wildcard: true})
		return
	}
	cfg := d.cfg()
	now := d.now()
	e := d.set(k, true)
	if d.maybeBlocked(e, now, cfg) {
		d.reschedule(k, cfg.FullDispatchDelay, blockedJitter)
		return
	}
	capacity := d.softCap(k, e)
	// Lagging lmqs kept by an earlier walk top the set up to its capacity
	// whatever it holds: under a steady stream, live events keep it near
	// the low-water mark, and a refill that waited for the mark drained a
	// backlog of thousands a few events at a time.
	if d.refillFromBacklog(k, e, capacity) {
		return
	}
	if e.size() > capacity*lowWaterPercent/100 {
		// Live events filled the set since it asked: the next drain to
		// the low-water mark asks again (Poll cleared the flag), rather
		// than the backlog waiting for the timer below.
		e.more.Store(true)
		jitter := busyJitter
		if now-e.lastConsume.Load() < cfg.ActiveConsumeWindow.Milliseconds() {
			jitter = 0
		}
		d.reschedule(k, cfg.FullDispatchDelay, jitter)
		return
	}
	if c, ok = d.opts.Registry.Get(k, -1); !ok {
		return
	}
	offered := 0
	var rest []string
	for _, lmq := range c.LMQs {
		if !d.hasBacklog(k.Group, lmq) {
			continue
		}
		if rest != nil || !e.offer(lmq, capacity) {
			rest = append(rest, lmq)
			continue
		}
		offered++
		if offered%wakeEvery == 0 {
			d.wake(k)
		}
	}
	if rest != nil {
		e.setBacklog(rest)
		e.more.Store(true)
		d.reschedule(k, cfg.FullDispatchDelay, busyJitter)
	}
	d.wake(k)
}

// refillFromBacklog offers the lmqs an earlier full dispatch kept for k
// that are still subscribed and lagging; it reports false when none were
// kept (a full walk is due).
func (d *Dispatcher) refillFromBacklog(k registry.ClientKey, e *eventSet, capacity int) bool {
	if e.backlogLen() == 0 {
		return false
	}
	offered := 0
	for {
		batch := e.takeBacklog(capacity)
		if batch == nil {
			break
		}
		for i, lmq := range batch {
			if !d.opts.Registry.Subscribed(k, lmq) || !d.hasBacklog(k.Group, lmq) {
				continue
			}
			if !e.offer(lmq, capacity) {
				// Full again: keep the rest for the next refill.
				e.mu.Lock()
				e.backlog = append(e.backlog, batch[i:]...)
				e.mu.Unlock()
				e.more.Store(true)
				d.reschedule(k, d.cfg().FullDispatchDelay, busyJitter)
				d.wake(k)
				return true
			}
			offered++
		}
		if offered >= capacity {
			break
		}
	}
	if offered == 0 {
		return false // everything kept was consumed meanwhile: walk again
	}
	// The next drain refills again: from what is kept or, once that is
	// used up, with a walk that finds what came since the snapshot.
	e.more.Store(true)
	d.wake(k)
	return true
}

func (d *Dispatcher) hasBacklog(group, lmq string) bool {
	max := d.opts.MaxOffset(lmq)
	if max <= 0 {
		return false
	}
	if d.opts.ResetPending != nil && d.opts.ResetPending(group, lmq) {
		return true
	}
	return d.opts.Committed(group, lmq) < max
}

func (d *Dispatcher) reschedule(k registry.ClientKey, base, jitter time.Duration) {
	if jitter > 0 {
		base += time.Duration(d.opts.IntN(int(jitter/time.Millisecond)+1)) * time.Millisecond
	}
	d.scheduleFull(fullKey{client: k}, base, true)
}

// fullDispatchWildcard offers every LMQ of the parent with a backlog for
// the wildcard group to one of its clients.
func (d *Dispatcher) fullDispatchWildcard(k fullKey) {
	if d.opts.LMQsOf == nil {
		return
	}
	clients := d.opts.Registry.WildcardClients(k.parent, k.client.Group)
	if len(clients) == 0 {
		return
	}
	for _, lmq := range d.opts.LMQsOf(k.parent) {
		if d.hasBacklog(k.client.Group, lmq) {
			if !d.selectAndDispatch(k.client.Group, k.parent, clients, lmq, registry.ClientKey{}) {
				return // rescheduled by selectAndDispatch
			}
		}
	}
}

// Start runs the scan loop every CheckInterval.
func (d *Dispatcher) Start() {
	d.scanner.Start(d.loop)
}

func (d *Dispatcher) loop(stop <-chan struct{}) {
	for {
		interval := d.cfg().CheckInterval
		if interval <= 0 {
			interval = DefaultConfig().CheckInterval
		}
		// Full dispatches are due at arbitrary times: wake for the next one
		// if it comes before the next scan.
		wait := interval
		d.fullMu.Lock()
		if len(d.queue) > 0 {
			wait = min(wait, max(time.Duration(d.queue[0].due-d.now())*time.Millisecond, minDelay))
		}
		d.fullMu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return
		case <-d.kick:
			t.Stop()
			d.runDue()
			continue
		case <-t.C:
		}
		d.Scan()
	}
}

// Close stops the loop.
func (d *Dispatcher) Close() {
	d.scanner.Stop()
}
