package defaults

import (
	"log/slog"
	"testing"
	"time"
)

func TestClockAndLoggerFillOnlyNil(t *testing.T) {
	var now func() time.Time
	var log *slog.Logger
	Clock(&now)
	Logger(&log)
	if now == nil || log == nil {
		t.Fatal("nil clock or logger left nil")
	}
	log.Info("discarded") // must not panic
	fixed := func() time.Time { return time.Unix(7, 0) }
	mine := slog.New(slog.NewTextHandler(nil, nil))
	now, log = fixed, mine
	Clock(&now)
	Logger(&log)
	if now().Unix() != 7 || log != mine {
		t.Fatal("a given clock or logger was replaced")
	}
}

func TestPositive(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{{0, 5}, {-1, 5}, {3, 3}} {
		v := tc.in
		Positive(&v, 5)
		if v != tc.want {
			t.Errorf("Positive(%d, 5) = %d, want %d", tc.in, v, tc.want)
		}
	}
	n := int32(-2)
	Positive(&n, 8)
	if n != 8 {
		t.Errorf("Positive(int32 -2, 8) = %d", n)
	}
}

func TestOr(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{{0, 5}, {-1, 5}, {3, 3}} {
		if got := Or(tc.in, 5); got != tc.want {
			t.Errorf("Or(%d, 5) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
