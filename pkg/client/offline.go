package client

import "slices"

// forgetOfflineBrokers drops broker addresses that no cached route lists
// any more (Java's cleanOfflineBroker, run after each route refresh) and
// closes their connections, so heartbeats and sends stop going to brokers
// that left the cluster.
func (c *core) forgetOfflineBrokers() {
	c.mu.Lock()
	live := make(map[string]bool)
	for _, tr := range c.routes {
		for _, bd := range tr.data.BrokerDatas {
			for _, addr := range bd.BrokerAddrs {
				live[addr] = true
			}
		}
	}
	var gone []string
	for name, bd := range c.brokers {
		var kept map[int64]string
		for id, addr := range bd.BrokerAddrs {
			if live[addr] {
				if kept == nil {
					kept = make(map[int64]string, len(bd.BrokerAddrs))
				}
				kept[id] = addr
			} else {
				gone = append(gone, addr)
			}
		}
		if kept == nil {
			delete(c.brokers, name)
			continue
		}
		if len(kept) != len(bd.BrokerAddrs) {
			bd.BrokerAddrs = kept // a copy: the route's BrokerData is shared
			c.brokers[name] = bd
		}
	}
	c.mu.Unlock()
	slices.Sort(gone)
	for _, addr := range slices.Compact(gone) {
		c.log.Info("client: broker left every route, closing its connection", "broker", addr)
		c.rc.CloseConn(addr)
	}
}
