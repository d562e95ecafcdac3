package statictopic

import (
	"strings"
	"testing"
)

func TestRoundUp(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{0, 10000}, {10, 10000}, {100, 10000}, {4999, 10000}, {5000, 20000}, {9999, 20000},
		{10000, 20000}, {10010, 20000}, {14999, 20000}, {15000, 30000}, {20100, 30000},
	} {
		if got := RoundUp(tc.in, BlockSeqSize); got != tc.want {
			t.Errorf("RoundUp(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestOffsetConversions(t *testing.T) {
	it := NewItem(1, 0, "b", 10000)
	if LogicLoosely(it, 5) != 10005 || LogicStrictly(it, 5) != 10005 || Physical(it, 10007) != 7 || MaxLogic(it) != 10000 {
		t.Fatal("open item")
	}
	undecided := NewItem(1, 0, "b", -1)
	if LogicLoosely(undecided, 5) != -1 {
		t.Fatal("undecided loose")
	}
	ended := Item{Gen: 0, Bname: "a", LogicOffset: 0, StartOffset: 0, EndOffset: 10}
	if LogicLoosely(ended, 20) != 10 || LogicStrictly(ended, 20) != 20 || MaxLogic(ended) != 10 || !EndDecided(ended) {
		t.Fatal("ended item")
	}
	items := []Item{NewItem(0, 0, "a", 0), NewItem(1, 0, "b", 10000), NewItem(2, 1, "a", -1)}
	for _, tc := range []struct {
		x      int64
		ignore bool
		want   int
	}{
		{0, true, 0}, {9999, true, 0}, {10000, true, 1}, {1 << 40, true, 1}, {-5, true, 0},
		{1 << 40, false, 2}, // the undecided item's -1 is ≤ anything
	} {
		if got := Find(items, tc.x, tc.ignore); got != tc.want {
			t.Errorf("Find(%d, %v) = %d, want %d", tc.x, tc.ignore, got, tc.want)
		}
	}
	if EarliestDecided(items) != 0 || LatestDecided(items) != 1 || Find(nil, 0, true) != -1 {
		t.Fatal("earliest/latest")
	}
}

func TestCheckItems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []Item
		err   string
	}{
		{"empty", nil, ""},
		{"single undecided", []Item{NewItem(0, 0, "a", -1)}, ""},
		{"chain", []Item{NewItem(0, 0, "a", 0), NewItem(1, 0, "b", 10000), NewItem(2, 1, "a", -1)}, ""},
		{"negative queue", []Item{NewItem(0, -1, "a", 0)}, "negative"},
		{"no broker", []Item{NewItem(0, 0, "", 0)}, "empty broker"},
		{"undecided in the middle", []Item{NewItem(0, 0, "a", -1), NewItem(1, 0, "b", 10000)}, "not the latest"},
		{"gens equal", []Item{NewItem(1, 0, "a", 0), NewItem(1, 0, "b", 10000)}, "gens do not increase"},
		{"gens backwards", []Item{NewItem(2, 0, "a", 0), NewItem(1, 0, "b", 10000)}, "gens do not increase"},
		{"end below start", []Item{{Gen: 0, Bname: "a", StartOffset: 5, EndOffset: 2}}, "end offset"},
		{"logic offsets equal", []Item{NewItem(0, 0, "a", 10000), NewItem(1, 0, "b", 10000)}, "logic offsets do not increase"},
		{"max logic reaches next", []Item{{Gen: 0, Bname: "a", EndOffset: 20000}, NewItem(1, 0, "b", 10000)}, "max logic offset"},
	} {
		err := CheckItems(tc.items)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestCheckImmutable(t *testing.T) {
	a0, b1u, b1 := NewItem(0, 0, "a", 0), NewItem(1, 0, "b", -1), NewItem(1, 0, "b", 10000)
	c2u := NewItem(2, 0, "c", -1)
	for _, tc := range []struct {
		name    string
		old, nw []Item
		epochEq bool
		wantErr string // "": no error
	}{
		{"no old", nil, []Item{a0}, false, ""},
		{"no old, no new", nil, nil, true, ""},
		{"new empty", []Item{a0}, nil, false, "empty"},
		{"append", []Item{a0}, []Item{a0, b1u}, false, ""},
		{"same", []Item{a0, b1u}, []Item{a0, b1u}, true, ""},
		{"decide", []Item{a0, b1u}, []Item{a0, b1}, true, ""},
		{"undecide", []Item{a0, b1}, []Item{a0, b1u}, true, "decided"},
		{"decided offset changed", []Item{a0, b1u}, []Item{NewItem(0, 0, "a", 5), b1u}, false, "decided"},
		{"remapped further", []Item{a0, b1u}, []Item{a0, b1, c2u}, false, ""},
		{"earliest cleaned", []Item{a0, b1}, []Item{b1}, false, ""},
		{"earliest cleaned and remapped", []Item{a0, b1u}, []Item{b1, c2u}, false, ""},
		{"gen moved", []Item{a0}, []Item{NewItem(0, 1, "a", 0)}, false, "gen 0 changed"},
		{"leader differs at equal epoch", []Item{a0}, []Item{a0, b1u}, true, "leader differs"},
		{"new leader under the same epoch", []Item{a0, b1u}, []Item{a0, b1, c2u}, true, "leader differs"},
	} {
		err := CheckImmutable(tc.old, tc.nw, tc.epochEq)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
