package index

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv/kvtest"
)

func TestAddQueryDelete(t *testing.T) {
	db := kvtest.Open(t, t.TempDir())
	defer db.Close()
	const h = hourMs
	b := db.NewBatch()
	for i := int64(0); i < 10; i++ {
		Add(b, "T", KindKey, "order-1", 10*h+i*h/2, i*100) // spans 5 hours
	}
	Add(b, "T", KindKey, "order-10", 10*h, 5000) // key with the first as prefix
	Add(b, "U", KindKey, "order-1", 10*h, 6000)  // other topic
	Add(b, "T", KindUniqKey, "order-1", 10*h, 7000)
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	hits, err := Query(db.DB, "T", KindKey, "order-1", 10*h+h, 10*h+3*h, 32)
	if err != nil {
		t.Fatal(err)
	}
	// entries at 11h, 11.5h, 12h, 12.5h, 13h
	if len(hits) != 5 || hits[0].StoreTime != 13*h || hits[4].StoreTime != 11*h {
		t.Fatalf("hits %+v", hits)
	}
	if hits, _ := Query(db.DB, "T", KindKey, "order-1", 0, 100*h, 3); len(hits) != 3 || hits[0].PhyOffset != 900 {
		t.Fatalf("max hits %+v", hits)
	}
	if hits, _ := Query(db.DB, "T", KindUniqKey, "order-1", 0, 100*h, 3); len(hits) != 1 || hits[0].PhyOffset != 7000 {
		t.Fatalf("uniq %+v", hits)
	}
	// The range clients send without bounds: visits only hours with data.
	if hits, _ := Query(db.DB, "T", KindKey, "order-1", 0, 1<<63-1, 32); len(hits) != 10 {
		t.Fatalf("unbounded query %d hits", len(hits))
	}
	// An end whose hour does not fit 32 bits (it used to be truncated, here
	// to hour 5, before every entry).
	if hits, _ := Query(db.DB, "T", KindKey, "order-1", 0, (1<<32+5)*h, 32); len(hits) != 10 {
		t.Fatalf("query with a far end: %d hits", len(hits))
	}
	b = db.NewBatch()
	if err := DeleteBefore(b, 12*h+1); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if hits, _ := Query(db.DB, "T", KindKey, "order-1", 0, 100*h, 32); len(hits) != 6 || hits[5].StoreTime != 12*h {
		t.Fatalf("after delete %+v", hits)
	}
}
