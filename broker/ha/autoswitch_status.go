package ha

import (
	"slices"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Status is the auto-switch master's view for GET_BROKER_HA_STATUS; a
// connection is in sync when its slave is in the effective SyncStateSet.
func (m *AutoSwitchMaster) Status() protocol.HARuntimeInfo {
	now := time.Now()
	max := m.cl.MaxOffset()
	info := newMasterInfo(max)
	m.mu.Lock()
	defer m.mu.Unlock()
	eff := m.effectiveLocked()
	for c := range m.conns {
		info.add(connInfo(c.addr, c.ack.Load(), c.next.Load(), &c.rate, max, now), m.byID[c.id] == c && slices.Contains(eff, c.id))
	}
	return info.HARuntimeInfo
}
