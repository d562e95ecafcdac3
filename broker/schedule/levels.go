package schedule

import (
	"sync"
	"time"

	"github.com/rmqgo/rmq/broker/config"
)

// levelTable caches the parsed messageDelayLevel, re-parsing when the
// configured string changes (UPDATE_BROKER_CONFIG). A string that does not
// parse keeps the previous table (the config validator rejects it at start).
type levelTable struct {
	mu     sync.Mutex
	src    string
	levels []time.Duration
}

// defaultLevels is Apache's messageDelayLevel.
const defaultLevels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

func (t *levelTable) get(src string) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.levels != nil && src == t.src {
		return t.levels
	}
	levels, err := config.ParseDelayLevels(src)
	if err != nil {
		if t.levels != nil {
			return t.levels
		}
		levels, _ = config.ParseDelayLevels(defaultLevels)
	}
	t.src, t.levels = src, levels
	return levels
}

// levelDelay is the delay of level (1-based), clamped to the table.
func levelDelay(levels []time.Duration, level int) time.Duration {
	switch {
	case len(levels) == 0:
		return 0
	case level < 1:
		level = 1
	case level > len(levels):
		level = len(levels)
	}
	return levels[level-1]
}
