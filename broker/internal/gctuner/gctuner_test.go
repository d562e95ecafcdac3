package gctuner

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	c := DefaultConfig()
	cases := []struct {
		live uint64
		want int
	}{
		{0, 400},
		{4 << 20, 400},   // 800% capped
		{8 << 20, 400},   // exactly the cap
		{16 << 20, 200},  // headroom twice the live heap
		{20 << 20, 160},  // a sending broker
		{32 << 20, 100},  // headroom = live
		{500 << 20, 100}, // 1M lite topics: the runtime's default
		{10 << 30, 100},
	}
	for _, tc := range cases {
		if got := c.Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}

func TestValidateConfig(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Headroom = 0 },
		func(c *Config) { c.MinPercent = 0 },
		func(c *Config) { c.MaxPercent = 50 },
		func(c *Config) { c.Interval = 0 },
	}
	if err := ValidateConfig(DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	for i, mut := range bad {
		c := DefaultConfig()
		mut(&c)
		if ValidateConfig(c) == nil {
			t.Errorf("case %d: invalid config accepted", i)
		}
	}
}

// Run sets a percent while it runs and restores the previous one after.
func TestRunSetsAndRestores(t *testing.T) {
	old := debug.SetGCPercent(77)
	defer debug.SetGCPercent(old)
	c := Config{Headroom: 1 << 40, MinPercent: 100, MaxPercent: 250, Interval: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, c) }()
	deadline := time.Now().Add(5 * time.Second)
	for gogc() != 250 {
		if time.Now().After(deadline) {
			t.Fatalf("percent %d while running, want 250 (the cap: live heap far below the headroom)", gogc())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// SetGCPercent returns the setting it replaces: Run put 77 back.
	if got := debug.SetGCPercent(77); got != 77 {
		t.Fatalf("percent after Run = %d, want 77 restored", got)
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}
