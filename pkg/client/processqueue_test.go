package client

import (
	"slices"
	"testing"

	"github.com/rmqgo/rmq/pkg/message"
)

func pqMsgs(offsets ...int64) []*message.Message {
	var out []*message.Message
	for _, o := range offsets {
		out = append(out, &message.Message{QueueOffset: o, Body: []byte("x")})
	}
	return out
}

func TestProcessQueueRemove(t *testing.T) {
	tests := []struct {
		name   string
		put    []int64
		remove []int64
		want   int64
	}{
		{"nothing put", nil, nil, -1},
		{"all consumed", []int64{3, 4, 5}, []int64{3, 4, 5}, 6},
		{"oldest pending", []int64{3, 4, 5}, []int64{4, 5}, 3},
		{"gap after filtering", []int64{3, 7, 9}, []int64{3}, 7},
		{"out of order removal", []int64{1, 2, 3, 4}, []int64{4, 2}, 1},
		{"unknown offsets ignored", []int64{1, 2}, []int64{8}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pq := newProcessQueue()
			pq.put(pqMsgs(tt.put...))
			if got := pq.remove(pqMsgs(tt.remove...)); got != tt.want {
				t.Fatalf("remove → %d, want %d", got, tt.want)
			}
		})
	}
}

func TestProcessQueuePutKeepsOrderAndDedups(t *testing.T) {
	pq := newProcessQueue()
	pq.put(pqMsgs(5, 6))
	if n := pq.put(pqMsgs(2, 6, 7)); n != 4 {
		t.Fatalf("cached %d, want 4 (6 is a duplicate)", n)
	}
	var got []int64
	for _, m := range pq.msgs {
		got = append(got, m.QueueOffset)
	}
	if !slices.Equal(got, []int64{2, 5, 6, 7}) {
		t.Fatalf("cache order %v", got)
	}
	if n, b := pq.count(); n != 4 || b != 4 {
		t.Fatalf("count = %d, %d bytes", n, b)
	}
}

func TestProcessQueueOrderly(t *testing.T) {
	pq := newProcessQueue()
	pq.put(pqMsgs(10, 11, 12))
	first := pq.take(2)
	if len(first) != 2 || first[0].QueueOffset != 10 || first[1].QueueOffset != 11 {
		t.Fatalf("take = %v", first)
	}
	if got := pq.remove(nil); got != 10 {
		t.Fatalf("commit offset while consuming = %d, want 10", got)
	}
	pq.rollback()
	again := pq.take(1)
	if len(again) != 1 || again[0] != first[0] {
		t.Fatal("rollback did not put the batch back in front")
	}
	if got := pq.commit(); got != 11 {
		t.Fatalf("commit = %d, want 11", got)
	}
	rest := pq.take(5)
	if len(rest) != 2 || rest[0].QueueOffset != 11 {
		t.Fatalf("rest = %v", rest)
	}
	if got := pq.commit(); got != 13 {
		t.Fatalf("commit = %d, want 13", got)
	}
	if pq.take(1) != nil || pq.commit() != -1 {
		t.Fatal("empty queue still hands out messages")
	}
	if n, b := pq.count(); n != 0 || b != 0 {
		t.Fatalf("count after all = %d, %d", n, b)
	}
}
