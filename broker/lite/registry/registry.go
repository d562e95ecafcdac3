// Package registry holds the lite subscriptions of a broker (docs/lite-topics.md
// §5.2–§5.5): which client of which lite group wants which lite topics
// (LMQs), the reverse index lmq → clients used by event dispatch, wildcard
// groups, exclusive-mode eviction tombstones and the quotas.
//
// A client is identified by (clientId, group): upstream keys by clientId
// alone and could mix up clients of different groups sharing an id (#11059).
// Listeners and notifications run after the registry's locks are released,
// so they may call back into it.
package registry

import (
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/internal/defaults"
	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
)

// ClientKey identifies a lite consumer.
type ClientKey struct {
	ClientID string
	Group    string
}

// Errors of the add operations.
var (
	// ErrQuota: the broker-wide or per-client subscription quota is
	// exceeded (LITE_SUBSCRIPTION_QUOTA_EXCEEDED, 2018).
	ErrQuota = errors.New("lite subscription quota exceeded")
	// ErrIllegalState: e.g. a partial add on a wildcard group
	// (ILLEGAL_OPERATION).
	ErrIllegalState = errors.New("illegal lite subscription state")
)

// OffsetOptionType is OffsetOption.Type (§5.3).
type OffsetOptionType string

// Offset option types.
const (
	OptionPolicy    OffsetOptionType = "POLICY"
	OptionOffset    OffsetOptionType = "OFFSET"
	OptionTailN     OffsetOptionType = "TAIL_N"
	OptionTimestamp OffsetOptionType = "TIMESTAMP"
)

// Policy values of OptionPolicy.
const (
	PolicyLast int64 = 0
	PolicyMin  int64 = 1
	PolicyMax  int64 = 2
)

// OffsetOption is where an added subscription starts.
type OffsetOption struct {
	Type  OffsetOptionType `json:"type"`
	Value int64            `json:"value"`
}

// Listener is told about subscription changes (the event dispatcher).
type Listener interface {
	// OnRegister: key now subscribes lmq (a wildcard client registers the
	// synthetic name WildcardKey(parent, group)).
	OnRegister(key ClientKey, lmq string)
	// OnUnregister: key no longer subscribes lmq.
	OnUnregister(key ClientKey, lmq string)
	// OnRemoveAll: key's whole subscription is gone.
	OnRemoveAll(key ClientKey)
}

// Options configure a Registry. Group is required.
type Options struct {
	// Group returns a group's lite settings.
	Group func(group string) (meta.Group, bool)
	// MaxSubscriptions is the broker-wide cap on (client, lmq) pairs
	// (maxLiteSubscriptionCount); ≤ 0: unlimited.
	MaxSubscriptions func() int64
	// Active reports whether a subscription to lmq takes effect on this
	// broker (§4.6 isSubscriptionActive); nil: always.
	Active func(parent, lmq string) bool
	// ResetOffset registers a pending reset of (group, lmq) to offset and
	// clears its order state (§5.3); nil: ignored.
	ResetOffset func(group, lmq string, offset int64)
	// CommittedOffset is the group's committed offset of lmq (-1: none).
	CommittedOffset func(group, lmq string) int64
	// MaxOffset is the lmq's max offset.
	MaxOffset func(lmq string) int64
	// NotifyUnsubscribe tells an evicted client to drop lite (§5.5).
	NotifyUnsubscribe func(key ClientKey, lite string)
	// TombstoneTTL is how long an exclusive eviction keeps the client from
	// taking the topic back, read at every expiry sweep (the broker passes
	// liteSubscriptionCheckTimeoutMills, hot-reloadable); nil or ≤ 0: 3 min.
	TombstoneTTL func() time.Duration
	Now          func() time.Time
}

// subscription is one client's lite subscription.
type subscription struct {
	parent     string
	lmqs       map[string]struct{}
	updateTime int64
	wildcard   bool
}

const shardCount = 64

type shard struct {
	mu sync.RWMutex
	m  map[string]map[ClientKey]struct{}
}

// Registry is safe for concurrent use.
type Registry struct {
	opts      Options
	listeners []Listener

	// mu serialises changes and guards clients, wildcard, tombstones;
	// lookups of the reverse index take only their shard's lock.
	mu      sync.Mutex
	clients map[ClientKey]*subscription
	// wildcard (parent → group → clients) is changed under mu and wmu and
	// read under wmu alone (every dispatch reads it).
	wmu        sync.RWMutex
	wildcard   map[string]map[string]map[ClientKey]struct{}
	tombstones map[ClientKey]map[string]int64 // client → lmq → eviction time (ms)
	active     int64

	seed   maphash.Seed
	shards [shardCount]shard
}

// New returns an empty registry.
func New(opts Options) (*Registry, error) {
	if opts.Group == nil {
		return nil, errors.New("registry: Options.Group is required")
	}
	defaults.Clock(&opts.Now)
	r := &Registry{
		opts:       opts,
		clients:    map[ClientKey]*subscription{},
		wildcard:   map[string]map[string]map[ClientKey]struct{}{},
		tombstones: map[ClientKey]map[string]int64{},
		seed:       maphash.MakeSeed(),
	}
	for i := range r.shards {
		r.shards[i].m = map[string]map[ClientKey]struct{}{}
	}
	return r, nil
}

// AddListener registers l; call before use.
func (r *Registry) AddListener(l Listener) { r.listeners = append(r.listeners, l) }

// WildcardKey is the synthetic subscription name of a wildcard client.
func WildcardKey(parent, group string) string { return parent + "@" + group }

func (r *Registry) shard(lmq string) *shard {
	return &r.shards[maphash.String(r.seed, lmq)%shardCount]
}

func (r *Registry) now() int64 { return r.opts.Now().UnixMilli() }

// pending collects what to do once the lock is released.
type pending struct {
	registered   []pair
	unregistered []pair
	removedAll   []ClientKey
	notify       []pair // lmq names; converted to lite names when sent
	resets       []reset
}

type pair struct {
	key ClientKey
	lmq string
}

type reset struct {
	group, lmq string
	offset     int64
}

func (r *Registry) fire(p *pending) {
	for _, rs := range p.resets {
		if r.opts.ResetOffset != nil {
			r.opts.ResetOffset(rs.group, rs.lmq, rs.offset)
		}
	}
	for _, l := range r.listeners {
		for _, x := range p.unregistered {
			l.OnUnregister(x.key, x.lmq)
		}
		for _, k := range p.removedAll {
			l.OnRemoveAll(k)
		}
		for _, x := range p.registered {
			l.OnRegister(x.key, x.lmq)
		}
	}
	if r.opts.NotifyUnsubscribe != nil {
		for _, x := range p.notify {
			if lite := naming.LiteOf(x.lmq); lite != "" {
				r.opts.NotifyUnsubscribe(x.key, lite)
			}
		}
	}
}

func (r *Registry) maxSubs() int64 {
	if r.opts.MaxSubscriptions == nil {
		return 0
	}
	return r.opts.MaxSubscriptions()
}

func (r *Registry) isActive(parent, lmq string) bool {
	return r.opts.Active == nil || r.opts.Active(parent, lmq)
}

// activeOf returns the distinct names of lmqs whose subscription takes
// effect here (§4.6), in order. It runs before the registry's lock is
// taken: Active may consult the parent's route.
func (r *Registry) activeOf(parent string, lmqs []string) []string {
	out := make([]string, 0, len(lmqs))
	seen := make(map[string]struct{}, len(lmqs))
	for _, l := range lmqs {
		if _, dup := seen[l]; dup {
			continue
		}
		seen[l] = struct{}{}
		if r.isActive(parent, l) {
			out = append(out, l)
		}
	}
	return out
}

// DefaultTombstoneTTL applies when Options.TombstoneTTL gives none.
const DefaultTombstoneTTL = 3 * time.Minute

func (r *Registry) tombstoneTTL() time.Duration {
	if r.opts.TombstoneTTL == nil {
		return DefaultTombstoneTTL
	}
	return defaults.Or(r.opts.TombstoneTTL(), DefaultTombstoneTTL)
}

// AddPartial adds lmqs to key's subscription of parent (PARTIAL_ADD) and
// applies opt (nil: none) to each added lmq. Names whose subscription does
// not take effect here (another broker's lite topics, §4.6) are ignored and
// count against no quota.
func (r *Registry) AddPartial(key ClientKey, parent string, lmqs []string, opt *OffsetOption) error {
	g, _ := r.opts.Group(key.Group)
	if g.Wildcard {
		return fmt.Errorf("%w: partial add on wildcard group %s", ErrIllegalState, key.Group)
	}
	lmqs = r.activeOf(parent, lmqs)
	var p pending
	r.mu.Lock()
	sub := r.clients[key]
	add := 0
	for _, l := range lmqs {
		if sub == nil {
			add++
		} else if _, ok := sub.lmqs[l]; !ok {
			add++
		}
	}
	if max := r.maxSubs(); max > 0 && add > 0 && r.active+int64(add) > max {
		r.mu.Unlock()
		return fmt.Errorf("%w: %d active lite subscriptions on this broker, %d more asked (maxLiteSubscriptionCount %d)", ErrQuota, r.active, add, max)
	}
	if g.ClientQuota > 0 {
		have := 0
		if sub != nil {
			have = len(sub.lmqs)
		}
		if int64(have+add) > g.ClientQuota {
			r.mu.Unlock()
			return fmt.Errorf("%w: client %s of group %s would hold %d lite topics (lite.sub.client.quota %d)", ErrQuota, key.ClientID, key.Group, have+add, g.ClientQuota)
		}
	}
	sub = r.subLocked(key, parent)
	for _, l := range lmqs {
		r.addLocked(key, sub, g, l, &p)
		if opt != nil {
			if rs, ok := r.resetFor(key.Group, l, *opt); ok {
				p.resets = append(p.resets, rs)
			}
		}
	}
	sub.updateTime = r.now()
	r.mu.Unlock()
	r.fire(&p)
	return nil
}

// subLocked returns key's subscription, creating it (or moving it to a new
// parent, dropping the old names) as needed.
func (r *Registry) subLocked(key ClientKey, parent string) *subscription {
	sub := r.clients[key]
	if sub == nil {
		sub = &subscription{parent: parent, lmqs: map[string]struct{}{}}
		r.clients[key] = sub
	}
	return sub
}

// addLocked adds lmq to sub (exclusive handling included).
func (r *Registry) addLocked(key ClientKey, sub *subscription, g meta.Group, lmq string, p *pending) {
	if ts := r.tombstones[key]; ts != nil {
		// The client asked for it explicitly: it may take it back.
		delete(ts, lmq)
		if len(ts) == 0 {
			delete(r.tombstones, key)
		}
	}
	if g.Exclusive {
		r.evictOthersLocked(key, g, lmq, p)
	}
	if _, ok := sub.lmqs[lmq]; ok {
		return
	}
	sub.lmqs[lmq] = struct{}{}
	sh := r.shard(lmq)
	sh.mu.Lock()
	set := sh.m[lmq]
	if set == nil {
		set = map[ClientKey]struct{}{}
		sh.m[lmq] = set
	}
	set[key] = struct{}{}
	sh.mu.Unlock()
	r.active++
	p.registered = append(p.registered, pair{key, lmq})
}

// evictOthersLocked removes lmq from every other client of key's group
// (exclusive mode, §5.4).
func (r *Registry) evictOthersLocked(key ClientKey, g meta.Group, lmq string, p *pending) {
	var victims []ClientKey
	sh := r.shard(lmq)
	sh.mu.RLock()
	for other := range sh.m[lmq] {
		if other != key && other.Group == key.Group {
			victims = append(victims, other)
		}
	}
	sh.mu.RUnlock()
	now := r.now()
	for _, v := range victims {
		r.removeLocked(v, lmq, p)
		ts := r.tombstones[v]
		if ts == nil {
			ts = map[string]int64{}
			r.tombstones[v] = ts
		}
		ts[lmq] = now
		p.notify = append(p.notify, pair{v, lmq})
		if g.ResetOnEvict {
			p.resets = append(p.resets, reset{key.Group, lmq, 0})
		}
	}
}

// removeLocked drops lmq from key's subscription.
func (r *Registry) removeLocked(key ClientKey, lmq string, p *pending) bool {
	sub := r.clients[key]
	if sub == nil {
		return false
	}
	if _, ok := sub.lmqs[lmq]; !ok {
		return false
	}
	delete(sub.lmqs, lmq)
	sh := r.shard(lmq)
	sh.mu.Lock()
	if set := sh.m[lmq]; set != nil {
		delete(set, key)
		if len(set) == 0 {
			delete(sh.m, lmq)
		}
	}
	sh.mu.Unlock()
	r.active--
	p.unregistered = append(p.unregistered, pair{key, lmq})
	return true
}

// resetFor computes the pending reset an offset option asks for (§5.3).
func (r *Registry) resetFor(group, lmq string, opt OffsetOption) (reset, bool) {
	cur := int64(-1)
	if r.opts.CommittedOffset != nil {
		cur = r.opts.CommittedOffset(group, lmq)
	}
	target := int64(-1)
	switch opt.Type {
	case OptionPolicy:
		switch opt.Value {
		case PolicyMin:
			target = 0
		case PolicyMax:
			if r.opts.MaxOffset != nil {
				target = r.opts.MaxOffset(lmq)
			}
		}
	case OptionOffset:
		target = opt.Value
	case OptionTailN:
		if cur >= 0 {
			target = max(0, cur-opt.Value)
		}
	}
	// A reset to 0 counts (#10550); "no change" and TIMESTAMP do not.
	if target < 0 || target == cur {
		return reset{}, false
	}
	return reset{group, lmq, target}, true
}

// RemovePartial drops lmqs from key's subscription (PARTIAL_REMOVE).
func (r *Registry) RemovePartial(key ClientKey, lmqs []string) {
	g, _ := r.opts.Group(key.Group)
	var p pending
	r.mu.Lock()
	for _, l := range lmqs {
		if r.removeLocked(key, l, &p) && g.ResetOnUnsubscribe {
			p.resets = append(p.resets, reset{key.Group, l, 0})
		}
	}
	if sub := r.clients[key]; sub != nil {
		sub.updateTime = r.now()
	}
	r.mu.Unlock()
	r.fire(&p)
}

// AddComplete replaces key's subscription with lmqs (COMPLETE_ADD, the
// client's periodic full sync). A wildcard group's client registers for
// the whole parent instead. Names tombstoned for key (evicted in exclusive
// mode) are not re-added; the client is told again to drop them.
func (r *Registry) AddComplete(key ClientKey, parent string, lmqs []string) error {
	g, _ := r.opts.Group(key.Group)
	var active []string
	if !g.Wildcard {
		active = r.activeOf(parent, lmqs)
	}
	var p pending
	r.mu.Lock()
	if g.Wildcard {
		r.addWildcardLocked(key, parent, &p)
		r.mu.Unlock()
		r.fire(&p)
		return nil
	}
	if g.ClientQuota > 0 && int64(len(lmqs)) > g.ClientQuota {
		r.mu.Unlock()
		return fmt.Errorf("%w: client %s of group %s lists %d lite topics (lite.sub.client.quota %d)", ErrQuota, key.ClientID, key.Group, len(lmqs), g.ClientQuota)
	}
	want := make(map[string]struct{}, len(active))
	for _, l := range active {
		want[l] = struct{}{}
	}
	ts := r.tombstones[key]
	for l := range ts {
		if _, ok := want[l]; !ok {
			delete(ts, l) // the client dropped it: forget the eviction
		}
	}
	sub := r.subLocked(key, parent)
	if sub.parent != parent {
		for l := range sub.lmqs {
			r.removeLocked(key, l, &p)
		}
		sub.parent = parent
	}
	for l := range sub.lmqs {
		if _, ok := want[l]; !ok {
			r.removeLocked(key, l, &p)
		}
	}
	added := 0
	for l := range want {
		if _, evicted := ts[l]; evicted {
			p.notify = append(p.notify, pair{key, l})
			continue
		}
		if _, ok := sub.lmqs[l]; !ok {
			added++
		}
	}
	if max := r.maxSubs(); max > 0 && added > 0 && r.active+int64(added) > max {
		sub.updateTime = r.now()
		r.mu.Unlock()
		r.fire(&p)
		return fmt.Errorf("%w: %d active lite subscriptions on this broker (maxLiteSubscriptionCount %d)", ErrQuota, r.active, max)
	}
	for l := range want {
		if _, evicted := ts[l]; evicted {
			continue
		}
		if _, ok := sub.lmqs[l]; !ok {
			r.addLocked(key, sub, g, l, &p)
		}
	}
	if len(ts) == 0 {
		delete(r.tombstones, key)
	}
	sub.updateTime = r.now()
	r.mu.Unlock()
	r.fire(&p)
	return nil
}

func (r *Registry) addWildcardLocked(key ClientKey, parent string, p *pending) {
	sub := r.clients[key]
	if sub == nil || !sub.wildcard {
		if sub != nil {
			for l := range sub.lmqs {
				r.removeLocked(key, l, p)
			}
		}
		sub = &subscription{parent: parent, lmqs: map[string]struct{}{}, wildcard: true}
		r.clients[key] = sub
		p.registered = append(p.registered, pair{key, WildcardKey(parent, key.Group)})
	}
	sub.updateTime = r.now()
	r.wmu.Lock()
	defer r.wmu.Unlock()
	gm := r.wildcard[parent]
	if gm == nil {
		gm = map[string]map[ClientKey]struct{}{}
		r.wildcard[parent] = gm
	}
	cs := gm[key.Group]
	if cs == nil {
		cs = map[ClientKey]struct{}{}
		gm[key.Group] = cs
	}
	cs[key] = struct{}{}
}

// RemoveComplete drops key's whole subscription, tombstones included
// (COMPLETE_REMOVE, expiry).
func (r *Registry) RemoveComplete(key ClientKey) {
	var p pending
	r.mu.Lock()
	r.removeAllLocked(key, &p)
	r.mu.Unlock()
	r.fire(&p)
}

func (r *Registry) removeAllLocked(key ClientKey, p *pending) {
	sub := r.clients[key]
	delete(r.tombstones, key)
	if sub == nil {
		return
	}
	for l := range sub.lmqs {
		r.removeLocked(key, l, p)
	}
	if sub.wildcard {
		// #10254: leave no stale entry behind.
		r.wmu.Lock()
		if gm := r.wildcard[sub.parent]; gm != nil {
			if cs := gm[key.Group]; cs != nil {
				delete(cs, key)
				if len(cs) == 0 {
					delete(gm, key.Group)
				}
			}
			if len(gm) == 0 {
				delete(r.wildcard, sub.parent)
			}
		}
		r.wmu.Unlock()
	}
	delete(r.clients, key)
	p.removedAll = append(p.removedAll, key)
}

// CleanLMQ removes lmq from every subscription (the lmq was deleted); the
// clients are not notified (§4.5 step 3). It returns the clients it held.
func (r *Registry) CleanLMQ(lmq string) []ClientKey {
	var keys []ClientKey
	r.cleanLMQs([]string{lmq}, func(k ClientKey) { keys = append(keys, k) })
	return keys
}

// CleanLMQs is CleanLMQ for many names (a sweep's batch), under one lock
// for the ones subscribed; it returns the number of subscriptions removed.
func (r *Registry) CleanLMQs(lmqs []string) int {
	n := 0
	r.cleanLMQs(lmqs, func(ClientKey) { n++ })
	return n
}

func (r *Registry) cleanLMQs(lmqs []string, removed func(ClientKey)) {
	// Most deleted LMQs have no subscriber: a read-locked look per name.
	var held []string
	for _, lmq := range lmqs {
		sh := r.shard(lmq)
		sh.mu.RLock()
		n := len(sh.m[lmq])
		sh.mu.RUnlock()
		if n > 0 {
			held = append(held, lmq)
		}
	}
	// The rest under the registry's lock, a slice at a time: subscribe
	// requests get in between.
	const slice = 4096
	var keys []ClientKey
	for len(held) > 0 {
		part := held[:min(slice, len(held))]
		held = held[len(part):]
		var p pending
		r.mu.Lock()
		for _, lmq := range part {
			sh := r.shard(lmq)
			keys = keys[:0]
			sh.mu.RLock()
			for k := range sh.m[lmq] {
				keys = append(keys, k)
			}
			sh.mu.RUnlock()
			for _, k := range keys {
				if r.removeLocked(k, lmq, &p) {
					removed(k)
				}
			}
			for k, ts := range r.tombstones {
				delete(ts, lmq)
				if len(ts) == 0 {
					delete(r.tombstones, k)
				}
			}
		}
		r.mu.Unlock()
		r.fire(&p)
	}
}

// LMQCount is the number of lmqs with at least one subscriber: what
// EachLMQ walks.
func (r *Registry) LMQCount() int {
	n := 0
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// EachLMQ calls f with every lmq that has a subscriber, one shard at a
// time, calling yield (if not nil) after each. f must not call back into r.
func (r *Registry) EachLMQ(f func(lmq string), yield func()) {
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for l := range sh.m {
			f(l)
		}
		sh.mu.RUnlock()
		if yield != nil {
			yield()
		}
	}
}

// Expire drops every client not refreshed within timeout and every
// tombstone older than the tombstone TTL; it returns the clients dropped.
func (r *Registry) Expire(timeout time.Duration) []ClientKey {
	now := r.now()
	var p pending
	var out []ClientKey
	r.mu.Lock()
	for k, sub := range r.clients {
		if now-sub.updateTime > timeout.Milliseconds() {
			out = append(out, k)
		}
	}
	for _, k := range out {
		r.removeAllLocked(k, &p)
	}
	ttl := r.tombstoneTTL().Milliseconds()
	for k, ts := range r.tombstones {
		for l, at := range ts {
			if now-at > ttl {
				delete(ts, l)
			}
		}
		if len(ts) == 0 {
			delete(r.tombstones, k)
		}
	}
	r.mu.Unlock()
	r.fire(&p)
	return out
}

// Subscribers returns, per group, the clients subscribed to lmq (restricted
// to group unless it is ""), plus the wildcard clients of parent.
func (r *Registry) Subscribers(lmq, parent, group string) map[string][]ClientKey {
	out := map[string][]ClientKey{}
	sh := r.shard(lmq)
	sh.mu.RLock()
	for k := range sh.m[lmq] {
		if group == "" || k.Group == group {
			out[k.Group] = append(out[k.Group], k)
		}
	}
	sh.mu.RUnlock()
	if parent != "" {
		r.wmu.RLock()
		for g, cs := range r.wildcard[parent] {
			if group != "" && g != group {
				continue
			}
			for k := range cs {
				out[g] = append(out[g], k)
			}
		}
		r.wmu.RUnlock()
	}
	return out
}

// HasSubscribers reports whether anyone subscribes lmq directly (cheap;
// the dispatch hot path checks it first).
func (r *Registry) HasSubscribers(lmq string) bool {
	sh := r.shard(lmq)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return len(sh.m[lmq]) > 0
}

// HasWildcard reports whether parent has wildcard clients.
func (r *Registry) HasWildcard(parent string) bool {
	r.wmu.RLock()
	defer r.wmu.RUnlock()
	return len(r.wildcard[parent]) > 0
}

// WildcardClients returns the clients of a wildcard group of parent.
func (r *Registry) WildcardClients(parent, group string) []ClientKey {
	r.wmu.RLock()
	defer r.wmu.RUnlock()
	var out []ClientKey
	for k := range r.wildcard[parent][group] {
		out = append(out, k)
	}
	return out
}

// Client describes one client's subscription.
type Client struct {
	Key        ClientKey
	Parent     string
	LMQs       []string // at most the requested number
	Count      int
	UpdateTime int64
	Wildcard   bool
}

// Get returns key's subscription with at most maxLMQs names (< 0: all).
func (r *Registry) Get(key ClientKey, maxLMQs int) (Client, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sub := r.clients[key]
	if sub == nil {
		return Client{}, false
	}
	c := Client{Key: key, Parent: sub.parent, Count: len(sub.lmqs), UpdateTime: sub.updateTime, Wildcard: sub.wildcard}
	for l := range sub.lmqs {
		if maxLMQs >= 0 && len(c.LMQs) >= maxLMQs {
			break
		}
		c.LMQs = append(c.LMQs, l)
	}
	return c, true
}

// LMQs returns key's subscribed lmqs.
func (r *Registry) LMQs(key ClientKey) []string {
	c, _ := r.Get(key, -1)
	return c.LMQs
}

// Clients returns the clients of group ("" = all).
func (r *Registry) Clients(group string) []ClientKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ClientKey
	for k := range r.clients {
		if group == "" || k.Group == group {
			out = append(out, k)
		}
	}
	return out
}

// Subscribed reports whether key currently subscribes lmq.
func (r *Registry) Subscribed(key ClientKey, lmq string) bool {
	sh := r.shard(lmq)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	_, ok := sh.m[lmq][key]
	return ok
}

// Tombstoned reports whether key was evicted from lmq (pop skips it).
func (r *Registry) Tombstoned(key ClientKey, lmq string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.tombstones[key][lmq]
	return ok
}

// Active is the number of (client, lmq) subscriptions.
func (r *Registry) Active() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active
}
