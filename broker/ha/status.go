package ha

import "time"

// RuntimeInfo is the GET_BROKER_HA_STATUS body (Apache's HARuntimeInfo).
// Fields are in fastjson's (alphabetical) order.
type RuntimeInfo struct {
	HAClientRuntimeInfo      ClientInfo       `json:"haClientRuntimeInfo"`
	HAConnectionInfo         []ConnectionInfo `json:"haConnectionInfo"`
	InSyncSlaveNums          int              `json:"inSyncSlaveNums"`
	Master                   bool             `json:"master"`
	MasterCommitLogMaxOffset int64            `json:"masterCommitLogMaxOffset"`
}

// ClientInfo describes a slave's connection to its master
// (HARuntimeInfo.HAClientRuntimeInfo).
type ClientInfo struct {
	LastReadTimestamp       int64  `json:"lastReadTimestamp"`
	LastWriteTimestamp      int64  `json:"lastWriteTimestamp"`
	MasterAddr              string `json:"masterAddr"`
	MasterFlushOffset       int64  `json:"masterFlushOffset"`
	MaxOffset               int64  `json:"maxOffset"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}

// ConnectionInfo describes one slave on the master
// (HARuntimeInfo.HAConnectionRuntimeInfo).
type ConnectionInfo struct {
	Addr                    string `json:"addr"`
	Diff                    int64  `json:"diff"`
	InSync                  bool   `json:"inSync"`
	SlaveAckOffset          int64  `json:"slaveAckOffset"`
	TransferFromWhere       int64  `json:"transferFromWhere"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}

// Status is the master's view: every connection, in sync when its ack is
// less than MaxGapNotInSync behind the master's max offset.
func (m *Master) Status() RuntimeInfo {
	now := time.Now()
	max := m.cl.MaxOffset()
	info := RuntimeInfo{Master: true, MasterCommitLogMaxOffset: max, HAConnectionInfo: []ConnectionInfo{}}
	m.mu.Lock()
	defer m.mu.Unlock()
	for c := range m.conns {
		ack := c.ack.Load()
		ci := ConnectionInfo{
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
func (s *Slave) Status() RuntimeInfo {
	now := time.Now()
	return RuntimeInfo{
		HAClientRuntimeInfo: ClientInfo{
			LastReadTimestamp:       s.lastRead.Load(),
			LastWriteTimestamp:      s.lastWrite.Load(),
			MasterAddr:              s.masterAddr.Load().(string),
			MasterFlushOffset:       s.masterOffset.Load(),
			MaxOffset:               s.cl.MaxOffset(),
			TransferredByteInSecond: s.rate.perSecond(now),
		},
		HAConnectionInfo: []ConnectionInfo{},
	}
}
