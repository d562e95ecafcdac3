package pop

import (
	"slices"
	"testing"
)

func TestCheckpointCodec(t *testing.T) {
	id := ckID{Group: "g", Topic: "T", QueueID: 3, Start: 10, PopTime: 1700000000000}
	c := &checkpoint{ckID: id, ReviveQid: 5, InvisibleTime: 60000, Due: 1700000060000, Offsets: []int64{10, 12, 13}, Acked: 1, Revived: 4, Tries: 2}
	got, err := decodeCK(id, encodeCK(c))
	if err != nil {
		t.Fatal(err)
	}
	if got.ckID != id || got.ReviveQid != 5 || got.Due != c.Due || !slices.Equal(got.Offsets, c.Offsets) || got.Acked != 1 || got.Revived != 4 || got.Tries != 2 {
		t.Fatalf("decoded %+v", got)
	}
	for _, bad := range [][]byte{nil, {9}, encodeCK(c)[:20], append(encodeCK(c), 0)} {
		if _, err := decodeCK(id, bad); err == nil {
			t.Errorf("value %x decoded", bad)
		}
	}
	k := ckKey(id)
	dk := dueKey(c.Due, id)
	due, pid, ok := parseDueKey(dk)
	if !ok || due != c.Due || pid != id {
		t.Fatalf("due key → %d %+v %v", due, pid, ok)
	}
	if string(k[2:]) != string(dk[10:]) {
		t.Error("due key tail differs from the checkpoint key tail")
	}
	if _, _, ok := parseDueKey([]byte("pdxx")); ok {
		t.Error("short due key parsed")
	}
}

func TestCheckpointBits(t *testing.T) {
	tests := []struct {
		n               int
		acked, revived  uint32
		settled         bool
		pending, flight int
	}{
		{3, 0, 0, false, 3, 3},
		{3, 1, 2, false, 1, 1},
		{3, 5, 2, true, 0, 0},
		{32, ^uint32(0), 0, true, 0, 0},
		{32, ^uint32(0) >> 1, 0, false, 1, 1},
		{1, 0, 1, true, 0, 0},
	}
	for _, tc := range tests {
		c := &checkpoint{Acked: tc.acked, Revived: tc.revived}
		for i := 0; i < tc.n; i++ {
			c.Offsets = append(c.Offsets, int64(i*2))
		}
		if c.settled() != tc.settled || len(c.pending()) != tc.pending || c.inFlight() != tc.flight {
			t.Errorf("%+v: settled %v pending %v inFlight %d", tc, c.settled(), c.pending(), c.inFlight())
		}
	}
	bad := []*checkpoint{{}, {Offsets: make([]int64, 33)}, {Offsets: []int64{2, 1}}, {Offsets: []int64{1, 1}}}
	for _, c := range bad {
		if c.validate() == nil {
			t.Errorf("%v validated", c.Offsets)
		}
	}
}
