package timerslack

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	const us = time.Microsecond
	tests := []struct {
		name      string
		want, cur time.Duration
		environ   []string
		wantExec  bool
		wantErr   bool
	}{
		{"off", 0, 50 * us, nil, false, false},
		{"already set", 250 * us, 250 * us, nil, false, false},
		{"already set after exec", 250 * us, 250 * us, []string{Marker + "=1"}, false, false},
		{"differs", 250 * us, 50 * us, []string{"PATH=/bin"}, true, false},
		{"smaller than inherited", 250 * us, time.Millisecond, nil, true, false},
		{"did not take after exec", 250 * us, 50 * us, []string{"A=b", Marker + "=1"}, false, true},
		{"marker prefix only", 250 * us, 50 * us, []string{Marker + "X=1"}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(tt.want, tt.cur, tt.environ)
			if got != tt.wantExec || (err != nil) != tt.wantErr {
				t.Fatalf("Decide(%v, %v, %q) = %v, %v; want exec %v, error %v", tt.want, tt.cur, tt.environ, got, err, tt.wantExec, tt.wantErr)
			}
		})
	}
}
