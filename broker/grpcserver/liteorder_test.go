package grpcserver

import (
	"slices"
	"strings"
	"testing"
)

// TestLiteOrder: subscription changes handled out of their arrival order
// leave the broker as if handled in order (last writer wins, per lite
// topic, by arrival).
func TestLiteOrder(t *testing.T) {
	type change struct {
		arrival uint64
		action  string
		lites   []string
	}
	for _, tc := range []struct {
		name string
		// handled in this order
		changes []change
		want    []string // the broker's set at the end
		calls   []string // what the broker was sent
	}{
		{
			name: "start-up COMPLETE_ADD of the empty set handled after the first PARTIAL_ADD (Node.js client)",
			changes: []change{
				{2, "PARTIAL_ADD", []string{"a"}},
				{1, "COMPLETE_ADD", nil},
				{3, "PARTIAL_ADD", []string{"b"}},
			},
			want:  []string{"a", "b"},
			calls: []string{"PARTIAL_ADD a", "COMPLETE_ADD a", "PARTIAL_ADD b"},
		},
		{
			name: "in order",
			changes: []change{
				{1, "COMPLETE_ADD", nil},
				{2, "PARTIAL_ADD", []string{"a"}},
				{3, "PARTIAL_ADD", []string{"b"}},
				{4, "PARTIAL_REMOVE", []string{"a"}},
				{5, "COMPLETE_ADD", []string{"b", "c"}},
			},
			want:  []string{"b", "c"},
			calls: []string{"COMPLETE_ADD ", "PARTIAL_ADD a", "PARTIAL_ADD b", "PARTIAL_REMOVE a", "COMPLETE_ADD b c"},
		},
		{
			name: "a remove handled before the older add of the same topic",
			changes: []change{
				{5, "PARTIAL_REMOVE", []string{"a"}},
				{4, "PARTIAL_ADD", []string{"a", "b"}},
			},
			want:  []string{"b"},
			calls: []string{"PARTIAL_REMOVE a", "PARTIAL_ADD b"},
		},
		{
			name: "an old COMPLETE_ADD does not bring back a newer removal nor drop a newer add",
			changes: []change{
				{11, "PARTIAL_REMOVE", []string{"b"}},
				{12, "PARTIAL_ADD", []string{"d"}},
				{10, "COMPLETE_ADD", []string{"a", "b"}},
			},
			want:  []string{"a", "d"},
			calls: []string{"PARTIAL_REMOVE b", "PARTIAL_ADD d", "COMPLETE_ADD a d"},
		},
		{
			name: "COMPLETE_REMOVE forgets the client",
			changes: []change{
				{1, "PARTIAL_ADD", []string{"a"}},
				{2, "COMPLETE_REMOVE", nil},
				{3, "PARTIAL_ADD", []string{"a"}},
			},
			want:  []string{"a"},
			calls: []string{"PARTIAL_ADD a", "COMPLETE_REMOVE ", "PARTIAL_ADD a"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o liteOrder
			set := map[string]bool{}
			var calls []string
			send := func(s LiteSync) (Result, error) {
				ls := slices.Sorted(slices.Values(s.LiteTopics))
				calls = append(calls, s.Action+" "+strings.Join(ls, " "))
				switch s.Action {
				case "PARTIAL_ADD":
					for _, l := range ls {
						set[l] = true
					}
				case "PARTIAL_REMOVE":
					for _, l := range ls {
						delete(set, l)
					}
				case "COMPLETE_ADD":
					clear(set)
					for _, l := range ls {
						set[l] = true
					}
				case "COMPLETE_REMOVE":
					clear(set)
				}
				return Result{}, nil
			}
			for _, c := range tc.changes {
				s := LiteSync{Action: c.action, ClientID: "c1", Group: "g", Topic: "P", LiteTopics: slices.Clone(c.lites)}
				if _, err := o.apply(c.arrival, s, send); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for l := range set {
				got = append(got, l)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) || !slices.Equal(calls, tc.calls) {
				t.Errorf("broker set %v after %q, want %v after %q", got, calls, tc.want, tc.calls)
			}
		})
	}
}
