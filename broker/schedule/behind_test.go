package schedule

import (
	"fmt"
	"testing"
	"time"

	"github.com/rmqgo/rmq/internal/testutil"
)

// TestBehind: before the service runs, stored timer messages are the
// enqueue lag; once indexed they are counted in the snapshot bucket of
// their due time; a timer already due and not delivered (service stopped)
// is the dequeue lag.
func TestBehind(t *testing.T) {
	r := newRig(t, "", nil)
	bounds := []time.Duration{5 * time.Second, time.Minute, time.Hour}
	r.sendDelayed("T", 0, 3, after("30000"))   // due in 30 s: bucket 1
	r.sendDelayed("T", 3, 5, after("1800000")) // in 30 min: bucket 2
	r.sendDelayed("T", 5, 6, after("7200000")) // in 2 h: past the bounds
	var b Behind
	testutil.Eventually(t, 10*time.Second, func() error { // the store dispatches asynchronously
		if b = r.svc.Behind(time.Now(), bounds, 1000); b.EnqueueLag != 6 || b.EnqueueLatencyMs < 0 || b.DequeueLag != 0 {
			return fmt.Errorf("before indexing: %+v, want enqueue lag 6", b)
		}
		return nil
	})
	r.svc.Start()
	r.waitStats(func(s Stats) bool { return s.Indexed >= 6 }, 10*time.Second)
	b = r.svc.Behind(time.Now(), bounds, 1000)
	if b.EnqueueLag != 0 || b.DequeueLag != 0 || b.Upcoming[0] != 0 || b.Upcoming[1] != 3 || b.Upcoming[2] != 2 {
		t.Fatalf("indexed: %+v, want upcoming [0 3 2]", b)
	}
	// An hour and a half later (as seen by Behind) all but the 2 h timer
	// are due and, the service not having run then, still pending.
	later := time.Now().Add(90 * time.Minute)
	b = r.svc.Behind(later, bounds, 1000)
	if b.DequeueLag != 5 || b.DequeueLatencyMs < 60*60*1000 || b.Upcoming[0] != 0 || b.Upcoming[1] != 0 || b.Upcoming[2] != 1 {
		t.Fatalf("90 min later: %+v, want dequeue lag 5 (oldest due ~89.5 min ago), the 2 h timer within the hour", b)
	}
	if b = r.svc.Behind(later, bounds, 2); b.DequeueLag != 2 {
		t.Fatalf("limit 2: %+v", b)
	}
}
