package ha

import (
	"slices"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Status is the auto-switch master's view for GET_BROKER_HA_STATUS; a
// connection is in sync when its slave is in the effective SyncStateSet.
func (m *AutoSwitchMaster) Status() protocol.HARuntimeInfo {
	max := m.cl.MaxOffset()
	m.mu.Lock()
	defer m.mu.Unlock()
	eff := m.effectiveLocked()
	return masterStatus(max, m.conns, func(c *asConn, _ protocol.HAConnectionRuntimeInfo) bool {
		return m.byID[c.id] == c && slices.Contains(eff, c.id)
	})
}

func (c *asConn) runtimeInfo(max int64, now time.Time) protocol.HAConnectionRuntimeInfo {
	return connInfo(c.addr, c.ack.Load(), c.next.Load(), &c.rate, max, now)
}
