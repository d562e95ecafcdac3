package ha

import (
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Status is the auto-switch master's view for GET_BROKER_HA_STATUS; a
// connection is in sync when its slave is in the effective SyncStateSet.
func (m *AutoSwitchMaster) Status() protocol.HARuntimeInfo {
	now := time.Now()
	max := m.cl.MaxOffset()
	info := protocol.HARuntimeInfo{Master: true, MasterCommitLogMaxOffset: max, HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	eff := m.effectiveLocked()
	for c := range m.conns {
		ack := c.ack.Load()
		ci := protocol.HAConnectionRuntimeInfo{
			Addr: c.addr, SlaveAckOffset: ack, Diff: max - ack,
			TransferFromWhere: c.next.Load(), TransferredByteInSecond: c.rate.perSecond(now),
		}
		for _, id := range eff {
			if id == c.id && m.byID[id] == c {
				ci.InSync = true
				info.InSyncSlaveNums++
			}
		}
		info.HAConnectionInfo = append(info.HAConnectionInfo, ci)
	}
	return info
}

// Status is the auto-switch slave's view of its master connection.
func (s *AutoSwitchSlave) Status() protocol.HARuntimeInfo {
	return protocol.HARuntimeInfo{
		HAClientRuntimeInfo: &protocol.HAClientRuntimeInfo{
			LastReadTimestamp:       s.lastRead.Load(),
			LastWriteTimestamp:      s.lastWrite.Load(),
			MasterAddr:              s.masterAddr.Load().(string),
			MasterFlushOffset:       s.masterOffset.Load(),
			MaxOffset:               s.cl.MaxOffset(),
			TransferredByteInSecond: s.rate.perSecond(time.Now()),
		},
		HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{},
	}
}
