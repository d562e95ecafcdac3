package remotingtest

import (
	"maps"
	"testing"
)

func TestSetFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   []string
		want map[string]string
	}{
		{"nothing", nil, map[string]string{"a": "1", "b": "2"}},
		{"set and add", []string{"a", "9", "c", "3"}, map[string]string{"a": "9", "b": "2", "c": "3"}},
		{"empty value is kept", []string{"a", ""}, map[string]string{"a": "", "b": "2"}},
		{"absent removes", []string{"b", Absent, "x", Absent}, map[string]string{"a": "1"}},
		{"odd pair ignored", []string{"a", "9", "c"}, map[string]string{"a": "9", "b": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SetFields(map[string]string{"a": "1", "b": "2"}, tc.kv...)
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
