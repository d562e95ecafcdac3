package command

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// javaBool is Boolean.parseBoolean: "true" in any case, else false.
func javaBool(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// javaInt is Integer.parseInt of a trimmed option value.
func javaInt(flag, s string) (int, error) {
	n, err := parseOptInt(flag, s, 32, "not an integer")
	return int(n), err
}

// parseOptInt parses a trimmed option value as a bits-wide integer; a bad
// one is a usage error that says the value is "what".
func parseOptInt(flag, s string, bits int, what string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
	if err != nil {
		return 0, usagef("invalid value %q for -%s: %s", s, flag, what)
	}
	return n, nil
}

// parseAttributes is AttributeParser.parseToMap: "+k=v" adds, "-k" deletes.
// It returns the map (keys keep their sign), its keys in Java's HashMap
// order, and AttributeParser.parseToString of it.
func parseAttributes(s string) (map[string]string, []string, string, error) {
	m := map[string]string{}
	var order []string
	s = strings.TrimSpace(s)
	if s == "" {
		return m, nil, "", nil
	}
	for _, kv := range strings.Split(s, ",") {
		var key, value string
		if strings.Contains(kv, "=") {
			parts := strings.Split(kv, "=")
			key, value = parts[0], parts[1]
			if value == "" || !strings.Contains(key, "+") {
				return nil, nil, "", usagef("add/alter attribute format is wrong: %s", key)
			}
		} else {
			key = kv
			if !strings.Contains(key, "-") {
				return nil, nil, "", usagef("delete attribute format is wrong: %s", key)
			}
		}
		if _, dup := m[key]; dup {
			return nil, nil, "", usagef("key duplication: %s", key)
		}
		m[key] = value
		order = append(order, key)
	}
	order = javaHashOrder(order, hashMapDefault, false)
	parts := make([]string, 0, len(order))
	for _, k := range order {
		if m[k] == "" {
			parts = append(parts, k)
		} else {
			parts = append(parts, k+"="+m[k])
		}
	}
	return m, order, strings.Join(parts, ","), nil
}

// ---- updateTopic ----

type updateTopicOpts struct {
	broker, cluster, attributes, topic, read, write, perm, order, unit, hasUnitSub string
}

func newUpdateTopic(a *app) *cobra.Command {
	var o updateTopicOpts
	c := newCmd("updateTopic", "Update or create topic.")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "create topic to which broker")
	stringOpt(fs, &o.cluster, "c", "clusterName", "create topic to which cluster")
	stringOpt(fs, &o.attributes, "a", "attributes", "attribute(+a=b,+c=d,-e)")
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.read, "r", "readQueueNums", "set read queue nums")
	stringOpt(fs, &o.write, "w", "writeQueueNums", "set write queue nums")
	stringOpt(fs, &o.perm, "p", "perm", "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]")
	stringOpt(fs, &o.order, "o", "order", "set topic's order(true|false)")
	stringOpt(fs, &o.unit, "u", "unit", "is unit topic (true|false)")
	stringOpt(fs, &o.hasUnitSub, "s", "hasUnitSub", "has unit sub (true|false)")
	markRequired(c, "topic")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.MarkFlagsMutuallyExclusive("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.updateTopic(cmd.Context(), cmd, o) })
	return c
}

type updateTopicListOpts struct{ broker, cluster, file string }

func newUpdateTopicList(a *app) *cobra.Command {
	var o updateTopicListOpts
	c := newCmd("updateTopicList", "create or update topic in batch")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "create topic to which broker")
	stringOpt(fs, &o.cluster, "c", "clusterName", "create topic to which cluster")
	stringOpt(fs, &o.file, "f", "filename", "Path to a file with list of org.apache.rocketmq.common.TopicConfig in json format")
	markRequired(c, "filename")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.MarkFlagsMutuallyExclusive("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.updateTopicList(cmd.Context(), cmd, o) })
	return c
}

// updateTopicList sends a JSON array of TopicConfig to one broker or to
// every master of a cluster in one UPDATE_AND_CREATE_TOPIC_LIST each, with
// the Java tool's messages (a missing file is a message, not a failure; an
// empty list does nothing). Absent fields take TopicConfig's defaults (16
// queues, perm 6, SINGLE_TAG). With -c the Java tool also prints its usage
// after the results (a slip in UpdateTopicListSubCommand); we do not.
func (a *app) updateTopicList(ctx context.Context, cmd *cobra.Command, o updateTopicListOpts) error {
	return submitConfigList(a, o.file, "topic config",
		func() protocol.TopicConfig { return protocol.NewTopicConfig("") },
		func(c *admin.Client) ([]string, string, error) {
			if cmd.Flags().Changed("brokerAddr") {
				return []string{strings.TrimSpace(o.broker)}, "topic config", nil
			}
			_, addrs, err := clusterAddrs(ctx, c, strings.TrimSpace(o.cluster), false)
			return addrs, "topic config", err
		},
		func(c *admin.Client, addr string, list []protocol.TopicConfig) error {
			return c.CreateTopicList(ctx, addr, list)
		})
}

type updateTopicResult struct {
	TopicConfig protocol.TopicConfig `json:"topicConfig"`
	Attributes  string               `json:"attributes"`
	CreatedOn   []string             `json:"createdOn"`
	OrderConf   string               `json:"orderConf,omitempty"`
}

func (a *app) updateTopic(ctx context.Context, cmd *cobra.Command, o updateTopicOpts) error {
	tc := protocol.TopicConfig{
		TopicName:       strings.TrimSpace(o.topic),
		ReadQueueNums:   8,
		WriteQueueNums:  8,
		Perm:            protocol.PermRead | protocol.PermWrite,
		TopicFilterType: protocol.SingleTag,
	}
	attrs, attrOrder, attrString, err := parseAttributes(o.attributes)
	if err != nil {
		return err
	}
	tc.Attributes = attrs
	changed := cmd.Flags().Changed
	if err := parseChanged(changed,
		parsedOpt("readQueueNums", "r", o.read, javaInt, &tc.ReadQueueNums),
		parsedOpt("writeQueueNums", "w", o.write, javaInt, &tc.WriteQueueNums),
		parsedOpt("perm", "p", o.perm, javaInt, &tc.Perm),
	); err != nil {
		return err
	}
	if tc.Perm < 0 || tc.Perm >= protocol.PermPriority {
		return usagef("topicPermission value: %d is invalid.", tc.Perm)
	}
	if javaBool(o.unit) {
		tc.TopicSysFlag |= 1
	}
	if javaBool(o.hasUnitSub) {
		tc.TopicSysFlag |= 2
	}
	tc.Order = javaBool(o.order)

	return a.withClient(func(c *admin.Client) error {
		res := updateTopicResult{TopicConfig: tc, Attributes: attrString}
		w := a.env.Stdout
		text := !a.json()
		if changed("brokerAddr") {
			addr := strings.TrimSpace(o.broker)
			if err := c.CreateTopic(ctx, addr, tc, attrString); err != nil {
				return err
			}
			res.CreatedOn = []string{addr}
			if tc.Order {
				ci, err := c.GetBrokerClusterInfo(ctx)
				if err != nil {
					return err
				}
				name, err := admin.BrokerNameByAddr(ci, addr)
				if err == nil {
					err = a.setOrderConf(ctx, c, &res, []string{name}, false)
				}
				if err != nil {
					return err
				}
			}
			if !text {
				return writeJSON(w, res)
			}
			fmt.Fprintf(w, "create topic to %s success.\n", addr)
			fmt.Fprintf(w, "%s\n", topicConfigString(tc, attrOrder))
			return nil
		}

		cluster := strings.TrimSpace(o.cluster)
		ci, masters, err := clusterAddrs(ctx, c, cluster, false)
		if err != nil {
			return err
		}
		res.CreatedOn = []string{}
		for _, addr := range masters {
			if err := c.CreateTopic(ctx, addr, tc, attrString); err != nil {
				return err
			}
			res.CreatedOn = append(res.CreatedOn, addr)
			if text {
				fmt.Fprintf(w, "create topic to %s success.\n", addr)
			}
		}
		if tc.Order {
			names, err := admin.BrokerNames(ci, cluster)
			if err != nil {
				return err
			}
			if err := a.setOrderConf(ctx, c, &res, javaHashOrder(names, hashMapDefault, false), true); err != nil {
				return err
			}
		}
		if !text {
			return writeJSON(w, res)
		}
		fmt.Fprintf(w, "%s\n", topicConfigString(tc, attrOrder))
		return nil
	})
}

// setOrderConf stores the orderConf of the ordered topic res creates on the
// nameserver, "name:writeQueueNums" of every broker in names, for the
// brokers' cluster or one broker, and says so in text mode.
func (a *app) setOrderConf(ctx context.Context, c *admin.Client, res *updateTopicResult, names []string, isCluster bool) error {
	tc := res.TopicConfig
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ":" + strconv.Itoa(tc.WriteQueueNums)
	}
	res.OrderConf = strings.Join(parts, ";")
	if err := c.CreateOrUpdateOrderConf(ctx, tc.TopicName, res.OrderConf, isCluster); err != nil {
		return err
	}
	if !a.json() {
		scope := "broker"
		if isCluster {
			scope = "cluster"
		}
		fmt.Fprintf(a.env.Stdout, "set %s orderConf. isOrder=%t, orderConf=[%s]\n", scope, tc.Order, res.OrderConf)
	}
	return nil
}

// ---- deleteTopic ----

func newDeleteTopic(a *app) *cobra.Command {
	var topic, cluster string
	c := newCmd("deleteTopic", "Delete topic from broker and NameServer.")
	stringOpt(c.Flags(), &topic, "t", "topic", "topic name")
	stringOpt(c.Flags(), &cluster, "c", "clusterName", "delete topic from which cluster")
	markRequired(c, "topic", "clusterName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		topic, cluster := strings.TrimSpace(topic), strings.TrimSpace(cluster)
		ctx := cmd.Context()
		masters, err := c.DeleteTopicInCluster(ctx, cluster, topic)
		if err != nil {
			return err
		}
		if !a.json() {
			fmt.Fprintf(a.env.Stdout, "delete topic [%s] from cluster [%s] success.\n", topic, cluster)
		}
		if err := c.DeleteTopicInNameServers(ctx, cluster, topic); err != nil {
			return err
		}
		if a.json() {
			return writeJSON(a.env.Stdout, struct {
				Topic       string   `json:"topic"`
				Cluster     string   `json:"cluster"`
				Brokers     []string `json:"brokers"`
				NameServers []string `json:"nameServers"`
			}{topic, cluster, append([]string{}, masters...), c.NameServers()})
		}
		fmt.Fprintf(a.env.Stdout, "delete topic [%s] from NameServer success.\n", topic)
		return nil
	})
	return c
}

// ---- topicRoute ----

func newTopicRoute(a *app) *cobra.Command {
	var topic string
	var list bool
	c := newCmd("topicRoute", "Examine topic route info.")
	stringOpt(c.Flags(), &topic, "t", "topic", "topic name")
	boolOpt(c.Flags(), &list, "l", "list", "Use list format to print data")
	markRequired(c, "topic")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		route, err := c.GetTopicRoute(cmd.Context(), strings.TrimSpace(topic))
		if err != nil {
			return err
		}
		switch {
		case a.json():
			return writeJSON(a.env.Stdout, route)
		case list:
			printRouteList(a.env.Stdout, route)
		default:
			fmt.Fprintf(a.env.Stdout, "%s\n", prettyRoute(route))
		}
		return nil
	})
	return c
}

const routeListFormat = "%-45s %-32s %-50s %-10s %-11s %-5s\n"

func printRouteList(w io.Writer, r *protocol.TopicRouteData) {
	queues := map[string]protocol.QueueData{}
	for _, q := range r.QueueDatas {
		queues[q.BrokerName] = q
	}
	brokers := append([]protocol.BrokerData(nil), r.BrokerDatas...)
	sort.SliceStable(brokers, func(i, j int) bool { return brokers[i].BrokerName < brokers[j].BrokerName })
	fmt.Fprintf(w, routeListFormat, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
	totalRead, totalWrite := 0, 0
	for _, bd := range brokers {
		q := queues[bd.BrokerName]
		totalRead += q.ReadQueueNums
		totalWrite += q.WriteQueueNums
		fmt.Fprintf(w, routeListFormat, bd.Cluster, bd.BrokerName, javaAddrMap(bd.BrokerAddrs),
			strconv.Itoa(q.ReadQueueNums), strconv.Itoa(q.WriteQueueNums), strconv.Itoa(q.Perm))
	}
	fmt.Fprintf(w, "%s\n", strings.Repeat("-", 158))
	fmt.Fprintf(w, routeListFormat, "Total:", strconv.Itoa(len(queues)), "", strconv.Itoa(totalRead), strconv.Itoa(totalWrite), "")
}

// ---- topicStatus ----

func newTopicStatus(a *app) *cobra.Command {
	var topic, cluster string
	c := newCmd("topicStatus", "Examine topic Status info.")
	stringOpt(c.Flags(), &topic, "t", "topic", "topic name")
	stringOpt(c.Flags(), &cluster, "c", "cluster", "cluster name or lmq parent topic, lmq is used to find the route.")
	markRequired(c, "topic")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		topic := strings.TrimSpace(topic)
		var st *protocol.TopicStatsTable
		var err error
		if cmd.Flags().Changed("cluster") {
			st, err = c.ExamineTopicStatsOfRoute(cmd.Context(), strings.TrimSpace(cluster), topic)
		} else {
			st, err = c.ExamineTopicStats(cmd.Context(), topic)
		}
		if err != nil {
			return err
		}
		return a.emit(topicStatusJSON(st), func(w io.Writer) {
			printTopicStatus(w, st, a.env.Location)
		})
	})
	return c
}

type topicStatusRow struct {
	BrokerName          string `json:"brokerName"`
	QueueID             int    `json:"queueId"`
	MinOffset           int64  `json:"minOffset"`
	MaxOffset           int64  `json:"maxOffset"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

func topicStatusJSON(st *protocol.TopicStatsTable) any {
	rows := []topicStatusRow{}
	for _, mq := range st.OffsetTable.SortedKeys() {
		o := st.OffsetTable[mq]
		rows = append(rows, topicStatusRow{mq.BrokerName, mq.QueueID, o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp})
	}
	return struct {
		Queues      []topicStatusRow `json:"queues"`
		TopicPutTps float64          `json:"topicPutTps"`
	}{rows, st.TopicPutTps}
}

func printTopicStatus(w io.Writer, st *protocol.TopicStatsTable, loc *time.Location) {
	fmt.Fprintf(w, "%-32s  %-4s  %-20s  %-20s    %s\n", "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
	for _, mq := range st.OffsetTable.SortedKeys() {
		o := st.OffsetTable[mq]
		human := ""
		if o.LastUpdateTimestamp > 0 {
			human = humanTime2(o.LastUpdateTimestamp, loc)
		}
		fmt.Fprintf(w, "%-32s  %-4d  %-20d  %-20d    %s\n", frontStringAtLeast(mq.BrokerName, 32), mq.QueueID, o.MinOffset, o.MaxOffset, human)
	}
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "Topic Put TPS: %s\n", javaDouble(st.TopicPutTps))
}

// ---- topicList ----

func newTopicList(a *app) *cobra.Command {
	var clusterModel bool
	c := newCmd("topicList", "Fetch all topic list from name server.")
	boolOpt(c.Flags(), &clusterModel, "c", "clusterModel", "clusterModel")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		if clusterModel {
			return a.topicListClusters(cmd.Context(), c)
		}
		tl, err := c.GetAllTopicList(cmd.Context())
		if err != nil {
			return err
		}
		if a.json() {
			return writeJSON(a.env.Stdout, struct {
				Topics []string `json:"topics"`
			}{append([]string{}, tl.TopicList...)})
		}
		for _, t := range javaHashOrder(tl.TopicList, hashMapDefault, false) {
			fmt.Fprintf(a.env.Stdout, "%s\n", t)
		}
		return nil
	})
	return c
}

type topicClusterRow struct {
	Cluster string   `json:"cluster"`
	Topic   string   `json:"topic"`
	Groups  []string `json:"groups"`
}

func (a *app) topicListClusters(ctx context.Context, c *admin.Client) error {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	tl, err := c.GetAllTopicList(ctx)
	if err != nil {
		return err
	}
	w := a.env.Stdout
	if !a.json() {
		fmt.Fprintf(w, "%-20s  %-48s  %-48s\n", "#Cluster Name", "#Topic", "#Consumer Group")
	}
	rows := []topicClusterRow{}
	for _, topic := range javaHashOrder(tl.TopicList, hashMapDefault, false) {
		if strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(topic, protocol.DLQGroupTopicPrefix) {
			continue
		}
		// As in Java, failures leave the cluster "" and the groups empty.
		cluster, groups := "", []string(nil)
		if route, err := c.GetTopicRoute(ctx, topic); err != nil {
			a.env.Log.Debug("topicList: route", "topic", topic, "err", err)
		} else if len(route.BrokerDatas) > 0 {
			cluster = admin.ClusterOfBroker(ci, route.BrokerDatas[0].BrokerName)
			if cluster == "" {
				cluster = "null" // Java prints its null
			}
			for _, bd := range route.BrokerDatas {
				if addr := admin.SelectBrokerAddr(bd); addr != "" {
					if groups, err = c.QueryTopicConsumeByWho(ctx, addr, topic); err != nil {
						a.env.Log.Debug("topicList: consumer groups", "topic", topic, "err", err)
					}
					break
				}
			}
		}
		rows = append(rows, topicClusterRow{Cluster: cluster, Topic: topic, Groups: append([]string{}, groups...)})
		if a.json() {
			continue
		}
		groups = javaHashOrder(groups, hashMapDefault, false)
		if len(groups) == 0 {
			groups = []string{""}
		}
		for _, g := range groups {
			fmt.Fprintf(w, "%-20s  %-64s  %-64s\n", frontStringAtLeast(cluster, 20), frontStringAtLeast(topic, 64), frontStringAtLeast(g, 64))
		}
	}
	if a.json() {
		return writeJSONField(w, "topics", rows)
	}
	return nil
}
