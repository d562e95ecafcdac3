package index

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
)

func TestAddQuery(t *testing.T) {
	db, err := kv.Open(kv.DefaultConfig(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := db.NewBatch()
	for i := int64(0); i < 10; i++ {
		Add(b, "T", KindKey, "order-1", 1000+i, i*100)
	}
	Add(b, "T", KindKey, "order-10", 1005, 5000) // key with the first as prefix
	Add(b, "U", KindKey, "order-1", 1005, 6000)  // other topic
	Add(b, "T", KindUniqKey, "order-1", 1005, 7000)
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	hits, err := Query(db, "T", KindKey, "order-1", 1002, 1006, 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 5 || hits[0].StoreTime != 1006 || hits[4].StoreTime != 1002 {
		t.Fatalf("hits %+v", hits)
	}
	if hits, _ := Query(db, "T", KindKey, "order-1", 0, 1<<62, 3); len(hits) != 3 || hits[0].PhyOffset != 900 {
		t.Fatalf("max hits %+v", hits)
	}
	if hits, _ := Query(db, "T", KindUniqKey, "order-1", 0, 1<<62, 3); len(hits) != 1 || hits[0].PhyOffset != 7000 {
		t.Fatalf("uniq %+v", hits)
	}
}
