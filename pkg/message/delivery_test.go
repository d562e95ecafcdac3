package message

import "testing"

func TestDelayLevelAndIsScheduled(t *testing.T) {
	for _, tc := range []struct {
		props     map[string]string
		level     int
		scheduled bool
	}{
		{nil, 0, false},
		{map[string]string{PropertyDelayTimeLevel: "3"}, 3, true},
		{map[string]string{PropertyDelayTimeLevel: "0"}, 0, false},
		{map[string]string{PropertyDelayTimeLevel: "-1"}, -1, false},
		{map[string]string{PropertyDelayTimeLevel: "x"}, 0, false},
		{map[string]string{PropertyTimerDeliverMS: "1"}, 0, true},
		{map[string]string{PropertyTimerDelaySec: "1"}, 0, true},
		{map[string]string{PropertyTimerDelayMS: ""}, 0, true},
		{map[string]string{PropertyDelayTimeLevel: "-1", PropertyTimerDelayMS: "5"}, -1, true},
	} {
		if got := DelayLevel(tc.props); got != tc.level {
			t.Errorf("DelayLevel(%v) = %d, want %d", tc.props, got, tc.level)
		}
		if got := IsScheduled(tc.props); got != tc.scheduled {
			t.Errorf("IsScheduled(%v) = %v, want %v", tc.props, got, tc.scheduled)
		}
	}
}
