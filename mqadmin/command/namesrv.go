package command

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
)

// ---- getNamesrvConfig / updateNamesrvConfig ----

func newGetNamesrvConfig(a *app) *cobra.Command {
	c := newCmd("getNamesrvConfig", "Get configs of name server.")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		cfgs, err := c.GetNamesrvConfig(cmd.Context())
		if err != nil {
			return err
		}
		return a.printServerConfigs(cfgs, "nameServers")
	})
	return c
}

// printServerConfigs prints the configuration of each server as the Java
// tool does (its servers in a HashMap(4), each Properties in its own
// order); in JSON the list is under listKey.
func (a *app) printServerConfigs(cfgs []admin.ServerConfig, listKey string) error {
	if a.json() {
		type entry struct {
			Addr   string            `json:"addr"`
			Config map[string]string `json:"config"`
		}
		out := []entry{}
		for _, sc := range cfgs {
			out = append(out, entry{sc.Addr, sc.Config.Map()})
		}
		return writeJSON(a.env.Stdout, map[string][]entry{listKey: out})
	}
	byAddr := map[string]admin.Properties{}
	addrs := make([]string, 0, len(cfgs))
	for _, sc := range cfgs {
		byAddr[sc.Addr] = sc.Config
		addrs = append(addrs, sc.Addr)
	}
	for _, addr := range javaHashOrder(addrs, hashMapCap4, false) {
		fmt.Fprintf(a.env.Stdout, "============%s============\n", addr)
		printProps(a.env.Stdout, byAddr[addr])
	}
	return nil
}

func newUpdateNamesrvConfig(a *app) *cobra.Command {
	var key, value string
	c := newCmd("updateNamesrvConfig", "Update configs of name server.")
	stringOpt(c.Flags(), &key, "k", "key", "config key")
	stringOpt(c.Flags(), &value, "v", "value", "config value")
	markRequired(c, "key", "value")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		key, value := strings.TrimSpace(key), strings.TrimSpace(value)
		if err := c.UpdateNamesrvConfig(cmd.Context(), map[string]string{key: value}); err != nil {
			return err
		}
		// Java prints the -n list, or nothing when the address came from
		// elsewhere.
		servers := ""
		if a.namesrvAddr != "" {
			servers = javaAddrList(a.namesrvAddr)
		}
		return a.emitConfigUpdated("name server", servers, configUpdateJSON{NameServers: c.NameServers(), Key: key, Value: value})
	})
	return c
}

// configUpdateJSON is the --output json of updateNamesrvConfig (with
// NameServers) and updateControllerConfig (with Controllers).
type configUpdateJSON struct {
	NameServers []string `json:"nameServers,omitempty"`
	Controllers []string `json:"controllers,omitempty"`
	Key         string   `json:"key"`
	Value       string   `json:"value"`
}

// emitConfigUpdated prints a config update as the Java tools do: "update
// <what> config success!<servers>", then "key : value".
func (a *app) emitConfigUpdated(what, servers string, v configUpdateJSON) error {
	return a.emit(v, func(w io.Writer) {
		fmt.Fprintf(w, "update %s config success!%s\n%s : %s\n", what, servers, v.Key, v.Value)
	})
}

// javaAddrList is an address option ("a;b") split on ';' as Java prints
// the list (List.toString: "[a, b]").
func javaAddrList(s string) string {
	return "[" + strings.Join(strings.Split(strings.TrimSpace(s), ";"), ", ") + "]"
}

// ---- updateKvConfig / deleteKvConfig ----

func newUpdateKvConfig(a *app) *cobra.Command {
	var ns, key, value string
	c := newCmd("updateKvConfig", "Create or update KV config.")
	stringOpt(c.Flags(), &ns, "s", "namespace", "set the namespace")
	stringOpt(c.Flags(), &key, "k", "key", "set the key name")
	stringOpt(c.Flags(), &value, "v", "value", "set the key value")
	markRequired(c, "namespace", "key", "value")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ns, key, value := strings.TrimSpace(ns), strings.TrimSpace(key), strings.TrimSpace(value)
		if err := c.PutKVConfig(cmd.Context(), ns, key, value); err != nil {
			return err
		}
		return a.emit(kvJSON{ns, key, value, c.NameServers()}, func(w io.Writer) {
			fmt.Fprintf(w, "create or update kv config to namespace success.\n")
		})
	})
	return c
}

type kvJSON struct {
	Namespace   string   `json:"namespace"`
	Key         string   `json:"key"`
	Value       string   `json:"value,omitempty"`
	NameServers []string `json:"nameServers"`
}

func newDeleteKvConfig(a *app) *cobra.Command {
	var ns, key string
	c := newCmd("deleteKvConfig", "Delete KV config.")
	stringOpt(c.Flags(), &ns, "s", "namespace", "set the namespace")
	stringOpt(c.Flags(), &key, "k", "key", "set the key name")
	markRequired(c, "namespace", "key")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ns, key := strings.TrimSpace(ns), strings.TrimSpace(key)
		if err := c.DeleteKVConfig(cmd.Context(), ns, key); err != nil {
			return err
		}
		return a.emit(kvJSON{Namespace: ns, Key: key, NameServers: c.NameServers()}, func(w io.Writer) {
			fmt.Fprintf(w, "delete kv config from namespace success.\n")
		})
	})
	return c
}

// ---- wipeWritePerm / addWritePerm ----

func newWipeWritePerm(a *app) *cobra.Command {
	return newPermCommand(a, "wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param.", "wipe")
}

func newAddWritePerm(a *app) *cobra.Command {
	return newPermCommand(a, "addWritePerm", "Add write perm of broker in all name server you defined in the -n param.", "add")
}

func newPermCommand(a *app, name, short, verb string) *cobra.Command {
	var broker string
	c := newCmd(name, short)
	stringOpt(c.Flags(), &broker, "b", "brokerName", "broker name")
	markRequired(c, "brokerName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		broker := strings.TrimSpace(broker)
		var res []admin.PermResult
		var err error
		if verb == "wipe" {
			res, err = c.WipeWritePerm(cmd.Context(), broker)
		} else {
			res, err = c.AddWritePerm(cmd.Context(), broker)
		}
		if len(res) == 0 && err != nil {
			return err
		}
		type entry struct {
			NameServer string `json:"nameServer"`
			TopicCount int    `json:"topicCount"`
			Error      string `json:"error,omitempty"`
		}
		out := []entry{}
		failed := 0
		for _, r := range res {
			e := entry{NameServer: r.NameServer, TopicCount: r.Count}
			if r.Err != nil {
				failed++
				e.Error = r.Err.Error()
				a.warn("%s: %v", name, r.Err)
				if !a.json() {
					fmt.Fprintf(a.env.Stdout, "%s write perm of broker[%s] in name server[%s] Failed\n", verb, broker, r.NameServer)
				}
			} else if !a.json() {
				fmt.Fprintf(a.env.Stdout, "%s write perm of broker[%s] in name server[%s] OK, %d\n", verb, broker, r.NameServer, r.Count)
			}
			out = append(out, e)
		}
		if a.json() {
			if err := writeJSON(a.env.Stdout, struct {
				BrokerName  string  `json:"brokerName"`
				NameServers []entry `json:"nameServers"`
			}{broker, out}); err != nil {
				return err
			}
		}
		if failed > 0 {
			return &partialError{n: failed}
		}
		return nil
	})
	return c
}
