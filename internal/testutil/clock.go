package testutil

import (
	"sync"
	"time"
)

// FakeClock is a clock that moves only when a test moves it. Its Now fits
// the `func() time.Time` seams the broker and nameserver take (Now, Clock
// options), so expiry and lease tests advance it instead of sleeping.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock starts at start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start} }

// Now is the current fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t (backwards too, for tests of clock skew).
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
