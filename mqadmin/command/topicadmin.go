package command

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// Topic commands of the Java tool beyond updateTopic/deleteTopic:
// updateTopicPerm, topicClusterList, updateOrderConf and allocateMQ
// (rocketmq-tools org/apache/rocketmq/tools/command/topic).

// ---- updateTopicPerm ----

type updateTopicPermOpts struct{ broker, cluster, topic, perm string }

func newUpdateTopicPerm(a *app) *cobra.Command {
	var o updateTopicPermOpts
	c := newCmd("updateTopicPerm", "Update topic perm.")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "create topic to which broker")
	stringOpt(fs, &o.cluster, "c", "clusterName", "create topic to which cluster")
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.perm, "p", "perm", "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]")
	markRequired(c, "topic", "perm")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.updateTopicPerm(cmd.Context(), cmd, o) })
	return c
}

type topicPermResult struct {
	Topic   string `json:"topic"`
	Broker  string `json:"broker"`
	OldPerm int    `json:"oldPerm"`
	NewPerm int    `json:"newPerm"`
	Updated bool   `json:"updated"`
	Message string `json:"message,omitempty"`
}

// updateTopicPerm is UpdateTopicPermSubCommand: the topic's config is
// rebuilt from the first queue data of its route (queue counts and sys
// flag; everything else TopicConfig's defaults) with the new perm and sent
// (17) to the broker of -b, which must be a master in the route, or to
// every master of the -c cluster. -b wins over -c, as in Java.
func (a *app) updateTopicPerm(ctx context.Context, cmd *cobra.Command, o updateTopicPermOpts) error {
	topic := strings.TrimSpace(o.topic)
	perm, err := javaInt("p", o.perm)
	if err != nil {
		return err
	}
	return a.withClient(func(c *admin.Client) error {
		route, err := c.GetTopicRoute(ctx, topic)
		if err != nil {
			return err
		}
		if len(route.QueueDatas) == 0 {
			return fmt.Errorf("topic %s has no queue data in its route", topic)
		}
		first := route.QueueDatas[0]
		tc := protocol.NewTopicConfig(topic)
		tc.WriteQueueNums, tc.ReadQueueNums, tc.TopicSysFlag, tc.Perm = first.WriteQueueNums, first.ReadQueueNums, first.TopicSysFlag, perm
		w := a.env.Stdout
		var results []topicPermResult
		if cmd.Flags().Changed("brokerAddr") {
			addr := strings.TrimSpace(o.broker)
			name := ""
			for _, bd := range route.BrokerDatas {
				if bd.BrokerAddrs[0] == addr {
					name = bd.BrokerName
					break
				}
			}
			res := topicPermResult{Topic: topic, Broker: addr, NewPerm: perm}
			switch {
			case name == "":
				res.Message = "updateTopicPerm error broker not exit or broker is not master!."
			default:
				for _, qd := range route.QueueDatas {
					if qd.BrokerName == name {
						res.OldPerm = qd.Perm
						break
					}
				}
				if res.OldPerm == perm {
					res.Message = "new perm equals to the old one!"
					break
				}
				if err := c.CreateTopic(ctx, addr, tc, ""); err != nil {
					return err
				}
				res.Updated = true
			}
			if a.json() {
				return writeJSONField(w, "results", []topicPermResult{res})
			}
			if !res.Updated {
				fmt.Fprintf(w, "%s\n", res.Message)
				return nil
			}
			fmt.Fprintf(w, "update topic perm from %d to %d in %s success.\n", res.OldPerm, perm, addr)
			fmt.Fprintf(w, "%s.\n", topicConfigString(tc, nil))
			return nil
		}
		_, masters, err := clusterAddrs(ctx, c, strings.TrimSpace(o.cluster), false)
		if err != nil {
			return err
		}
		for _, addr := range masters {
			if err := c.CreateTopic(ctx, addr, tc, ""); err != nil {
				return err
			}
			// Java reports the first queue data's perm as the old one.
			results = append(results, topicPermResult{Topic: topic, Broker: addr, OldPerm: first.Perm, NewPerm: perm, Updated: true})
			if !a.json() {
				fmt.Fprintf(w, "update topic perm from %d to %d in %s success.\n", first.Perm, perm, addr)
			}
		}
		if a.json() {
			if results == nil {
				results = []topicPermResult{}
			}
			return writeJSONField(w, "results", results)
		}
		return nil
	})
}

// ---- topicClusterList ----

func newTopicClusterList(a *app) *cobra.Command {
	var topic string
	c := newCmd("topicClusterList", "Get cluster info for topic.")
	stringOpt(c.Flags(), &topic, "t", "topic", "topic name")
	markRequired(c, "topic")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		clusters, err := topicClusters(cmd.Context(), c, strings.TrimSpace(topic))
		if err != nil {
			return err
		}
		if a.json() {
			return writeJSONField(a.env.Stdout, "clusters", clusters)
		}
		for _, cl := range clusters {
			fmt.Fprintf(a.env.Stdout, "%s\n", cl)
		}
		return nil
	})
	return c
}

// topicClusters is Java's getTopicClusterList: the clusters that hold the
// first broker of the topic's route, in HashSet order.
func topicClusters(ctx context.Context, c *admin.Client, topic string) ([]string, error) {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	route, err := c.GetTopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	clusters := []string{}
	if len(route.BrokerDatas) == 0 {
		return nil, fmt.Errorf("topic %s has no broker in its route", topic)
	}
	name := route.BrokerDatas[0].BrokerName
	for cluster, names := range ci.ClusterAddrTable {
		for _, n := range names {
			if n == name {
				clusters = append(clusters, cluster)
				break
			}
		}
	}
	return javaHashOrder(slices.Sorted(slices.Values(clusters)), hashMapDefault, false), nil
}

// ---- updateOrderConf ----

type updateOrderConfOpts struct{ topic, conf, method string }

func newUpdateOrderConf(a *app) *cobra.Command {
	var o updateOrderConfOpts
	c := newCmd("updateOrderConf", "Create or update or delete order conf.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.conf, "v", "orderConf", "set order conf [eg. brokerName1:num;brokerName2:num]")
	stringOpt(fs, &o.method, "m", "method", "option type [eg. put|get|delete")
	markRequired(c, "topic", "method")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.updateOrderConf(cmd.Context(), o) })
	return c
}

// updateOrderConf is UpdateOrderConfCommand: get reads the topic's entry of
// the ORDER_TOPIC_CONFIG namespace from a nameserver (101), put writes it
// to every nameserver (100), delete removes it from every nameserver (102).
// Java's messages end without a newline.
func (a *app) updateOrderConf(ctx context.Context, o updateOrderConfOpts) error {
	topic, method := strings.TrimSpace(o.topic), strings.TrimSpace(o.method)
	conf := strings.TrimSpace(o.conf)
	switch method {
	case "get", "put", "delete":
	default:
		return usagef("invalid -m %q: want put, get or delete", method)
	}
	if method == "put" && conf == "" {
		return fmt.Errorf("please set orderConf with option -v")
	}
	return a.withClient(func(c *admin.Client) error {
		w := a.env.Stdout
		res := struct {
			Topic     string `json:"topic"`
			Method    string `json:"method"`
			OrderConf string `json:"orderConf,omitempty"`
		}{Topic: topic, Method: method}
		switch method {
		case "get":
			v, err := c.GetKVConfig(ctx, admin.NamespaceOrderTopicConfig, topic)
			if err != nil {
				return err
			}
			res.OrderConf = v
			if !a.json() {
				fmt.Fprintf(w, "get orderConf success. topic=[%s], orderConf=[%s] ", topic, v)
			}
		case "put":
			if err := c.CreateOrUpdateOrderConf(ctx, topic, conf, true); err != nil {
				return err
			}
			res.OrderConf = conf
			if !a.json() {
				fmt.Fprintf(w, "update orderConf success. topic=[%s], orderConf=[%s]", topic, conf)
			}
		case "delete":
			if err := c.DeleteKVConfig(ctx, admin.NamespaceOrderTopicConfig, topic); err != nil {
				return err
			}
			if !a.json() {
				fmt.Fprintf(w, "delete orderConf success. topic=[%s]", topic)
			}
		}
		if a.json() {
			return writeJSON(w, res)
		}
		return nil
	})
}

// ---- allocateMQ ----

func newAllocateMQ(a *app) *cobra.Command {
	var topic, ips string
	c := newCmd("allocateMQ", "Allocate MQ.")
	stringOpt(c.Flags(), &topic, "t", "topic", "topic name")
	stringOpt(c.Flags(), &ips, "i", "ipList", "ipList")
	markRequired(c, "topic", "ipList")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		topic := strings.TrimSpace(topic)
		cids := figures.JavaSplit(strings.TrimSpace(ips), ",")
		route, err := c.GetTopicRoute(cmd.Context(), topic)
		if err != nil {
			return err
		}
		mqs := javaHashSetOrder(subscribeQueues(topic, route))
		if len(mqs) == 0 {
			return fmt.Errorf("topic %s has no readable queue: nothing to allocate", topic)
		}
		result := map[string][]protocol.MessageQueue{}
		for _, cid := range cids {
			result[cid] = allocateAveragely(mqs, cids, cid)
		}
		if a.json() {
			return writeJSONField(a.env.Stdout, "result", result)
		}
		fmt.Fprintf(a.env.Stdout, "%s\n", rebalanceResultJSON(result, javaHashOrder(cids, hashMapDefault, false)))
		return nil
	})
	return c
}

// subscribeQueues is MQClientInstance.topicRouteData2TopicSubscribeInfo:
// the read queues of every readable queue data, in route order.
func subscribeQueues(topic string, route *protocol.TopicRouteData) []protocol.MessageQueue {
	var mqs []protocol.MessageQueue
	for _, qd := range route.QueueDatas {
		if qd.Perm&protocol.PermRead == 0 {
			continue
		}
		for i := 0; i < qd.ReadQueueNums; i++ {
			mqs = append(mqs, protocol.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
		}
	}
	return mqs
}

// allocateAveragely is AllocateMessageQueueAveragely.allocate of mqAll
// (in the given order) to cid among cidAll.
func allocateAveragely(mqAll []protocol.MessageQueue, cidAll []string, cid string) []protocol.MessageQueue {
	index := -1
	for i, c := range cidAll {
		if c == cid {
			index = i
			break
		}
	}
	out := []protocol.MessageQueue{}
	if index < 0 {
		return out
	}
	n, m := len(mqAll), len(cidAll)
	mod := n % m
	avg := n / m
	switch {
	case n <= m:
		avg = 1
	case mod > 0 && index < mod:
		avg = n/m + 1
	}
	start := index*avg + mod
	if mod > 0 && index < mod {
		start = index * avg
	}
	for i := 0; i < avg && start+i < n; i++ {
		out = append(out, mqAll[start+i])
	}
	return out
}

// rebalanceResultJSON is RebalanceResult as fastjson writes it (compact,
// the map in HashMap order, MessageQueue fields sorted).
func rebalanceResultJSON(result map[string][]protocol.MessageQueue, order []string) string {
	var b strings.Builder
	b.WriteString(`{"result":{`)
	for i, cid := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:[", fastjsonQuote(cid))
		for j, mq := range result[cid] {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"brokerName":%s,"queueId":%d,"topic":%s}`, fastjsonQuote(mq.BrokerName), mq.QueueID, fastjsonQuote(mq.Topic))
		}
		b.WriteByte(']')
	}
	b.WriteString("}}")
	return b.String()
}
