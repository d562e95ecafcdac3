package pop

import (
	"testing"

	pkgclient "github.com/rmqgo/rmq/pkg/client"
)

func TestOrderInfoBlocking(t *testing.T) {
	o := newOrderInfo(nil, "a1", 1000, 500, []int64{10, 11, 12}, 1000)
	tests := []struct {
		attempt string
		now     int64
		want    bool
	}{
		{"a2", 1200, true},
		{"a1", 1200, false}, // a retry of the same attempt is not blocked
		{"", 1499, true},
		{"", 1500, false},
	}
	for _, tc := range tests {
		if got := o.blocks(tc.attempt, 500, tc.now); got != tc.want {
			t.Errorf("blocks(%q, %d) = %v", tc.attempt, tc.now, got)
		}
	}
	var nilInfo *orderInfo
	if nilInfo.blocks("", 1, 0) {
		t.Error("no info blocks")
	}
	n, next := o.commitAndNext(11, 1000)
	if next != 10 || !n.acked(1) || o.acked(1) {
		t.Fatalf("commit 11: next %d (copy-on-write broken?)", next)
	}
	n, next = n.commitAndNext(10, 1000)
	if next != 12 {
		t.Fatalf("commit 10: next %d", next)
	}
	if _, r := n.commitAndNext(10, 999); r != orderStalePop {
		t.Errorf("stale pop time: %d", r)
	}
	if _, r := n.commitAndNext(13, 1000); r != orderNotFound {
		t.Errorf("unknown offset: %d", r)
	}
	if _, r := nilInfo.commitAndNext(1, 1); r != orderNoPopInfo {
		t.Errorf("no info: %d", r)
	}
	n, next = n.commitAndNext(12, 1000)
	if next != 13 || n.blocks("", 0, 1100) {
		t.Fatalf("all acked: next %d, blocks %v", next, n.blocks("", 0, 1100))
	}
	// A later next-visible time of one offset keeps the queue blocked.
	m, ok := o.withNextVisible(12, 1000, 9000)
	if !ok || !m.blocks("", 500, 5000) || m.freeAt(5000) != 9000 {
		t.Fatalf("next visible: ok %v blocks %v freeAt %d", ok, m.blocks("", 500, 5000), m.freeAt(5000))
	}
	if _, ok := o.withNextVisible(12, 999, 9000); ok {
		t.Error("next visible with a stale pop time")
	}
}

func TestOrderInfoCounts(t *testing.T) {
	first := newOrderInfo(nil, "a1", 1000, 500, []int64{10, 11}, 1000)
	second := newOrderInfo(first, "a2", 2000, 500, []int64{11, 12}, 2000)
	third := newOrderInfo(second, "a3", 3000, 500, []int64{11, 12, 13}, 3000)
	tests := []struct {
		o    *orderInfo
		want string
	}{
		{first, "0 0 0"},
		{second, "0 qo0%11 1;0 0 0"},
		{third, "0 qo0%11 2;0 qo0%12 1;0 0 0"},
		{newOrderInfo(third, "a3", 4000, 500, []int64{11, 12, 13}, 4000), "0 qo0%11 2;0 qo0%12 1;0 0 0"}, // same attempt: counts kept
		{newOrderInfo(second, "a4", 3000, 500, []int64{11, 12}, 3000), "0 qo0%11 2;0 qo0%12 1;0 0 1"},
	}
	for i, tc := range tests {
		var info offsetInfo
		tc.o.countInfo(&info, "T", 0)
		if got := info.count.String(); got != tc.want {
			t.Errorf("%d: %q, want %q", i, got, tc.want)
		}
	}
	b := encodeOrder(third)
	back, err := decodeOrder(b)
	if err != nil || back.Counts[11] != 2 || back.PopTime != 3000 {
		t.Fatalf("codec %+v %v", back, err)
	}
	if _, err := decodeOrder([]byte(`{"o":[3,1]}`)); err == nil {
		t.Error("unsorted offsets decoded")
	}
}

func TestAllocate(t *testing.T) {
	mqs := func(n int) []mqT { return makeQueues(n) }
	tests := []struct {
		queues int
		cids   []string
		self   string
		avg    []int
		circle []int
	}{
		{4, []string{"a", "b"}, "a", []int{0, 1}, []int{0, 2}},
		{4, []string{"a", "b"}, "b", []int{2, 3}, []int{1, 3}},
		{5, []string{"a", "b"}, "a", []int{0, 1, 2}, []int{0, 2, 4}},
		{5, []string{"a", "b"}, "b", []int{3, 4}, []int{1, 3}},
		{2, []string{"a", "b", "c"}, "c", nil, nil},
		{2, []string{"a", "b", "c"}, "b", []int{1}, []int{1}},
		{3, []string{"a"}, "x", nil, nil},
	}
	for _, tc := range tests {
		all := mqs(tc.queues)
		if got := ids(pkgclient.AllocateAveragely(all, tc.cids, tc.self)); !equalInts(got, tc.avg) {
			t.Errorf("AVG %d %v %s: %v, want %v", tc.queues, tc.cids, tc.self, got, tc.avg)
		}
		if got := ids(allocateByCircle(all, tc.cids, tc.self)); !equalInts(got, tc.circle) {
			t.Errorf("AVG_BY_CIRCLE %d %v %s: %v, want %v", tc.queues, tc.cids, tc.self, got, tc.circle)
		}
	}
}
