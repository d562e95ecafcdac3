package pull

import (
	"sync/atomic"
	"testing"

	"github.com/rmqgo/rmq/broker/config"
	"github.com/rmqgo/rmq/broker/subscription"
	"github.com/rmqgo/rmq/remoting/code"
)

func asSlave(readEnable bool) func(*config.Config) {
	return func(c *config.Config) {
		c.BrokerRole, c.BrokerID, c.SlaveReadEnable = config.RoleSlave, 1, readEnable
	}
}

// A slave without slaveReadEnable refuses pulls as Java's rejectRequest
// does: SYSTEM_BUSY, for PULL_MESSAGE and LITE_PULL_MESSAGE alike.
func TestSlaveWithoutSlaveReadEnableRejectsPulls(t *testing.T) {
	f := newFixture(t, fixtureOpt{mutate: asSlave(false)})
	f.put("T", 0, "a")
	for _, c := range []int32{code.PullMessage, code.LitePullMessage} {
		req := pullReq("T", 0, 0, "*")
		req.Code = c
		resp := f.pull(t, req)
		if resp.Code != code.SystemBusy || len(resp.Body) != 0 {
			t.Errorf("code %d: answer %d (%s), want SYSTEM_BUSY", c, resp.Code, resp.Remark)
		}
	}
}

// suggestWhichBrokerId and the slave's redirect to its master (Java's
// PullMessageProcessor, docs/operations.md).
func TestSuggestWhichBrokerID(t *testing.T) {
	const commitLogEnd = 1 << 40
	tests := []struct {
		name      string
		mutate    func(*config.Config)
		lagging   bool
		masterOff bool
		offset    int64 // 0: a message is there; 1: nothing new
		wantCode  int32
		want      int64
	}{
		{"master, slave reads off", nil, true, false, 0, code.Success, 0},
		{"master, slave reads on, in memory", func(c *config.Config) { c.SlaveReadEnable = true }, false, false, 0, code.Success, 2},
		{"master, slave reads on, lagging", func(c *config.Config) { c.SlaveReadEnable = true }, true, false, 0, code.Success, 3},
		{"slave, found, master online", asSlave(true), false, false, 0, code.Success, 0},
		{"slave, nothing new, master online", asSlave(true), false, false, 1, code.PullRetryImmediately, 0},
		{"slave, lagging", asSlave(true), true, false, 0, code.Success, 3},
		{"slave, nothing new, master gone", asSlave(true), false, true, 1, code.PullNotFound, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var online atomic.Bool
			online.Store(!tt.masterOff)
			f := newFixture(t, fixtureOpt{mutate: tt.mutate, deps: func(d *Deps) {
				d.MemoryBytes = 1 << 20 // 40 %: 419430 bytes
				d.CommitLogMaxOffset = func() int64 {
					if tt.lagging {
						return commitLogEnd
					}
					return 0
				}
				d.MasterOnline = online.Load
			}})
			g := subscription.NewGroupConfig("g")
			g.BrokerID, g.WhichBrokerWhenConsumeSlowly = 2, 3
			if err := f.subs.Update(g); err != nil {
				t.Fatal(err)
			}
			f.put("T", 0, "a")
			resp := f.pull(t, pullReq("T", 0, tt.offset, "*"))
			if resp.Code != tt.wantCode {
				t.Fatalf("code %d (%s), want %d", resp.Code, resp.Remark, tt.wantCode)
			}
			if got := extInt(t, resp, "suggestWhichBrokerId"); got != tt.want {
				t.Errorf("suggestWhichBrokerId %d, want %d", got, tt.want)
			}
		})
	}
}
