// Package gctuner keeps a floor under the garbage collector's headroom: the
// heap may grow by at least Config.Headroom above what is live before a
// collection starts.
//
// The broker's live heap is small while it only sends and receives (tens
// of MiB) and each send allocates a few KiB (the request frame, its header
// map), so at the runtime's GOGC=100 the collector ran several times a
// second under load. A fixed higher GOGC would multiply the heap of a
// broker holding millions of lite topics, whose live heap is hundreds of
// MiB; this tuner raises the percent only while the live heap is small.
package gctuner

import (
	"context"
	"errors"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Config says how much headroom to keep.
type Config struct {
	// Headroom is the least the heap may grow above the live heap
	// between two collections.
	Headroom uint64
	// MinPercent is the percent used when the live heap is large; the
	// runtime's default is 100.
	MinPercent int
	// MaxPercent bounds the percent for a tiny live heap.
	MaxPercent int
	// Interval is how often the live heap is read.
	Interval time.Duration
}

// DefaultConfig keeps 32 MiB of headroom. Measured with mqbench -w 64
// (1 KiB) on the broker (scripts/bench/send-memory.sh): GOGC=100 peaked at
// 60 MiB of anonymous memory, 64 MiB of headroom at 124 MiB (over issue
// 18's 96 MiB), 32 MiB at 74–85 MiB; a higher percent took 7–20% less CPU
// per message than 100.
func DefaultConfig() Config {
	return Config{Headroom: 32 << 20, MinPercent: 100, MaxPercent: 400, Interval: time.Second}
}

// ValidateConfig reports a configuration the tuner cannot run with.
func ValidateConfig(c Config) error {
	switch {
	case c.Headroom == 0:
		return errors.New("gctuner: Headroom must be positive")
	case c.MinPercent <= 0 || c.MaxPercent < c.MinPercent:
		return errors.New("gctuner: want 0 < MinPercent <= MaxPercent")
	case c.Interval <= 0:
		return errors.New("gctuner: Interval must be positive")
	}
	return nil
}

// Percent is the GC percent for a live heap of live bytes.
func (c Config) Percent(live uint64) int {
	if live == 0 {
		return c.MaxPercent
	}
	p := c.Headroom * 100 / live
	return int(min(max(p, uint64(c.MinPercent)), uint64(c.MaxPercent)))
}

// Run sets the GC percent from the live heap every Interval until ctx
// ends, then restores the percent it found.
func Run(ctx context.Context, c Config) error {
	if err := ValidateConfig(c); err != nil {
		return err
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	prev := debug.SetGCPercent(c.MaxPercent)
	defer debug.SetGCPercent(prev)
	cur := c.MaxPercent
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return errors.New("gctuner: runtime has no /gc/heap/live:bytes")
		}
		if p := c.Percent(sample[0].Value.Uint64()); p != cur {
			debug.SetGCPercent(p)
			cur = p
		}
	}
}
