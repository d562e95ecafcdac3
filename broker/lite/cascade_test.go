package lite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/lite"
	"github.com/rmqgo/rmq/broker/lite/registry"
	"github.com/rmqgo/rmq/broker/store"
	"github.com/rmqgo/rmq/pkg/message"
)

// TestSweepCleansGroupState: a sweep that deletes many lite topics drops
// the offsets, pending resets and subscriptions of exactly those, for
// every group, whichever way each structure is cleaned (listing its lmqs
// when it holds fewer than were deleted, looking each deleted name up
// otherwise), and keeps those of the lite topics that live on.
func TestSweepCleansGroupState(t *testing.T) {
	for _, tc := range []struct {
		name               string
		expiring, kept, by int // lite topics under P (expire) and N (never), subscribed and with offsets per parent
	}{
		{"structures smaller than the deletion", 300, 30, 10},
		{"structures larger than the deletion", 5, 400, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newStoreRig(t, storeRigOptions{
				parents: map[string]string{"P": "1", "N": "-1"},
				groups:  map[string]map[string]string{"gp": {"lite.bind.topic": "P"}, "gn": {"lite.bind.topic": "N"}},
				tune:    func(sc *store.Config) { sc.CommitLog.FileSize = 16 << 20 },
			})
			st, svc := r.st, r.svc
			lmq := func(parent string, i int) string { return fmt.Sprintf("%%LMQ%%$%s$l%d", parent, i) }
			for parent, n := range map[string]int{"P": tc.expiring, "N": tc.kept} {
				for i := 0; i < n; i++ {
					l := fmt.Sprintf("l%d", i)
					m := &message.Message{Topic: parent, Body: []byte("x"), BornTimestamp: 1, Properties: map[string]string{
						message.PropertyLiteTopic: l, message.PropertyInnerMultiDispatch: lmq(parent, i),
					}}
					if _, err := st.PutMessage(context.Background(), m); err != nil {
						t.Fatal(err)
					}
				}
			}
			r.waitDispatched()
			for parent, g := range map[string]string{"P": "gp", "N": "gn"} {
				var names []string
				for i := 0; i < tc.by; i++ {
					names = append(names, lmq(parent, i))
					svc.Offsets.Commit(g, lmq(parent, i), 1)
					svc.Offsets.Commit(lite.ToolsConsumerGroup, lmq(parent, i), 1)
					svc.Offsets.SetReset(g, lmq(parent, i), 0)
				}
				if err := svc.Registry.AddPartial(registry.ClientKey{ClientID: "c-" + g, Group: g}, parent, names, nil); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(5 * time.Millisecond) // past the 1 ms expiration of P's lite topics
			res, err := svc.Lifecycle.Sweep()
			if err != nil || res.Deleted != tc.expiring {
				t.Fatalf("sweep %+v %v, want %d deleted", res, err, tc.expiring)
			}
			for i := 0; i < tc.by; i++ {
				gone, kept := lmq("P", i), lmq("N", i)
				if svc.Offsets.Committed("gp", gone) != -1 || svc.Offsets.Committed(lite.ToolsConsumerGroup, gone) != -1 || svc.Offsets.HasReset("gp", gone) {
					t.Fatalf("%s kept an offset or reset", gone)
				}
				if svc.Registry.Subscribed(registry.ClientKey{ClientID: "c-gp", Group: "gp"}, gone) {
					t.Fatalf("%s kept its subscription", gone)
				}
				if svc.Offsets.Committed("gn", kept) != 1 || svc.Offsets.Committed(lite.ToolsConsumerGroup, kept) != 1 || !svc.Offsets.HasReset("gn", kept) {
					t.Fatalf("%s lost an offset or reset", kept)
				}
				if !svc.Registry.Subscribed(registry.ClientKey{ClientID: "c-gn", Group: "gn"}, kept) {
					t.Fatalf("%s lost its subscription", kept)
				}
			}
			if n := svc.Registry.Active(); n != int64(tc.by) {
				t.Fatalf("%d subscriptions left, want %d", n, tc.by)
			}
		})
	}
}
