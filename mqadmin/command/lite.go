package command

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Lite-topic commands (docs/lite-topics.md §7), named and printed as Apache's
// tools/command/lite, plus listLiteTopics (ours). Each queries every broker
// of the parent topic's route (getBrokerLiteInfo: one broker or a
// cluster's masters); a broker that fails prints "[name] error." and the
// others go on.

// liteCommands returns the lite commands for the root.
func liteCommands(a *app) []*cobra.Command {
	return []*cobra.Command{
		newGetBrokerLiteInfo(a),
		newGetParentTopicInfo(a),
		newGetLiteTopicInfo(a),
		newGetLiteClientInfo(a),
		newGetLiteGroupInfo(a),
		newTriggerLiteDispatch(a),
		newListLiteTopics(a),
	}
}

// javaList is AbstractCollection.toString ("[a, b]"); nil is "null".
func javaList(s []string) string {
	if s == nil {
		return "null"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// ---- getBrokerLiteInfo ----

const brokerLiteFormat = "%-30s %-17s %-10s %-14s %-20s %-17s %-15s %-18s %-15s\n"

func newGetBrokerLiteInfo(a *app) *cobra.Command {
	var broker, cluster string
	var detail bool
	c := newCmd("getBrokerLiteInfo", "Get broker lite info.")
	stringOpt(c.Flags(), &broker, "b", "brokerAddr", "Broker address")
	stringOpt(c.Flags(), &cluster, "c", "cluster", "Cluster name")
	boolOpt(c.Flags(), &detail, "d", "showDetail", "Show topic and group detail info")
	c.MarkFlagsOneRequired("brokerAddr", "cluster")
	c.MarkFlagsMutuallyExclusive("brokerAddr", "cluster")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, cl *admin.Client) error {
		ctx := cmd.Context()
		addrs := []string{strings.TrimSpace(broker)}
		if broker == "" {
			var err error
			if addrs, err = cl.ClusterMasters(ctx, strings.TrimSpace(cluster)); err != nil {
				return err
			}
			sort.Strings(addrs)
		}
		w := a.env.Stdout
		if a.json() {
			out := map[string]*protocol.GetBrokerLiteInfoResponseBody{}
			for _, addr := range addrs {
				if b, err := cl.GetBrokerLiteInfo(ctx, addr); err == nil {
					out[addr] = b
				} else {
					a.warn("%s: %v", addr, err)
				}
			}
			return writeJSON(w, out)
		}
		fmt.Fprintf(w, brokerLiteFormat, "#Broker", "#Store Type", "#Max LMQ", "#Current LMQ", "#SubscriptionCount",
			"#OrderInfoCount", "#CQTableSize", "#OffsetTableSize", "#eventMapSize")
		for _, addr := range addrs {
			b, err := cl.GetBrokerLiteInfo(ctx, addr)
			if err != nil {
				if broker != "" {
					return err
				}
				fmt.Fprintf(w, "[%s] error.\n", addr)
				continue
			}
			fmt.Fprintf(w, brokerLiteFormat, addr, b.StoreType, strconv.Itoa(b.MaxLmqNum), strconv.Itoa(b.CurrentLmqNum),
				strconv.Itoa(b.LiteSubscriptionCount), strconv.Itoa(b.OrderInfoCount), strconv.Itoa(b.CqTableSize),
				strconv.Itoa(b.OffsetTableSize), strconv.Itoa(b.EventMapSize))
			if detail {
				fmt.Fprintf(w, "Topic Meta: %s\n", jsonText(b.TopicMeta))
				fmt.Fprintf(w, "Group Meta: %s\n\n", jsonText(b.GroupMeta))
			}
		}
		return nil
	})
	return c
}

func jsonText(v any) string {
	b, err := protocol.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// ---- getParentTopicInfo ----

const parentInfoFormat = "%-50s %-8s %-14s %-14s %-100s \n"

func newGetParentTopicInfo(a *app) *cobra.Command {
	var parent string
	c := newCmd("getParentTopicInfo", "Get parent topic info.")
	stringOpt(c.Flags(), &parent, "p", "parentTopic", "Parent topic name")
	markRequired(c, "parentTopic")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		parent = strings.TrimSpace(parent)
		return a.eachRouteBroker(cmd, parent, func(w io.Writer) {
			if !a.json() {
				fmt.Fprintf(w, "Parent Topic Info: [%s]\n", parent)
				fmt.Fprintf(w, parentInfoFormat, "#Broker Name", "#TTL", "#Lite Count", "#LMQ NUM", "#GROUPS")
			}
		}, func(w io.Writer, cl *admin.Client, rb admin.RouteBroker) (any, error) {
			b, err := cl.GetParentTopicInfo(cmd.Context(), rb.Addr, parent)
			if err != nil || a.json() {
				return b, err
			}
			fmt.Fprintf(w, parentInfoFormat, frontStringAtLeast(rb.Name, 40), strconv.Itoa(b.TTL), strconv.Itoa(b.LiteTopicCount),
				strconv.Itoa(b.LmqNum), javaList(b.Groups))
			return b, nil
		})
	})
	return c
}

// eachRouteBroker runs one lite query per broker of topic's route: header
// once, then row per broker ("[name] error." on failure); with --output
// json it prints {brokerName: body}.
func (a *app) eachRouteBroker(cmd *cobra.Command, topic string, header func(io.Writer),
	row func(io.Writer, *admin.Client, admin.RouteBroker) (any, error)) error {
	return a.eachRouteBrokerNamed(cmd, topic, "", header, row)
}

// eachRouteBrokerNamed is eachRouteBroker for only the broker named
// brokerName ("": every broker).
func (a *app) eachRouteBrokerNamed(cmd *cobra.Command, topic, brokerName string, header func(io.Writer),
	row func(io.Writer, *admin.Client, admin.RouteBroker) (any, error)) error {
	return a.withClient(func(cl *admin.Client) error {
		brokers, err := cl.RouteBrokers(cmd.Context(), topic)
		if err != nil {
			return err
		}
		w := a.env.Stdout
		header(w)
		out := map[string]any{}
		for _, rb := range brokers {
			if rb.Addr == "" || brokerName != "" && rb.Name != brokerName {
				continue
			}
			body, err := row(w, cl, rb)
			if err != nil {
				if a.json() {
					a.warn("%s: %v", rb.Name, err)
				} else {
					fmt.Fprintf(w, "[%s] error.\n", rb.Name)
				}
				continue
			}
			out[rb.Name] = body
		}
		if a.json() {
			return writeJSON(w, out)
		}
		return nil
	})
}

// ---- getLiteTopicInfo ----

const liteTopicFormat = "%-50s %-14s %-14s %-30s %-12s %-18s \n"

func newGetLiteTopicInfo(a *app) *cobra.Command {
	var parent, lite string
	var show bool
	c := newCmd("getLiteTopicInfo", "Get lite topic info.")
	stringOpt(c.Flags(), &parent, "p", "parentTopic", "Parent topic name")
	stringOpt(c.Flags(), &lite, "l", "liteTopic", "Lite topic name")
	boolOpt(c.Flags(), &show, "s", "showClientId", "Show all clientId")
	markRequired(c, "parentTopic", "liteTopic")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		parent, lite = strings.TrimSpace(parent), strings.TrimSpace(lite)
		return a.eachRouteBroker(cmd, parent, func(w io.Writer) {
			if !a.json() {
				fmt.Fprintf(w, "Lite Topic Info: [%s] [%s] [%s]\n", parent, lite, "%LMQ%$"+parent+"$"+lite)
				fmt.Fprintf(w, liteTopicFormat, "#Broker Name", "#MinOffset", "#MaxOffset", "#LastUpdate", "#Sharding", "#SubClientCount")
			}
		}, func(w io.Writer, cl *admin.Client, rb admin.RouteBroker) (any, error) {
			b, err := cl.GetLiteTopicInfo(cmd.Context(), rb.Addr, parent, lite)
			if err != nil || a.json() {
				return b, err
			}
			last := "-"
			if b.TopicOffset.LastUpdateTimestamp > 0 {
				last = humanTime2(b.TopicOffset.LastUpdateTimestamp, a.env.Location)
			}
			fmt.Fprintf(w, liteTopicFormat, frontStringAtLeast(rb.Name, 40), strconv.FormatInt(b.TopicOffset.MinOffset, 10),
				strconv.FormatInt(b.TopicOffset.MaxOffset, 10), last, strconv.FormatBool(b.ShardingToBroker), strconv.Itoa(len(b.Subscriber)))
			if show {
				ids := make([]string, 0, len(b.Subscriber))
				for _, s := range b.Subscriber {
					ids = append(ids, s.ClientID+"@"+s.Group)
				}
				fmt.Fprintf(w, "%s\n", javaList(ids))
			}
			return b, nil
		})
	})
	return c
}

// ---- getLiteClientInfo ----

const liteClientFormat = "%-30s %-20s %-30s %-30s \n"

func newGetLiteClientInfo(a *app) *cobra.Command {
	var parent, group, clientID string
	var show bool
	c := newCmd("getLiteClientInfo", "Get lite client info.")
	stringOpt(c.Flags(), &parent, "p", "parentTopic", "Parent topic name")
	stringOpt(c.Flags(), &group, "g", "group", "Consumer group")
	stringOpt(c.Flags(), &clientID, "c", "clientId", "Client id")
	boolOpt(c.Flags(), &show, "s", "showDetail", "Show details")
	markRequired(c, "parentTopic", "group", "clientId")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		parent, group, clientID = strings.TrimSpace(parent), strings.TrimSpace(group), strings.TrimSpace(clientID)
		na := func(ms int64) string {
			if ms > 0 {
				return humanTime2(ms, a.env.Location)
			}
			return "N/A"
		}
		return a.eachRouteBroker(cmd, parent, func(w io.Writer) {
			if !a.json() {
				fmt.Fprintf(w, "Lite Client Info: [%s] [%s] [%s]\n", parent, group, clientID)
				fmt.Fprintf(w, liteClientFormat, "#Broker", "#LiteTopicCount", "#LastAccessTime", "#LastConsumeTime")
			}
		}, func(w io.Writer, cl *admin.Client, rb admin.RouteBroker) (any, error) {
			b, err := cl.GetLiteClientInfo(cmd.Context(), rb.Addr, parent, group, clientID, 0)
			if err != nil || a.json() {
				return b, err
			}
			count := "N/A"
			if b.LiteTopicCount > 0 {
				count = strconv.Itoa(b.LiteTopicCount)
			}
			fmt.Fprintf(w, liteClientFormat, rb.Name, count, na(b.LastAccessTime), na(b.LastConsumeTime))
			if show && b.LiteTopicSet != nil {
				fmt.Fprintf(w, "Lite Topics: %s\n\n", javaList(b.LiteTopicSet))
			}
			return b, nil
		})
	})
	return c
}

// ---- getLiteGroupInfo ----

const (
	liteGroupOffsetFormat = "%-50s %-16s %-16s %-16s %-30s\n"
	liteGroupTopKFormat   = "%-6s %-40s %-12s %-30s\n"
)

func newGetLiteGroupInfo(a *app) *cobra.Command {
	var parent, group, lite, topK string
	c := newCmd("getLiteGroupInfo", "Get lite group info.")
	stringOpt(c.Flags(), &parent, "p", "parentTopic", "Parent topic name")
	stringOpt(c.Flags(), &group, "g", "group", "Consumer group")
	stringOpt(c.Flags(), &lite, "l", "liteTopic", "query lite topic detail")
	stringOpt(c.Flags(), &topK, "k", "topK", "topK value of each broker")
	markRequired(c, "parentTopic", "group")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		parent, group, lite = strings.TrimSpace(parent), strings.TrimSpace(group), strings.TrimSpace(lite)
		k := 20
		if cmd.Flags().Changed("topK") {
			n, err := strconv.Atoi(strings.TrimSpace(topK))
			if err != nil {
				return usagef("invalid value %q for -k: not a number", topK)
			}
			k = n
		}
		byLite := lite != ""
		w := a.env.Stdout
		var total, earliest int64 = 0, -1
		var byCount, byTime []protocol.LiteLagInfo
		err := a.eachRouteBroker(cmd, parent, func(w io.Writer) {
			if a.json() {
				return
			}
			fmt.Fprintf(w, "Lite Group Info: [%s] [%s]\n", group, parent)
			if byLite {
				fmt.Fprintf(w, liteGroupOffsetFormat, "#Broker Name", "#BrokerOffset", "#ConsumeOffset", "#LagCount", "#LastUpdate")
			}
		}, func(w io.Writer, cl *admin.Client, rb admin.RouteBroker) (any, error) {
			b, err := cl.GetLiteGroupInfo(cmd.Context(), rb.Addr, group, lite, k)
			if err != nil {
				return nil, err
			}
			total += max(b.TotalLagCount, 0)
			if ts := b.EarliestUnconsumedTimestamp; ts > 0 && (earliest < 0 || ts < earliest) {
				earliest = ts
			}
			byCount = append(byCount, b.LagCountTopK...)
			byTime = append(byTime, b.LagTimestampTopK...)
			if byLite && !a.json() {
				ow := b.LiteTopicOffsetWrapper
				if ow == nil {
					fmt.Fprintf(w, liteGroupOffsetFormat, rb.Name, "-", "-", "-", "-")
				} else {
					last := "-"
					if ow.LastTimestamp > 0 {
						last = humanTime2(ow.LastTimestamp, a.env.Location)
					}
					fmt.Fprintf(w, liteGroupOffsetFormat, rb.Name, strconv.FormatInt(ow.BrokerOffset, 10), strconv.FormatInt(ow.ConsumerOffset, 10),
						strconv.FormatInt(ow.BrokerOffset-ow.ConsumerOffset, 10), last)
				}
			}
			return b, nil
		})
		if err != nil || a.json() {
			return err
		}
		if byLite {
			fmt.Fprintf(w, "Total Lag Count: %d\n", total)
			return nil
		}
		ts := func(ms int64) string {
			if ms > 0 {
				return humanTime2(ms, a.env.Location)
			}
			return "-"
		}
		sort.SliceStable(byCount, func(i, j int) bool { return byCount[i].LagCount > byCount[j].LagCount })
		fmt.Fprintf(w, "------TopK by lag count-----\n")
		fmt.Fprintf(w, "Total Lag Count: %d\n", total)
		fmt.Fprintf(w, liteGroupTopKFormat, "NO", "Lite Topic", "Lag Count", "UnconsumedTimestamp")
		for i, x := range byCount {
			fmt.Fprintf(w, liteGroupTopKFormat, strconv.Itoa(i+1), x.LiteTopic, strconv.FormatInt(x.LagCount, 10), ts(x.EarliestUnconsumedTimestamp))
		}
		sort.SliceStable(byTime, func(i, j int) bool {
			return byTime[i].EarliestUnconsumedTimestamp < byTime[j].EarliestUnconsumedTimestamp
		})
		fmt.Fprintf(w, "\n------TopK by lag time------\n")
		if earliest > 0 {
			fmt.Fprintf(w, "Min Unconsumed Timestamp: %d (%d s ago)\n", earliest, (a.env.Now().UnixMilli()-earliest)/1000)
		} else {
			fmt.Fprintf(w, "Min Unconsumed Timestamp: -1 (lag time topK may not enabled)\n")
		}
		fmt.Fprintf(w, liteGroupTopKFormat, "NO", "Lite Topic", "Lag Count", "UnconsumedTimestamp")
		for i, x := range byTime {
			fmt.Fprintf(w, liteGroupTopKFormat, strconv.Itoa(i+1), x.LiteTopic, strconv.FormatInt(x.LagCount, 10), ts(x.EarliestUnconsumedTimestamp))
		}
		return nil
	})
	return c
}

// ---- triggerLiteDispatch ----

func newTriggerLiteDispatch(a *app) *cobra.Command {
	var parent, group, clientID, brokerName string
	c := newCmd("triggerLiteDispatch", "Trigger Lite Dispatch.")
	stringOpt(c.Flags(), &parent, "p", "parentTopic", "Parent topic name")
	stringOpt(c.Flags(), &group, "g", "group", "Consumer group")
	stringOpt(c.Flags(), &clientID, "c", "clientId", "clientId (optional)")
	stringOpt(c.Flags(), &brokerName, "b", "brokerName", "brokerName (optional)")
	markRequired(c, "parentTopic", "group")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, cl *admin.Client) error {
		parent, group = strings.TrimSpace(parent), strings.TrimSpace(group)
		clientID, brokerName = strings.TrimSpace(clientID), strings.TrimSpace(brokerName)
		brokers, err := cl.RouteBrokers(cmd.Context(), parent)
		if err != nil {
			return err
		}
		w := a.env.Stdout
		fmt.Fprintf(w, "Group And Topic Info: [%s] [%s]\n\n", group, parent)
		failed, matched := 0, 0
		for _, rb := range brokers {
			if rb.Addr == "" || brokerName != "" && rb.Name != brokerName {
				continue
			}
			matched++
			state := "dispatched"
			if err := cl.TriggerLiteDispatch(cmd.Context(), rb.Addr, group, clientID); err != nil {
				state = "error"
				failed++
				a.warn("%s: %v", rb.Name, err)
			}
			fmt.Fprintf(w, "%-30s %-12s\n", rb.Name, state)
		}
		if brokerName != "" && matched == 0 {
			return fmt.Errorf("broker %s is not in the route of topic %s", brokerName, parent)
		}
		// The table shows every broker; a failed one fails the command,
		// as for the other commands that act on several brokers.
		if failed > 0 {
			return &partialError{n: failed}
		}
		return nil
	})
	return c
}

// ---- listLiteTopics (ours) ----

const liteListFormat = "%-40s %-30s %-12s %-12s %-25s %s\n"

func newListLiteTopics(a *app) *cobra.Command {
	var parent, group, brokerName, limit string
	c := newCmd("listLiteTopics", "List the lite topics of a parent topic with offsets and lag per group.")
	stringOpt(c.Flags(), &parent, "p", "parentTopic", "Parent topic name")
	stringOpt(c.Flags(), &group, "g", "group", "only this consumer group's lag (default: every group bound to the parent)")
	stringOpt(c.Flags(), &brokerName, "b", "brokerName", "only this broker (optional)")
	stringOpt(c.Flags(), &limit, "l", "limit", "at most this many lite topics per broker (default: all)")
	markRequired(c, "parentTopic")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		parent, group, brokerName = strings.TrimSpace(parent), strings.TrimSpace(group), strings.TrimSpace(brokerName)
		limitN := -1
		if cmd.Flags().Changed("limit") {
			n, err := strconv.Atoi(strings.TrimSpace(limit))
			if err != nil || n <= 0 {
				return usagef("invalid value %q for -l: want a positive number", limit)
			}
			limitN = n
		}
		return a.eachRouteBrokerNamed(cmd, parent, brokerName, func(w io.Writer) {
			if !a.json() {
				fmt.Fprintf(w, liteListFormat, "#Broker Name", "#Lite Topic", "#MinOffset", "#MaxOffset", "#LastUpdate", "#Group(ConsumerOffset/Lag)")
			}
		}, func(w io.Writer, cl *admin.Client, rb admin.RouteBroker) (any, error) {
			entries, err := a.listBrokerLiteTopics(cmd, cl, rb.Addr, parent, group, limitN)
			if err != nil || a.json() {
				return entries, err
			}
			for _, e := range entries {
				last := "-"
				if e.LastUpdateTimestamp > 0 {
					last = humanTime2(e.LastUpdateTimestamp, a.env.Location)
				}
				var lags []string
				for _, g := range e.Groups {
					lags = append(lags, fmt.Sprintf("%s(%d/%d)", g.Group, g.ConsumerOffset, g.Lag))
				}
				fmt.Fprintf(w, liteListFormat, frontStringAtLeast(rb.Name, 40), e.LiteTopic, strconv.FormatInt(e.MinOffset, 10),
					strconv.FormatInt(e.MaxOffset, 10), last, strings.Join(lags, " "))
			}
			return entries, nil
		})
	})
	return c
}

// listBrokerLiteTopics pages through one broker's listing (limit < 0: all).
func (a *app) listBrokerLiteTopics(cmd *cobra.Command, cl *admin.Client, addr, parent, group string, limit int) ([]protocol.LiteTopicEntry, error) {
	var out []protocol.LiteTopicEntry
	cursor := ""
	for {
		page := 1000
		if limit >= 0 {
			page = min(page, limit-len(out))
		}
		b, err := cl.ListLiteTopics(cmd.Context(), addr, parent, group, cursor, page)
		if err != nil {
			return nil, err
		}
		out = append(out, b.LiteTopics...)
		if !b.HasMore || (limit >= 0 && len(out) >= limit) || b.NextCursor == "" {
			return out, nil
		}
		cursor = b.NextCursor
	}
}
