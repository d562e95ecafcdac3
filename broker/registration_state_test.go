package broker

import (
	"log/slog"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/mapping"
	"github.com/rmqgo/rmq/broker/topic"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// TestRegistrationStateVersionNotBelowEpoch: in controller mode the
// stateVersion a broker registers with is at least its epoch, whatever
// the topic table's version holds. A new master whose table still carries
// the old master's epoch (a copy answered after the election, or a round
// between "became master" and the version bump) would otherwise tie with
// the resumed old master, and a nameserver would give brokerId 0 to the
// one that registered last (issue 15: TestHAScenarioMasterSIGSTOP).
func TestRegistrationStateVersionNotBelowEpoch(t *testing.T) {
	tests := []struct {
		name      string
		epochs    []int32 // appended to the replica's epoch cache (it holds epoch 1)
		tableSV   int64   // stateVersion of the topic table's version
		replica   bool    // controller mode
		wantSV    int64
		wantCount int64 // the table's counter is kept
	}{
		{name: "table behind the epoch (new master)", epochs: []int32{2}, tableSV: 1, replica: true, wantSV: 2, wantCount: 7},
		{name: "table at the epoch", epochs: []int32{2}, tableSV: 2, replica: true, wantSV: 2, wantCount: 7},
		{name: "slave holding the master's newer version", tableSV: 2, replica: true, wantSV: 2, wantCount: 7},
		{name: "old master keeps its old epoch", tableSV: 1, replica: true, wantSV: 1, wantCount: 7},
		{name: "classic mode: the table's version", tableSV: 3, wantSV: 3, wantCount: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, st, ep := openEpochStore(t)
			for i, e := range tt.epochs {
				if err := ep.Append(e, int64(i+1)); err != nil {
					t.Fatal(err)
				}
			}
			cfg := config.Default(config.Host{Hostname: "broker-a", IP: "127.0.0.1", Home: dir})
			b := &Broker{cfg: config.NewHolder(cfg, false), maps: &mapping.None{}}
			tm, err := topic.New(topic.Options{Config: b.cfg.Get, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			b.topics = tm
			if tt.replica {
				b.replica.Store(&replicaNode{b: b, st: st, ep: ep, log: slog.New(slog.DiscardHandler)})
			}
			table, _ := tm.Snapshot()
			dv := protocol.DataVersion{Timestamp: 1000, Counter: 7, StateVersion: tt.tableSV}
			if _, err := tm.ReplaceAll(table, dv); err != nil {
				t.Fatal(err)
			}
			got := registrationSource{b}.Body().TopicConfigSerializeWrapper.DataVersion
			if got.StateVersion != tt.wantSV || got.Counter != tt.wantCount {
				t.Fatalf("registered dataVersion %+v, want stateVersion %d counter %d", got, tt.wantSV, tt.wantCount)
			}
		})
	}
}
