package pace

import (
	"testing"
	"time"
)

// TestPacer: without a rest a pacer never sleeps; with one it rests at the
// yield points reached once its work slice is used up, and not before.
func TestPacer(t *testing.T) {
	for _, p := range []*Pacer{nil, New(time.Millisecond, 0)} {
		for i := 0; i < 100; i++ {
			p.Yield()
		}
		if p.Slept() != 0 {
			t.Fatalf("a pacer without rest slept %v", p.Slept())
		}
	}
	p := New(time.Hour, time.Millisecond)
	for i := 0; i < 100; i++ {
		p.Yield()
	}
	if p.Slept() != 0 {
		t.Fatalf("slept %v before its work slice was used up", p.Slept())
	}
	p = New(0, time.Millisecond)
	for i := 0; i < 5; i++ {
		p.Yield()
	}
	if p.Slept() < 5*time.Millisecond {
		t.Fatalf("slept %v at 5 yield points with no work slice, want ≥ 5 ms", p.Slept())
	}
}
