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
func Positive[T int | int32 | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
