package store

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/store/index"
)

// TestIndexPrunedWithCommitLog: when retention deletes CommitLog files,
// the key index's hours before the oldest remaining message go with them
// (one range delete), and the hours after stay.
func TestIndexPrunedWithCommitLog(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CommitLog.FileSize = 64 << 10
	cfg.CommitLog.DiskSpaceCleanForciblyRatio = 0.0001 // every round deletes all but the last file
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	cfg.CommitLog.Clock = func() time.Time { return *clock.Load() }
	s := openStore(t, cfg)
	defer s.Close()
	ctx := context.Background()
	body := fmt.Sprintf("%0800d", 0)
	put := func(key string, n int) {
		t.Helper()
		for i := range n {
			if _, err := s.PutMessage(ctx, msg("T", 0, body, map[string]string{"KEYS": key, "UNIQ_KEY": fmt.Sprintf("%s%04X", key, i)})); err != nil {
				t.Fatal(err)
			}
		}
	}
	put("early", 100) // hour 10, fills more than the first file
	later := now.Add(3 * time.Hour)
	clock.Store(&later)
	put("late", 100) // hour 13
	waitDispatched(t, s, "T", 0, 200)
	count := func(key string) int {
		t.Helper()
		hits, err := index.Query(s.db.DB, "T", index.KindKey, key, 0, math.MaxInt64, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if e, l := count("early"), count("late"); e != 100 || l != 100 {
		t.Fatalf("before retention: %d early and %d late entries, want 100 each", e, l)
	}
	if err := s.CommitLog().Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitLog().RunRetention(later); err != nil {
		t.Fatal(err)
	}
	if n := len(s.CommitLog().SegmentBases()); n != 1 {
		t.Fatalf("%d CommitLog files left, want 1", n)
	}
	if e, l := count("early"), count("late"); e != 0 || l != 100 {
		t.Fatalf("after retention: %d early and %d late entries, want 0 and 100", e, l)
	}
}
