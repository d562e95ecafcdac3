package lifecycle

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/lite/meta"
	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func TestExpiredRule(t *testing.T) {
	const min = int64(60_000)
	now := int64(100_000_000)
	for _, tc := range []struct {
		name    string
		latest  int64
		ttl     int64
		minTTL  time.Duration
		expired bool
	}{
		{"idle past ttl", now - 11*min, 10, 0, true},
		{"idle below ttl", now - 9*min, 10, 0, false},
		{"exactly ttl", now - 10*min, 10, 0, false},
		{"never expires -1", now - 1000*min, -1, 0, false},
		{"never expires 0", now - 1000*min, 0, 0, false},
		{"minLiteTTl protects", now - 11*min, 10, 15 * time.Minute, false},
		{"past minLiteTTl", now - 16*min, 10, 15 * time.Minute, true},
		{"future store time", now + min, 1, 0, false},
	} {
		if got := Expired(now, tc.latest, tc.ttl, time.Minute, tc.minTTL); got != tc.expired {
			t.Errorf("%s: Expired = %v", tc.name, got)
		}
	}
	// A shorter unit (tests): 3 units of 1 s.
	if !Expired(now, now-3001, 3, time.Second, 0) || Expired(now, now-2999, 3, time.Second, 0) {
		t.Error("unit of a second")
	}
	if !Expired(now, now-11*min, 10, 0, 0) {
		t.Error("zero unit must mean a minute")
	}
}

// TestIndexPage: the index reads the queue table: lite topics of a parent
// with at least one entry, paged in byte order; what leaves the table
// leaves the index.
func TestIndexPage(t *testing.T) {
	f := &fakeStore{queues: map[string]consumequeue.QueueState{}}
	for _, l := range []string{"d", "a", "c", "b", "e"} {
		f.queues["%LMQ%$P$"+l] = consumequeue.QueueState{Max: 1}
	}
	f.queues["%LMQ%$Q$z"] = consumequeue.QueueState{Max: 1}
	f.queues["%LMQ%$PP$z"] = consumequeue.QueueState{Max: 1} // another parent with P's prefix
	f.queues["%LMQ%plain"] = consumequeue.QueueState{Max: 1} // not lite
	f.queues["%LMQ%$P$empty"] = consumequeue.QueueState{}    // no entry
	f.queues["P"] = consumequeue.QueueState{Max: 1}
	x := NewIndex(f.Range)
	if x.Count("P") != 5 || x.Count("") != 7 {
		t.Fatalf("counts %d %d", x.Count("P"), x.Count(""))
	}
	var all []string
	cursor := ""
	for {
		page, more := x.Page("P", cursor, 2)
		all = append(all, page...)
		if !more {
			break
		}
		cursor = page[len(page)-1]
	}
	if !slices.Equal(all, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("pages %v", all)
	}
	if page, more := x.Page("P", "", 0); page != nil || more {
		t.Fatalf("limit 0: %v %v", page, more)
	}
	f.mu.Lock()
	delete(f.queues, "%LMQ%$P$c")
	f.mu.Unlock()
	lmqs := x.LMQs("P")
	sort.Strings(lmqs)
	if x.Count("P") != 4 || !slices.Equal(lmqs, []string{"%LMQ%$P$a", "%LMQ%$P$b", "%LMQ%$P$d", "%LMQ%$P$e"}) {
		t.Fatalf("after a deletion %v", lmqs)
	}
}

// fakeStore is an in-memory queue table.
type fakeStore struct {
	mu      sync.Mutex
	queues  map[string]consumequeue.QueueState
	deleted []string
	refuse  map[string]bool // DeleteLmqs keeps these (in-flight message)
}

func (f *fakeStore) Range(fn func(consumequeue.QueueID, consumequeue.QueueState) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, st := range f.queues {
		if !fn(consumequeue.QueueID{Topic: n}, st) {
			return
		}
	}
}

func (f *fakeStore) DeleteLmqs(names []string, del func(string, consumequeue.QueueState) bool) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, n := range names {
		st, ok := f.queues[n]
		if !ok || f.refuse[n] || (del != nil && !del(n, st)) {
			continue
		}
		delete(f.queues, n)
		f.deleted = append(f.deleted, n)
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeStore) DeleteLmqsWhere(pick, recheck func(string, consumequeue.QueueState) bool) ([]string, error) {
	f.mu.Lock()
	var names []string
	for n, st := range f.queues {
		if strings.HasPrefix(n, "%LMQ%") && pick(n, st) {
			names = append(names, n)
		}
	}
	f.mu.Unlock()
	return f.DeleteLmqs(names, recheck)
}

type topics map[string]protocol.TopicConfig

func (t topics) Get(n string) (protocol.TopicConfig, bool) { c, ok := t[n]; return c, ok }
func (t topics) Snapshot() (map[string]protocol.TopicConfig, protocol.DataVersion) {
	return t, protocol.DataVersion{}
}

type groups map[string]subscription.GroupConfig

func (g groups) Find(n string) (subscription.GroupConfig, bool) { c, ok := g[n]; return c, ok }
func (g groups) Snapshot() (map[string]subscription.GroupConfig, protocol.DataVersion) {
	return g, protocol.DataVersion{}
}

func parent(name, ttl string) protocol.TopicConfig {
	tc := protocol.NewTopicConfig(name)
	tc.Attributes = map[string]string{"message.type": "LITE"}
	if ttl != "" {
		tc.Attributes["lite.topic.expiration"] = ttl
	}
	return tc
}

func TestSweep(t *testing.T) {
	now := time.UnixMilli(50_000_000)
	minute := int64(60_000)
	fs := &fakeStore{queues: map[string]consumequeue.QueueState{
		"%LMQ%$P$old":    {Max: 3, LastStoreTime: now.UnixMilli() - 20*minute},
		"%LMQ%$P$new":    {Max: 3, LastStoreTime: now.UnixMilli() - 1*minute},
		"%LMQ%$P$racing": {Max: 1, LastStoreTime: now.UnixMilli() - 20*minute},
		"%LMQ%$P$broken": {Max: 2, LastStoreTime: 0},
		"%LMQ%$N$old":    {Max: 3, LastStoreTime: now.UnixMilli() - 20*minute}, // parent never expires
		"%LMQ%$GONE$old": {Max: 3, LastStoreTime: now.UnixMilli() - 20*minute}, // no parent: kept
		"%LMQ%generic":   {Max: 3, LastStoreTime: 1},
		"P":              {Max: 9, LastStoreTime: 1},
		"%LMQ%$bad$x$y":  {Max: 3, LastStoreTime: 1},
	}, refuse: map[string]bool{"%LMQ%$P$racing": true}}
	tp := topics{"P": parent("P", "10"), "N": parent("N", "-1")}
	gc := subscription.NewGroupConfig("lg")
	gc.Attributes["lite.bind.topic"] = "P"
	src := meta.NewSource(tp, groups{"lg": gc})
	var cascaded []string
	m, err := New(Options{
		Store:  fs,
		Meta:   src,
		Config: func() Config { return Config{CheckInterval: time.Second, MinTTL: 5 * time.Minute} },
		Cascade: []func([]string, []Batch, func()){func(_ []string, batches []Batch, _ func()) {
			for _, b := range batches {
				for _, lmq := range b.LMQs {
					cascaded = append(cascaded, fmt.Sprintf("%s %s %v", b.Parent, lmq, b.Groups))
				}
			}
		}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Load(); n != 6 {
		t.Fatalf("Load indexed %d", n)
	}
	res, err := m.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if res.Expired != 2 || res.Deleted != 1 {
		t.Fatalf("first sweep %+v (deleted %v)", res, fs.deleted)
	}
	if !slices.Equal(cascaded, []string{"P %LMQ%$P$old [lg]"}) {
		t.Fatalf("cascade %v", cascaded)
	}
	if m.Index().Count("P") != 3 {
		t.Fatalf("index count %d", m.Index().Count("P"))
	}
	// The unreadable one goes after more than 5 consecutive sweeps.
	for i := 0; i < 4; i++ {
		m.Sweep()
	}
	if _, ok := fs.queues["%LMQ%$P$broken"]; !ok {
		t.Fatal("broken lmq deleted before the debounce")
	}
	m.Sweep()
	if _, ok := fs.queues["%LMQ%$P$broken"]; ok {
		t.Fatal("broken lmq survived the debounce")
	}
	if _, ok := fs.queues["%LMQ%$P$new"]; !ok {
		t.Fatal("young lmq deleted")
	}
	if _, ok := fs.queues["%LMQ%$N$old"]; !ok {
		t.Fatal("lmq of a never-expiring parent deleted")
	}
	// Parent deleted: all its LMQs go.
	delete(fs.refuse, "%LMQ%$P$racing")
	if n, err := m.CleanParent("P"); err != nil || n != 2 {
		t.Fatalf("CleanParent = %d %v", n, err)
	}
	if m.Index().Count("P") != 0 {
		t.Fatal("index kept the parent")
	}
}

// TestSweepLargeCascade: a sweep large enough for the two-goroutine
// cascade runs each of its parts exactly once for every deleted LMQ, and the index
// drops a parent whose lite topics all went whole and the others by name.
func TestSweepLargeCascade(t *testing.T) {
	now := time.UnixMilli(50_000_000)
	old := now.UnixMilli() - 20*60_000
	fs := &fakeStore{queues: map[string]consumequeue.QueueState{}}
	for i := 0; i < 100_000; i++ {
		fs.queues[fmt.Sprintf("%%LMQ%%$P$l%d", i)] = consumequeue.QueueState{Max: 1, LastStoreTime: old}
	}
	for i := 0; i < 40_000; i++ {
		st := consumequeue.QueueState{Max: 1, LastStoreTime: old}
		if i%2 == 0 {
			st.LastStoreTime = now.UnixMilli()
		}
		fs.queues[fmt.Sprintf("%%LMQ%%$Q$l%d", i)] = st
	}
	src := meta.NewSource(topics{"P": parent("P", "10"), "Q": parent("Q", "10")}, groups{})
	var mu sync.Mutex
	seen := map[string]int{}
	second := map[string]int{} // the other part, on its own goroutine
	m, err := New(Options{
		Store:  fs,
		Meta:   src,
		Config: func() Config { return Config{CheckInterval: time.Second} },
		Cascade: []func([]string, []Batch, func()){func(_ []string, batches []Batch, _ func()) {
			for _, b := range batches {
				for _, lmq := range b.LMQs {
					if !strings.HasPrefix(lmq, "%LMQ%$"+b.Parent+"$") {
						t.Errorf("%s under parent %s", lmq, b.Parent)
					}
					mu.Lock()
					seen[lmq]++
					mu.Unlock()
				}
			}
		}, func(deleted []string, _ []Batch, _ func()) {
			for _, lmq := range deleted {
				mu.Lock()
				second[lmq]++
				mu.Unlock()
			}
		}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Load()
	res, err := m.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 120_000 || len(seen) != 120_000 || len(second) != 120_000 {
		t.Fatalf("deleted %d, cascaded %d and %d", res.Deleted, len(seen), len(second))
	}
	for lmq, n := range seen {
		if n != 1 || second[lmq] != 1 {
			t.Fatalf("%s cascaded %d and %d times", lmq, n, second[lmq])
		}
	}
	if m.Index().Count("P") != 0 || m.Index().Count("Q") != 20_000 || m.Index().Count("") != 20_000 {
		t.Fatalf("index P %d Q %d all %d", m.Index().Count("P"), m.Index().Count("Q"), m.Index().Count(""))
	}
}

// TestBatches: the cascade's batches are runs of one parent of at most
// cascadeBatch names, skip names that are not lite LMQs, carry each
// parent's groups and hold every name once.
func TestBatches(t *testing.T) {
	tp := topics{"P": parent("P", "10"), "Q": parent("Q", "10")}
	gc := subscription.NewGroupConfig("lg")
	gc.Attributes["lite.bind.topic"] = "P"
	src := meta.NewSource(tp, groups{"lg": gc})
	src.Refresh()
	m, err := New(Options{Store: &fakeStore{}, Meta: src, Config: func() Config { return Config{} }})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < cascadeBatch+10; i++ {
		names = append(names, fmt.Sprintf("%%LMQ%%$P$%06d", i))
	}
	names = append(names, "%LMQ%generic", "%LMQ%$Q$a", "%LMQ%$Q$b", "%LMQ%$P$late")
	got := m.batches(names, "")
	var desc []string
	total := 0
	for _, b := range got {
		desc = append(desc, fmt.Sprintf("%s:%d:%v", b.Parent, len(b.LMQs), b.Groups))
		total += len(b.LMQs)
		for _, l := range b.LMQs {
			if p, _, ok := naming.Parse(l); !ok || p != b.Parent {
				t.Errorf("%s in a batch of %s", l, b.Parent)
			}
		}
	}
	want := []string{fmt.Sprintf("P:%d:[lg]", cascadeBatch), "P:10:[lg]", "Q:2:[]", "P:1:[lg]"}
	if !slices.Equal(desc, want) || total != len(names)-1 {
		t.Fatalf("batches %v (total %d); want %v", desc, total, want)
	}
	// All of one known parent: the same batches without reading the names.
	pNames := names[:cascadeBatch+10]
	got = m.batches(pNames, "P")
	desc = desc[:0]
	for _, b := range got {
		desc = append(desc, fmt.Sprintf("%s:%d:%v", b.Parent, len(b.LMQs), b.Groups))
	}
	if want := want[:2]; !slices.Equal(desc, want) {
		t.Fatalf("one parent: batches %v; want %v", desc, want)
	}
}
