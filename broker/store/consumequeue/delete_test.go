package consumequeue

import (
	"fmt"
	"testing"
)

// TestMarkedDeletion walks the three steps of a large deletion: mark,
// delete the keys by runs, drop what is still marked. A queue unmarked by
// the caller, or given an entry after the mark, stays with its entries;
// a shard mostly dropped is rebuilt and still answers for its survivors.
func TestMarkedDeletion(t *testing.T) {
	s := openTest(t, t.TempDir())
	name := func(i int) string { return fmt.Sprintf("q%04d", i) }
	const n = 1000
	for i := 0; i < n; i++ {
		put(t, s, name(i), 0, 0, 1, int64(i)*1000)
	}
	put(t, s, "other", 0, 0, 1, 5_000_000)
	mark := s.MarkWhere(func(id QueueID, _ QueueState) bool { return id.Topic != "other" }, nil)
	if _, marked, ok := s.StateMark(QueueID{"other", 0}, mark); !ok || marked {
		t.Fatalf("other: marked %v ok %v", marked, ok)
	}
	// q0005 gets a message after the mark; q0007 is kept by the caller.
	put(t, s, name(5), 0, 1, 1, 6_000_000)
	s.Unmark(QueueID{name(7), 0}, mark)
	for _, i := range []int{5, 7, 9} {
		_, marked, _ := s.StateMark(QueueID{name(i), 0}, mark)
		if want := i == 9; marked != want {
			t.Fatalf("%s: marked %v, want %v", name(i), marked, want)
		}
	}
	// Keys: every q except 5 and 7, in three runs.
	var runs []KeyRun
	var run KeyRun
	for i := 0; i < n; i++ {
		if i == 5 || i == 7 {
			if run.N > 0 {
				runs, run = append(runs, run), KeyRun{}
			}
			continue
		}
		if run.N == 0 {
			run.First = name(i)
		}
		run.Last = name(i)
		run.N++
	}
	runs = append(runs, run)
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	if err := s.DeleteRunKeys(runs); err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for k := 0; k < s.ShardCount(); k++ {
		dropped += len(s.DeleteMarked(k, mark, nil))
	}
	if dropped != n-2 {
		t.Fatalf("dropped %d, want %d", dropped, n-2)
	}
	for i := 0; i < n; i++ {
		_, ok := s.State(name(i), 0)
		_, has, err := s.Entry(name(i), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		stay := i == 5 || i == 7
		if ok != stay || has != stay {
			t.Fatalf("%s: in table %v, entry %v, want %v", name(i), ok, has, stay)
		}
	}
	if st, ok := s.State(name(5), 0); !ok || st.Max != 2 {
		t.Fatalf("q0005 after its late message: %+v", st)
	}
	if _, ok := s.State("other", 0); !ok || s.QueueCount() != 3 {
		t.Fatalf("queues left %d", s.QueueCount())
	}
	// A later mark does not see the old one.
	if got := len(s.DeleteMarked(s.ShardOf(QueueID{"other", 0}), mark+1, nil)); got != 0 {
		t.Fatalf("dropped %d with an unused mark", got)
	}
}
