package registry

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/lite/meta"
)

type recorder struct {
	mu       sync.Mutex
	events   []string
	notified []string
	resets   []string
}

func (r *recorder) OnRegister(k ClientKey, lmq string) { r.add("reg %s %s", k.ClientID, lmq) }
func (r *recorder) OnUnregister(k ClientKey, lmq string) {
	r.add("unreg %s %s", k.ClientID, lmq)
}
func (r *recorder) OnRemoveAll(k ClientKey) { r.add("all %s", k.ClientID) }

func (r *recorder) add(f string, a ...any) {
	r.mu.Lock()
	r.events = append(r.events, fmt.Sprintf(f, a...))
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	sort.Strings(out)
	return out
}

type rig struct {
	r      *Registry
	rec    *recorder
	groups map[string]meta.Group
	max    int64
	cur    map[string]int64
	now    time.Time
	ttl    time.Duration   // tombstone TTL, read live
	remote map[string]bool // lmqs whose home is another broker (inactive here)
}

func newRig(t *testing.T) *rig {
	t.Helper()
	g := &rig{
		rec: &recorder{},
		groups: map[string]meta.Group{
			"g":  {Name: "g", BindTopic: "P", ClientQuota: 3},
			"ex": {Name: "ex", BindTopic: "P", Exclusive: true, ResetOnEvict: true, ResetOnUnsubscribe: true},
			"wc": {Name: "wc", BindTopic: "P", Wildcard: true},
		},
		cur:    map[string]int64{},
		now:    time.Unix(1000, 0),
		ttl:    time.Minute,
		remote: map[string]bool{},
	}
	var err error
	g.r, err = New(Options{
		Group:            func(n string) (meta.Group, bool) { x, ok := g.groups[n]; return x, ok },
		MaxSubscriptions: func() int64 { return g.max },
		ResetOffset: func(group, lmq string, off int64) {
			g.rec.mu.Lock()
			g.rec.resets = append(g.rec.resets, fmt.Sprintf("%s %s %d", group, lmq, off))
			g.rec.mu.Unlock()
		},
		CommittedOffset: func(group, lmq string) int64 {
			if v, ok := g.cur[group+lmq]; ok {
				return v
			}
			return -1
		},
		MaxOffset: func(string) int64 { return 50 },
		NotifyUnsubscribe: func(k ClientKey, lite string) {
			g.rec.mu.Lock()
			g.rec.notified = append(g.rec.notified, k.ClientID+" "+lite)
			g.rec.mu.Unlock()
		},
		Active:       func(_, l string) bool { return !g.remote[l] },
		TombstoneTTL: func() time.Duration { return g.ttl },
		Now:          func() time.Time { return g.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	g.r.AddListener(g.rec)
	return g
}

func lmq(l string) string { return "%LMQ%$P$" + l }

func TestPartialAddRemoveAndQuota(t *testing.T) {
	g := newRig(t)
	c1 := ClientKey{"c1", "g"}
	if err := g.r.AddPartial(c1, "P", []string{lmq("a"), lmq("b")}, nil); err != nil {
		t.Fatal(err)
	}
	if got := g.rec.take(); !slices.Equal(got, []string{"reg c1 %LMQ%$P$a", "reg c1 %LMQ%$P$b"}) {
		t.Fatalf("events %v", got)
	}
	// Client quota 3: two more would make 4.
	if err := g.r.AddPartial(c1, "P", []string{lmq("c"), lmq("d")}, nil); !errors.Is(err, ErrQuota) {
		t.Fatalf("client quota: %v", err)
	}
	// Re-adding a held name costs nothing.
	if err := g.r.AddPartial(c1, "P", []string{lmq("a"), lmq("c")}, nil); err != nil {
		t.Fatal(err)
	}
	if g.r.Active() != 3 || !g.r.Subscribed(c1, lmq("c")) {
		t.Fatalf("active %d", g.r.Active())
	}
	// Broker-wide cap.
	g.max = 3
	if err := g.r.AddPartial(ClientKey{"c2", "g"}, "P", []string{lmq("z")}, nil); !errors.Is(err, ErrQuota) {
		t.Fatalf("broker quota: %v", err)
	}
	g.max = 0
	g.rec.take()
	g.r.RemovePartial(c1, []string{lmq("a"), lmq("nope")})
	if got := g.rec.take(); !slices.Equal(got, []string{"unreg c1 %LMQ%$P$a"}) {
		t.Fatalf("events %v", got)
	}
	if g.r.HasSubscribers(lmq("a")) || !g.r.HasSubscribers(lmq("b")) {
		t.Fatal("reverse index")
	}
	subs := g.r.Subscribers(lmq("b"), "P", "")
	if len(subs["g"]) != 1 || subs["g"][0] != c1 {
		t.Fatalf("subscribers %v", subs)
	}
}

func TestOffsetOptions(t *testing.T) {
	g := newRig(t)
	g.cur["g"+lmq("t")] = 20
	for _, tc := range []struct {
		opt  OffsetOption
		want string // "" = no reset
	}{
		{OffsetOption{OptionPolicy, PolicyLast}, ""},
		{OffsetOption{OptionPolicy, PolicyMin}, "g %LMQ%$P$t 0"},
		{OffsetOption{OptionPolicy, PolicyMax}, "g %LMQ%$P$t 50"},
		{OffsetOption{OptionOffset, 7}, "g %LMQ%$P$t 7"},
		{OffsetOption{OptionOffset, 20}, ""}, // equals the current offset
		{OffsetOption{OptionTailN, 5}, "g %LMQ%$P$t 15"},
		{OffsetOption{OptionTailN, 500}, "g %LMQ%$P$t 0"},
		{OffsetOption{OptionTimestamp, 123}, ""},
	} {
		g.rec.resets = nil
		opt := tc.opt
		if err := g.r.AddPartial(ClientKey{"c", "g"}, "P", []string{lmq("t")}, &opt); err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(g.rec.resets) > 0 {
			got = g.rec.resets[0]
		}
		if got != tc.want {
			t.Errorf("%+v: reset %q, want %q", tc.opt, got, tc.want)
		}
	}
	// TAIL_N without a committed offset: nothing.
	g.rec.resets = nil
	opt := OffsetOption{OptionTailN, 3}
	_ = g.r.AddPartial(ClientKey{"c", "g"}, "P", []string{lmq("fresh")}, &opt)
	if len(g.rec.resets) != 0 {
		t.Fatalf("tail-N without offset reset %v", g.rec.resets)
	}
}

func TestCompleteAdd(t *testing.T) {
	g := newRig(t)
	c := ClientKey{"c", "g"}
	_ = g.r.AddPartial(c, "P", []string{lmq("a"), lmq("b")}, nil)
	g.rec.take()
	if err := g.r.AddComplete(c, "P", []string{lmq("b"), lmq("c")}); err != nil {
		t.Fatal(err)
	}
	if got := g.rec.take(); !slices.Equal(got, []string{"reg c %LMQ%$P$c", "unreg c %LMQ%$P$a"}) {
		t.Fatalf("events %v", got)
	}
	if err := g.r.AddComplete(c, "P", []string{lmq("1"), lmq("2"), lmq("3"), lmq("4")}); !errors.Is(err, ErrQuota) {
		t.Fatalf("over client quota: %v", err)
	}
	g.r.RemoveComplete(c)
	if got := g.rec.take(); len(got) != 3 || got[0] != "all c" {
		t.Fatalf("remove complete events %v", got)
	}
	if g.r.Active() != 0 {
		t.Fatalf("active %d", g.r.Active())
	}
}

func TestExclusiveEvictionAndTombstone(t *testing.T) {
	g := newRig(t)
	a, b := ClientKey{"A", "ex"}, ClientKey{"B", "ex"}
	_ = g.r.AddPartial(a, "P", []string{lmq("x")}, nil)
	if err := g.r.AddPartial(b, "P", []string{lmq("x")}, nil); err != nil {
		t.Fatal(err)
	}
	if g.r.Subscribed(a, lmq("x")) || !g.r.Subscribed(b, lmq("x")) {
		t.Fatal("exclusive: A must be evicted")
	}
	if !slices.Equal(g.rec.notified, []string{"A x"}) || !slices.Equal(g.rec.resets, []string{"ex %LMQ%$P$x 0"}) {
		t.Fatalf("notified %v resets %v", g.rec.notified, g.rec.resets)
	}
	if !g.r.Tombstoned(a, lmq("x")) {
		t.Fatal("no tombstone")
	}
	// A's stale full sync does not take it back; A is told again.
	if err := g.r.AddComplete(a, "P", []string{lmq("x"), lmq("y")}); err != nil {
		t.Fatal(err)
	}
	if g.r.Subscribed(a, lmq("x")) || !g.r.Subscribed(a, lmq("y")) || !g.r.Subscribed(b, lmq("x")) {
		t.Fatal("stale full sync re-acquired the topic")
	}
	if len(g.rec.notified) != 2 {
		t.Fatalf("notified %v", g.rec.notified)
	}
	// An explicit subscribe takes it back (and evicts B).
	if err := g.r.AddPartial(a, "P", []string{lmq("x")}, nil); err != nil {
		t.Fatal(err)
	}
	if !g.r.Subscribed(a, lmq("x")) || g.r.Subscribed(b, lmq("x")) || g.r.Tombstoned(a, lmq("x")) || !g.r.Tombstoned(b, lmq("x")) {
		t.Fatal("explicit re-subscribe")
	}
	// Tombstones expire.
	g.now = g.now.Add(2 * time.Minute)
	_ = g.r.AddComplete(a, "P", []string{lmq("x")}) // keep A fresh
	_ = g.r.AddComplete(b, "P", nil)
	g.r.Expire(time.Minute)
	if g.r.Tombstoned(b, lmq("x")) {
		t.Fatal("tombstone survived its TTL")
	}
	// Unsubscribe with reset.
	g.rec.resets = nil
	g.r.RemovePartial(a, []string{lmq("x")})
	if !slices.Equal(g.rec.resets, []string{"ex %LMQ%$P$x 0"}) {
		t.Fatalf("unsubscribe reset %v", g.rec.resets)
	}
}

func TestWildcardAndCleanup(t *testing.T) {
	g := newRig(t)
	w := ClientKey{"w", "wc"}
	if err := g.r.AddPartial(w, "P", []string{lmq("a")}, nil); !errors.Is(err, ErrIllegalState) {
		t.Fatalf("partial add on wildcard: %v", err)
	}
	if err := g.r.AddComplete(w, "P", nil); err != nil {
		t.Fatal(err)
	}
	if got := g.rec.take(); !slices.Equal(got, []string{"reg w P@wc"}) {
		t.Fatalf("events %v", got)
	}
	if !g.r.HasWildcard("P") || len(g.r.Subscribers(lmq("any"), "P", "")["wc"]) != 1 {
		t.Fatal("wildcard subscribers")
	}
	g.r.RemoveComplete(w)
	if g.r.HasWildcard("P") {
		t.Fatal("stale wildcard entry (#10254)")
	}

	c := ClientKey{"c", "g"}
	_ = g.r.AddPartial(c, "P", []string{lmq("a"), lmq("b")}, nil)
	g.rec.take()
	if got := g.r.CleanLMQ(lmq("a")); len(got) != 1 || got[0] != c {
		t.Fatalf("CleanLMQ = %v", got)
	}
	if g.r.Subscribed(c, lmq("a")) || len(g.rec.notified) != 0 {
		t.Fatal("CleanLMQ must remove without notifying")
	}
	// Expiry of a stale client.
	g.now = g.now.Add(10 * time.Minute)
	if got := g.r.Expire(3 * time.Minute); len(got) != 1 || got[0] != c {
		t.Fatalf("Expire = %v", got)
	}
	if g.r.Active() != 0 || len(g.r.Clients("")) != 0 {
		t.Fatal("expired client still held")
	}
}

// TestInactiveNamesCostNoQuota: names another broker is home of are
// ignored by PARTIAL_ADD and count against neither quota (they used to).
func TestInactiveNamesCostNoQuota(t *testing.T) {
	tests := []struct {
		name     string
		max      int64 // broker quota (0: none)
		held     []string
		add      []string
		wantErr  bool
		wantSubs []string
	}{
		{"client quota 3: one active of four", 0, nil, []string{"a", "r1", "r2", "r3"}, false, []string{"a"}},
		{"client quota 3: held two plus one active", 0, []string{"a", "b"}, []string{"c", "r1", "r2"}, false, []string{"a", "b", "c"}},
		{"client quota 3: held two plus two active", 0, []string{"a", "b"}, []string{"c", "d", "r1"}, true, []string{"a", "b"}},
		{"broker quota 2: one active of three", 2, []string{"a"}, []string{"b", "r1", "r2"}, false, []string{"a", "b"}},
		{"broker quota 2: two active", 2, []string{"a"}, []string{"b", "c"}, true, []string{"a"}},
		{"duplicates count once", 0, []string{"a", "b"}, []string{"c", "c", "c"}, false, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t)
			for _, r := range []string{"r1", "r2", "r3"} {
				g.remote[lmq(r)] = true
			}
			c1 := ClientKey{"c1", "g"}
			var held []string
			for _, h := range tt.held {
				held = append(held, lmq(h))
			}
			if err := g.r.AddPartial(c1, "P", held, nil); err != nil {
				t.Fatal(err)
			}
			g.max = tt.max
			var add []string
			for _, a := range tt.add {
				add = append(add, lmq(a))
			}
			err := g.r.AddPartial(c1, "P", add, nil)
			if gotErr := errors.Is(err, ErrQuota); gotErr != tt.wantErr || (err != nil && !gotErr) {
				t.Fatalf("AddPartial: %v, want quota error %v", err, tt.wantErr)
			}
			var want []string
			for _, w := range tt.wantSubs {
				want = append(want, lmq(w))
			}
			got := g.r.LMQs(c1)
			sort.Strings(got)
			if !slices.Equal(got, want) || g.r.Active() != int64(len(want)) {
				t.Fatalf("subscribed %v (active %d), want %v", got, g.r.Active(), want)
			}
		})
	}
}

// TestTombstoneTTLLive: the tombstone TTL is read at every sweep, so a
// changed liteSubscriptionCheckTimeoutMills applies without a restart.
func TestTombstoneTTLLive(t *testing.T) {
	g := newRig(t)
	g.ttl = 10 * time.Minute
	a, b := ClientKey{"A", "ex"}, ClientKey{"B", "ex"}
	_ = g.r.AddPartial(a, "P", []string{lmq("x")}, nil)
	_ = g.r.AddPartial(b, "P", []string{lmq("x")}, nil)
	if !g.r.Tombstoned(a, lmq("x")) {
		t.Fatal("no tombstone")
	}
	g.now = g.now.Add(2 * time.Minute)
	g.r.Expire(time.Hour)
	if !g.r.Tombstoned(a, lmq("x")) {
		t.Fatal("tombstone dropped before its 10 min TTL")
	}
	g.ttl = time.Minute
	g.r.Expire(time.Hour)
	if g.r.Tombstoned(a, lmq("x")) {
		t.Fatal("tombstone kept past the lowered 1 min TTL")
	}
	// Zero falls back to the default.
	g.ttl = 0
	_ = g.r.AddPartial(a, "P", []string{lmq("x")}, nil) // evicts B
	g.now = g.now.Add(2 * time.Minute)
	g.r.Expire(time.Hour)
	if !g.r.Tombstoned(b, lmq("x")) {
		t.Fatalf("tombstone dropped before the default %v", DefaultTombstoneTTL)
	}
}
