package consumequeue

import (
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

// entryFor is what put writes at offset i with base 0.
func entryFor(i int64) Entry {
	return Entry{Offset: i, CommitLogOffset: i * 100, Size: 100, TagsCode: i, StoreTimestamp: 1000 + i*10}
}

// runKeys lists a queue's entry keys as [first, last] pairs and fails the
// test on a malformed value or runs that overlap or are out of order.
func runKeys(t *testing.T, s *Store, topic string, qid int32) [][2]int64 {
	t.Helper()
	prefix := queuePrefix(kv.PrefixConsumeQueue, topic, qid)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: kv.PrefixEnd(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var runs [][2]int64
	for it.First(); it.Valid(); it.Next() {
		last := int64(binary.BigEndian.Uint64(it.Key()[len(prefix):]))
		first, ok := runFirst(last, it.Value())
		if !ok {
			t.Fatalf("%s-%d: malformed run value of %d bytes at %d", topic, qid, len(it.Value()), last)
		}
		if n := len(runs); n > 0 && first <= runs[n-1][1] {
			t.Fatalf("%s-%d: run [%d,%d] overlaps [%d,%d]", topic, qid, first, last, runs[n-1][0], runs[n-1][1])
		}
		runs = append(runs, [2]int64{first, last})
	}
	return runs
}

// checkReads reads every offset of [from, to) one by one and in pages of
// every size up to 9, and requires the entries put wrote.
func checkReads(t *testing.T, s *Store, topic string, qid int32, from, to int64) {
	t.Helper()
	for off := from; off < to; off++ {
		e, ok, err := s.Entry(topic, qid, off)
		if err != nil || !ok || e != entryFor(off) {
			t.Fatalf("Entry(%d) = %+v %v %v", off, e, ok, err)
		}
	}
	for page := 1; page <= 9; page++ {
		for off := from; off < to; off += int64(page) {
			es, err := s.Entries(topic, qid, off, page)
			if err != nil {
				t.Fatal(err)
			}
			if want := min(int64(page), to-off); int64(len(es)) != want {
				t.Fatalf("Entries(%d, %d): %d entries, want %d", off, page, len(es), want)
			}
			for i, e := range es {
				if e != entryFor(off+int64(i)) {
					t.Fatalf("Entries(%d, %d)[%d] = %+v", off, page, i, e)
				}
			}
		}
	}
	if _, ok, _ := s.Entry(topic, qid, to); ok {
		t.Fatalf("Entry(%d) found past the max", to)
	}
}

// A round's entries of a queue are stored as runs of up to maxRun under
// one key each; every offset reads back, one by one and in pages across
// run edges, before and after a reload.
func TestRunsWrittenAndRead(t *testing.T) {
	dir := t.TempDir()
	db, s := openDB(t, dir)
	put(t, s, "T", 0, 0, 300, 0)
	put(t, s, "T", 0, 300, 5, 0)
	put(t, s, "%LMQ%x", 0, 0, 200, 0)
	want := [][2]int64{{0, 127}, {128, 255}, {256, 299}, {300, 304}}
	if got := runKeys(t, s, "T", 0); len(got) != len(want) || got[0] != want[0] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("runs %v, want %v", got, want)
	}
	checkReads(t, s, "T", 0, 0, 305)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s = openTest(t, dir)
	checkReads(t, s, "T", 0, 0, 305)
	checkReads(t, s, "%LMQ%x", 0, 0, 200)
	// An LMQ's max and newest entry come from its last run at load.
	if st, _ := s.State("%LMQ%x", 0); st.Max != 200 || st.LastPhyOffset != 199*100 || st.LastStoreTime != 1000+199*10 {
		t.Fatalf("LMQ after reload %+v", st)
	}
}

// A re-dispatch puts entries the queue holds already: they are not
// written again, so runs never overlap and reads stay whole.
func TestRunsRedispatchDoesNotOverlap(t *testing.T) {
	s := openTest(t, t.TempDir())
	put(t, s, "T", 0, 0, 100, 0)
	put(t, s, "T", 0, 60, 80, 0) // 60..99 again, 100..139 new
	if got := runKeys(t, s, "T", 0); len(got) != 2 || got[1] != [2]int64{100, 139} {
		t.Fatalf("runs %v", got)
	}
	checkReads(t, s, "T", 0, 0, 140)
}

// Stores written before runs hold one entry per key (runs of one): they
// read as before, take runs after them and truncate and retire alike.
func TestRunsOverOneEntryKeys(t *testing.T) {
	dir := t.TempDir()
	db, s := openDB(t, dir)
	b := db.NewBatch()
	var v [entryValueLen]byte
	for i := int64(0); i < 40; i++ {
		putEntry(v[:], entryFor(i))
		if err := b.Set(entryKey("T", 0, i), v[:], nil); err != nil {
			t.Fatal(err)
		}
	}
	meta := make([]byte, 24)
	binary.BigEndian.PutUint64(meta[0:], 40)
	binary.BigEndian.PutUint64(meta[8:], 39*100)
	binary.BigEndian.PutUint64(meta[16:], 1000+39*10)
	if err := b.Set(metaKey("T", 0, metaMax), meta, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil { // the WAL is off
		t.Fatal(err)
	}
	db.Close()

	s = openTest(t, dir)
	if st, _ := s.State("T", 0); st.Max != 40 {
		t.Fatalf("loaded %+v", st)
	}
	put(t, s, "T", 0, 40, 200, 0)
	if got := runKeys(t, s, "T", 0); len(got) != 40+2 {
		t.Fatalf("%d keys: %v", len(got), got)
	}
	checkReads(t, s, "T", 0, 0, 240)
}

// Truncation inside a run cuts the run there; retention inside a run keeps
// the run but hides what lies below the min; deleting a small queue takes
// every run.
func TestRunsTruncateAndRetire(t *testing.T) {
	s := openTest(t, t.TempDir())
	put(t, s, "T", 0, 0, 200, 0) // runs [0,127] [128,199]; phy i*100
	if err := s.TruncateAbove(150 * 100); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.State("T", 0); st.Max != 150 || st.LastPhyOffset != 149*100 {
		t.Fatalf("after truncate %+v", st)
	}
	if got := runKeys(t, s, "T", 0); len(got) != 2 || got[1] != [2]int64{128, 149} {
		t.Fatalf("runs after truncate %v", got)
	}
	checkReads(t, s, "T", 0, 0, 150)
	put(t, s, "T", 0, 150, 30, 0) // new entries after the cut
	checkReads(t, s, "T", 0, 0, 180)

	// min to 100: the run [0,127] stays, its entries below 100 are gone.
	if n, err := s.CorrectMin(100 * 100); err != nil || n != 1 {
		t.Fatalf("CorrectMin = %d %v", n, err)
	}
	if _, ok, _ := s.Entry("T", 0, 99); ok {
		t.Fatal("an entry below the min is still found")
	}
	checkReads(t, s, "T", 0, 100, 180)
	if es, _ := s.Entries("T", 0, 0, 5); len(es) != 5 || es[0].Offset != 100 {
		t.Fatalf("a read below the min: %+v", es)
	}
	// min to 130: the run [0,127] goes whole.
	if _, err := s.CorrectMin(130 * 100); err != nil {
		t.Fatal(err)
	}
	if got := runKeys(t, s, "T", 0); got[0][0] != 128 {
		t.Fatalf("runs after the second min move %v", got)
	}
	checkReads(t, s, "T", 0, 130, 180)
	// 50 entries left: DeleteQueues takes the small-queue path.
	if err := s.DeleteQueues([]QueueID{{"T", 0}}); err != nil {
		t.Fatal(err)
	}
	if got := runKeys(t, s, "T", 0); len(got) != 0 {
		t.Fatalf("runs left after delete %v", got)
	}
}
