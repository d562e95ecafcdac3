package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestCleanExpiredQueues: once the CommitLog deleted the files holding
// every message of a queue, CLEAN_EXPIRED_CONSUMEQUEUE destroys it (its
// next message takes offset 0 again, as in Apache); a queue with a message
// in a kept file, a system topic's queue and an LMQ stay.
func TestCleanExpiredQueues(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CommitLog.FileSize = 64 << 10
	cfg.CommitLog.DiskSpaceCleanForciblyRatio = 0.0001 // every round deletes all but the last file
	s := openStore(t, cfg)
	defer s.Close()
	ctx := context.Background()
	body := fmt.Sprintf("%0800d", 0)
	for _, topic := range []string{"Old", "rmq_sys_old", "%LMQ%old"} {
		for range 3 {
			if _, err := s.PutMessage(ctx, msg(topic, 1, body, nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 200 {
		if _, err := s.PutMessage(ctx, msg("New", 0, body, nil)); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Queue Mixed has one message in the first file and one in the last.
			if _, err := s.PutMessage(ctx, msg("Mixed", 0, body, nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.PutMessage(ctx, msg("Mixed", 0, body, nil)); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, s, "New", 0, 200)
	waitDispatched(t, s, "Mixed", 0, 2)

	if ids, err := s.CleanExpiredQueues(); err != nil || len(ids) != 0 {
		t.Fatalf("before any file was deleted: cleaned %v, %v", ids, err)
	}
	if err := s.CommitLog().Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitLog().RunRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := len(s.CommitLog().SegmentBases()); n != 1 {
		t.Fatalf("%d CommitLog files left, want 1", n)
	}
	ids, err := s.CleanExpiredQueues()
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0].Topic != "Old" || ids[0].QueueID != 1 {
		t.Fatalf("cleaned %v, want [Old-1]", ids)
	}
	if got := s.Queues("Old"); len(got) != 0 {
		t.Errorf("Old still has queues %v", got)
	}
	for _, q := range []struct {
		topic string
		qid   int32
	}{{"rmq_sys_old", 1}, {"%LMQ%old", 1}, {"Mixed", 0}, {"New", 0}} {
		if len(s.Queues(q.topic)) == 0 {
			t.Errorf("%s lost its queues", q.topic)
		}
	}
	res, err := s.PutMessage(ctx, msg("Old", 1, "again", nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.QueueOffset != 0 {
		t.Errorf("first message after the clean got queue offset %d, want 0", res.QueueOffset)
	}
}

// TestCleanUnusedTopics: CLEAN_UNUSED_TOPIC destroys the queues of topics
// the broker no longer has, but not system topics, LMQs or topics in use,
// and keeps consumer offsets.
func TestCleanUnusedTopics(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Close()
	ctx := context.Background()
	for _, topic := range []string{"Kept", "Gone", "rmq_sys_x", "%LMQ%y"} {
		for q := range int32(2) {
			if _, err := s.PutMessage(ctx, msg(topic, q, "b", nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, topic := range []string{"Kept", "Gone", "rmq_sys_x", "%LMQ%y"} {
		waitDispatched(t, s, topic, 1, 1)
	}
	s.CommitOffset("g", "Gone", 0, 1)
	topics, err := s.CleanUnusedTopics(func(topic string) bool { return topic == "Kept" })
	if err != nil {
		t.Fatal(err)
	}
	if len(topics) != 1 || topics[0] != "Gone" {
		t.Fatalf("cleaned %v, want [Gone]", topics)
	}
	if q := s.Queues("Gone"); len(q) != 0 {
		t.Errorf("Gone keeps queues %v", q)
	}
	for _, topic := range []string{"Kept", "rmq_sys_x", "%LMQ%y"} {
		if q := s.Queues(topic); len(q) != 2 {
			t.Errorf("%s has queues %v, want 2", topic, q)
		}
	}
	if off, ok := s.QueryOffset("g", "Gone", 0); !ok || off != 1 {
		t.Errorf("consumer offset of Gone: %d %v, want 1 (kept, as Apache)", off, ok)
	}
}
