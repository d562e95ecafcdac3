package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/ha"
)

// TestMustWaitReplicas: only a SYNC_MASTER with inSyncReplicas > 1 waits
// (RocketMQ 5 semantics).
func TestMustWaitReplicas(t *testing.T) {
	for _, tc := range []struct {
		role config.BrokerRole
		isr  int
		want bool
	}{
		{config.RoleSyncMaster, 2, true},
		{config.RoleSyncMaster, 1, false},
		{config.RoleAsyncMaster, 2, false},
		{config.RoleSlave, 2, false},
	} {
		c := &config.Config{}
		c.BrokerRole, c.InSyncReplicas = tc.role, tc.isr
		if got := mustWaitReplicas(c); got != tc.want {
			t.Errorf("%s inSyncReplicas=%d: wait %v, want %v", tc.role, tc.isr, got, tc.want)
		}
		err := noReplicas{cfg: func() *config.Config { return c }}.WaitReplicas(context.Background(), 1)
		if tc.want != errors.Is(err, ha.ErrReplicaTimeout) {
			t.Errorf("%s inSyncReplicas=%d without an HA listener: %v", tc.role, tc.isr, err)
		}
	}
}
