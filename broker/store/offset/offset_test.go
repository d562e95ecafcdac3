package offset

import (
	"slices"
	"testing"

	"github.com/rmqgo/rmq/broker/store/kv"
	"github.com/rmqgo/rmq/broker/store/kv/kvtest"
)

// openAt opens the kv database in dir and the offset store over it.
func openAt(t *testing.T, dir string) (*kv.DB, *Store) {
	t.Helper()
	db := kvtest.Open(t, dir)
	s, err := Open(db, nil)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db, s
}

func TestCommitFlushReload(t *testing.T) {
	dir := t.TempDir()
	db, s := openAt(t, dir)
	s.Commit(Key{"g1", "T", 0}, 10)
	s.Commit(Key{"g1", "T", 1}, 11)
	s.Commit(Key{"g2", "%RETRY%g2", 0}, 3)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Delete(Key{"g1", "T", 1})
	s.Commit(Key{"g1", "T", 0}, 12)
	if n := s.DeleteWhere(func(k Key) bool { return k.Group == "g2" }); n != 1 {
		t.Fatalf("DeleteWhere = %d", n)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db2, s2 := openAt(t, dir)
	defer db2.Close()
	if v, ok := s2.Get(Key{"g1", "T", 0}); !ok || v != 12 {
		t.Fatalf("g1/T/0 = %d %v", v, ok)
	}
	if _, ok := s2.Get(Key{"g1", "T", 1}); ok {
		t.Fatal("deleted offset came back")
	}
	if _, ok := s2.Get(Key{"g2", "%RETRY%g2", 0}); ok {
		t.Fatal("deleted group offset came back")
	}
	// The per-group counts (Delete's shortcut) are rebuilt at open and
	// follow commits, advances and deletes.
	if s2.groups["g1"] != 1 || s2.groups["g2"] != 0 {
		t.Fatalf("group counts after reload %v", s2.groups)
	}
	s2.Advance(Key{"g2", "T", 0}, 5)
	s2.Advance(Key{"g2", "T", 0}, 6)
	s2.Commit(Key{"g2", "T", 1}, 1)
	if s2.groups["g2"] != 2 {
		t.Fatalf("g2 count %d", s2.groups["g2"])
	}
	s2.Delete(Key{"g2", "T", 0})
	s2.Delete(Key{"g2", "T", 0})
	s2.Delete(Key{"g3", "T", 0})
	if v, ok := s2.Get(Key{"g2", "T", 1}); !ok || v != 1 || s2.groups["g2"] != 1 {
		t.Fatalf("after deletes: %d %v, counts %v", v, ok, s2.groups)
	}
	s2.DeleteWhere(func(k Key) bool { return k.Group == "g2" })
	if _, ok := s2.groups["g2"]; ok {
		t.Fatalf("counts %v", s2.groups)
	}
}

// TestDeleteQueues: the batch delete removes exactly the (group, topic,
// qid) offsets named, durably, and keeps the group counts.
func TestDeleteQueues(t *testing.T) {
	dir := t.TempDir()
	db, s := openAt(t, dir)
	for _, g := range []string{"g1", "g2"} {
		for _, tp := range []string{"a", "b", "c"} {
			s.Commit(Key{g, tp, 0}, 1)
		}
	}
	s.Commit(Key{"g1", "a", 1}, 1)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := s.DeleteQueues([]string{"g1", "g2", "g3"}, []string{"a", "b", "x"}, 0); n != 4 {
		t.Fatalf("DeleteQueues = %d, want 4", n)
	}
	if s.groups["g1"] != 2 || s.groups["g2"] != 1 {
		t.Fatalf("counts %v", s.groups)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db2, s2 := openAt(t, dir)
	defer db2.Close()
	for _, tc := range []struct {
		k    Key
		want bool
	}{
		{Key{"g1", "a", 0}, false}, {Key{"g1", "b", 0}, false}, {Key{"g2", "a", 0}, false}, {Key{"g2", "b", 0}, false},
		{Key{"g1", "c", 0}, true}, {Key{"g2", "c", 0}, true}, {Key{"g1", "a", 1}, true},
	} {
		if _, ok := s2.Get(tc.k); ok != tc.want {
			t.Errorf("%v present %v after reload, want %v", tc.k, ok, tc.want)
		}
	}
	// More pairs to look up than offsets held: the walk of the table.
	many := []string{"c", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "a"}
	if n := s2.DeleteQueues([]string{"g1", "g1"}, many, 0); n != 1 {
		t.Fatalf("DeleteQueues by walk = %d, want 1", n)
	}
	if _, ok := s2.Get(Key{"g1", "c", 0}); ok {
		t.Fatal("g1/c/0 survived the walk")
	}
	if _, ok := s2.Get(Key{"g2", "c", 0}); !ok {
		t.Fatal("the walk deleted another group's offset")
	}
	if _, ok := s2.Get(Key{"g1", "a", 1}); !ok {
		t.Fatal("the walk deleted another queue's offset")
	}
	if s2.groups["g1"] != 1 || s2.groups["g2"] != 1 {
		t.Fatalf("counts after the walk %v", s2.groups)
	}
}

func TestTopicGroups(t *testing.T) {
	db, s := openAt(t, t.TempDir())
	defer db.Close()
	s.Commit(Key{Group: "g1", Topic: "T", QueueID: 0}, 1)
	s.Commit(Key{Group: "g1", Topic: "T", QueueID: 1}, 2)
	s.Commit(Key{Group: "g2", Topic: "T", QueueID: 0}, 3)
	s.Commit(Key{Group: "g3", Topic: "U", QueueID: 0}, 4)
	got := s.TopicGroups("T")
	slices.Sort(got)
	if !slices.Equal(got, []string{"g1", "g2"}) {
		t.Fatalf("TopicGroups(T) = %v", got)
	}
	if got := s.TopicGroups("none"); got != nil {
		t.Fatalf("TopicGroups(none) = %v", got)
	}
}
