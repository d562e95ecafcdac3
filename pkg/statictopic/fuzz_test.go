package statictopic

import (
	"github.com/rmqgo/rmq/pkg/protocol"
	"testing"
)

// FuzzDecodePlan: plan files come from disk (-mf), possibly written by the
// Java tool or by hand. Decoding and every check must fail cleanly, never
// panic; a decoded plan survives a round trip.
// Seeds: testdata/fuzz/FuzzDecodePlan.
func FuzzDecodePlan(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePlan(data)
		if err != nil {
			return
		}
		_, _, _ = CheckNameEpochNum(p.Topic, p.BrokerConfigMap)
		_, _ = CheckAll(p.Topic, p.BrokerConfigMap)
		_ = CheckPhysical(p.BrokerConfigMap)
		_, _, _ = Repair(p.Topic, p.BrokerConfigMap, Options{})
		_ = p.Undecided()
		_ = p.Leaders()
		for _, g := range p.Undecided() {
			_, _ = p.Decide(g, 7)
		}
		if _, err := PlanRemap(p.Topic, []string{"x"}, p.BrokerConfigMap, Options{}); err == nil {
			if _, err := DecodePlan(mustJSON(t, p)); err != nil {
				t.Fatalf("round trip: %v", err)
			}
		}
		_, _ = PlanCreate(p.Topic, 3, []string{"x", "y"}, p.BrokerConfigMap, Options{})
		_ = p.Complete([]string{"x", "z"})
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := protocol.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
