package send

import (
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/remoting/code"
)

// TestFencedSend: a controller-mode broker runs as SLAVE while fenced at
// startup (docs/replication.md); its sends must answer
// SERVICE_NOT_AVAILABLE, which producers retry on another broker, not the
// slave's SYSTEM_BUSY. Once unfenced as a slave it answers SYSTEM_BUSY
// again; a fenced master (lapsed lease) answers 14 too.
func TestFencedSend(t *testing.T) {
	for _, tc := range []struct {
		name   string
		role   config.BrokerRole
		fenced bool
		code   int32
		stored bool
	}{
		{"fenced at startup (slave role)", config.RoleSlave, true, code.ServiceNotAvailable, false},
		{"unfenced slave", config.RoleSlave, false, code.SystemBusy, false},
		{"fenced master", config.RoleSyncMaster, true, code.ServiceNotAvailable, false},
		{"unfenced master", config.RoleSyncMaster, false, code.Success, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *config.Config) { c.BrokerRole = tc.role })
			var fenced atomic.Bool
			fenced.Store(tc.fenced)
			f.p.d.Fenced = fenced.Load
			wantCode(t, f.call(t, sendV1("TopicTest", 0, basicProps, "b")), tc.code)
			wantCode(t, f.call(t, sendV2("TopicTest", 1, basicProps, "b")), tc.code)
			body := batchBody(t, 2, func(int) map[string]string { return nil })
			wantCode(t, f.call(t, batchReq("TopicTest", 2, body)), tc.code)
			if got := len(f.store.stored(t)) > 0; got != tc.stored {
				t.Fatalf("stored %v, want %v", got, tc.stored)
			}
		})
	}
}
