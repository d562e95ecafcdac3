package admin

import (
	"fmt"
	"slices"
	"sort"

	"github.com/rmqgo/rmq/pkg/protocol"
)

// Helpers over a ClusterInfo (GET_BROKER_CLUSTER_INFO), the equivalents of
// Java's CommandUtil. Results are sorted (broker names, then broker ids) so
// that output is deterministic; Java iterates hash sets.

// NoMasterPlaceholder stands for a broker name without a master in
// MasterSlaves, as Java's CommandUtil.NO_MASTER_PLACEHOLDER.
const NoMasterPlaceholder = "NO_MASTER"

// ClusterNames returns the cluster names, sorted.
func ClusterNames(ci *protocol.ClusterInfo) []string {
	names := make([]string, 0, len(ci.ClusterAddrTable))
	for n := range ci.ClusterAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BrokerNamesOf returns the broker names of a cluster, sorted; nil when the
// cluster is unknown.
func BrokerNamesOf(ci *protocol.ClusterInfo, cluster string) []string {
	set, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		return nil
	}
	names := append([]string{}, set...)
	sort.Strings(names)
	return slices.Compact(names)
}

// BrokerNames is BrokerNamesOf that fails with ErrClusterNotFound for an
// unknown or empty cluster (Java's fetchBrokerNameByClusterName).
func BrokerNames(ci *protocol.ClusterInfo, cluster string) ([]string, error) {
	names := BrokerNamesOf(ci, cluster)
	if len(names) == 0 {
		return nil, clusterNotFound(cluster)
	}
	return names, nil
}

func clusterNotFound(cluster string) error {
	return fmt.Errorf("cluster %q: %w", cluster, ErrClusterNotFound)
}

// BrokerAddr is one address of a broker name.
type BrokerAddr struct {
	ID   int64  `json:"brokerId"`
	Addr string `json:"addr"`
}

// SortedAddrs returns a BrokerData's addresses by ascending id (id 0, the
// master, first).
func SortedAddrs(bd protocol.BrokerData) []BrokerAddr {
	out := make([]BrokerAddr, 0, len(bd.BrokerAddrs))
	for id, a := range bd.BrokerAddrs {
		out = append(out, BrokerAddr{ID: id, Addr: a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SelectBrokerAddr is BrokerData.selectBrokerAddr: the master, else (Java
// picks at random) the lowest id. "" when there is none.
func SelectBrokerAddr(bd protocol.BrokerData) string {
	if a, ok := bd.BrokerAddrs[protocol.MasterID]; ok && a != "" {
		return a
	}
	for _, ba := range SortedAddrs(bd) {
		if ba.Addr != "" {
			return ba.Addr
		}
	}
	return ""
}

// MasterAddrs returns the master address of every broker name of a cluster
// (Java's fetchMasterAddrByClusterName), ordered by broker name.
func MasterAddrs(ci *protocol.ClusterInfo, cluster string) ([]string, error) {
	if _, ok := ci.ClusterAddrTable[cluster]; !ok {
		return nil, clusterNotFound(cluster)
	}
	var out []string
	for _, name := range BrokerNamesOf(ci, cluster) {
		bd, ok := ci.BrokerAddrTable[name]
		if !ok {
			continue
		}
		if a, ok := bd.BrokerAddrs[protocol.MasterID]; ok && a != "" {
			out = append(out, a)
		}
	}
	return out, nil
}

// MasterAndSlaveAddrs returns every address of every broker of a cluster
// (Java's fetchMasterAndSlaveAddrByClusterName), by broker name then id.
func MasterAndSlaveAddrs(ci *protocol.ClusterInfo, cluster string) ([]string, error) {
	if _, ok := ci.ClusterAddrTable[cluster]; !ok {
		return nil, clusterNotFound(cluster)
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range BrokerNamesOf(ci, cluster) {
		for _, ba := range SortedAddrs(ci.BrokerAddrTable[name]) {
			if ba.Addr != "" && !seen[ba.Addr] {
				seen[ba.Addr] = true
				out = append(out, ba.Addr)
			}
		}
	}
	return out, nil
}

// MasterSlaves is one master and its slaves.
type MasterSlaves struct {
	Master string   `json:"master"` // NoMasterPlaceholder when the name has no master
	Slaves []string `json:"slaves"`
}

// MasterAndSlaves groups a cluster's addresses by master (Java's
// fetchMasterAndSlaveDistinguish); names without a master share one
// NoMasterPlaceholder group, placed last.
func MasterAndSlaves(ci *protocol.ClusterInfo, cluster string) ([]MasterSlaves, error) {
	if _, ok := ci.ClusterAddrTable[cluster]; !ok {
		return nil, clusterNotFound(cluster)
	}
	var out []MasterSlaves
	var noMaster *MasterSlaves
	for _, name := range BrokerNamesOf(ci, cluster) {
		bd, ok := ci.BrokerAddrTable[name]
		if !ok || bd.BrokerAddrs == nil {
			continue
		}
		master, hasMaster := bd.BrokerAddrs[protocol.MasterID]
		var slaves []string
		for _, ba := range SortedAddrs(bd) {
			if ba.ID != protocol.MasterID && ba.Addr != "" {
				slaves = append(slaves, ba.Addr)
			}
		}
		if !hasMaster {
			if noMaster == nil {
				noMaster = &MasterSlaves{Master: NoMasterPlaceholder}
			}
			noMaster.Slaves = append(noMaster.Slaves, slaves...)
			continue
		}
		out = append(out, MasterSlaves{Master: master, Slaves: slaves})
	}
	if noMaster != nil {
		out = append(out, *noMaster)
	}
	return out, nil
}

// BrokerNameByAddr finds the broker name that has addr among its
// addresses (Java's fetchBrokerNameByAddr).
func BrokerNameByAddr(ci *protocol.ClusterInfo, addr string) (string, error) {
	names := make([]string, 0, len(ci.BrokerAddrTable))
	for n := range ci.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, a := range ci.BrokerAddrTable[n].BrokerAddrs {
			if a == addr {
				return n, nil
			}
		}
	}
	return "", fmt.Errorf("broker address %s: %w", addr, ErrClusterNotFound)
}

// MasterAddrByBrokerName returns the master of a broker name (Java's
// fetchMasterAddrByBrokerName).
func MasterAddrByBrokerName(ci *protocol.ClusterInfo, brokerName string) (string, error) {
	if bd, ok := ci.BrokerAddrTable[brokerName]; ok {
		if a, ok := bd.BrokerAddrs[protocol.MasterID]; ok && a != "" {
			return a, nil
		}
	}
	return "", fmt.Errorf("No broker address for broker name %s.", brokerName) //nolint:staticcheck // Java's message
}

// ClusterOfBroker returns the first cluster (by name) that lists brokerName,
// or "".
func ClusterOfBroker(ci *protocol.ClusterInfo, brokerName string) string {
	for _, c := range ClusterNames(ci) {
		for _, b := range ci.ClusterAddrTable[c] {
			if b == brokerName {
				return c
			}
		}
	}
	return ""
}
