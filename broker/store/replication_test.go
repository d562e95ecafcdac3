package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
)

// putT puts message seq ("body-<seq>") on queue T-0.
func putT(s *Store, seq int) (PutResult, error) {
	return s.PutMessage(context.Background(), msg("T", 0, fmt.Sprintf("body-%d", seq), nil))
}

// TestTruncateTo: the log and the consume queues lose everything from the
// offset on, and the next put continues the queue offsets from there.
func TestTruncateTo(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Close()
	ctx := context.Background()
	cut := mustPut(t, s, putT, 0, 10, "to truncate")[5].res.End // after the sixth message
	waitDispatched(t, s, "T", 0, 10)
	if err := s.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if got := s.CommitLog().MaxOffset(); got != cut {
		t.Fatalf("log ends at %d, want %d", got, cut)
	}
	if got := s.MaxOffset("T", 0); got != 6 {
		t.Fatalf("queue max %d after truncation, want 6", got)
	}
	res, err := s.PutMessage(ctx, msg("T", 0, "after", nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.QueueOffset != 6 {
		t.Fatalf("next queue offset %d, want 6", res.QueueOffset)
	}
}

// TestCutPartialTail: a replicated frame that ended inside a record leaves
// an incomplete tail, which is cut back to the last whole record.
func TestCutPartialTail(t *testing.T) {
	src := openStore(t, testConfig(t.TempDir()))
	defer src.Close()
	dst := openStore(t, testConfig(t.TempDir()))
	defer dst.Close()
	ctx := context.Background()
	// The cut falls inside the third record, just after the second.
	second := mustPut(t, src, putT, 0, 3, "to replicate")[1].res.End
	cut := second + 10
	buf, err := src.CommitLog().Read(0, int(cut))
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.CommitLog().AppendRaw(ctx, 0, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	buf.Release()
	end, err := dst.CutPartialTail()
	if err != nil {
		t.Fatal(err)
	}
	if end != second || dst.CommitLog().MaxOffset() != second {
		t.Fatalf("cut to %d (log end %d), want %d", end, dst.CommitLog().MaxOffset(), second)
	}
	if end, err := dst.CutPartialTail(); err != nil || end != second {
		t.Fatalf("second cut: %d, %v", end, err)
	}
}

// TestDispatchLimit: consume queues stop at the limit and catch up when it
// moves.
func TestDispatchLimit(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	defer s.Close()
	ctx := context.Background()
	var limit int64
	var first PutResult
	for i := range 4 {
		res, err := s.PutMessage(ctx, msg("T", 0, fmt.Sprintf("body-%d", i), nil))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = res
		}
	}
	waitDispatched(t, s, "T", 0, 4)
	limit = first.End
	s.SetDispatchLimit(func() int64 { return limit })
	for i := range 4 {
		if _, err := s.PutMessage(ctx, msg("T", 0, fmt.Sprintf("more-%d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if got := s.MaxOffset("T", 0); got != 4 {
		t.Fatalf("dispatched past the limit: queue max %d", got)
	}
	s.SetDispatchLimit(nil)
	waitDispatched(t, s, "T", 0, 8)
}

// TestMinOffsetHook: deleting old CommitLog files reports the new min.
func TestMinOffsetHook(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.CommitLog.FileSize = 64 << 10
	cfg.CommitLog.DiskSpaceCleanForciblyRatio = 0.0001 // every run deletes
	s := openStore(t, cfg)
	defer s.Close()
	got := make(chan int64, 8)
	s.SetMinOffsetHook(func(min int64) { got <- min })
	ctx := context.Background()
	for i := range 300 {
		if _, err := s.PutMessage(ctx, msg("T", 0, fmt.Sprintf("%0800d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CommitLog().Flush(); err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, s, "T", 0, 300)
	if _, err := s.CommitLog().RunRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		select {
		case min := <-got:
			if min <= 0 || min != s.CommitLog().MinOffset() {
				return fmt.Errorf("hook saw %d, log min %d", min, s.CommitLog().MinOffset())
			}
			return nil
		default:
			return fmt.Errorf("no hook call (log min %d)", s.CommitLog().MinOffset())
		}
	})
}
