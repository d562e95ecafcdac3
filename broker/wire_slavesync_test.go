package broker

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/internal/testutil/fakens"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Delay delivery writes to the CommitLog on its own: a classic slave,
// whose CommitLog is its master's copy, does not run it (nor transaction
// checks or pop revive); a master delivers.
func TestDelayDeliveryRunsOnMastersOnly(t *testing.T) {
	for _, tt := range []struct {
		name    string
		slave   bool
		deliver bool
	}{{"master", false, true}, {"slave", true, false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := fakens.Start(t)
			cfg := testConfig(t, t.TempDir(), ns.Addr())
			cfg.MessageDelayLevel = "1s 5s"
			if tt.slave {
				cfg.BrokerRole, cfg.BrokerID = config.RoleSlave, 1
			}
			b, err := New(cfg, nil, WithRegisterTiming(time.Hour, time.Hour, time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = b.Shutdown(context.Background()) }()
			if got := b.runsMasterServices(); got != tt.deliver {
				t.Fatalf("runsMasterServices %v", got)
			}
			// A delay-level message as the send path parks it (level 1).
			m := &message.Message{Topic: protocol.ScheduleTopic, QueueID: 0, Body: []byte("later"),
				BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:50000")}
			m.SetProperty(message.PropertyRealTopic, "DelayedT")
			m.SetProperty(message.PropertyRealQueueID, "0")
			m.SetProperty(message.PropertyDelayTimeLevel, "1")
			if _, err := b.Store().PutMessage(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(3 * time.Second)
			for b.Store().MaxOffset("DelayedT", 0) == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if got := b.Store().MaxOffset("DelayedT", 0) > 0; got != tt.deliver {
				t.Fatalf("delivered: %v, want %v", got, tt.deliver)
			}
		})
	}
}
