package dispatcher

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/registry"
)

func TestEventSet(t *testing.T) {
	e := newEventSet(0)
	for _, l := range []string{"a", "b", "a", "c"} {
		if !e.offer(l, 3) {
			t.Fatalf("offer %s refused", l)
		}
	}
	if e.size() != 3 || e.offer("d", 3) {
		t.Fatalf("size %d; offer beyond cap must fail", e.size())
	}
	for _, want := range []string{"a", "b"} {
		if got, ok := e.poll(); !ok || got != want {
			t.Fatalf("poll = %q %v, want %q", got, ok, want)
		}
	}
	if !e.offer("a", 3) { // polled: may come back
		t.Fatal("re-offer after poll")
	}
	if got := e.drain(); len(got) != 2 || got[0] != "c" || got[1] != "a" {
		t.Fatalf("drain %v", got)
	}
	if _, ok := e.poll(); ok || e.size() != 0 {
		t.Fatal("not empty after drain")
	}
	// The hard cap wins over a larger soft cap.
	big := newEventSet(0)
	for i := 0; i < HardEventCap; i++ {
		big.in[strconv.Itoa(i)] = struct{}{}
	}
	if big.offer("x", HardEventCap*2) {
		t.Fatal("hard cap ignored")
	}
}

type rig struct {
	d       *Dispatcher
	reg     *registry.Registry
	mu      sync.Mutex
	woken   map[registry.ClientKey]int
	now     time.Time
	max     map[string]int64
	cur     map[string]int64
	cfg     Config
	groups  map[string]meta.Group
	lmqsOf  map[string][]string
	randIdx int
}

func newRig(t *testing.T) *rig {
	t.Helper()
	g := &rig{
		woken: map[registry.ClientKey]int{}, now: time.Unix(10_000, 0),
		max: map[string]int64{}, cur: map[string]int64{}, cfg: DefaultConfig(),
		groups: map[string]meta.Group{
			"g":  {Name: "g", BindTopic: "P", MaxEventCount: -1},
			"h":  {Name: "h", BindTopic: "P", MaxEventCount: -1},
			"wc": {Name: "wc", BindTopic: "P", Wildcard: true, MaxEventCount: -1},
		},
		lmqsOf: map[string][]string{},
	}
	g.cfg.MaxClientEventCount = 2
	groupOf := func(n string) (meta.Group, bool) { x, ok := g.groups[n]; return x, ok }
	var err error
	g.reg, err = registry.New(registry.Options{Group: groupOf, Now: g.clock})
	if err != nil {
		t.Fatal(err)
	}
	g.d, err = New(Options{
		Registry:  g.reg,
		Group:     groupOf,
		MaxOffset: func(l string) int64 { return g.max[l] },
		Committed: func(gr, l string) int64 {
			if v, ok := g.cur[gr+l]; ok {
				return v
			}
			return -1
		},
		LMQsOf: func(p string) []string { return g.lmqsOf[p] },
		Config: func() Config { return g.cfg },
		Now:    g.clock,
		IntN:   func(int) int { return g.randIdx },
	})
	if err != nil {
		t.Fatal(err)
	}
	g.d.SetWaker(func(k registry.ClientKey) {
		g.mu.Lock()
		g.woken[k]++
		g.mu.Unlock()
	})
	return g
}

func (g *rig) clock() time.Time { return g.now }

func (g *rig) wokenCount(k registry.ClientKey) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.woken[k]
}

func lmq(l string) string { return "%LMQ%$P$" + l }

func (g *rig) drain(k registry.ClientKey) []string {
	var out []string
	for {
		l, ok := g.d.Poll(k)
		if !ok {
			return out
		}
		out = append(out, l)
	}
}

func TestDispatchOnePerGroup(t *testing.T) {
	g := newRig(t)
	a, b, h := registry.ClientKey{ClientID: "a", Group: "g"}, registry.ClientKey{ClientID: "b", Group: "g"}, registry.ClientKey{ClientID: "h1", Group: "h"}
	for _, k := range []registry.ClientKey{a, b, h} {
		if err := g.reg.AddPartial(k, "P", []string{lmq("x")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	g.d.OnLmqAppended(lmq("x"), 0, 1)
	if n := g.d.Pending(a) + g.d.Pending(b); n != 1 {
		t.Fatalf("group g got %d events, want 1", n)
	}
	if g.d.Pending(h) != 1 || g.wokenCount(h) != 1 {
		t.Fatal("group h not woken")
	}
	// Not a lite name / nobody subscribed: nothing.
	g.d.Dispatch("", "%LMQ%plain")
	g.d.Dispatch("", lmq("nobody"))
	if g.d.Pending(h) != 1 {
		t.Fatal("unexpected events")
	}
	// Restricted to one group.
	g.d.Dispatch("h", lmq("x"))
	if n := g.d.Pending(a) + g.d.Pending(b); n != 1 {
		t.Fatalf("group-restricted dispatch reached g: %d", n)
	}
}

// TestFullSetAndFullDispatch: a full event set drops the event (no
// sibling takes it); a full dispatch, which finds the backlog by comparing
// offsets, brings it back as soon as the client has drained its set to the
// low-water mark, and never while the set stays full.
func TestFullSetAndFullDispatch(t *testing.T) {
	g := newRig(t)
	a := registry.ClientKey{ClientID: "a", Group: "g"}
	if err := g.reg.AddPartial(a, "P", []string{lmq("1"), lmq("2"), lmq("3")}, nil); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"1", "2", "3"} {
		g.max[lmq(l)] = 1
		g.d.OnLmqAppended(lmq(l), 0, 1)
	}
	if got := g.drain(a); len(got) != 2 {
		t.Fatalf("soft cap 2: got %v", got)
	}
	g.cur["g"+lmq("1")] = 1
	g.cur["g"+lmq("2")] = 1 // consumed; 3 was dropped
	g.d.Scan()              // the drained set is refilled without waiting for the delay
	if got := g.drain(a); len(got) != 1 || got[0] != lmq("3") {
		t.Fatalf("refill delivered %v, want [%s]", got, lmq("3"))
	}
	g.cur["g"+lmq("3")] = 1

	// A set that stays full gets nothing more, even past the delay; once
	// drained it is refilled.
	b := registry.ClientKey{ClientID: "b", Group: "g"}
	if err := g.reg.AddPartial(b, "P", []string{lmq("4"), lmq("5"), lmq("6")}, nil); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"4", "5", "6"} {
		g.max[lmq(l)] = 1
		g.d.Dispatch("g", lmq(l))
	}
	if g.d.Pending(b) != 2 {
		t.Fatalf("b holds %d events, want its cap of 2", g.d.Pending(b))
	}
	g.now = g.now.Add(g.cfg.FullDispatchDelay + time.Second)
	g.d.Touch(b, true) // keep b from counting as stalled
	g.d.Scan()
	if g.d.Pending(b) != 2 {
		t.Fatalf("full set grew to %d", g.d.Pending(b))
	}
	got := g.drain(b)
	g.cur["g"+got[0]], g.cur["g"+got[1]] = 1, 1
	g.d.Scan()
	if rest := g.drain(b); len(rest) != 1 || slices.Contains(got, rest[0]) {
		t.Fatalf("after draining %v the refill gave %v", got, rest)
	}

}

// newLowWaterRig is a rig whose event sets hold 10 (low-water mark 2),
// with client a of group g subscribed to n lite topics.
func newLowWaterRig(t *testing.T, n int) (*rig, registry.ClientKey, []string) {
	t.Helper()
	g := newRig(t)
	g.cfg.MaxClientEventCount = 10
	a := registry.ClientKey{ClientID: "a", Group: "g"}
	var all []string
	for i := 0; i < n; i++ {
		all = append(all, lmq(strconv.Itoa(i)))
	}
	if err := g.reg.AddPartial(a, "P", all, nil); err != nil {
		t.Fatal(err)
	}
	return g, a, all
}

// consume polls n events of k and commits each polled lmq's offset.
func (g *rig) consume(t *testing.T, k registry.ClientKey, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		l, ok := g.d.Poll(k)
		if !ok {
			t.Fatalf("set empty after %d polls, want %d", i, n)
		}
		g.cur["g"+l] = g.max[l]
	}
}

// TestRefillNotDeferredByLiveEvents: a set that overflowed is drained to
// its low-water mark, but live events refill it above the mark before the
// full dispatch runs, so that one waits; the next drain to the mark must
// still bring the overflowed lite topics at once, not a FullDispatchDelay
// later (it did: with a steady stream of messages, every lite topic that
// once overflowed waited 10 s).
func TestRefillNotDeferredByLiveEvents(t *testing.T) {
	g, a, all := newLowWaterRig(t, 40)
	consume := func(n int) { g.consume(t, a, n) }
	for _, l := range all[:30] { // 10 taken, 20 overflow
		g.max[l] = 1
		g.d.OnLmqAppended(l, 0, 1)
	}
	g.d.Touch(a, true)
	consume(8) // at the low-water mark: a full dispatch is due now
	for _, l := range all[30:36] {
		g.max[l] = 1
		g.d.OnLmqAppended(l, 0, 1) // live events: the set is above the mark again
	}
	g.d.Scan() // the full dispatch finds the set busy and waits
	consume(6) // down to the mark once more
	g.d.Scan()
	if n := g.d.Pending(a); n < 8 {
		t.Fatalf("after the second drain to the low-water mark the set holds %d events, want it refilled from the 20 that overflowed", n)
	}
}

// TestKeptBacklogTopsUpABusySet: lagging lite topics an earlier walk kept
// beyond the set's capacity fill it up to capacity even when live events
// have taken it above the low-water mark by the time the refill runs.
func TestKeptBacklogTopsUpABusySet(t *testing.T) {
	g, a, all := newLowWaterRig(t, 60)
	consume := func(n int) { g.consume(t, a, n) }
	for _, l := range all[:40] {
		g.max[l] = 1
		g.d.OnLmqAppended(l, 0, 1) // 10 taken, 30 overflow
	}
	g.d.Touch(a, true)
	consume(8)
	g.d.Scan() // walks: tops the set up, keeps the other 22
	if n := g.d.Pending(a); n != 10 {
		t.Fatalf("after the walk the set holds %d, want 10", n)
	}
	consume(8) // to the mark: a refill is due
	for _, l := range all[40:44] {
		g.max[l] = 1
		g.d.OnLmqAppended(l, 0, 1) // live events: 6, above the mark
	}
	g.d.Scan()
	if n := g.d.Pending(a); n != 10 {
		t.Fatalf("the refill left the busy set at %d events, want it topped up to 10 from the kept backlog", n)
	}
}

// TestStalledClientBlacklisted: a client that stops popping loses its
// events to a sibling and is blacklisted for a while.
func TestStalledClientBlacklisted(t *testing.T) {
	g := newRig(t)
	a, b := registry.ClientKey{ClientID: "a", Group: "g"}, registry.ClientKey{ClientID: "b", Group: "g"}
	_ = g.reg.AddPartial(a, "P", []string{lmq("x")}, nil)
	_ = g.reg.AddPartial(b, "P", []string{lmq("x")}, nil)
	g.d.Touch(b, false)
	g.randIdx = 0
	g.d.Dispatch("", lmq("x"))
	holder, other := a, b
	if g.d.Pending(a) == 0 {
		holder, other = b, a
	}
	g.now = g.now.Add(g.cfg.InactiveInterval + time.Second)
	g.d.Touch(other, false) // the other one keeps popping
	g.d.Scan()
	if g.d.Pending(holder) != 0 || g.d.Pending(other) != 1 {
		t.Fatalf("events not moved: holder %d other %d", g.d.Pending(holder), g.d.Pending(other))
	}
	if !g.d.blacklisted(holder, g.now.UnixMilli()) {
		t.Fatal("stalled client not blacklisted")
	}
	// While blacklisted it only gets events nobody else takes.
	g.drain(other)
	for i := 0; i < 3; i++ {
		g.d.Dispatch("", lmq("x"))
	}
	if g.d.Pending(holder) != 0 {
		t.Fatal("blacklisted client preferred over a healthy one")
	}
	g.now = g.now.Add(g.cfg.BlacklistDuration + time.Second)
	g.d.Touch(other, false)
	g.d.Scan()
	if g.d.blacklisted(holder, g.now.UnixMilli()) {
		t.Fatal("blacklist did not expire")
	}
}

func TestRemoveAllRehomes(t *testing.T) {
	g := newRig(t)
	a, b := registry.ClientKey{ClientID: "a", Group: "g"}, registry.ClientKey{ClientID: "b", Group: "g"}
	_ = g.reg.AddPartial(a, "P", []string{lmq("x"), lmq("y")}, nil)
	_ = g.reg.AddPartial(b, "P", []string{lmq("x")}, nil)
	g.d.offer(a, lmq("x"))
	g.d.offer(a, lmq("y"))
	g.reg.RemoveComplete(a)
	if g.d.Pending(b) != 1 || g.d.EventMapSize() != 1 {
		t.Fatalf("b pending %d, clients %d", g.d.Pending(b), g.d.EventMapSize())
	}
	if got, _ := g.d.Poll(b); got != lmq("x") {
		t.Fatalf("re-homed %q", got)
	}
}

func TestWildcardGroup(t *testing.T) {
	g := newRig(t)
	w := registry.ClientKey{ClientID: "w", Group: "wc"}
	g.max[lmq("old")] = 3
	g.lmqsOf["P"] = []string{lmq("old"), lmq("done")}
	g.max[lmq("done")] = 1
	g.cur["wc"+lmq("done")] = 1
	if err := g.reg.AddComplete(w, "P", nil); err != nil {
		t.Fatal(err)
	}
	// New messages reach the wildcard client directly.
	g.d.Dispatch("", lmq("new"))
	if got, _ := g.d.Poll(w); got != lmq("new") {
		t.Fatalf("wildcard got %q", got)
	}
	// Registration schedules a full dispatch of the existing backlog.
	g.now = g.now.Add(6 * time.Second)
	g.d.Touch(w, false)
	g.d.Scan()
	if got := g.drain(w); len(got) != 1 || got[0] != lmq("old") {
		t.Fatalf("wildcard full dispatch %v", got)
	}
}

func TestOnRegisterAnnouncesBacklog(t *testing.T) {
	g := newRig(t)
	a := registry.ClientKey{ClientID: "a", Group: "g"}
	g.max[lmq("x")] = 5
	_ = g.reg.AddPartial(a, "P", []string{lmq("x"), lmq("empty")}, nil)
	if got := g.drain(a); len(got) != 1 || got[0] != lmq("x") {
		t.Fatalf("backlog announced %v", got)
	}
}

func TestSoftCapFromGroup(t *testing.T) {
	g := newRig(t)
	g.groups["g"] = meta.Group{Name: "g", BindTopic: "P", MaxEventCount: 10}
	a := registry.ClientKey{ClientID: "a", Group: "g"}
	var names []string
	for i := 0; i < 20; i++ {
		names = append(names, lmq(string(rune('a'+i))))
	}
	g.cfg.MaxClientEventCount = 1
	_ = g.reg.AddPartial(a, "P", names, nil)
	for _, l := range names {
		g.d.Dispatch("", l)
	}
	if n := g.d.Pending(a); n != 10 {
		t.Fatalf("pending %d, want the group's cap 10", n)
	}
}
