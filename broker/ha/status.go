package ha

import (
	"slices"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Status is the master's view for GET_BROKER_HA_STATUS: every connection,
// in sync when its ack is less than MaxGapNotInSync behind the master's
// max offset.
func (m *Master) Status() protocol.HARuntimeInfo {
	max := m.cl.MaxOffset()
	m.mu.Lock()
	defer m.mu.Unlock()
	return masterStatus(max, m.conns, func(_ *conn, ci protocol.HAConnectionRuntimeInfo) bool {
		return ci.SlaveAckOffset >= 0 && ci.Diff < m.opts.MaxGapNotInSync
	})
}

// statusConn is a master connection as GET_BROKER_HA_STATUS reports it.
type statusConn interface {
	comparable
	// runtimeInfo is the connection's entry against the master's max
	// offset, InSync left unset.
	runtimeInfo(max int64, now time.Time) protocol.HAConnectionRuntimeInfo
}

// masterStatus is the GET_BROKER_HA_STATUS answer of a master whose log
// ends at max, for both masters: an entry per connection of conns (the
// caller holds the lock guarding them), in sync as inSync decides.
func masterStatus[C statusConn](max int64, conns map[C]struct{}, inSync func(C, protocol.HAConnectionRuntimeInfo) bool) protocol.HARuntimeInfo {
	now := time.Now()
	info := protocol.HARuntimeInfo{Master: true, MasterCommitLogMaxOffset: max, HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
	for c := range conns {
		ci := c.runtimeInfo(max, now)
		ci.InSync = inSync(c, ci)
		if ci.InSync {
			info.InSyncSlaveNums++
		}
		info.HAConnectionInfo = append(info.HAConnectionInfo, ci)
	}
	// A stable order (Java lists its connections in accept order; ours
	// are a set): two calls print the slaves in the same order.
	slices.SortFunc(info.HAConnectionInfo, func(a, b protocol.HAConnectionRuntimeInfo) int { return strings.Compare(a.Addr, b.Addr) })
	return info
}

func (c *conn) runtimeInfo(max int64, now time.Time) protocol.HAConnectionRuntimeInfo {
	return connInfo(c.addr, c.ack.Load(), c.next.Load(), &c.rate, max, now)
}

func connInfo(addr string, ack, next int64, r *rate, max int64, now time.Time) protocol.HAConnectionRuntimeInfo {
	return protocol.HAConnectionRuntimeInfo{
		Addr: addr, SlaveAckOffset: ack, Diff: max - ack, TransferFromWhere: next, TransferredByteInSecond: r.perSecond(now),
	}
}
