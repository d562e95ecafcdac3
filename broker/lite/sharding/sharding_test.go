package sharding

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/lite/naming"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func route(qds ...protocol.QueueData) *protocol.TopicRouteData {
	rd := &protocol.TopicRouteData{QueueDatas: qds}
	for _, qd := range qds {
		rd.BrokerDatas = append(rd.BrokerDatas, protocol.BrokerData{BrokerName: qd.BrokerName, BrokerAddrs: map[int64]string{0: qd.BrokerName + ":10911"}})
	}
	return rd
}

func TestWriteQueueBrokers(t *testing.T) {
	noMaster := route(protocol.QueueData{BrokerName: "b", Perm: 6, WriteQueueNums: 2})
	noMaster.BrokerDatas[0].BrokerAddrs = map[int64]string{1: "slave:10911"}
	tests := []struct {
		name string
		rd   *protocol.TopicRouteData
		want []string
	}{
		{"brokers in name order", route(protocol.QueueData{BrokerName: "b", Perm: 6, WriteQueueNums: 2}, protocol.QueueData{BrokerName: "a", Perm: 6, WriteQueueNums: 3}),
			[]string{"a", "a", "a", "b", "b"}},
		{"read-only broker left out", route(protocol.QueueData{BrokerName: "a", Perm: 4, WriteQueueNums: 3}, protocol.QueueData{BrokerName: "b", Perm: 2, WriteQueueNums: 1}),
			[]string{"b"}},
		{"broker without master left out", noMaster, nil},
		{"orderTopicConf wins", &protocol.TopicRouteData{OrderTopicConf: "b:2; a:1;bad;c:x", QueueDatas: []protocol.QueueData{{BrokerName: "z", Perm: 6, WriteQueueNums: 8}}},
			[]string{"b", "b", "a"}},
		{"empty route", &protocol.TopicRouteData{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WriteQueueBrokers(tt.rd); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

type fakeNS struct {
	mu    sync.Mutex
	rd    map[string]*protocol.TopicRouteData
	err   error
	calls atomic.Int32
	block chan struct{} // when set, fetches wait for it
}

func (f *fakeNS) fetch(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	f.calls.Add(1)
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	rd, ok := f.rd[topic]
	if !ok {
		return nil, errors.New("code 17: No topic route info in name server for the topic")
	}
	return rd, nil
}

func (f *fakeNS) set(topic string, rd *protocol.TopicRouteData, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rd[topic], f.err = rd, err
}

// TestCache: a miss is fetched at once; a fresh route is served from the
// cache; a stale one is served while one background fetch renews it; a
// failed fetch is remembered for NegativeTTL and does not replace a known
// route.
func TestCache(t *testing.T) {
	ns := &fakeNS{rd: map[string]*protocol.TopicRouteData{}}
	two := route(protocol.QueueData{BrokerName: "broker-a", Perm: 6, WriteQueueNums: 2}, protocol.QueueData{BrokerName: "broker-b", Perm: 6, WriteQueueNums: 2})
	ns.set("P", two, nil)
	clk := testutil.NewFakeClock(time.Unix(1000, 0))
	c := New(Options{Fetch: ns.fetch, Refresh: 30 * time.Second, NegativeTTL: 5 * time.Second, Now: clk.Now})
	defer c.Close()
	want := []string{"broker-a", "broker-a", "broker-b", "broker-b"}

	if got, ok := c.WriteQueueBrokers("P"); !ok || !slices.Equal(got, want) || ns.calls.Load() != 1 {
		t.Fatalf("miss: %v %v after %d fetches", got, ok, ns.calls.Load())
	}
	if _, ok := c.WriteQueueBrokers("P"); !ok || ns.calls.Load() != 1 {
		t.Fatalf("fresh hit fetched again (%d)", ns.calls.Load())
	}
	// Stale: served at once, renewed in the background.
	ns.set("P", route(protocol.QueueData{BrokerName: "broker-c", Perm: 6, WriteQueueNums: 1}), nil)
	clk.Advance(31 * time.Second)
	if got, _ := c.WriteQueueBrokers("P"); !slices.Equal(got, want) {
		t.Fatalf("stale lookup %v, want the old route while renewing", got)
	}
	testutil.WaitFor(t, 3*time.Second, "the refreshed route of P", func() bool { got, _ := c.WriteQueueBrokers("P"); return slices.Equal(got, []string{"broker-c"}) })
	// A failing nameserver keeps the known route.
	ns.set("P", nil, errors.New("nameserver down"))
	clk.Advance(31 * time.Second)
	n := ns.calls.Load()
	c.WriteQueueBrokers("P")
	testutil.WaitFor(t, 3*time.Second, "a failed refresh of P", func() bool { return ns.calls.Load() > n && !c.loading("P") })
	if got, ok := c.WriteQueueBrokers("P"); !ok || !slices.Equal(got, []string{"broker-c"}) {
		t.Fatalf("after a failed refresh: %v %v", got, ok)
	}

	// Unknown topic: not ok, remembered for NegativeTTL, then asked again.
	ns.set("P", two, nil)
	if _, ok := c.WriteQueueBrokers("Q"); ok {
		t.Fatal("unknown topic reported a route")
	}
	n = ns.calls.Load()
	if _, ok := c.WriteQueueBrokers("Q"); ok || ns.calls.Load() != n {
		t.Fatalf("negative entry not cached (%d fetches, was %d)", ns.calls.Load(), n)
	}
	ns.set("Q", two, nil)
	clk.Advance(6 * time.Second)
	c.WriteQueueBrokers("Q")
	testutil.WaitFor(t, 3*time.Second, "the route of Q", func() bool { _, ok := c.WriteQueueBrokers("Q"); return ok })

	// Home follows naming.HomeBucket over the write queues.
	for _, lite := range []string{"u1", "u2", "user_10086", "x"} {
		home, ok := c.Home("Q", lite)
		if !ok || home != want[naming.HomeBucket(lite, len(want))] {
			t.Fatalf("home of %s: %q %v", lite, home, ok)
		}
	}
}

// TestCacheConcurrentMiss: callers of a topic being fetched for the first
// time share one fetch; Close ends a fetch under way.
func TestCacheConcurrentMiss(t *testing.T) {
	ns := &fakeNS{rd: map[string]*protocol.TopicRouteData{"P": route(protocol.QueueData{BrokerName: "a", Perm: 6, WriteQueueNums: 1})}, block: make(chan struct{})}
	c := New(Options{Fetch: ns.fetch})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, ok := c.WriteQueueBrokers("P"); !ok || !slices.Equal(got, []string{"a"}) {
				t.Errorf("got %v %v", got, ok)
			}
		}()
	}
	testutil.WaitFor(t, 3*time.Second, "the shared fetch", func() bool { return ns.calls.Load() == 1 })
	time.Sleep(20 * time.Millisecond)
	close(ns.block)
	wg.Wait()
	if n := ns.calls.Load(); n != 1 {
		t.Fatalf("%d fetches for one miss", n)
	}

	blocked := &fakeNS{rd: map[string]*protocol.TopicRouteData{}, block: make(chan struct{})}
	c2 := New(Options{Fetch: blocked.fetch, Timeout: time.Minute})
	done := make(chan bool)
	go func() { _, ok := c2.WriteQueueBrokers("P"); done <- ok }()
	testutil.WaitFor(t, 3*time.Second, "the blocked fetch", func() bool { return blocked.calls.Load() == 1 })
	c2.Close()
	if ok := <-done; ok {
		t.Fatal("a cancelled fetch reported a route")
	}
	if _, ok := c2.WriteQueueBrokers("R"); ok || blocked.calls.Load() != 1 {
		t.Fatal("a closed cache fetched")
	}
}

func (c *Cache) loading(topic string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[topic]
	return e != nil && e.loading != nil
}
