package consumequeue

import (
	"fmt"
	"testing"

	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/kv/kvtest"
)

func openTest(t *testing.T, dir string) *Store {
	t.Helper()
	db, s := openDB(t, dir)
	t.Cleanup(func() { db.Close() })
	return s
}

// openDB opens a Pebble database in dir and the consume queue on it; the
// test closes the database (to reopen it).
func openDB(t *testing.T, dir string) (*kv.DB, *Store) {
	t.Helper()
	db := kvtest.Open(t, dir)
	s, err := Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db, s
}

// put writes n entries to topic/qid with phy offsets base, base+100, ... and
// store times 1000, 1010, ...
func put(t *testing.T, s *Store, topic string, qid int32, from, n int64, base int64) {
	t.Helper()
	b := s.NewBatch()
	for i := from; i < from+n; i++ {
		if err := b.Put(topic, qid, Entry{Offset: i, CommitLogOffset: base + i*100, Size: 100, TagsCode: i, StoreTimestamp: 1000 + i*10}); err != nil {
			t.Fatal(err)
		}
	}
	b.SetDispatched(base + (from+n)*100)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestPutReadReload(t *testing.T) {
	dir := t.TempDir()
	db, s := openDB(t, dir)
	put(t, s, "T", 0, 0, 10, 0)
	put(t, s, "T", 1, 0, 3, 0)
	put(t, s, "%LMQ%$p$x", 0, 0, 2, 0)
	if got := s.MaxOffset("T", 0); got != 10 {
		t.Fatalf("max = %d", got)
	}
	es, err := s.Entries("T", 0, 4, 3)
	if err != nil || len(es) != 3 || es[0].Offset != 4 || es[2].CommitLogOffset != 600 {
		t.Fatalf("entries %+v %v", es, err)
	}
	if es, _ := s.Entries("T", 0, 9, 32); len(es) != 1 {
		t.Fatalf("tail read %d", len(es))
	}
	if es, _ := s.Entries("T", 0, 10, 32); len(es) != 0 {
		t.Fatalf("read at max %d", len(es))
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s2 := openTest(t, dir)
	if s2.MaxOffset("T", 0) != 10 || s2.MaxOffset("T", 1) != 3 || s2.MaxOffset("%LMQ%$p$x", 0) != 2 || s2.QueueCount() != 3 {
		t.Fatalf("after reload: %d %d %d count %d", s2.MaxOffset("T", 0), s2.MaxOffset("T", 1), s2.MaxOffset("%LMQ%$p$x", 0), s2.QueueCount())
	}
	if s2.DispatchedOffset() != 200 {
		t.Fatalf("dispatched = %d", s2.DispatchedOffset())
	}
}

func TestSearchByTime(t *testing.T) {
	s := openTest(t, t.TempDir())
	put(t, s, "T", 0, 0, 10, 0) // times 1000..1090
	for _, tc := range []struct {
		ts   int64
		bt   BoundaryType
		want int64
	}{
		{999, BoundaryLower, 0}, {1000, BoundaryLower, 0}, {1005, BoundaryLower, 1}, {1090, BoundaryLower, 9}, {2000, BoundaryLower, 10},
		{999, BoundaryUpper, 0}, {1005, BoundaryUpper, 0}, {1010, BoundaryUpper, 1}, {5000, BoundaryUpper, 9},
	} {
		got, err := s.SearchOffsetByTime("T", 0, tc.ts, tc.bt)
		if err != nil || got != tc.want {
			t.Errorf("search(%d,%d) = %d %v, want %d", tc.ts, tc.bt, got, err, tc.want)
		}
	}
}

func TestDeleteAndRecreate(t *testing.T) {
	s := openTest(t, t.TempDir())
	put(t, s, "A", 0, 0, 5, 0)
	put(t, s, "A", 1, 0, 5, 0)
	put(t, s, "AB", 0, 0, 5, 0) // shares a prefix with A: must survive
	if err := s.DeleteTopic("A"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.State("A", 0); ok {
		t.Fatal("A-0 still there")
	}
	if s.MaxOffset("AB", 0) != 5 {
		t.Fatal("AB lost")
	}
	if es, _ := s.Entries("AB", 0, 0, 10); len(es) != 5 {
		t.Fatalf("AB entries %d", len(es))
	}
	if err := s.DeleteQueue("AB", 0); err != nil {
		t.Fatal(err)
	}
	put(t, s, "AB", 0, 0, 1, 5000)
	if st, _ := s.State("AB", 0); st.Max != 1 || st.Min != 0 {
		t.Fatalf("recreated %+v", st)
	}
}

func TestCorrectMinAndTruncate(t *testing.T) {
	s := openTest(t, t.TempDir())
	put(t, s, "U", 0, 0, 2, 0)  // phy 0,100
	put(t, s, "T", 0, 0, 10, 0) // phy 0..900; dispatched 1000
	n, err := s.CorrectMin(450)
	if err != nil || n != 2 {
		t.Fatalf("CorrectMin = %d %v", n, err)
	}
	if st, _ := s.State("T", 0); st.Min != 5 || st.Max != 10 {
		t.Fatalf("T %+v", st)
	}
	if st, _ := s.State("U", 0); st.Min != 2 || st.Max != 2 {
		t.Fatalf("U %+v", st)
	}
	if es, _ := s.Entries("T", 0, 0, 100); len(es) != 5 || es[0].Offset != 5 {
		t.Fatalf("entries after min move %+v", es)
	}
	if err := s.TruncateAbove(750); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State("T", 0); st.Max != 8 || st.LastPhyOffset != 700 {
		t.Fatalf("T after truncate %+v", st)
	}
	if s.DispatchedOffset() != 750 {
		t.Fatalf("dispatched %d", s.DispatchedOffset())
	}
}

func BenchmarkDispatchManyQueues(b *testing.B) {
	s := openTestB(b)
	b.ResetTimer()
	for i := 0; i < b.N; {
		batch := s.NewBatch()
		for j := 0; j < 1000 && i < b.N; j++ {
			batch.Put(fmt.Sprintf("%%LMQ%%$parent$lite-%d", i), 0, Entry{Offset: 0, CommitLogOffset: int64(i) * 1000, Size: 1000, StoreTimestamp: int64(i)})
			i++
		}
		batch.SetDispatched(int64(i) * 1000)
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

func openTestB(b *testing.B) *Store {
	db := kvtest.Open(b, b.TempDir())
	b.Cleanup(func() { db.Close() })
	s, err := Open(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// TestLMQMaxFromEntries: an LMQ's queue 0 keeps no max record; a reload
// reads its max offset, last CommitLog offset and store time from its
// newest entry, for one entry, for many (the seek path), after its head
// was cut by retention (min record), after a truncation, and when
// retention left no entry (then it writes the max record). Other queues
// keep theirs.
func TestLMQMaxFromEntries(t *testing.T) {
	dir := t.TempDir()
	db, s := openDB(t, dir)
	put(t, s, "%LMQ%$p$one", 0, 0, 1, 0)
	put(t, s, "%LMQ%$p$many", 0, 0, 50, 10_000)
	put(t, s, "%LMQ%$p$cut", 0, 0, 5, 0)        // phy 0..400
	put(t, s, "%LMQ%$p$gone", 0, 0, 2, 0)       // phy 0..100
	put(t, s, "%LMQ%$p$trunc", 0, 0, 8, 20_000) // phy 20000..20700
	put(t, s, "%LMQ%$p$q1", 1, 0, 3, 0)         // not queue 0: a max record
	put(t, s, "T", 0, 0, 7, 0)
	if _, err := s.CorrectMin(250); err != nil { // cut: 0..2 go; gone: all go
		t.Fatal(err)
	}
	if err := s.TruncateAbove(20_450); err != nil { // trunc keeps 0..4
		t.Fatal(err)
	}
	put(t, s, "%LMQ%$p$trunc", 0, 5, 1, 30_000) // one more after the truncation
	want := map[QueueID]QueueState{}
	s.Range(func(id QueueID, st QueueState) bool { want[id] = st; return true })
	// No max record for queue 0 of an LMQ unless the truncation wrote it.
	for id := range want {
		_, closer, err := db.Get(metaKey(id.Topic, id.QueueID, metaMax))
		if err == nil {
			closer.Close()
		}
		emptied := id.Topic == "%LMQ%$p$one" || id.Topic == "%LMQ%$p$gone"
		if has := err == nil; has != (!maxFromEntries(id) || id.Topic == "%LMQ%$p$trunc" || emptied) {
			t.Errorf("%v: max record %v", id, has)
		}
	}
	if err := s.Flush(); err != nil { // the WAL is off
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, s = openDB(t, dir)
	defer db.Close()
	got := map[QueueID]QueueState{}
	s.Range(func(id QueueID, st QueueState) bool { got[id] = st; return true })
	if len(got) != len(want) {
		t.Fatalf("reloaded %d queues, had %d: %v", len(got), len(want), got)
	}
	for id, w := range want {
		if g := got[id]; g != w {
			t.Errorf("%v: reloaded %+v, had %+v", id, g, w)
		}
	}
	if st := got[QueueID{"%LMQ%$p$gone", 0}]; st.Max != 2 || st.Min != 2 {
		t.Errorf("gone: %+v", st)
	}
	if st := got[QueueID{"%LMQ%$p$many", 0}]; st.Max != 50 || st.LastPhyOffset != 10_000+49*100 || st.LastStoreTime != 1000+49*10 {
		t.Errorf("many: %+v", st)
	}
}

// A round's entries may come interleaved across queues and with writes of
// other key spaces (Set); Commit writes them sorted, and the next round
// (which reuses the buffers) carries nothing over, after a commit or an
// abort.
func TestBatchInterleavedAndReused(t *testing.T) {
	dir := t.TempDir()
	db, s := openDB(t, dir)
	defer db.Close()
	b := s.NewBatch()
	for i := int64(0); i < 30; i++ {
		topic, qid := "T", int32(i%3)
		if i%3 == 2 {
			topic, qid = "A", 7
		}
		if err := b.Put(topic, qid, Entry{Offset: i / 3, CommitLogOffset: i * 100, Size: 100, StoreTimestamp: 1000 + i}); err != nil {
			t.Fatal(err)
		}
		if err := b.Set([]byte(fmt.Sprintf("i%03d", 100-i)), []byte{byte(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.SetDispatched(3000)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		topic string
		qid   int32
		first int64
	}{{"T", 0, 0}, {"T", 1, 100}, {"A", 7, 200}} {
		es, err := s.Entries(q.topic, q.qid, 0, 32)
		if err != nil || len(es) != 10 {
			t.Fatalf("%s-%d: %d entries, %v", q.topic, q.qid, len(es), err)
		}
		for j, e := range es {
			if e.Offset != int64(j) || e.CommitLogOffset != q.first+int64(j)*300 {
				t.Fatalf("%s-%d entry %d: %+v", q.topic, q.qid, j, e)
			}
		}
	}
	for i := 0; i < 30; i++ {
		v, closer, err := db.Get([]byte(fmt.Sprintf("i%03d", 100-i)))
		if err != nil || len(v) != 1 || v[0] != byte(i) {
			t.Fatalf("other key %d: %v %v", i, v, err)
		}
		closer.Close()
	}
	// An aborted round, then one that touches another queue only.
	b = s.NewBatch()
	b.Put("T", 0, Entry{Offset: 10, CommitLogOffset: 9000})
	b.Set([]byte("i999"), nil, nil)
	b.Abort()
	b = s.NewBatch()
	if b.Len() != 0 {
		t.Fatalf("a new round starts with %d queues", b.Len())
	}
	b.Put("B", 0, Entry{Offset: 0, CommitLogOffset: 5000})
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State("T", 0); st.Max != 10 {
		t.Fatalf("T-0 after the aborted round: %+v", st)
	}
	if _, ok, _ := s.Entry("T", 0, 10); ok {
		t.Fatal("the aborted round's entry was written")
	}
	if _, closer, err := db.Get([]byte("i999")); err == nil {
		closer.Close()
		t.Fatal("the aborted round's other key was written")
	}
	if st, ok := s.State("B", 0); !ok || st.Max != 1 || st.LastPhyOffset != 5000 {
		t.Fatalf("B-0: %+v %v", st, ok)
	}
}
