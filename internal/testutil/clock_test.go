package testutil

import (
	"testing"
	"time"
)

func TestFakeClock(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	c := NewFakeClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now %v, want %v", c.Now(), start)
	}
	c.Advance(1500 * time.Millisecond)
	if got := c.Now().Sub(start); got != 1500*time.Millisecond {
		t.Fatalf("advanced %v", got)
	}
	c.Set(start.Add(-time.Second))
	if !c.Now().Equal(start.Add(-time.Second)) {
		t.Fatalf("Set: %v", c.Now())
	}
}
