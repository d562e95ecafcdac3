package command

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Commands of replication and the HA controller (docs/replication.md), in
// the Java tool's order: haStatus, getSyncStateSet, getBrokerEpoch,
// getControllerMetaData, getControllerConfig, updateControllerConfig,
// electMaster, cleanBrokerMetadata.
func controllerCommands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newHAStatus(a),
		newGetSyncStateSet(a),
		newGetBrokerEpoch(a),
		newGetControllerMetaData(a),
		newGetControllerConfig(a),
		newUpdateControllerConfig(a),
		newElectMaster(a),
		newCleanBrokerMetadata(a),
	}
}

// controllerAddrs splits a -a value, "a:9878;b:9878", as the Java tool
// does (blank items dropped).
func controllerAddrs(s string) []string { return admin.ParseNameServers(s) }

// repeatEvery runs f once, or with -i every interval seconds until the
// context ends (the Java tool loops until killed; its default interval is
// 3 s). In the loop a failed round is reported and the next one still
// runs.
func (a *app) repeatEvery(ctx context.Context, cmd *cobra.Command, interval, name string, f func() error) error {
	if !cmd.Flags().Changed("interval") {
		return f()
	}
	every := 3 * time.Second
	if s := strings.TrimSpace(interval); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return usagef("invalid interval %q: want a number of seconds", interval)
		}
		every = time.Duration(n) * time.Second
	}
	for {
		if err := f(); err != nil {
			a.warn("%s: %v", name, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// ---- getControllerMetaData ----

func newGetControllerMetaData(a *app) *cobra.Command {
	var addr string
	c := newCmd("getControllerMetaData", "Get controller cluster's metadata.")
	stringOpt(c.Flags(), &addr, "a", "controllerAddress", "the address of controller")
	markRequired(c, "controllerAddress")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		md, err := c.GetControllerMetaData(cmd.Context(), strings.TrimSpace(addr))
		if err != nil {
			return err
		}
		if a.json() {
			if md.Peers == nil {
				md.Peers = []string{}
			}
			return writeJSON(a.env.Stdout, md)
		}
		w := a.env.Stdout
		fmt.Fprintf(w, "\n#ControllerGroup\t%s", hdrOrNull(md.Header, protocol.HdrGroup))
		fmt.Fprintf(w, "\n#ControllerLeaderId\t%s", hdrOrNull(md.Header, protocol.HdrControllerLeaderID))
		fmt.Fprintf(w, "\n#ControllerLeaderAddress\t%s", hdrOrNull(md.Header, protocol.HdrControllerLeaderAddress))
		// Java splits the peers text on ';' without dropping blanks
		// inside it (a trailing ';' gives no item).
		if peers := md.Header[protocol.HdrPeers]; peers != "" {
			for _, p := range figures.JavaSplit(peers, ";") {
				fmt.Fprintf(w, "\n#Peer:\t%s", p)
			}
		}
		fmt.Fprintf(w, "\n")
		return nil
	})
	return c
}

// hdrOrNull is a header field as Java prints a possibly null String.
func hdrOrNull(h map[string]string, key string) string {
	v, ok := h[key]
	return nullable(v, ok)
}

// ---- getSyncStateSet ----

func newGetSyncStateSet(a *app) *cobra.Command {
	var addr, broker, cluster, interval string
	c := newCmd("getSyncStateSet", "Fetch syncStateSet for target brokers.")
	fs := c.Flags()
	stringOpt(fs, &addr, "a", "controllerAddress", "the address of controller")
	brokerOrClusterFlags(c, &broker, &cluster, &interval, "brokerName")
	markRequired(c, "controllerAddress")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx := cmd.Context()
		addrs := controllerAddrs(addr)
		if len(addrs) == 0 {
			return usagef("empty controller address")
		}
		return a.repeatEvery(ctx, cmd, interval, "getSyncStateSet", func() error {
			// -b wins over -c, as in the Java tool.
			names := []string{strings.TrimSpace(broker)}
			if !cmd.Flags().Changed("brokerName") {
				ci, err := c.GetBrokerClusterInfo(ctx)
				if err != nil {
					return err
				}
				if names, err = admin.BrokerNames(ci, strings.TrimSpace(cluster)); err != nil {
					return err
				}
			}
			info, err := c.GetSyncStateData(ctx, addrs[0], names)
			if err != nil {
				return err
			}
			return a.emit(info, func(io.Writer) {
				a.printSyncStateSets(info)
			})
		})
	})
	return c
}

func (a *app) printSyncStateSets(info *protocol.BrokerReplicasInfo) {
	w := a.env.Stdout
	// The Java tool iterates the decoded table, a HashMap.
	for _, name := range javaHashOrder(sortedKeys(info.ReplicasInfoTable), hashMapDefault, false) {
		ri := info.ReplicasInfoTable[name]
		fmt.Fprintf(w, "\n#brokerName\t%s\n#MasterBrokerId\t%d\n#MasterAddr\t%s\n#MasterEpoch\t%d\n#SyncStateSetEpoch\t%d\n#SyncStateSetNums\t%d\n",
			name, ri.MasterBrokerID, nullable(ri.MasterAddress, ri.MasterAddress != ""), ri.MasterEpoch, ri.SyncStateSetEpoch, len(ri.InSyncReplicas))
		for _, r := range ri.InSyncReplicas {
			fmt.Fprintf(w, "\nInSyncReplica:\t%s\n", replicaIdentityString(r))
		}
		for _, r := range ri.NotInSyncReplicas {
			fmt.Fprintf(w, "\nNotInSyncReplica:\t%s\n", replicaIdentityString(r))
		}
	}
}

// replicaIdentityString is BrokerReplicasInfo.ReplicaIdentity.toString.
func replicaIdentityString(r protocol.ReplicaIdentity) string {
	return fmt.Sprintf("ReplicaIdentity{brokerName='%s', brokerId=%d, brokerAddress='%s', alive=%t}",
		r.BrokerName, r.BrokerID, r.BrokerAddress, r.Alive)
}

// brokerOrClusterFlags registers the options of the commands that ask
// about the brokers of -b (brokerFlag) or of cluster -c, one of them
// required, once or every -i seconds.
func brokerOrClusterFlags(c *cobra.Command, broker, cluster, interval *string, brokerFlag string) {
	fs := c.Flags()
	stringOpt(fs, cluster, "c", "clusterName", "which cluster")
	stringOpt(fs, broker, "b", brokerFlag, "which broker to fetch")
	stringOpt(fs, interval, "i", "interval", "the interval(second) of get info")
	c.MarkFlagsOneRequired(brokerFlag, "clusterName")
}

// ---- getBrokerEpoch / haStatus ----

// newPerBrokerCmd is a command that asks brokers one by one, chosen by -b
// (brokerFlag) or -c, once or every -i seconds: addrsOf resolves the
// brokers (byBroker: -b was given; it wins over -c, as in the Java tool),
// get asks one and show prints its answer as text. --output json lists
// {addr, result} under "brokers". Like the Java tool a round stops at the
// first broker that fails.
func newPerBrokerCmd[T any](a *app, use, short, brokerFlag string,
	addrsOf func(ctx context.Context, c *admin.Client, byBroker bool, broker, cluster string) ([]string, error),
	get func(c *admin.Client, ctx context.Context, addr string) (*T, error),
	show func(addr string, v *T) error) *cobra.Command {
	var broker, cluster, interval string
	c := newCmd(use, short)
	brokerOrClusterFlags(c, &broker, &cluster, &interval, brokerFlag)
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx := cmd.Context()
		return a.repeatEvery(ctx, cmd, interval, use, func() error {
			addrs, err := addrsOf(ctx, c, cmd.Flags().Changed(brokerFlag), strings.TrimSpace(broker), strings.TrimSpace(cluster))
			if err != nil {
				return err
			}
			type result struct {
				Addr   string `json:"addr"`
				Result *T     `json:"result"`
			}
			all := []result{}
			for _, addr := range addrs {
				v, err := get(c, ctx, addr)
				if err != nil {
					return err
				}
				if a.json() {
					all = append(all, result{addr, v})
				} else if err := show(addr, v); err != nil {
					return err
				}
			}
			if a.json() {
				return writeJSON(a.env.Stdout, struct {
					Brokers []result `json:"brokers"`
				}{all})
			}
			return nil
		})
	})
	return c
}

func newGetBrokerEpoch(a *app) *cobra.Command {
	c := newPerBrokerCmd(a, "getBrokerEpoch", "Fetch broker epoch entries.", "brokerName",
		func(ctx context.Context, c *admin.Client, byBroker bool, broker, cluster string) ([]string, error) {
			ci, err := c.GetBrokerClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			var addrs []string
			if byBroker {
				for _, ba := range admin.SortedAddrs(ci.BrokerAddrTable[broker]) {
					addrs = append(addrs, ba.Addr)
				}
			} else if addrs, err = admin.MasterAndSlaveAddrs(ci, cluster); err != nil {
				return nil, err
			}
			return javaHashOrder(addrs, hashMapDefault, false), nil // Java's HashSet
		},
		(*admin.Client).GetBrokerEpochCache, a.printBrokerEpoch)
	c.MarkFlagsMutuallyExclusive("brokerName", "clusterName")
	return c
}

func (a *app) printBrokerEpoch(addr string, ec *protocol.EpochEntryCache) error {
	w := a.env.Stdout
	fmt.Fprintf(w, "\n#clusterName\t%s\n#brokerName\t%s\n#brokerAddr\t%s\n#brokerId\t%d",
		ec.ClusterName, ec.BrokerName, addr, ec.BrokerID)
	for i, e := range ec.EpochList {
		end := e.EndOffset
		if i == len(ec.EpochList)-1 {
			end = ec.MaxOffset // the open last epoch ends at the log end
		}
		fmt.Fprintf(w, "\n#Epoch: EpochEntry{epoch=%d, startOffset=%d, endOffset=%d}", e.Epoch, e.StartOffset, end)
	}
	fmt.Fprintf(w, "\n")
	return nil
}

func newHAStatus(a *app) *cobra.Command {
	return newPerBrokerCmd(a, "haStatus", "Fetch ha runtime status data.", "brokerAddr",
		func(ctx context.Context, c *admin.Client, byBroker bool, broker, cluster string) ([]string, error) {
			if byBroker {
				return []string{broker}, nil
			}
			masters, err := c.ClusterMasters(ctx, cluster)
			if err != nil {
				return nil, err
			}
			return javaHashOrder(masters, hashMapDefault, false), nil // Java's HashSet
		},
		(*admin.Client).GetBrokerHAStatus, a.printHAStatus)
}

func (a *app) printHAStatus(addr string, ha *protocol.HARuntimeInfo) error {
	w := a.env.Stdout
	if ha.Master {
		fmt.Fprintf(w, "\n#MasterAddr\t%s\n#MasterCommitLogMaxOffset\t%d\n#SlaveNum\t%d\n#InSyncSlaveNum\t%d\n",
			addr, ha.MasterCommitLogMaxOffset, len(ha.HAConnectionInfo), ha.InSyncSlaveNums)
		fmt.Fprintf(w, "%-32s  %-16s %16s %16s %16s %16s\n",
			"#SlaveAddr", "#SlaveAckOffset", "#Diff", "#TransferSpeed(KB/s)", "#Status", "#TransferFromWhere")
		for _, ci := range ha.HAConnectionInfo {
			status := "Fall Behind"
			if ci.InSync {
				status = "OK"
			}
			fmt.Fprintf(w, "%-32s  %-16d %16d %16s %16s %16d\n", ci.Addr, ci.SlaveAckOffset, ci.Diff,
				javaFixed(float64(ci.TransferredByteInSecond)/1024.0, 2), status, ci.TransferFromWhere)
		}
		return nil
	}
	ci := ha.HAClientRuntimeInfo
	if ci == nil {
		return fmt.Errorf("%s: slave HA status without client info", addr)
	}
	fmt.Fprintf(w, "\n#MasterAddr\t%s\n", nullable(ci.MasterAddr, ci.MasterAddr != ""))
	fmt.Fprintf(w, "#CommitLogMaxOffset\t%d\n", ci.MaxOffset)
	fmt.Fprintf(w, "#TransferSpeed(KB/s)\t%s\n", javaFixed(float64(ci.TransferredByteInSecond)/1024.0, 2))
	fmt.Fprintf(w, "#LastReadTime\t%s\n", humanTime2(ci.LastReadTimestamp, a.env.Location))
	fmt.Fprintf(w, "#LastWriteTime\t%s\n", humanTime2(ci.LastWriteTimestamp, a.env.Location))
	fmt.Fprintf(w, "#MasterFlushOffset\t%d\n", ci.MasterFlushOffset)
	return nil
}

// ---- getControllerConfig / updateControllerConfig ----

func newGetControllerConfig(a *app) *cobra.Command {
	var addr string
	c := newCmd("getControllerConfig", "Get controller config.")
	stringOpt(c.Flags(), &addr, "a", "controllerAddress", "Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878")
	markRequired(c, "controllerAddress")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		cfgs, err := c.GetControllerConfig(cmd.Context(), controllerAddrs(addr))
		if err != nil {
			return err
		}
		return a.printServerConfigs(cfgs, "controllers")
	})
	return c
}

func newUpdateControllerConfig(a *app) *cobra.Command {
	var addr, key, value string
	c := newCmd("updateControllerConfig", "Update controller config.")
	fs := c.Flags()
	stringOpt(fs, &addr, "a", "controllerAddress", "Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878")
	stringOpt(fs, &key, "k", "key", "config key")
	stringOpt(fs, &value, "v", "value", "config value")
	markRequired(c, "controllerAddress", "key", "value")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		key, value := strings.TrimSpace(key), strings.TrimSpace(value)
		addrs := controllerAddrs(addr)
		if err := c.UpdateControllerConfig(cmd.Context(), addrs, map[string]string{key: value}); err != nil {
			return err
		}
		return a.emitConfigUpdated("controller", javaAddrList(addr), configUpdateJSON{Controllers: addrs, Key: key, Value: value})
	})
	return c
}

// ---- electMaster ----

func newElectMaster(a *app) *cobra.Command {
	var addr, cluster, brokerName, brokerID string
	c := newCmd("electMaster", "Re-elect the specified broker as master.")
	fs := c.Flags()
	stringOpt(fs, &addr, "a", "controllerAddress", "The address of controller")
	stringOpt(fs, &brokerID, "b", "brokerId", "The id of the broker which requires to become master")
	stringOpt(fs, &brokerName, "bn", "brokerName", "The broker name of the replicas that require to be manipulated")
	stringOpt(fs, &cluster, "c", "clusterName", "the clusterName of broker")
	markRequired(c, "controllerAddress", "brokerId", "brokerName", "clusterName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		id, err := strconv.ParseInt(strings.TrimSpace(brokerID), 10, 64)
		if err != nil {
			return usagef("invalid brokerId %q: want a number", brokerID)
		}
		cluster, brokerName := strings.TrimSpace(cluster), strings.TrimSpace(brokerName)
		r, err := c.ElectMaster(cmd.Context(), strings.TrimSpace(addr), cluster, brokerName, id)
		if err != nil {
			return err
		}
		if a.json() {
			return writeJSON(a.env.Stdout, struct {
				ClusterName string `json:"clusterName"`
				BrokerName  string `json:"brokerName"`
				*admin.ElectMasterResult
			}{cluster, brokerName, r})
		}
		w := a.env.Stdout
		fmt.Fprintf(w, "\n#ClusterName\t%s", cluster)
		fmt.Fprintf(w, "\n#BrokerName\t%s", brokerName)
		fmt.Fprintf(w, "\n#BrokerMasterAddr\t%s", hdrOrNull(r.Header, protocol.HdrMasterAddress))
		fmt.Fprintf(w, "\n#MasterEpoch\t%s", hdrOrNull(r.Header, protocol.HdrMasterEpoch))
		fmt.Fprintf(w, "\n#SyncStateSetEpoch\t%s\n", hdrOrNull(r.Header, protocol.HdrSyncStateSetEpoch))
		// The Java tool decodes the body as a bare BrokerMemberGroup while
		// controllers send ElectMasterResponseBody, so it never lists the
		// members; neither do we (--output json has them).
		return nil
	})
	return c
}

// ---- cleanBrokerMetadata ----

func newCleanBrokerMetadata(a *app) *cobra.Command {
	var addr, ids, brokerName, cluster string
	var living bool
	c := newCmd("cleanBrokerMetadata", "Clean metadata of broker on controller.")
	fs := c.Flags()
	stringOpt(fs, &addr, "a", "controllerAddress", "The address of controller")
	stringOpt(fs, &ids, "b", "brokerControllerIdsToClean", "The brokerController id list which requires to clean metadata. eg: 1;2;3, means that clean broker-1, broker-2 and broker-3")
	stringOpt(fs, &brokerName, "bn", "brokerName", "The broker name of the replicas that require to be manipulated")
	stringOpt(fs, &cluster, "c", "clusterName", "The clusterName of broker")
	boolOpt(fs, &living, "l", "cleanLivingBroker", "Whether clean up living brokers,default value is false")
	markRequired(c, "controllerAddress", "brokerName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		req := admin.CleanBrokerMetadataRequest{
			Cluster:       strings.TrimSpace(cluster),
			BrokerName:    strings.TrimSpace(brokerName),
			ControllerIDs: strings.TrimSpace(ids),
			CleanLiving:   living,
		}
		if req.ControllerIDs != "" {
			for _, s := range strings.Split(req.ControllerIDs, ";") {
				if _, err := strconv.ParseInt(s, 10, 64); err != nil {
					return usagef("please set the option <brokerControllerIdsToClean> according to the format")
				}
			}
		}
		if !living && req.Cluster == "" {
			return usagef("cleanLivingBroker option is false, clusterName option can not be empty.")
		}
		if err := c.CleanBrokerMetadata(cmd.Context(), strings.TrimSpace(addr), req); err != nil {
			return err
		}
		if a.json() {
			return writeJSON(a.env.Stdout, struct {
				BrokerName    string `json:"brokerName"`
				ControllerIDs string `json:"brokerControllerIdsToClean,omitempty"`
				CleanLiving   bool   `json:"cleanLivingBroker"`
			}{req.BrokerName, req.ControllerIDs, req.CleanLiving})
		}
		fmt.Fprintf(a.env.Stdout, "clear broker %s metadata from controller success! \n", req.BrokerName)
		return nil
	})
	return c
}
