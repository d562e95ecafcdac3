package ha

import (
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Status is the master's view for GET_BROKER_HA_STATUS: every connection,
// in sync when its ack is less than MaxGapNotInSync behind the master's
// max offset.
func (m *Master) Status() protocol.HARuntimeInfo {
	now := time.Now()
	max := m.cl.MaxOffset()
	info := protocol.HARuntimeInfo{Master: true, MasterCommitLogMaxOffset: max, HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.conns {
		ack := c.ack.Load()
		ci := protocol.HAConnectionRuntimeInfo{
			Addr:                    c.addr,
			SlaveAckOffset:          ack,
			Diff:                    max - ack,
			TransferFromWhere:       c.next.Load(),
			TransferredByteInSecond: c.rate.perSecond(now),
		}
		ci.InSync = ack >= 0 && ci.Diff < m.opts.MaxGapNotInSync
		if ci.InSync {
			info.InSyncSlaveNums++
		}
		info.HAConnectionInfo = append(info.HAConnectionInfo, ci)
	}
	return info
}

// Status is the slave's view of its master connection.
func (s *Slave) Status() protocol.HARuntimeInfo {
	now := time.Now()
	return protocol.HARuntimeInfo{
		HAClientRuntimeInfo: &protocol.HAClientRuntimeInfo{
			LastReadTimestamp:       s.lastRead.Load(),
			LastWriteTimestamp:      s.lastWrite.Load(),
			MasterAddr:              s.masterAddr.Load().(string),
			MasterFlushOffset:       s.masterOffset.Load(),
			MaxOffset:               s.cl.MaxOffset(),
			TransferredByteInSecond: s.rate.perSecond(now),
		},
		HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{},
	}
}
