package statictopic

import (
	"math"
	"strings"
	"testing"

	"github.com/rmqgo/rmq/pkg/protocol"
)

func TestConversions(t *testing.T) {
	open := item{LogicOffset: 10000, StartOffset: 0, EndOffset: -1}
	ended := item{LogicOffset: 100, StartOffset: 5, EndOffset: 15}
	undecided := item{LogicOffset: -1, EndOffset: -1}
	for _, tc := range []struct {
		name          string
		it            item
		p             int64
		loose, strict int64
	}{
		{"open start", open, 0, 10000, 10000},
		{"open inside", open, 7, 10007, 10007},
		{"below start", ended, 2, 100, 100},
		{"ended inside", ended, 10, 105, 105},
		{"past end: loose clamps", ended, 20, 110, 115},
		{"undecided", undecided, 3, -1, 2},
	} {
		if got := looseLogic(&tc.it, tc.p); got != tc.loose {
			t.Errorf("%s: loose %d, want %d", tc.name, got, tc.loose)
		}
		if got := strictLogic(&tc.it, tc.p); got != tc.strict {
			t.Errorf("%s: strict %d, want %d", tc.name, got, tc.strict)
		}
	}
	if physical(&ended, 105) != 10 || maxLogic(&ended) != 110 || maxLogic(&open) != 10000 || offsetDelta(&ended) != 95 {
		t.Error("physical/maxLogic/offsetDelta")
	}
	if endDecided(&open) || !endDecided(&ended) || decided(&undecided) {
		t.Error("decided flags")
	}
}

func TestFindItem(t *testing.T) {
	items := []item{it("a", 0, 0, 0), it("b", 1, 0, 10000), it("c", 2, 0, 20000), it("d", 3, 0, -1)}
	gen := func(x *item) int {
		if x == nil {
			return -1
		}
		return x.Gen
	}
	for _, tc := range []struct {
		x          int64
		ignoreNeg  bool
		wantGenIdx int
	}{
		{0, true, 0}, {9999, true, 0}, {10000, true, 1}, {25000, true, 2}, {math.MaxInt64, true, 2},
		{-5, true, 0},     // below everything: the earliest
		{25000, false, 3}, // undecided counts as ≤ x when not ignored (-1 ≤ x)
		{math.MaxInt64, false, 3},
	} {
		if got := gen(findItem(items, tc.x, tc.ignoreNeg)); got != tc.wantGenIdx {
			t.Errorf("find(%d, %v) = gen %d, want %d", tc.x, tc.ignoreNeg, got, tc.wantGenIdx)
		}
	}
	if gen(earliestDecided(items)) != 0 || gen(latestDecided(items)) != 2 {
		t.Error("earliest/latest decided")
	}
	if findItem(nil, 0, true) != nil || findItem([]item{it("a", 0, 0, -1)}, 0, true) != nil {
		t.Error("empty or all undecided must give nil")
	}
	if gen(nextItem(items, &items[0], true)) != 1 || gen(nextItem(items, &items[2], true)) != -1 ||
		gen(nextItem(items, &items[2], false)) != 3 || gen(nextItem(items, &items[3], false)) != -1 {
		t.Error("nextItem")
	}
}

func TestCheckItems(t *testing.T) {
	ok := []item{it("a", 0, 0, 0), it("b", 1, 0, 10000), it("c", 2, 1, -1)}
	if err := checkItems(ok); err != nil {
		t.Fatalf("valid list refused: %v", err)
	}
	bad := func(f func(l []item)) []item {
		l := append([]item(nil), ok...)
		f(l)
		return l
	}
	for _, tc := range []struct {
		name  string
		items []item
		want  string
	}{
		{"empty", nil, "empty"},
		{"negative queue", bad(func(l []item) { l[1].QueueID = -1 }), ">= 0"},
		{"negative start", bad(func(l []item) { l[0].StartOffset = -3 }), ">= 0"},
		{"undecided in the middle", bad(func(l []item) { l[1].LogicOffset = -1 }), "only the last"},
		{"gen not increasing", bad(func(l []item) { l[1].Gen = 0 }), "gen must increase"},
		{"logic not increasing", bad(func(l []item) { l[1].LogicOffset = 0 }), "not below"},
		{"end before start", bad(func(l []item) { l[0].EndOffset = 0; l[0].StartOffset = 3 }), "endOffset"},
		{"overlapping segment", bad(func(l []item) { l[0].EndOffset = 20000 }), "overlaps"},
		{"no broker", bad(func(l []item) { l[2].Bname = "" }), "bname"},
		{"logic below -1", bad(func(l []item) { l[2].LogicOffset = -2 }), "logicOffset"},
	} {
		err := checkItems(tc.items)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
	if err := checkItems([]item{it("a", 0, 0, -1)}); err != nil {
		t.Errorf("a lone undecided leader is valid: %v", err)
	}
}

func TestCheckNoReuse(t *testing.T) {
	if err := checkNoReuse(map[int][]item{0: {it("a", 0, 0, 0), it("b", 1, 0, 100)}, 1: {it("a", 0, 1, 0)}}); err != nil {
		t.Fatal(err)
	}
	err := checkNoReuse(map[int][]item{0: {it("a", 0, 0, 0)}, 1: {it("b", 0, 0, 0), it("a", 1, 0, 100)}})
	if err == nil || !strings.Contains(err.Error(), "mapped twice") {
		t.Fatalf("reuse not detected: %v", err)
	}
}

func TestMockBrokerName(t *testing.T) {
	if MockBrokerName(protocol.MappingScopeGlobal) != "__syslo__global__" || MockBrokerName("") != "__syslo__global__" ||
		MockBrokerName("s1") != "__syslo__s1" {
		t.Error("mock names")
	}
}
