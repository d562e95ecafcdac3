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
	info := newMasterInfo(max)
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.conns {
		ci := connInfo(c.addr, c.ack.Load(), c.next.Load(), &c.rate, max, now)
		info.add(ci, ci.SlaveAckOffset >= 0 && ci.Diff < m.opts.MaxGapNotInSync)
	}
	return info.HARuntimeInfo
}

// masterInfo builds a master's GET_BROKER_HA_STATUS answer.
type masterInfo struct{ protocol.HARuntimeInfo }

func newMasterInfo(max int64) masterInfo {
	return masterInfo{protocol.HARuntimeInfo{Master: true, MasterCommitLogMaxOffset: max, HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}}
}

func (i *masterInfo) add(ci protocol.HAConnectionRuntimeInfo, inSync bool) {
	ci.InSync = inSync
	if inSync {
		i.InSyncSlaveNums++
	}
	i.HAConnectionInfo = append(i.HAConnectionInfo, ci)
}

func connInfo(addr string, ack, next int64, r *rate, max int64, now time.Time) protocol.HAConnectionRuntimeInfo {
	return protocol.HAConnectionRuntimeInfo{
		Addr: addr, SlaveAckOffset: ack, Diff: max - ack, TransferFromWhere: next, TransferredByteInSecond: r.perSecond(now),
	}
}
