package storetest

import (
	"context"
	"testing"

	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
)

type tagFilter int32

func (f tagFilter) MatchTagsCode(c int64) bool  { return int32(c) == int32(f) }
func (tagFilter) MatchProperties(_ []byte) bool { return true }

func TestGetMessageStatuses(t *testing.T) {
	s := New()
	var arrivals []int64
	s.AddArrivalListener(func(topic string, qid int32, off, tags, _ int64) {
		if topic == "T" && qid == 0 {
			arrivals = append(arrivals, off)
		}
	})
	for _, tg := range []string{"a", "b", "a", "b"} {
		s.Put("T", 0, tg, []byte(tg))
	}
	if len(arrivals) != 4 || arrivals[3] != 3 {
		t.Fatalf("arrivals %v", arrivals)
	}
	get := func(off int64, n int, f store.MessageFilter) *store.GetResult {
		r, err := s.GetMessage(context.Background(), "T", 0, off, n, 1<<20, f)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := get(0, 32, tagFilter(message.TagHashCode("b")))
	if r.Status != store.Found || len(r.Records) != 2 || r.NextBeginOffset != 4 || r.QueueOffsets[0] != 1 {
		t.Fatalf("filtered read %+v", r)
	}
	if r = get(1, 1, nil); len(r.Records) != 1 || r.NextBeginOffset != 2 {
		t.Fatalf("one message %+v", r)
	}
	if r = get(0, 32, tagFilter(1)); r.Status != store.NoMatchedMessage || r.NextBeginOffset != 4 {
		t.Fatalf("no match %+v", r)
	}
	if r = get(4, 32, nil); r.Status != store.OffsetOverflowOne || r.NextBeginOffset != 4 {
		t.Fatalf("overflow one %+v", r)
	}
	if r = get(6, 32, nil); r.Status != store.OffsetOverflowBadly || r.NextBeginOffset != 4 {
		t.Fatalf("overflow badly %+v", r)
	}
	s.RemoveBefore("T", 0, 2)
	if r = get(1, 32, nil); r.Status != store.OffsetTooSmall || r.NextBeginOffset != 2 || r.MinOffset != 2 {
		t.Fatalf("too small %+v", r)
	}
	s.MarkRemoving("T", 0, 2)
	if r = get(2, 1, nil); r.Status != store.Found || r.QueueOffsets[0] != 3 {
		t.Fatalf("read past a removed entry %+v", r)
	}
	s.MarkRemoving("T", 0, 3)
	if r = get(2, 1, nil); r.Status != store.MessageWasRemoving || r.NextBeginOffset != 4 {
		t.Fatalf("removing %+v", r)
	}
	if r, _ = s.GetMessage(context.Background(), "T", 9, 0, 1, 1, nil); r.Status != store.NoMatchedLogicQueue {
		t.Fatalf("missing queue %+v", r)
	}
	s.CreateQueue("T", 8)
	if r, _ = s.GetMessage(context.Background(), "T", 8, 3, 1, 1, nil); r.Status != store.NoMessageInQueue || r.NextBeginOffset != 0 {
		t.Fatalf("empty queue %+v", r)
	}
	s.RemoveBefore("T", 0, 100) // emptied: min = max = 4
	if s.MinOffset("T", 0) != 4 || s.MaxOffset("T", 0) != 4 {
		t.Fatalf("emptied queue %d..%d", s.MinOffset("T", 0), s.MaxOffset("T", 0))
	}
}

func TestOffsetsAndRecords(t *testing.T) {
	s := New()
	m := &message.Message{Topic: "T", QueueID: 1, Body: []byte("x")}
	m.SetKeys("k1")
	res, err := s.PutMessage(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.ReadRecord(res.PhysicalOffset)
	if err != nil {
		t.Fatal(err)
	}
	dm, _, err := message.DecodeStored(rec, message.DecodeOptions{VerifyCRC: true})
	if err != nil || dm.Topic != "T" || dm.QueueID != 1 || dm.QueueOffset != 0 {
		t.Fatalf("record %+v %v", dm, err)
	}
	if q, _ := s.QueryMessage("T", "k1", false, 10, 0, 1<<62); len(q.Records) != 1 {
		t.Fatal("query by key")
	}
	s.CommitOffset("g", "T", 1, 5)
	s.CommitOffset("g", "U", 0, 1)
	if off, ok := s.QueryOffset("g", "T", 1); !ok || off != 5 {
		t.Fatal("offset")
	}
	if got := s.GroupTopics("g"); len(got) != 2 || got[0] != "T" {
		t.Fatalf("group topics %v", got)
	}
	if s.DeleteGroupOffsets("g") != 2 {
		t.Fatal("delete group offsets")
	}
	if err := s.DeleteTopic("T"); err != nil || len(s.Queues("T")) != 0 {
		t.Fatal("delete topic")
	}
}
