package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestReadRecords: records read in spans (ReadRecords) are the records
// ReadRecord reads one by one, across segment boundaries and with other
// topics' records between them; an entry that does not point at a whole
// record of its own gets an error, and the walk goes on.
func TestReadRecords(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CommitLog.FileSize = 64 << 10
	s := openStore(t, cfg)
	defer s.Close()
	ctx := context.Background()
	for i := range 300 {
		if _, err := s.PutMessage(ctx, msg("J", 0, fmt.Sprintf("j-%d", i), nil)); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 { // another topic in between, sometimes large
			if _, err := s.PutMessage(ctx, msg("Other", 0, fmt.Sprintf("%0*d", 100+(i%3)*3000, i), nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitDispatched(t, s, "J", 0, 300)
	entries, err := s.ConsumeQueue().Entries("J", 0, 0, 300)
	if err != nil || len(entries) != 300 {
		t.Fatalf("%d entries, %v", len(entries), err)
	}
	bad := entries[5]
	bad.CommitLogOffset++ // inside a record
	entries = append(entries, bad)
	seen := 0
	err = s.ReadRecords(entries, func(i int, rec []byte, rerr error) error {
		seen++
		if i == len(entries)-1 {
			if rerr == nil {
				t.Errorf("an entry inside a record read as %d bytes", len(rec))
			}
			return nil
		}
		if rerr != nil {
			t.Fatalf("entry %d: %v", i, rerr)
		}
		want, err := s.ReadRecord(entries[i].CommitLogOffset)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec, want) {
			t.Fatalf("entry %d: the span's bytes differ from ReadRecord's", i)
		}
		return nil
	})
	if err != nil || seen != len(entries) {
		t.Fatalf("walked %d of %d entries: %v", seen, len(entries), err)
	}
	stop := errors.New("stop")
	if err := s.ReadRecords(entries, func(i int, _ []byte, _ error) error {
		if i == 3 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) {
		t.Fatalf("fn's error: %v", err)
	}
}
