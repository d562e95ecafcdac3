package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/remoting/code"
)

// Consumer-group and producer commands of the Java tool beyond
// updateSubGroup/consumerProgress: getConsumerConfig, updateSubGroupList,
// setConsumeMode, cloneGroupOffset, skipAccumulatedMessage,
// brokerConsumeStats and producer (rocketmq-tools
// org/apache/rocketmq/tools/command/{consumer,offset,broker,producer}).

// ---- getConsumerConfig ----

func newGetConsumerConfig(a *app) *cobra.Command {
	var group string
	c := newCmd("getConsumerConfig", "Get consumer config by subscription group name.")
	stringOpt(c.Flags(), &group, "g", "groupName", "subscription group name")
	markRequired(c, "groupName")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return a.getConsumerConfig(cmd.Context(), c, strings.TrimSpace(group))
	})
	return c
}

type consumerConfigInfo struct {
	Cluster string                        `json:"cluster"`
	Broker  string                        `json:"broker"`
	Config  admin.SubscriptionGroupConfig `json:"config"`
}

// getConsumerConfig is GetConsumerConfigSubCommand: the group's config from
// the master (else any node) of every broker of the cluster info, in
// HashMap order, read from the broker's whole table (201, as Java's
// examineSubscriptionGroupConfig), each field as Java prints the declared
// fields of SubscriptionGroupConfig. A broker without the group is
// skipped; as in Java, a broker that does not answer fails the command.
func (a *app) getConsumerConfig(ctx context.Context, c *admin.Client, group string) error {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return err
	}
	clusters := javaHashOrder(sortedKeys(ci.ClusterAddrTable), hashMapDefault, false)
	clusterOf := func(broker string) string {
		for _, cl := range clusters {
			for _, n := range ci.ClusterAddrTable[cl] {
				if n == broker {
					return cl
				}
			}
		}
		return "null"
	}
	var infos []consumerConfigInfo
	for _, name := range javaHashOrder(sortedKeys(ci.BrokerAddrTable), hashMapDefault, false) {
		addr := admin.SelectBrokerAddr(ci.BrokerAddrTable[name])
		all, err := c.GetAllSubscriptionGroups(ctx, addr)
		if err != nil {
			return err
		}
		cfg, found := all.Groups[group]
		if !found {
			continue
		}
		infos = append(infos, consumerConfigInfo{Cluster: clusterOf(name), Broker: name, Config: cfg})
	}
	if a.json() {
		if infos == nil {
			infos = []consumerConfigInfo{}
		}
		return writeJSONField(a.env.Stdout, "configs", infos)
	}
	w := a.env.Stdout
	for _, info := range infos {
		fmt.Fprintf(w, "=============================%s:%s=============================\n", info.Cluster, info.Broker)
		g := info.Config
		for _, f := range []struct {
			name  string
			value any
		}{
			{"groupName", g.GroupName},
			{"consumeEnable", g.ConsumeEnable},
			{"consumeFromMinEnable", g.ConsumeFromMinEnable},
			{"consumeBroadcastEnable", g.ConsumeBroadcastEnable},
			{"consumeMessageOrderly", g.ConsumeMessageOrderly},
			{"retryQueueNums", g.RetryQueueNums},
			{"retryMaxTimes", g.RetryMaxTimes},
			{"groupRetryPolicy", g.GroupRetryPolicy},
			{"brokerId", g.BrokerID},
			{"whichBrokerWhenConsumeSlowly", g.WhichBrokerWhenConsumeSlowly},
			{"notifyConsumerIdsChangedEnable", g.NotifyConsumerIdsChangedEnable},
			{"groupSysFlag", g.GroupSysFlag},
			{"consumeTimeoutMinute", g.ConsumeTimeoutMinute},
			{"subscriptionDataSet", ""}, // null: the broker does not send it
			{"attributes", javaStringMap(g.Attributes, javaHashOrder(sortedKeys(g.Attributes), hashMapDefault, false))},
		} {
			fmt.Fprintf(w, "%-40s=  %v\n", f.name, f.value)
		}
	}
	return nil
}

// ---- updateSubGroupList ----

type updateSubGroupListOpts struct{ broker, cluster, file string }

func newUpdateSubGroupList(a *app) *cobra.Command {
	var o updateSubGroupListOpts
	c := newCmd("updateSubGroupList", "Update or create subscription group in batch")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "create groups to which broker")
	stringOpt(fs, &o.cluster, "c", "clusterName", "create groups to which cluster")
	stringOpt(fs, &o.file, "f", "filename", "Path to a file with a list of org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig in json format")
	markRequired(c, "filename")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.MarkFlagsMutuallyExclusive("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.updateSubGroupList(cmd.Context(), cmd, o) })
	return c
}

// updateSubGroupList sends a JSON array of SubscriptionGroupConfig to one
// broker or to every master of a cluster in one
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225) each, with the Java tool's
// messages (a missing file is a message, not a failure; an empty list does
// nothing). Absent fields take SubscriptionGroupConfig's defaults. With -c
// the Java tool also prints its usage after the results (a slip in
// UpdateSubGroupListSubCommand); we do not.
func (a *app) updateSubGroupList(ctx context.Context, cmd *cobra.Command, o updateSubGroupListOpts) error {
	return submitConfigList(a, o.file, "subscription group config",
		func() admin.SubscriptionGroupConfig { return admin.NewSubscriptionGroupConfig("") },
		func(c *admin.Client) ([]string, string, error) {
			if cmd.Flags().Changed("brokerAddr") {
				return []string{strings.TrimSpace(o.broker)}, "group config", nil
			}
			masters, err := clusterMastersJava(ctx, c, strings.TrimSpace(o.cluster))
			return masters, "subscription group config", err
		},
		func(c *admin.Client, addr string, list []admin.SubscriptionGroupConfig) error {
			return c.CreateSubscriptionGroupList(ctx, addr, list)
		})
}

// ---- setConsumeMode ----

type setConsumeModeOpts struct{ broker, cluster, topic, group, mode, shareQueues string }

func newSetConsumeMode(a *app) *cobra.Command {
	var o setConsumeModeOpts
	c := newCmd("setConsumeMode", "Set consume message mode. pull/pop etc.")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "create subscription group to which broker")
	stringOpt(fs, &o.cluster, "c", "clusterName", "create subscription group to which cluster")
	stringOpt(fs, &o.topic, "t", "topicName", "topic name")
	stringOpt(fs, &o.group, "g", "groupName", "consumer group name")
	stringOpt(fs, &o.mode, "m", "mode", "consume mode. PULL/POP")
	stringOpt(fs, &o.shareQueues, "q", "popShareQueueNum", "num of queue which share in pop mode")
	markRequired(c, "topicName", "groupName", "mode")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.setConsumeMode(cmd.Context(), cmd, o) })
	return c
}

// setConsumeMode is SetConsumeModeSubCommand: SET_MESSAGE_REQUEST_MODE
// (401) to the broker of -b, or to every master of the -c cluster (a
// failing master is reported and skipped, as Java does). -b wins over -c.
func (a *app) setConsumeMode(ctx context.Context, cmd *cobra.Command, o setConsumeModeOpts) error {
	topic, group, mode := strings.TrimSpace(o.topic), strings.TrimSpace(o.group), strings.TrimSpace(o.mode)
	if mode != "PULL" && mode != "POP" {
		return usagef("invalid -m %q: want PULL or POP", mode)
	}
	share := 0
	if cmd.Flags().Changed("popShareQueueNum") {
		var err error
		if share, err = javaInt("q", o.shareQueues); err != nil {
			return err
		}
	}
	return a.withClient(func(c *admin.Client) error {
		w := a.env.Stdout
		var done []string
		failed := 0
		if cmd.Flags().Changed("brokerAddr") {
			addr := strings.TrimSpace(o.broker)
			if err := c.SetMessageRequestMode(ctx, addr, topic, group, mode, share); err != nil {
				return err
			}
			done = append(done, addr)
			if !a.json() {
				fmt.Fprintf(w, "set consume mode to %s success.\n", addr)
			}
		} else {
			masters, err := clusterMastersJava(ctx, c, strings.TrimSpace(o.cluster))
			if err != nil {
				return err
			}
			for _, addr := range masters {
				if err := c.SetMessageRequestMode(ctx, addr, topic, group, mode, share); err != nil {
					failed++
					a.warn("setConsumeMode: %s: %v", addr, err)
					continue
				}
				done = append(done, addr)
				if !a.json() {
					fmt.Fprintf(w, "set consume mode to %s success.\n", addr)
				}
			}
		}
		if a.json() {
			if done == nil {
				done = []string{}
			}
			if err := writeJSON(w, struct {
				Topic            string   `json:"topic"`
				Group            string   `json:"group"`
				Mode             string   `json:"mode"`
				PopShareQueueNum int      `json:"popShareQueueNum"`
				Brokers          []string `json:"brokers"`
			}{topic, group, mode, share, done}); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(w, "topic[%s] group[%s] consume mode[%s] popShareQueueNum[%d]", topic, group, mode, share)
		}
		if failed > 0 {
			return &partialError{n: failed}
		}
		return nil
	})
}

// ---- cloneGroupOffset ----

type cloneGroupOffsetOpts struct{ src, dest, topic, offline string }

func newCloneGroupOffset(a *app) *cobra.Command {
	var o cloneGroupOffsetOpts
	c := newCmd("cloneGroupOffset", "Clone offset from other group.")
	fs := c.Flags()
	stringOpt(fs, &o.src, "s", "srcGroup", "set source consumer group")
	stringOpt(fs, &o.dest, "d", "destGroup", "set destination consumer group")
	stringOpt(fs, &o.topic, "t", "topic", "set the topic")
	stringOpt(fs, &o.offline, "o", "offline", "the group or the topic is offline")
	markRequired(c, "srcGroup", "destGroup", "topic")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return a.cloneGroupOffset(cmd.Context(), c, o)
	})
	return c
}

// cloneGroupOffset is CloneGroupOffsetCommand: the source group's consume
// stats (208 over the route of its retry topic) and, for every queue of
// them with an offset >= 0, UPDATE_CONSUMER_OFFSET (15) of the destination
// group on the broker that serves the queue in the route of -t. -o is
// accepted and ignored, as in Java.
func (a *app) cloneGroupOffset(ctx context.Context, c *admin.Client, o cloneGroupOffsetOpts) error {
	src, dest, topic := strings.TrimSpace(o.src), strings.TrimSpace(o.dest), strings.TrimSpace(o.topic)
	st, err := c.ExamineConsumeStats(ctx, "", src, "")
	if err != nil {
		return err
	}
	var cloned int
	if len(st.OffsetTable) > 0 {
		route, err := c.GetTopicRoute(ctx, topic)
		if err != nil {
			return err
		}
		for _, mq := range st.OffsetTable.SortedKeys() {
			off := st.OffsetTable[mq].ConsumerOffset
			if off < 0 {
				continue
			}
			addr := ""
			for _, bd := range route.BrokerDatas {
				if bd.BrokerName == mq.BrokerName {
					addr = admin.SelectBrokerAddr(bd)
					break
				}
			}
			if addr == "" {
				return fmt.Errorf("broker %s of %s is not in the route of topic %s", mq.BrokerName, mq, topic)
			}
			if err := c.UpdateConsumerOffset(ctx, addr, dest, mq.Topic, mq.QueueID, off); err != nil {
				return err
			}
			cloned++
		}
	}
	if a.json() {
		return writeJSON(a.env.Stdout, struct {
			SrcGroup  string `json:"srcGroup"`
			DestGroup string `json:"destGroup"`
			Topic     string `json:"topic"`
			Queues    int    `json:"queues"`
		}{src, dest, topic, cloned})
	}
	fmt.Fprintf(a.env.Stdout, "clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]", src, dest, topic)
	return nil
}

// ---- skipAccumulatedMessage ----

type skipAccumulatedOpts struct{ group, topic, force, cluster string }

func newSkipAccumulatedMessage(a *app) *cobra.Command {
	var o skipAccumulatedOpts
	c := newCmd("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently.")
	fs := c.Flags()
	stringOpt(fs, &o.group, "g", "group", "set the consumer group")
	stringOpt(fs, &o.topic, "t", "topic", "set the topic")
	stringOpt(fs, &o.force, "f", "force", "set the force rollback by timestamp switch[true|false]")
	stringOpt(fs, &o.cluster, "c", "cluster", "Cluster name or lmq parent topic, lmq is used to find the route.")
	markRequired(c, "group", "topic")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return a.skipAccumulated(cmd.Context(), cmd, c, o)
	})
	return c
}

// skipAccumulated is SkipAccumulationSubCommand: resetOffsetByTime to the
// end of every queue (timestamp -1) through the clients (222), or, when the
// group has none online, the old way (223 to the brokers, then 15).
func (a *app) skipAccumulated(ctx context.Context, cmd *cobra.Command, c *admin.Client, o skipAccumulatedOpts) error {
	group, topic := strings.TrimSpace(o.group), strings.TrimSpace(o.topic)
	cluster := ""
	if cmd.Flags().Changed("cluster") {
		cluster = strings.TrimSpace(o.cluster)
	}
	force := true
	if cmd.Flags().Changed("force") {
		force = javaBool(o.force)
	}
	w := a.env.Stdout
	batches, err := c.ResetOffsetByTimestamp(ctx, cluster, topic, group, -1, force)
	if admin.IsCode(err, code.ConsumerNotOnline) {
		stats, err := c.ResetOffsetByTimestampOld(ctx, "", group, topic, -1, force)
		if err != nil {
			return err
		}
		if a.json() {
			if stats == nil {
				stats = []admin.RollbackStats{}
			}
			return writeJSONField(w, "rollback", stats)
		}
		fmt.Fprintf(w, "%-20s  %-20s  %-20s  %-20s  %-20s  %-20s\n", "#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset", "#rollbackOffset")
		for _, s := range javaRollbackOrder(stats, topic) {
			fmt.Fprintf(w, "%-20s  %-20d  %-20d  %-20d  %-20d  %-20d\n", frontStringAtLeast(s.BrokerName, 32), s.QueueID,
				s.BrokerOffset, s.ConsumerOffset, s.TimestampOffset, s.RollbackOffset)
		}
		return nil
	}
	if err != nil {
		return err
	}
	return a.emitResetOffsets(w, batches, "")
}

// ---- brokerConsumeStats ----

type brokerConsumeStatsOpts struct{ broker, timeout, level, order string }

func newBrokerConsumeStats(a *app) *cobra.Command {
	var o brokerConsumeStatsOpts
	c := newCmd("brokerConsumeStats", "Fetch broker consume stats data.")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "Broker address")
	stringOpt(fs, &o.timeout, "t", "timeoutMillis", "request timeout Millis")
	stringOpt(fs, &o.level, "l", "level", "threshold of print diff")
	stringOpt(fs, &o.order, "o", "order", "order topic")
	markRequired(c, "brokerAddr")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.brokerConsumeStats(cmd.Context(), cmd, o) })
	return c
}

type brokerConsumeRow struct {
	Topic          string `json:"topic"`
	Group          string `json:"group"`
	BrokerName     string `json:"brokerName"`
	QueueID        int    `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

// brokerConsumeStats is BrokerConsumeStatsSubCommad: GET_BROKER_CONSUME_STATS
// (317) of one broker, a line per queue (sorted within each group's topic)
// whose diff reaches -l and that was consumed at least once, then the
// broker's total diff. -t bounds the request (Java's default 50 s).
func (a *app) brokerConsumeStats(ctx context.Context, cmd *cobra.Command, o brokerConsumeStatsOpts) error {
	changed := cmd.Flags().Changed
	addr := strings.TrimSpace(o.broker)
	isOrder := changed("order") && javaBool(o.order)
	timeout, level := int64(50000), int64(0)
	if err := parseChanged(changed,
		parsedOpt("timeoutMillis", "t", o.timeout, javaLong, &timeout),
		parsedOpt("level", "l", o.level, javaLong, &level),
	); err != nil {
		return err
	}
	return a.withClient(func(c *admin.Client) error {
		rctx, cancel := context.WithTimeout(ctx, time.Duration(timeout)*time.Millisecond)
		defer cancel()
		st, err := c.FetchConsumeStatsInBroker(rctx, addr, isOrder)
		if err != nil {
			return err
		}
		rows := []brokerConsumeRow{}
		for _, m := range st.ConsumeStatsList {
			for _, group := range sortedKeys(m) { // one group per map
				for _, cs := range m[group] {
					for _, mq := range cs.OffsetTable.SortedKeys() {
						ow := cs.OffsetTable[mq]
						diff := ow.BrokerOffset - ow.ConsumerOffset
						if diff < level || ow.LastTimestamp <= 0 {
							continue
						}
						rows = append(rows, brokerConsumeRow{mq.Topic, group, mq.BrokerName, mq.QueueID, ow.BrokerOffset, ow.ConsumerOffset, diff, ow.LastTimestamp})
					}
				}
			}
		}
		w := a.env.Stdout
		if a.json() {
			return writeJSON(w, struct {
				Rows      []brokerConsumeRow `json:"rows"`
				TotalDiff int64              `json:"totalDiff"`
			}{rows, st.TotalDiff})
		}
		fmt.Fprintf(w, "%-64s  %-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s\n",
			"#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
		for _, r := range rows {
			last := time.UnixMilli(r.LastTimestamp).In(a.env.Location).Format("2006-01-02 15:04:05")
			fmt.Fprintf(w, "%-64s  %-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s\n",
				frontStringAtLeast(r.Topic, 64), r.Group, frontStringAtLeast(r.BrokerName, 32), r.QueueID,
				r.BrokerOffset, r.ConsumerOffset, r.Diff, last)
		}
		fmt.Fprintf(w, "\nDiff Total: %d\n", st.TotalDiff)
		return nil
	})
}

// ---- producer ----

func newProducer(a *app) *cobra.Command {
	var broker string
	c := newCmd("producer", "Query producer's instances, connection, status, etc.")
	stringOpt(c.Flags(), &broker, "b", "broker", "broker address")
	markRequired(c, "broker")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		t, err := c.GetAllProducerInfo(cmd.Context(), strings.TrimSpace(broker))
		if err != nil {
			return err
		}
		w := a.env.Stdout
		if a.json() {
			if t.Data == nil {
				t.Data = map[string][]admin.ProducerInfo{}
			}
			return writeJSONField(w, "producers", t.Data)
		}
		for _, group := range javaHashOrder(sortedKeys(t.Data), hashMapDefault, false) {
			list := t.Data[group]
			if len(list) == 0 {
				fmt.Fprintf(w, "producer group (%s) instances are empty\n", group)
				continue
			}
			for _, p := range list {
				fmt.Fprintf(w, "producer group (%s) instance : clientId=%s,remoteIP=%s, language=%s, version=%d, lastUpdateTimestamp=%d\n",
					group, p.ClientID, p.RemoteIP, p.Language, p.Version, p.LastUpdateTimestamp)
			}
		}
		return nil
	})
	return c
}
