package send

import (
	"fmt"
	"sync"
	"testing"
)

func TestNameCache(t *testing.T) {
	var c nameCache
	long := make([]byte, maxNameLen+1)
	for i := range long {
		long[i] = 'x'
	}
	for _, b := range [][]byte{nil, []byte("T"), []byte("BenchVs"), []byte("%RETRY%group"), long} {
		if got := c.get(b); got != string(b) {
			t.Fatalf("get(%q) = %q", b, got)
		}
		if got := c.get(b); got != string(b) { // a hit returns the same
			t.Fatalf("second get(%q) = %q", b, got)
		}
	}
	var nilCache *nameCache
	if got := nilCache.get([]byte("a")); got != "a" {
		t.Fatalf("nil cache: %q", got)
	}
	topic := []byte("BenchVs")
	c.get(topic)
	if n := testing.AllocsPerRun(100, func() { _ = c.get(topic) }); n != 0 {
		t.Fatalf("a hit allocates %v times", n)
	}
	// Many names through few slots: each answer is still its own bytes.
	for i := range 5 * nameSlots {
		b := fmt.Appendf(nil, "topic-%d", i)
		if got := c.get(b); got != string(b) {
			t.Fatalf("get(%q) = %q", b, got)
		}
	}
}

// TestNameCacheConcurrent: senders of different topics share slots; run
// with -race.
func TestNameCacheConcurrent(t *testing.T) {
	var c nameCache
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				b := fmt.Appendf(nil, "t%d-%d", g, i%(3*nameSlots))
				if got := c.get(b); got != string(b) {
					t.Errorf("get(%q) = %q", b, got)
					return
				}
			}
		})
	}
	wg.Wait()
}
