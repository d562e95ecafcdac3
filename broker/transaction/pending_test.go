package transaction

import (
	"context"
	"testing"
	"time"
)

// TestPendingHalf: the half messages still waiting for their END are
// counted by real topic, each transaction once: six sent, two committed,
// two rolled back (sendMixed leaves every third pending), then a check
// round re-appends the pending ones (copies of the same transactions), and
// a restarted service counts the same.
func TestPendingHalf(t *testing.T) {
	f := newFixture(t, nil)
	pending := f.sendMixed("p", 6)
	if len(pending) != 2 {
		t.Fatalf("%d pending, want 2", len(pending))
	}
	count := func(svc *Service) int64 {
		t.Helper()
		got, err := svc.PendingHalf(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 1 {
			t.Fatalf("pending by topic %v, want only %s", got, testTopic)
		}
		return got[testTopic]
	}
	if n := count(f.svc); n != 2 {
		t.Fatalf("pending %d, want 2", n)
	}
	// Past the transaction timeout a check round checks them: each is
	// re-appended to the half queue.
	f.clk.Advance(10 * time.Second)
	if reqs := f.check(f.svc); len(reqs) != 2 {
		t.Fatalf("%d checks, want 2", len(reqs))
	}
	if n := count(f.svc); n != 2 {
		t.Fatalf("pending after the check round %d, want 2", n)
	}
	if n := count(f.newService()); n != 2 {
		t.Fatalf("pending after a restart %d, want 2", n)
	}
	// A limit bounds what is read.
	got, err := f.svc.PendingHalf(context.Background(), 1)
	if err != nil || got[testTopic] > 1 {
		t.Fatalf("limit 1: %v %v", got, err)
	}
}
