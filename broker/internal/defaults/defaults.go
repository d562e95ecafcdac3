// Package defaults fills the settings a broker service's options or
// dependencies may leave out: a clock, a logger, and the positive numbers
// (sizes, intervals) whose zero or negative value means "the default".
package defaults

import (
	"log/slog"
	"time"
)

// Clock sets *now to time.Now when it is nil.
func Clock(now *func() time.Time) {
	if *now == nil {
		*now = time.Now
	}
}

// Logger sets *log to a logger that discards everything when it is nil.
func Logger(log **slog.Logger) {
	if *log == nil {
		*log = slog.New(slog.DiscardHandler)
	}
}

// Positive sets *v to def unless it is positive.
func Positive[T number](v *T, def T) {
	*v = Or(*v, def)
}

// Or is v if it is positive, else def: for settings read afresh each time
// (a live config value) rather than filled in once.
func Or[T number](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

type number interface {
	int | int32 | int64 | time.Duration
}
