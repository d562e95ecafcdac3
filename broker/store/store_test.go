package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/commitlog"
	"github.com/rmqgo/rmq/broker/store/consumequeue"
	"github.com/rmqgo/rmq/internal/testutil"
	"github.com/rmqgo/rmq/pkg/message"
)

func testConfig(dir string) Config {
	cfg := DefaultConfig(dir)
	cfg.CommitLog.FileSize = 1 << 20
	cfg.CommitLog.Preallocate = false
	cfg.CommitLog.CleanResourceInterval = 0
	return cfg
}

func openStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func msg(topic string, qid int32, body string, props map[string]string) *message.Message {
	if props == nil {
		props = map[string]string{}
	}
	return &message.Message{Topic: topic, QueueID: qid, Body: []byte(body), Properties: props, BornTimestamp: time.Now().UnixMilli()}
}

// waitDispatched waits until a queue's max offset reaches want.
func waitDispatched(t *testing.T, s *Store, topic string, qid int32, want int64) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() error {
		if got := s.MaxOffset(topic, qid); got < want {
			return fmt.Errorf("%s-%d max offset %d, want %d", topic, qid, got, want)
		}
		return nil
	})
}

type tagFilter struct{ code int64 }

func (f tagFilter) MatchTagsCode(c int64) bool    { return c == f.code }
func (f tagFilter) MatchProperties(_ []byte) bool { return true }

func TestPutGetRestart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, testConfig(dir))
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		tag := "A"
		if i%2 == 1 {
			tag = "B"
		}
		res, err := s.PutMessage(ctx, msg("T", int32(i%4), fmt.Sprintf("body-%d", i), map[string]string{"TAGS": tag, "KEYS": fmt.Sprintf("k%d common", i), "UNIQ_KEY": fmt.Sprintf("U%03d", i)}))
		if err != nil {
			t.Fatal(err)
		}
		if res.QueueOffset != int64(i/4) {
			t.Fatalf("message %d got queue offset %d", i, res.QueueOffset)
		}
	}
	waitDispatched(t, s, "T", 3, 25)

	r, err := s.GetMessage(ctx, "T", 0, 0, 32, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Found || len(r.Records) != 25 || r.NextBeginOffset != 25 || r.MaxOffset != 25 {
		t.Fatalf("get: %v %d next %d max %d", r.Status, len(r.Records), r.NextBeginOffset, r.MaxOffset)
	}
	m, _, err := message.DecodeStored(r.Records[3], message.DecodeOptions{})
	if err != nil || string(m.Body) != "body-12" || m.QueueOffset != 3 {
		t.Fatalf("record 3: %v %q %d", err, m.Body, m.QueueOffset)
	}
	r.Release()
	// Apache's msgGetTotalTodayNow counts messages served, not reads.
	if st := s.Stats(); st.PutMessageCount != 100 || st.GetMessageCount != 25 {
		t.Fatalf("stats: %d put, %d got; want 100 and 25", st.PutMessageCount, st.GetMessageCount)
	}

	// queue 1 holds i = 1, 5, 9, ... all tag B
	r, _ = s.GetMessage(ctx, "T", 1, 0, 32, 0, tagFilter{int64(message.TagHashCode("A"))})
	if r.Status != NoMatchedMessage || r.NextBeginOffset != 25 {
		t.Fatalf("filtered: %v next %d", r.Status, r.NextBeginOffset)
	}
	for _, tc := range []struct {
		off  int64
		want GetStatus
		next int64
	}{{25, OffsetOverflowOne, 25}, {30, OffsetOverflowBadly, 25}} {
		r, _ := s.GetMessage(ctx, "T", 0, tc.off, 32, 0, nil)
		if r.Status != tc.want || r.NextBeginOffset != tc.next {
			t.Errorf("offset %d: %v next %d", tc.off, r.Status, r.NextBeginOffset)
		}
	}
	if r, _ := s.GetMessage(ctx, "nope", 0, 5, 32, 0, nil); r.Status != NoMatchedLogicQueue || r.NextBeginOffset != 0 {
		t.Errorf("unknown queue: %v next %d", r.Status, r.NextBeginOffset)
	}

	q, err := s.QueryMessage("T", "common", false, 5, 0, time.Now().UnixMilli()+1000)
	if err != nil || len(q.Records) != 5 {
		t.Fatalf("query by key: %v %d", err, len(q.Records))
	}
	q, _ = s.QueryMessage("T", "U042", true, 5, 0, time.Now().UnixMilli()+1000)
	if len(q.Records) != 1 {
		t.Fatalf("query by uniq: %d", len(q.Records))
	}
	s.CommitOffset("g", "T", 0, 7)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, testConfig(dir))
	defer s.Close()
	if s.MaxOffset("T", 0) != 25 {
		t.Fatalf("after restart max %d", s.MaxOffset("T", 0))
	}
	if off, ok := s.QueryOffset("g", "T", 0); !ok || off != 7 {
		t.Fatalf("offset after restart %d %v", off, ok)
	}
	res, err := s.PutMessage(ctx, msg("T", 0, "after", nil))
	if err != nil || res.QueueOffset != 25 {
		t.Fatalf("put after restart: %v offset %d", err, res.QueueOffset)
	}
	ts := s.MessageStoreTime("T", 0, 10)
	if off, _ := s.SearchOffsetByTime("T", 0, ts, consumequeue.BoundaryLower); off > 10 {
		t.Fatalf("search by time %d", off)
	}
}

func TestBatchAndMultiDispatch(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Close()
	ctx := context.Background()
	batch := []*message.Message{msg("B", 2, "a", nil), msg("B", 2, "b", nil), msg("B", 2, "c", nil)}
	res, err := s.PutMessages(ctx, batch)
	if err != nil || res.QueueOffset != 0 || len(res.MsgIDs) != 3 {
		t.Fatalf("batch: %v %+v", err, res)
	}
	lmq := "%LMQ%$P$user_10086"
	for i := 0; i < 3; i++ {
		if _, err := s.PutMessage(ctx, msg("P", 0, fmt.Sprint(i), map[string]string{"INNER_MULTI_DISPATCH": lmq, "__LITE_TOPIC": "user_10086"})); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s, lmq, 0, 3)
	r, _ := s.GetMessage(ctx, lmq, 0, 1, 32, 0, nil)
	if r.Status != Found || len(r.Records) != 2 {
		t.Fatalf("lmq read %v %d", r.Status, len(r.Records))
	}
	m, _, _ := message.DecodeStored(r.Records[0], message.DecodeOptions{})
	if m.Topic != "P" || m.Properties["INNER_MULTI_QUEUE_OFFSET"] != "1" || string(m.Body) != "1" {
		t.Fatalf("lmq record %+v", m)
	}
	r.Release()
	if s.lmq.count != 1 {
		t.Fatalf("lmq count %d", s.lmq.count)
	}
}

func TestLMQQuota(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxLmqConsumeQueueNum = 2
	s := openStore(t, cfg)
	defer s.Close()
	ctx := context.Background()
	for i, want := range []error{nil, nil, ErrLMQQuota} {
		_, err := s.PutMessage(ctx, msg("P", 0, "x", map[string]string{"INNER_MULTI_DISPATCH": fmt.Sprintf("%%LMQ%%$P$l%d", i)}))
		if (err == nil) != (want == nil) {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	// An existing LMQ still accepts messages at the quota.
	if _, err := s.PutMessage(ctx, msg("P", 0, "x", map[string]string{"INNER_MULTI_DISPATCH": "%LMQ%$P$l0"})); err != nil {
		t.Fatal(err)
	}
}

// TestLMQQuotaConcurrent: sends refused at the quota while others create
// and write LMQs (under -race: the refusal's count is read under the LMQ
// lock; a CI run caught it read after the unlock).
func TestLMQQuotaConcurrent(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxLmqConsumeQueueNum = 8
	s := openStore(t, cfg)
	defer s.Close()
	ctx := context.Background()
	put := func(lmq string) error {
		_, err := s.PutMessage(ctx, msg("P", 0, "x", map[string]string{"INNER_MULTI_DISPATCH": lmq}))
		return err
	}
	if err := put("%LMQ%$P$shared"); err != nil {
		t.Fatal(err)
	}
	// Half the goroutines create LMQs (refused once the quota is reached),
	// half write to an existing one (always accepted): refusals and
	// accepted appends interleave on the LMQ lock.
	var wg sync.WaitGroup
	var stored, refused atomic.Int32
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				if g%2 == 1 {
					if err := put("%LMQ%$P$shared"); err != nil {
						t.Errorf("put to an existing LMQ at the quota: %v", err)
					}
					continue
				}
				lmq := fmt.Sprintf("%%LMQ%%$P$g%d-%d", g, i)
				switch err := put(lmq); {
				case err == nil:
					stored.Add(1)
				case errors.Is(err, ErrLMQQuota):
					refused.Add(1)
				default:
					t.Errorf("put %s: %v", lmq, err)
				}
			}
		})
	}
	wg.Wait()
	if stored.Load() != 7 || refused.Load() != 4*40-7 {
		t.Fatalf("%d stored, %d refused; want 7 and %d", stored.Load(), refused.Load(), 4*40-7)
	}
}

func TestOversizeRejected(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxMessageSize = 1024
	s := openStore(t, cfg)
	defer s.Close()
	_, err := s.PutMessage(context.Background(), msg("T", 0, string(make([]byte, 1025)), nil))
	if err == nil {
		t.Fatal("oversize accepted")
	}
}

func TestSyncFlush(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CommitLog.FlushDiskType = commitlog.SyncFlush
	s := openStore(t, cfg)
	defer s.Close()
	if _, err := s.PutMessage(context.Background(), msg("T", 0, "x", map[string]string{"INNER_MULTI_DISPATCH": "%LMQ%$P$a"})); err != nil {
		t.Fatal(err)
	}
	if s.CommitLog().FlushedOffset() < s.CommitLog().MaxOffset() {
		t.Fatal("sync flush acked before fsync")
	}
}

// TestGetMessageStopsAtPublishedMax: dispatch writes a round's entries to
// Pebble before it publishes the queues' new max offsets. A read in
// between must not return the entry past the max it saw: the client would
// pull from beyond the max the next read may still see, and be told its
// offset is illegal (PULL_OFFSET_MOVED back to that max, after which
// client-go consumes the message again — CI caught it as a duplicate).
func TestGetMessageStopsAtPublishedMax(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, err := s.PutMessage(ctx, msg("T", 0, fmt.Sprint("m", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s, "T", 0, 3)
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.ConsumeQueue().SetBeforePublish(func() {
		once.Do(func() {
			close(reached)
			<-release
		})
	})
	if _, err := s.PutMessage(ctx, msg("T", 0, "m3", nil)); err != nil {
		t.Fatal(err)
	}
	<-reached // entry 3 is in Pebble; the max is still 3
	r, err := s.GetMessage(ctx, "T", 0, 0, 32, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, next := len(r.Records), r.NextBeginOffset
	r.Release()
	r2, err := s.GetMessage(ctx, "T", 0, next, 32, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2.Release()
	close(release)
	if n != 3 || next != 3 || r2.Status == OffsetOverflowBadly {
		t.Fatalf("read during the publish: %d records, next %d; the read from there: %v", n, next, r2.Status)
	}
	waitDispatched(t, s, "T", 0, 4)
	r3, err := s.GetMessage(ctx, "T", 0, 3, 32, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Release()
	if r3.Status != Found || len(r3.Records) != 1 || r3.NextBeginOffset != 4 {
		t.Fatalf("after the publish: %v, %d records, next %d", r3.Status, len(r3.Records), r3.NextBeginOffset)
	}
}

// TestConfigValidateOnlyChecks: Validate leaves the optional settings zero;
// withDefaults fills them.
func TestConfigValidateOnlyChecks(t *testing.T) {
	cfg := DefaultConfig("/data/store")
	cfg.CommitLog.Dir, cfg.DispatchBatch, cfg.OffsetFlushInterval, cfg.Logger = "", 0, 0, nil
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.CommitLog.Dir != "" || cfg.DispatchBatch != 0 || cfg.OffsetFlushInterval != 0 || cfg.Logger != nil {
		t.Fatalf("Validate filled defaults: %+v", cfg)
	}
	d := cfg.withDefaults()
	if d.CommitLog.Dir != filepath.Join("/data/store", "commitlog") || d.DispatchBatch <= 0 || d.OffsetFlushInterval <= 0 || d.Logger == nil {
		t.Fatalf("defaults not filled: %+v", d)
	}
	cfg.RootDir = ""
	if err := cfg.Validate(); err == nil {
		t.Fatal("empty RootDir accepted")
	}
}

// TestArrivalsOfABatch: the listeners hear of a batch's entries of one tag
// code once, at the last offset of each run of that code; entries with
// different codes each.
func TestArrivalsOfABatch(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Close()
	type heard struct {
		off  int64
		tags int64
	}
	var mu sync.Mutex
	var got []heard
	s.AddArrivalListener(func(topic string, qid int32, off, tags, _ int64) {
		if topic == "AB" && qid == 1 {
			mu.Lock()
			got = append(got, heard{off, tags})
			mu.Unlock()
		}
	})
	ctx := context.Background()
	var plain, tagged []*message.Message
	for i := range 16 {
		plain = append(plain, msg("AB", 1, fmt.Sprint("p", i), nil))
	}
	for _, tg := range []string{"a", "a", "b", "a"} {
		tagged = append(tagged, msg("AB", 1, tg, map[string]string{message.PropertyTags: tg}))
	}
	total := int64(0)
	for _, b := range [][]*message.Message{plain, tagged} {
		if _, err := s.PutMessages(ctx, b); err != nil {
			t.Fatal(err)
		}
		total += int64(len(b))
		waitDispatched(t, s, "AB", 1, total)
	}
	a, b := int64(message.TagHashCode("a")), int64(message.TagHashCode("b"))
	want := []heard{{15, 0}, {17, a}, {18, b}, {19, a}}
	// The listeners run after the round's offsets are published.
	testutil.Eventually(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("heard %v, want %v", got, want)
		}
		return nil
	})
}

type tagsOnly struct{ tagFilter }

func (tagsOnly) TagsOnly() {}

// TestTagsOnlyFilterReadsAlike: a filter marked TagsOnlyFilter, whose
// records the read does not parse, gets what the same filter unmarked
// gets.
func TestTagsOnlyFilterReadsAlike(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Close()
	ctx := context.Background()
	for i := range 40 {
		if _, err := s.PutMessage(ctx, msg("TO", 0, fmt.Sprint("b", i), map[string]string{message.PropertyTags: fmt.Sprint("t", i%3)})); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, s, "TO", 0, 40)
	code := int64(message.TagHashCode("t1"))
	for _, off := range []int64{0, 5, 39} {
		a, err := s.GetMessage(ctx, "TO", 0, off, 32, 0, tagFilter{code})
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.GetMessage(ctx, "TO", 0, off, 32, 0, tagsOnly{tagFilter{code}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != b.Status || a.NextBeginOffset != b.NextBeginOffset || fmt.Sprint(a.QueueOffsets) != fmt.Sprint(b.QueueOffsets) || len(a.Records) == 0 && off == 0 {
			t.Fatalf("from %d: unmarked %v next %d %v, tags-only %v next %d %v", off, a.Status, a.NextBeginOffset, a.QueueOffsets, b.Status, b.NextBeginOffset, b.QueueOffsets)
		}
		a.Release()
		b.Release()
	}
}
