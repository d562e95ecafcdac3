package lock

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/protocol"
)

func mq(topic string, id int) protocol.MessageQueue {
	return protocol.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: id}
}

func TestTryLockBatch(t *testing.T) {
	clk := testutil.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := NewManager(Options{Now: clk.Now})
	q0, q1, q2 := mq("T", 0), mq("T", 1), mq("T", 2)

	steps := []struct {
		name    string
		advance time.Duration
		client  string
		ask     []protocol.MessageQueue
		want    []protocol.MessageQueue
	}{
		{"first lock", 0, "c1", []protocol.MessageQueue{q1, q0}, []protocol.MessageQueue{q0, q1}},
		{"other client refused, free queue granted", time.Second, "c2", []protocol.MessageQueue{q0, q1, q2}, []protocol.MessageQueue{q2}},
		{"renewal by the holder", 30 * time.Second, "c1", []protocol.MessageQueue{q0}, []protocol.MessageQueue{q0}},
		// q1 was last renewed 31 s ago: still c1's at 60 s, not after.
		{"not expired at exactly 60 s", 29 * time.Second, "c2", []protocol.MessageQueue{q1}, []protocol.MessageQueue{}},
		{"expired lock taken over", time.Millisecond, "c2", []protocol.MessageQueue{q1}, []protocol.MessageQueue{q1}},
		{"q0 still c1's", 0, "c2", []protocol.MessageQueue{q0}, []protocol.MessageQueue{}},
		{"empty request", 0, "c3", nil, []protocol.MessageQueue{}},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		got := m.TryLockBatch("g", s.client, s.ask)
		if !slices.Equal(got, s.want) {
			t.Fatalf("%s: got %v, want %v", s.name, got, s.want)
		}
	}
	if h, ok := m.Holder("g", q1); !ok || h != "c2" {
		t.Fatalf("holder of q1 = %q %v, want c2", h, ok)
	}
	if !m.IsLocked("g", q0, "c1") || m.IsLocked("g", q0, "c2") || m.IsLocked("other", q0, "c1") {
		t.Fatal("IsLocked disagrees with the table")
	}
	// Groups are independent.
	if got := m.TryLockBatch("g2", "c9", []protocol.MessageQueue{q0}); !slices.Equal(got, []protocol.MessageQueue{q0}) {
		t.Fatalf("other group: %v", got)
	}
}

func TestUnlockBatch(t *testing.T) {
	clk := testutil.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := NewManager(Options{Now: clk.Now})
	q0, q1 := mq("T", 0), mq("T", 1)
	m.TryLockBatch("g", "c1", []protocol.MessageQueue{q0, q1})

	m.UnlockBatch("g", "c2", []protocol.MessageQueue{q0})             // not the holder: ignored
	m.UnlockBatch("g", "c1", []protocol.MessageQueue{q1, mq("T", 7)}) // q7 was never locked
	if !m.IsLocked("g", q0, "c1") {
		t.Fatal("another client's unlock released q0")
	}
	if got := m.TryLockBatch("g", "c2", []protocol.MessageQueue{q0, q1}); !slices.Equal(got, []protocol.MessageQueue{q1}) {
		t.Fatalf("after unlock of q1: %v", got)
	}
	m.UnlockBatch("g", "c1", []protocol.MessageQueue{q0})
	m.UnlockBatch("g", "c2", []protocol.MessageQueue{q1})
	if m.Len() != 0 || m.HasLiveLocks("g") {
		t.Fatalf("table not empty after unlocking everything: %d", m.Len())
	}
	m.UnlockBatch("nogroup", "c1", []protocol.MessageQueue{q0}) // harmless
}

func TestHasLiveLocksAndSweep(t *testing.T) {
	clk := testutil.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := NewManager(Options{Now: clk.Now, MaxLiveTime: 10 * time.Second})
	if m.HasLiveLocks("g") {
		t.Fatal("live locks in an empty table")
	}
	m.TryLockBatch("g", "c1", []protocol.MessageQueue{mq("T", 0)})
	clk.Advance(5 * time.Second)
	m.TryLockBatch("g", "c1", []protocol.MessageQueue{mq("T", 1)})
	if !m.HasLiveLocks("g") || m.HasLiveLocks("h") {
		t.Fatal("HasLiveLocks")
	}
	clk.Advance(6 * time.Second) // q0 expired, q1 not
	if n := m.Sweep(); n != 1 {
		t.Fatalf("swept %d, want 1", n)
	}
	if !m.HasLiveLocks("g") {
		t.Fatal("q1 is still live")
	}
	clk.Advance(5 * time.Second)
	if m.HasLiveLocks("g") {
		t.Fatal("every lock expired, HasLiveLocks still true")
	}
	if n := m.Sweep(); n != 1 || m.Len() != 0 {
		t.Fatalf("second sweep %d, %d left", n, m.Len())
	}
}

// TestConcurrentLocking: many clients race for the same queues; every queue
// ends with exactly one holder, and no client is told it holds a queue
// another was also granted.
func TestConcurrentLocking(t *testing.T) {
	m := NewManager(Options{})
	var queues []protocol.MessageQueue
	for i := range 16 {
		queues = append(queues, mq("T", i))
	}
	var mu sync.Mutex
	granted := map[protocol.MessageQueue][]string{}
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + c))
			for range 50 {
				got := m.TryLockBatch("g", id, queues)
				mu.Lock()
				for _, q := range got {
					if l := granted[q]; len(l) == 0 || l[len(l)-1] != id {
						granted[q] = append(granted[q], id)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for q, holders := range granted {
		if len(holders) != 1 {
			t.Fatalf("%v granted to %v", q, holders)
		}
	}
}
