package command

// Store maintenance and cold-data commands with Java 5.5.0's names,
// options and output: cleanExpiredCQ, cleanUnusedTopic,
// deleteExpiredCommitLog, resetMasterFlushOffset,
// setCommitLogReadAheadMode, getColdDataFlowCtrInfo,
// updateColdDataFlowCtrGroupConfig, removeColdDataFlowCtrGroupConfig,
// exportPopRecord and queryCq (org/apache/rocketmq/tools/command/broker,
// export and queue).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- cleanExpiredCQ, cleanUnusedTopic, deleteExpiredCommitLog ----

// newBrokerOrAllClustersCmd is a command with an optional -b and -c that
// sends one request to the broker of -b, else to every address (masters
// and slaves) of the cluster of -c, else of every cluster, and prints
// "success" or "false" with no newline: Java's result is the last
// broker's, false when there was none.
func (a *app) newBrokerOrAllClustersCmd(use, short, clusterUsage string, call func(*admin.Client, context.Context, string) error) *cobra.Command {
	var broker, cluster string
	c := newCmd(use, short)
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "Broker address")
	stringOpt(c.Flags(), &cluster, "c", "cluster", clusterUsage)
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx := cmd.Context()
		var addrs []string
		if cmd.Flags().Changed("brokerAddr") {
			addrs = []string{strings.TrimSpace(broker)}
		} else {
			ci, err := c.GetBrokerClusterInfo(ctx)
			if err != nil {
				return err
			}
			clusters := []string{strings.TrimSpace(cluster)}
			if clusters[0] == "" {
				clusters = javaHashOrder(admin.ClusterNames(ci), hashMapDefault, false)
			}
			for _, cl := range clusters {
				if got, err := admin.MasterAndSlaveAddrs(ci, cl); err == nil {
					addrs = append(addrs, got...)
				}
			}
		}
		for _, addr := range addrs {
			if err := call(c, ctx, addr); err != nil {
				return err
			}
		}
		result := len(addrs) > 0
		if a.json() {
			return writeJSON(a.env.Stdout, struct {
				Brokers []string `json:"brokers"`
				Result  bool     `json:"result"`
			}{addrs, result})
		}
		if result {
			fmt.Fprint(a.env.Stdout, "success")
		} else {
			fmt.Fprint(a.env.Stdout, "false")
		}
		return nil
	})
	return c
}

func newCleanExpiredCQ(a *app) *cobra.Command {
	return a.newBrokerOrAllClustersCmd("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", "clustername",
		(*admin.Client).CleanExpiredConsumeQueue)
}

func newCleanUnusedTopic(a *app) *cobra.Command {
	return a.newBrokerOrAllClustersCmd("cleanUnusedTopic", "Clean unused topic on broker.", "cluster name",
		(*admin.Client).CleanUnusedTopic)
}

func newDeleteExpiredCommitLog(a *app) *cobra.Command {
	return a.newBrokerOrAllClustersCmd("deleteExpiredCommitLog", "Delete expired CommitLog files.", "clustername",
		(*admin.Client).DeleteExpiredCommitLog)
}

// ---- resetMasterFlushOffset ----

func newResetMasterFlushOffset(a *app) *cobra.Command {
	var broker, offset string
	c := newCmd("resetMasterFlushOffset", "Reset master flush offset in slave.")
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "which broker to reset")
	stringOpt(c.Flags(), &offset, "o", "offset", "the offset to reset at")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		// Java dereferences both options unchecked: a missing one fails the command.
		if !cmd.Flags().Changed("brokerAddr") || !cmd.Flags().Changed("offset") {
			return usagef("resetMasterFlushOffset needs -b and -o")
		}
		off, err := strconv.ParseInt(strings.TrimSpace(offset), 10, 64)
		if err != nil {
			return usagef("offset %q: %v", offset, err)
		}
		if err := c.ResetMasterFlushOffset(cmd.Context(), strings.TrimSpace(broker), off); err != nil {
			return err
		}
		fmt.Fprintf(a.env.Stdout, "reset master flush offset to %d success\n", off)
		return nil
	})
	return c
}

// ---- setCommitLogReadAheadMode, getColdDataFlowCtrInfo ----

// forBrokerOrGroups runs each for the broker of -b (header
// "============addr============"), or for every master of the cluster of -c
// and its slaves (Java's fetchMasterAndSlaveDistinguish order and
// headers); with neither it does nothing, as Java. Each header is printed
// after a space.
func (a *app) forBrokerOrGroups(ctx context.Context, c *admin.Client, single bool, broker, cluster string, each func(header, addr string) error) error {
	if single {
		return each(fmt.Sprintf(" ============%s============\n", broker), broker)
	}
	if cluster == "" {
		return nil
	}
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	groups, err := admin.MasterAndSlaves(ci, cluster)
	if errors.Is(err, admin.ErrClusterNotFound) {
		fmt.Fprintf(a.env.Stdout, "[error] %s", clusterNotFoundMessage)
		return nil
	}
	if err != nil {
		return err
	}
	for _, g := range javaGroupOrder(groups) {
		if g.Master == admin.NoMasterPlaceholder {
			continue
		}
		if err := each(fmt.Sprintf(" ============Master: %s============\n", g.Master), g.Master); err != nil {
			return err
		}
		for _, s := range g.Slaves {
			if err := each(fmt.Sprintf(" ============My Master: %s=====Slave: %s============\n", g.Master, s), s); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterNotFoundMessage is CommandUtil.ERROR_MESSAGE.
const clusterNotFoundMessage = "Make sure the specified clusterName exists or the name server connected to is correct."

func newSetCommitLogReadAheadMode(a *app) *cobra.Command {
	var broker, cluster, mode string
	c := newCmd("setCommitLogReadAheadMode", "Set read ahead mode for all commitlog files.")
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "set which broker")
	stringOpt(c.Flags(), &cluster, "c", "clusterName", "set which cluster")
	stringOpt(c.Flags(), &mode, "m", "commitLogReadAheadMode", "set the CommitLog read ahead mode; 0 is default, 1 random read")
	markRequired(c, "commitLogReadAheadMode")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		m := strings.TrimSpace(mode)
		w := a.env.Stdout
		if m != "0" && m != "1" {
			fmt.Fprint(w, "set the read mode error; 0 is default, 1 random read\n")
			return nil
		}
		return a.forBrokerOrGroups(cmd.Context(), c, cmd.Flags().Changed("brokerAddr"), strings.TrimSpace(broker), strings.TrimSpace(cluster),
			func(header, addr string) error {
				fmt.Fprint(w, header)
				remark, err := c.SetCommitLogReadAheadMode(cmd.Context(), addr, m)
				if err != nil {
					return err
				}
				if remark == "" {
					remark = "null"
				}
				fmt.Fprintf(w, "commitLog set readAhead mode rstStr%s\n", remark)
				return nil
			})
	})
	return c
}

func newGetColdDataFlowCtrInfo(a *app) *cobra.Command {
	var broker, cluster string
	c := newCmd("getColdDataFlowCtrInfo", "Get cold data flow ctr info.")
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "get from which broker")
	stringOpt(c.Flags(), &cluster, "c", "clusterName", "get from which cluster")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		w := a.env.Stdout
		return a.forBrokerOrGroups(cmd.Context(), c, cmd.Flags().Changed("brokerAddr"), strings.TrimSpace(broker), strings.TrimSpace(cluster),
			func(header, addr string) error {
				fmt.Fprint(w, header)
				info, err := c.GetColdDataFlowCtrInfo(cmd.Context(), addr)
				if err != nil {
					return err
				}
				if info == "" {
					fmt.Fprintf(w, "Broker[%s] has no cold ctr table !\n", addr)
					return nil
				}
				out, err := coldCtrInfoText(info)
				if err != nil {
					return fmt.Errorf("cold ctr info of %s: %w", addr, err)
				}
				fmt.Fprintf(w, "%s\n", out)
				return nil
			})
	})
	return c
}

// ---- updateColdDataFlowCtrGroupConfig, removeColdDataFlowCtrGroupConfig ----

// forBrokerOrMasters runs each for the broker of -b, or every master of
// the cluster of -c (a failure there is reported and the next master
// tried, as Java); with neither it prints the usage.
func (a *app) forBrokerOrMasters(cmd *cobra.Command, c *admin.Client, broker, cluster string, each func(addr string) error) error {
	fs := cmd.Flags()
	switch {
	case fs.Changed("brokerAddr"):
		return each(strings.TrimSpace(broker))
	case fs.Changed("clusterName"):
		_, addrs, err := clusterAddrs(cmd.Context(), c, strings.TrimSpace(cluster), false)
		if err != nil {
			return err
		}
		failed := 0
		for _, addr := range addrs {
			if err := each(addr); err != nil {
				failed++
				a.warn("%s: %v", addr, err)
			}
		}
		if failed > 0 {
			return &partialError{n: failed}
		}
		return nil
	}
	return cmd.Help()
}

func newUpdateColdDataFlowCtrGroupConfig(a *app) *cobra.Command {
	return a.newColdGroupCmd("updateColdDataFlowCtrGroupConfig", "Add or update cold data flow ctr group config.", "specific consumerGroup", true,
		"updateColdDataFlowCtrGroupConfig success, %s\n", (*admin.Client).UpdateColdDataFlowCtrGroupConfig)
}

func newRemoveColdDataFlowCtrGroupConfig(a *app) *cobra.Command {
	return a.newColdGroupCmd("removeColdDataFlowCtrGroupConfig", "Remove consumer from cold ctr config.", "the consumer group will remove from the config", false,
		"remove broker cold read threshold success, %s\n",
		func(c *admin.Client, ctx context.Context, addr, group, _ string) error {
			return c.RemoveColdDataFlowCtrGroupConfig(ctx, addr, group)
		})
}

// newColdGroupCmd is a cold-data group command: -g (and -v with
// threshold) sent by call to -b or every master of -c, done printed with
// each address.
func (a *app) newColdGroupCmd(use, short, groupUsage string, threshold bool, done string,
	call func(c *admin.Client, ctx context.Context, addr, group, threshold string) error) *cobra.Command {
	var broker, cluster, group, value string
	c := newCmd(use, short)
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "update which broker")
	stringOpt(c.Flags(), &cluster, "c", "clusterName", "update which cluster")
	stringOpt(c.Flags(), &group, "g", "consumerGroup", groupUsage)
	markRequired(c, "consumerGroup")
	if threshold {
		stringOpt(c.Flags(), &value, "v", "threshold", "cold read threshold value")
		markRequired(c, "threshold")
	}
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		g, v := strings.TrimSpace(group), strings.TrimSpace(value)
		return a.forBrokerOrMasters(cmd, c, broker, cluster, func(addr string) error {
			if err := call(c, cmd.Context(), addr, g, v); err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stdout, done, addr)
			return nil
		})
	})
	return c
}

// ---- exportPopRecord ----

func newExportPopRecord(a *app) *cobra.Command {
	var broker, cluster, dry string
	c := newCmd("exportPopRecord", "Export pop consumer record")
	stringOpt(c.Flags(), &cluster, "c", "clusterName", "choose one cluster to export")
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "choose one broker to export")
	stringOpt(c.Flags(), &dry, "d", "dryRun", "no actual changes will be made")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		ctx, w := cmd.Context(), a.env.Stdout
		// Java's test, kept as is: a dry run is "-d false".
		dryRun := cmd.Flags().Changed("dryRun") && strings.EqualFold(dry, "false")
		export := func(name, addr string) {
			var err error
			if !dryRun {
				err = c.ExportPopRecords(ctx, addr)
			}
			if err != nil {
				fmt.Fprintf(w, "Export broker records error, brokerName=%s, brokerAddr=%s, dryRun=%t\n%s", name, addr, dryRun, err)
				return
			}
			fmt.Fprintf(w, "Export broker records, brokerName=%s, brokerAddr=%s, dryRun=%t\n", name, addr, dryRun)
		}
		switch {
		case cmd.Flags().Changed("brokerAddr"):
			addr := strings.TrimSpace(broker)
			p, err := c.GetBrokerConfig(ctx, addr)
			if err != nil {
				return err
			}
			name := "null"
			if v, ok := p.Map()["brokerName"]; ok {
				name = v
			}
			export(name, addr)
		case cmd.Flags().Changed("clusterName"):
			ci, err := c.GetBrokerClusterInfo(ctx)
			if err != nil {
				return err
			}
			names := ci.ClusterAddrTable[strings.TrimSpace(cluster)]
			for _, name := range javaHashOrder(names, hashMapDefault, false) {
				bd, ok := ci.BrokerAddrTable[name]
				if !ok {
					continue
				}
				for _, ba := range admin.SortedAddrs(bd) {
					export(name, ba.Addr)
				}
			}
		}
		return nil
	})
	return c
}

// ---- queryCq ----

type queryCqOpts struct{ topic, queue, index, count, broker, group string }

func newQueryCq(a *app) *cobra.Command {
	var o queryCqOpts
	c := newCmd("queryCq", "Query cq command.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.queue, "q", "queue", "queue num, ie. 1")
	stringOpt(fs, &o.index, "i", "index", "start queue index.")
	stringOpt(fs, &o.count, "c", "count", "how many.")
	stringOpt(fs, &o.broker, "b", "broker", "broker addr.")
	stringOpt(fs, &o.group, "g", "consumer", "consumer group.")
	markRequired(c, "topic", "queue", "index")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return a.queryCq(cmd.Context(), c, o)
	})
	return c
}

const cqSeparator = "======================================\n"

func (a *app) queryCq(ctx context.Context, c *admin.Client, o queryCqOpts) error {
	topic := strings.TrimSpace(o.topic)
	qid, err := strconv.Atoi(strings.TrimSpace(o.queue))
	if err != nil {
		return usagef("queue %q: %v", o.queue, err)
	}
	index, err := strconv.ParseInt(strings.TrimSpace(o.index), 10, 64)
	if err != nil {
		return usagef("index %q: %v", o.index, err)
	}
	count := 10
	if o.count != "" {
		if count, err = strconv.Atoi(strings.TrimSpace(o.count)); err != nil {
			return usagef("count %q: %v", o.count, err)
		}
	}
	broker := strings.TrimSpace(o.broker)
	if broker == "" {
		route, err := c.GetTopicRoute(ctx, topic)
		if err != nil {
			return err
		}
		if len(route.BrokerDatas) == 0 {
			return errors.New("No topic route data!")
		}
		broker = route.BrokerDatas[0].BrokerAddrs[protocol.MasterID]
	}
	r, err := c.QueryConsumeQueue(ctx, broker, topic, qid, index, count, strings.TrimSpace(o.group))
	if err != nil {
		return err
	}
	if a.json() {
		return writeJSON(a.env.Stdout, r)
	}
	w := a.env.Stdout
	if r.SubscriptionData != nil {
		fmt.Fprintf(w, "Subscription data: \n%s\n", prettySubscription(*r.SubscriptionData))
		fmt.Fprint(w, cqSeparator)
	}
	if r.FilterData != nil {
		fmt.Fprintf(w, "Filter data: \n%s\n", *r.FilterData)
		fmt.Fprint(w, cqSeparator)
	}
	fmt.Fprintf(w, "Queue data: \nmax: %d, min: %d\n", r.MaxQueueIndex, r.MinQueueIndex)
	fmt.Fprint(w, cqSeparator)
	for i, d := range r.QueueData {
		fmt.Fprintf(w, "idx: %d\n%s\n%s", index+int64(i), d, cqSeparator)
	}
	return nil
}

// parseJNode reads JSON text into the pretty printer's nodes, keeping the
// order of object keys.
func parseJNode(data []byte) (jnode, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	n, err := readJNode(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return n, nil
}

func readJNode(d *json.Decoder) (jnode, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			arr := jarr{}
			for d.More() {
				n, err := readJNode(d)
				if err != nil {
					return nil, err
				}
				arr.items = append(arr.items, n)
			}
			_, err := d.Token()
			return arr, err
		}
		obj := jobj{}
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			n, err := readJNode(d)
			if err != nil {
				return nil, err
			}
			obj = append(obj, jfield{key: fastjsonQuote(kt.(string)), node: n})
		}
		_, err := d.Token()
		return obj, err
	case string:
		return jstr(v), nil
	case json.Number:
		return jraw(v.String()), nil
	case bool:
		return jraw(strconv.FormatBool(v)), nil
	}
	return jraw("null"), nil
}

// coldCtrInfoText is GetColdDataFlowCtrInfoSubCommand's rendering of a
// broker's cold ctr info: each runtimeTable entry's lastColdReadTimeMills
// and createTimeMills replaced by lastColdReadTimeFormat and
// createTimeFormat ("yyyy-MM-dd HH:mm:ss", local time), pretty-printed.
func coldCtrInfoText(info string) (string, error) {
	n, err := parseJNode([]byte(info))
	if err != nil {
		return "", err
	}
	obj, ok := n.(jobj)
	if !ok {
		return "", errors.New("not a JSON object")
	}
	for _, f := range obj {
		if f.key != `"runtimeTable"` {
			continue
		}
		rt, _ := f.node.(jobj)
		for i, e := range rt {
			ent, ok := e.node.(jobj)
			if !ok {
				continue
			}
			rt[i].node = replaceMillis(replaceMillis(ent, "lastColdReadTimeMills", "lastColdReadTimeFormat"), "createTimeMills", "createTimeFormat")
		}
	}
	var b strings.Builder
	obj.write(&b, 0)
	return b.String(), nil
}

// replaceMillis removes key (epoch milliseconds) and appends to the
// formatted time under name, as Java's JSONObject put/remove.
func replaceMillis(o jobj, key, name string) jobj {
	var ms int64
	out := make(jobj, 0, len(o)+1)
	for _, f := range o {
		if f.key == fastjsonQuote(key) {
			ms, _ = strconv.ParseInt(strings.Trim(fmt.Sprint(f.node), `"`), 10, 64)
			continue
		}
		out = append(out, f)
	}
	return append(out, jfield{key: fastjsonQuote(name), node: jstr(time.UnixMilli(ms).Format("2006-01-02 15:04:05"))})
}

// prettySubscription is JSON.toJSONString(subscriptionData, true).
func prettySubscription(sd admin.SubscriptionData) string {
	codes := jnode(jarr{})
	if len(sd.CodeSet) > 0 {
		if n, err := parseJNode(sd.CodeSet); err == nil {
			codes = n
		}
	}
	tags := jarr{}
	for _, t := range sd.TagsSet {
		tags.items = append(tags.items, jstr(t))
	}
	obj := jobj{
		{key: `"classFilterMode"`, node: jraw(strconv.FormatBool(sd.ClassFilterMode))},
		{key: `"codeSet"`, node: codes},
	}
	if sd.ExpressionType != "" {
		obj = append(obj, jfield{key: `"expressionType"`, node: jstr(sd.ExpressionType)})
	}
	obj = append(obj,
		jfield{key: `"subString"`, node: jstr(sd.SubString)},
		jfield{key: `"subVersion"`, node: jraw(strconv.FormatInt(sd.SubVersion, 10))},
		jfield{key: `"tagsSet"`, node: tags},
		jfield{key: `"topic"`, node: jstr(sd.Topic)},
	)
	var b strings.Builder
	obj.write(&b, 0)
	return b.String()
}
