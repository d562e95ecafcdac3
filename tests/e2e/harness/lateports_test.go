package harness

import (
	"fmt"
	"sync"
	"testing"
)

// TestPortBlocksDisjoint: two holders (two test processes; flock locks
// belong to the open file, so two holders in one process exclude each
// other too) never hand out the same port, and a holder moves to a new
// block when its block is used up.
func TestPortBlocksDisjoint(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var a, b portBlocks
	defer func() {
		for _, f := range append(a.files, b.files...) {
			f.Close()
		}
	}()
	seen := map[int]string{}
	for i := range 3 * lateBlock {
		for name, h := range map[string]*portBlocks{"a": &a, "b": &b} {
			p := h.take()
			if p < lateLow || p >= lateHigh {
				t.Fatalf("%s: port %d outside [%d, %d)", name, p, lateLow, lateHigh)
			}
			if other, ok := seen[p]; ok {
				t.Fatalf("take %d: port %d handed out by %s and %s", i, p, other, name)
			}
			seen[p] = name
		}
	}
	if len(a.owned) != 3 || len(b.owned) != 3 {
		t.Fatalf("blocks held: a %v, b %v; want 3 each", a.owned, b.owned)
	}
}

// TestLatePortWithVIPOwnsItsVIPPort: the port below a LatePortWithVIP port
// (the broker's VIP listener) is handed to no other caller, even while
// LatePort callers run at the same time. Checking only that it was free
// let an in-process broker take the port of an Apache JVM that had not
// bound it yet.
func TestLatePortWithVIPOwnsItsVIPPort(t *testing.T) {
	var mu sync.Mutex
	owner := map[int]string{}
	claim := func(p int, who string) {
		mu.Lock()
		defer mu.Unlock()
		if o, ok := owner[p]; ok {
			t.Errorf("port %d handed to %s and to %s", p, o, who)
		}
		owner[p] = who
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if g%2 == 0 {
					claim(LatePort(t), fmt.Sprintf("LatePort %d.%d", g, i))
					continue
				}
				p := LatePortWithVIP(t)
				claim(p, fmt.Sprintf("LatePortWithVIP %d.%d", g, i))
				claim(p-2, fmt.Sprintf("the VIP port of LatePortWithVIP %d.%d", g, i))
			}
		})
	}
	wg.Wait()
}
