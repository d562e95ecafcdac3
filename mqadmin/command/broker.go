package command

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- brokerStatus ----

func newBrokerStatus(a *app) *cobra.Command {
	return a.newBrokerOrClusterCmd("brokerStatus", "Fetch broker runtime status data.", "Broker address", "which cluster", a.brokerStatus)
}

// newBrokerOrClusterCmd is a command that reads one broker (-b) or every
// broker of a cluster (-c), exactly one of the two; run gets single when
// -b was given, and the trimmed values.
func (a *app) newBrokerOrClusterCmd(use, short, brokerUsage, clusterUsage string,
	run func(ctx context.Context, c *admin.Client, single bool, broker, cluster string) error) *cobra.Command {
	var broker, cluster string
	c := newCmd(use, short)
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", brokerUsage)
	stringOpt(c.Flags(), &cluster, "c", "clusterName", clusterUsage)
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.MarkFlagsMutuallyExclusive("brokerAddr", "clusterName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return run(cmd.Context(), c, cmd.Flags().Changed("brokerAddr"), strings.TrimSpace(broker), strings.TrimSpace(cluster))
	})
	return c
}

type brokerStatusJSON struct {
	Addr    string            `json:"addr"`
	Runtime map[string]string `json:"runtime,omitempty"`
	Error   string            `json:"error,omitempty"`
}

func (a *app) brokerStatus(ctx context.Context, c *admin.Client, single bool, broker, cluster string) error {
	w := a.env.Stdout
	if single {
		kv, err := c.GetBrokerRuntimeInfo(ctx, broker)
		if err != nil {
			return err
		}
		return a.emit(brokerStatusJSON{Addr: broker, Runtime: kv}, func(w io.Writer) {
			for _, k := range sortedKeys(kv) {
				fmt.Fprintf(w, "%-32s: %s\n", k, kv[k])
			}
		})
	}
	_, addrs, err := clusterAddrs(ctx, c, cluster, true)
	if err != nil {
		return err
	}
	failed := 0
	all := []brokerStatusJSON{}
	for _, addr := range addrs {
		kv, err := c.GetBrokerRuntimeInfo(ctx, addr)
		if err != nil {
			failed++
			a.warn("brokerStatus: %v", err)
			all = append(all, brokerStatusJSON{Addr: addr, Error: err.Error()})
			continue
		}
		all = append(all, brokerStatusJSON{Addr: addr, Runtime: kv})
		if !a.json() {
			for _, k := range sortedKeys(kv) {
				fmt.Fprintf(w, "%-24s %-32s: %s\n", addr, k, kv[k])
			}
		}
	}
	if a.json() {
		if err := writeJSONField(w, "brokers", all); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &partialError{n: failed}
	}
	return nil
}

// ---- getBrokerConfig ----

func newGetBrokerConfig(a *app) *cobra.Command {
	return a.newBrokerOrClusterCmd("getBrokerConfig", "Get broker config by cluster or special broker.", "get which broker", "get which cluster", a.getBrokerConfig)
}

type brokerConfigJSON struct {
	Addr   string            `json:"addr"`
	Role   string            `json:"role,omitempty"` // master, slave
	Master string            `json:"master,omitempty"`
	Config map[string]string `json:"config"`
}

// printProps prints a java.util.Properties in its iteration order.
func printProps(w io.Writer, p admin.Properties) {
	keys := make([]string, len(p))
	for i, kv := range p {
		keys[i] = kv.Key
	}
	m := p.Map()
	for _, k := range javaHashOrder(keys, 0, true) {
		fmt.Fprintf(w, "%-50s=  %s\n", k, m[k])
	}
}

func (a *app) getBrokerConfig(ctx context.Context, c *admin.Client, single bool, broker, cluster string) error {
	w := a.env.Stdout
	if single {
		p, err := c.GetBrokerConfig(ctx, broker)
		if err != nil {
			return err
		}
		return a.emit(brokerConfigJSON{Addr: broker, Config: p.Map()}, func(w io.Writer) {
			fmt.Fprintf(w, "============%s============\n", broker)
			printProps(w, p)
			fmt.Fprintf(w, "\n")
		})
	}
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	groups, err := admin.MasterAndSlaves(ci, cluster)
	if err != nil {
		return err
	}
	groups = javaGroupOrder(groups)
	all := []brokerConfigJSON{}
	// One address: the Java tool aborts on the first failure.
	get := func(header, addr, role, master string) error {
		if !a.json() {
			fmt.Fprint(w, header)
		}
		if addr == admin.NoMasterPlaceholder {
			return nil
		}
		p, err := c.GetBrokerConfig(ctx, addr)
		if err != nil {
			return err
		}
		all = append(all, brokerConfigJSON{Addr: addr, Role: role, Master: master, Config: p.Map()})
		if !a.json() {
			printProps(w, p)
			fmt.Fprintf(w, "\n")
		}
		return nil
	}
	for _, g := range groups {
		if err := get(fmt.Sprintf("============Master: %s============\n", g.Master), g.Master, "master", ""); err != nil {
			return err
		}
		for _, s := range g.Slaves {
			if err := get(fmt.Sprintf("============My Master: %s=====Slave: %s============\n", g.Master, s), s, "slave", g.Master); err != nil {
				return err
			}
		}
	}
	if a.json() {
		return writeJSONField(w, "brokers", all)
	}
	return nil
}

// ---- updateBrokerConfig ----

type updateBrokerConfigOpts struct {
	broker, cluster, all, key, value string
}

func newUpdateBrokerConfig(a *app) *cobra.Command {
	var o updateBrokerConfigOpts
	c := newCmd("updateBrokerConfig", "Update broker's config.")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "update which broker")
	stringOpt(fs, &o.cluster, "c", "clusterName", "update which cluster")
	stringOpt(fs, &o.all, "a", "updateAllBroker", "update all brokers include slave")
	stringOpt(fs, &o.key, "k", "key", "config key")
	stringOpt(fs, &o.value, "v", "value", "config value")
	markRequired(c, "key", "value")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.updateBrokerConfig(cmd.Context(), cmd, o) })
	return c
}

func (a *app) updateBrokerConfig(ctx context.Context, cmd *cobra.Command, o updateBrokerConfigOpts) error {
	key, value := strings.TrimSpace(o.key), strings.TrimSpace(o.value)
	props := map[string]string{key: value}
	// Java's client validates brokerPermission before sending.
	if key == "brokerPermission" {
		if n, err := strconv.Atoi(value); err != nil || n < 0 || n >= 8 {
			return usagef("brokerPermission value: %s is invalid.", value)
		}
	}
	changed := cmd.Flags().Changed
	return a.withClient(func(c *admin.Client) error {
		w := a.env.Stdout
		if changed("brokerAddr") {
			addr := strings.TrimSpace(o.broker)
			if err := c.UpdateBrokerConfig(ctx, addr, props); err != nil {
				return err
			}
			return a.emit(updateBrokerConfigJSON{Key: key, Value: value, Updated: []string{addr}, Failed: []string{}}, func(w io.Writer) {
				fmt.Fprintf(w, "update broker config success, %s\n", addr)
			})
		}
		cluster := strings.TrimSpace(o.cluster)
		_, addrs, err := clusterAddrs(ctx, c, cluster, changed("updateAllBroker"))
		if err != nil {
			return err
		}
		res := updateBrokerConfigJSON{Key: key, Value: value, Updated: []string{}, Failed: []string{}}
		for _, addr := range addrs {
			if err := c.UpdateBrokerConfig(ctx, addr, props); err != nil {
				a.warn("updateBrokerConfig: %v", err)
				res.Failed = append(res.Failed, addr)
				continue
			}
			res.Updated = append(res.Updated, addr)
			if !a.json() {
				fmt.Fprintf(w, "update broker config success, %s\n", addr)
			}
		}
		if a.json() {
			if err := writeJSON(w, res); err != nil {
				return err
			}
		}
		if len(res.Failed) > 0 {
			return &partialError{n: len(res.Failed)}
		}
		return nil
	})
}

type updateBrokerConfigJSON struct {
	Key     string   `json:"key"`
	Value   string   `json:"value"`
	Updated []string `json:"updated"`
	Failed  []string `json:"failed"`
}

// javaGroupOrder orders master groups as the Java tool's HashMap<>(4)
// keyed by master address.
func javaGroupOrder(groups []admin.MasterSlaves) []admin.MasterSlaves {
	byMaster := make(map[string]admin.MasterSlaves, len(groups))
	keys := make([]string, 0, len(groups))
	for _, g := range groups {
		byMaster[g.Master] = g
		keys = append(keys, g.Master)
	}
	out := make([]admin.MasterSlaves, 0, len(groups))
	for _, k := range javaHashOrder(keys, hashMapCap4, false) {
		out = append(out, byMaster[k])
	}
	return out
}

// clusterAddrs fetches the cluster info and returns it with the master
// addresses of cluster (with slaves, the slave ones too) in the order of
// the Java tool's HashSet of them.
func clusterAddrs(ctx context.Context, c *admin.Client, cluster string, slaves bool) (*protocol.ClusterInfo, []string, error) {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	pick := admin.MasterAddrs
	if slaves {
		pick = admin.MasterAndSlaveAddrs
	}
	addrs, err := pick(ci, cluster)
	if err != nil {
		return nil, nil, err
	}
	return ci, javaHashOrder(addrs, hashMapDefault, false), nil
}
