package consumequeue

import (
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestTableMatchesMap drives a table and a Go map with the same random
// sets, deletes and backward sweeps, and checks that they agree after each
// step, that every rec has its slot and that names handed out earlier stay
// unchanged after the arena is compacted.
func TestTableMatchesMap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keys     int // distinct topics drawn from
		qids     int32
		steps    int
		delShare int // percent of steps that delete
	}{
		{"small dense", 20, 3, 5000, 40},
		{"grow then shrink", 3000, 1, 20000, 50},
		{"mostly inserts", 20000, 2, 30000, 10},
		{"empty names", 2, 2, 200, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.keys)))
			tb := newTable(maphash.MakeSeed())
			model := map[QueueID]QueueState{}
			type held struct {
				s, want string
			}
			var kept []held
			randID := func() QueueID {
				k := rng.IntN(tc.keys)
				topic := "%LMQ%$p$lite-" + strconv.Itoa(k)
				if tc.keys == 2 && k == 0 {
					topic = ""
				}
				return QueueID{Topic: topic, QueueID: rng.Int32N(tc.qids)}
			}
			for step := 0; step < tc.steps; step++ {
				id := randID()
				switch r := rng.IntN(100); {
				case r < tc.delShare:
					_, had := model[id]
					if got := tb.Delete(id); got != had {
						t.Fatalf("step %d: Delete(%v) = %v, want %v", step, id, got, had)
					}
					delete(model, id)
				case r < tc.delShare+2:
					// A backward sweep deleting every rec whose Max is odd.
					for j := tb.Len() - 1; j >= 0; j-- {
						if tb.recs[j].max%2 == 1 {
							delete(model, tb.id(j))
							tb.DeleteRec(j)
						}
					}
				default:
					st := QueueState{Min: rng.Int64N(10), Max: rng.Int64N(1000), LastPhyOffset: int64(step), LastStoreTime: int64(step) * 3, sweep: rng.Uint32N(3)}
					tb.Set(id, st)
					model[id] = st
				}
				if step%50 == 0 && tb.Len() > 0 {
					j := rng.IntN(tb.Len())
					n := tb.name(j)
					kept = append(kept, held{n, string([]byte(n))})
				}
				if tb.Len() != len(model) {
					t.Fatalf("step %d: Len %d, model %d", step, tb.Len(), len(model))
				}
				if step%97 == 0 || step == tc.steps-1 {
					check(t, &tb, model)
				}
			}
			for _, h := range kept {
				if h.s != h.want {
					t.Fatalf("a name handed out changed: %q, was %q", h.s, h.want)
				}
			}
		})
	}
}

func check(t *testing.T, tb *table, model map[QueueID]QueueState) {
	t.Helper()
	for id, want := range model {
		got, ok := tb.Get(id)
		if !ok || got != want {
			t.Fatalf("Get(%v) = %+v, %v; want %+v", id, got, ok, want)
		}
	}
	seen := 0
	for j := range tb.recs {
		id := tb.id(j)
		if _, ok := model[id]; !ok {
			t.Fatalf("table holds %v, model does not", id)
		}
		if s, ok, h := tb.find(id); !ok || slotRec(tb.slots[s]) != j || uint32(tb.slots[s]>>32) != h {
			t.Fatalf("rec %d (%v) has no slot pointing at it", j, id)
		}
		seen++
	}
	used := 0
	for _, v := range tb.slots {
		if v != 0 {
			used++
		}
	}
	if used != seen {
		t.Fatalf("%d slots used, %d recs", used, seen)
	}
	if _, ok := tb.Get(QueueID{Topic: "absent", QueueID: 0}); ok {
		t.Fatal("Get of an absent queue succeeded")
	}
}

// BenchmarkTableSet adds 64k LMQ names to an empty table.
func BenchmarkTableSet(b *testing.B) {
	names := make([]string, 1<<16)
	for i := range names {
		names[i] = "%LMQ%$LiteBenchParent$c" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		tb := newTable(maphash.MakeSeed())
		for _, n := range names {
			tb.Set(QueueID{Topic: n}, QueueState{Max: 1})
		}
	}
}
