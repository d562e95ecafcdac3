package index

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/rmqgo/rmq/broker/store/kv"
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

// A UNIQ_KEY as clients make it (32 upper-case hex digits) is kept in
// binary: shorter keys, the same hits, found together with the 'u' keys a
// store written before holds, newest first, to the millisecond at the
// range's edges.
func TestUniqKeyBinary(t *testing.T) {
	db := kvtest.Open(t, t.TempDir())
	defer db.Close()
	const h = hourMs
	const uk = "0A0B0C0D0E0F10111213141516171819"
	b := db.NewBatch()
	k, err := AddTo(b, nil, "T", KindUniqKey, uk, 10*h+5, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 4 + 1 + 1 + 1 + 16 + 4 + 8; len(k) != want || k[7] != kindUniqBin {
		t.Fatalf("binary key of %d bytes (kind %q), want %d", len(k), k[7], want)
	}
	AddTo(b, nil, "T", KindUniqKey, []byte(uk), 10*h+h-1, 200) // the hour's last ms
	AddTo(b, nil, "T", KindUniqKey, uk, 11*h, 300)
	AddTo(b, nil, "U", KindUniqKey, uk, 10*h+6, 999) // other topic
	// What a store written before binary keys holds: the string form.
	old := binary.BigEndian.AppendUint32([]byte{kv.PrefixIndex}, 10)
	old = append(old, "T"...)
	old = append(old, 0, KindUniqKey)
	old = append(old, uk...)
	old = append(old, 0)
	old = binary.BigEndian.AppendUint64(old, uint64(10*h+7))
	old = binary.BigEndian.AppendUint64(old, 150)
	if err := b.Set(old, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Not upper-case hex: kept as a string.
	k, _ = AddTo(b, nil, "T", KindUniqKey, "0a0b0c0d0e0f10111213141516171819", 10*h, 400)
	if k[7] != KindUniqKey {
		t.Fatalf("lower-case key kept as kind %q", k[7])
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	phys := func(hits []Hit) []int64 {
		var out []int64
		for _, h := range hits {
			out = append(out, h.PhyOffset)
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		key        string
		begin, end int64
		max        int
		want       []int64
	}{
		{"all", uk, 0, 1<<63 - 1, 32, []int64{300, 200, 150, 100}},
		{"max", uk, 0, 1<<63 - 1, 2, []int64{300, 200}},
		{"max inside an hour", uk, 0, 10*h + h - 1, 2, []int64{200, 150}},
		{"begin at an entry's ms", uk, 10*h + 5, 10*h + 6, 32, []int64{100}},
		{"end one ms before it", uk, 0, 10*h + 4, 32, nil},
		{"the hour's last ms", uk, 10*h + h - 1, 10*h + h - 1, 32, []int64{200}},
		{"old and binary kinds mixed", uk, 10*h + 5, 10*h + 7, 32, []int64{150, 100}},
		{"lower case", "0a0b0c0d0e0f10111213141516171819", 0, 1<<63 - 1, 32, []int64{400}},
	} {
		hits, err := Query(db.DB, "T", KindUniqKey, tc.key, tc.begin, tc.end, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if got := phys(hits); !slices.Equal(got, tc.want) {
			t.Errorf("%s: hits %v, want %v", tc.name, got, tc.want)
		}
	}
	hits, _ := Query(db.DB, "T", KindUniqKey, uk, 0, 1<<63-1, 32)
	if len(hits) != 4 || hits[0].StoreTime != 11*h || hits[1].StoreTime != 10*h+h-1 || hits[3].StoreTime != 10*h+5 {
		t.Fatalf("store times %+v", hits)
	}
}
