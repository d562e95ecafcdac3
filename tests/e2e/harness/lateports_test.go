package harness

import "testing"

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
