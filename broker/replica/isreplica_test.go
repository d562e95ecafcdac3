package replica

import (
	"context"
	"testing"
	"time"

	"github.com/rmqgo/rmq/remoting/code"
)

// TestIsReplica: the master admits HA slaves only by ids the controller
// lists for its set: a registered replica outside the SyncStateSet is
// looked up at the controller, a stranger's id is not listed, and without
// a controller an unknown id is refused (the error) while set members
// stay known.
func TestIsReplica(t *testing.T) {
	f := newFakeController("c1:9868")
	a, b := &fakeNode{addr: "10.0.0.1:10911"}, &fakeNode{addr: "10.0.0.2:10911"}
	ma := startManager(t, f, a, testConfig(t.TempDir(), nil))
	waitOps(t, a, "fenced=true", "master@1", "fenced=false")
	startManager(t, f, b, testConfig(t.TempDir(), nil))
	waitOps(t, b, "fenced=true", "slave@1", "fenced=false")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		id   int64
		want bool
	}{{1, true}, {2, true}, {3, false}, {9, false}, {0, false}, {-1, false}} {
		got, err := ma.IsReplica(ctx, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("IsReplica(%d) = %v, %v; want %v", tc.id, got, err, tc.want)
		}
	}
	f.mu.Lock()
	asked := 0
	for _, c := range f.calls {
		if c == code.ControllerGetSyncStateData {
			asked++
		}
	}
	f.down["c1:9868"] = true
	f.mu.Unlock()
	if asked == 0 {
		t.Fatal("no id was looked up at the controller")
	}
	if ok, err := ma.IsReplica(ctx, 1); !ok || err != nil {
		t.Errorf("a SyncStateSet member without a controller: %v, %v", ok, err)
	}
	if ok, err := ma.IsReplica(ctx, 2); ok || err == nil {
		t.Errorf("an id outside the set without a controller: %v, %v; want refused with an error", ok, err)
	}
}
