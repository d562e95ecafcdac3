package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- updateSubGroup ----

type updateSubGroupOpts struct {
	broker, cluster, group, consumeEnable, fromMin, broadcast, orderly, retryQueues, retryMax, policy,
	brokerID, slowBroker, notify, attributes string
}

func newUpdateSubGroup(a *app) *cobra.Command {
	var o updateSubGroupOpts
	c := newCmd("updateSubGroup", "Update or create subscription group.")
	fs := c.Flags()
	stringOpt(fs, &o.broker, "b", "brokerAddr", "create subscription group to which broker")
	stringOpt(fs, &o.cluster, "c", "clusterName", "create subscription group to which cluster")
	stringOpt(fs, &o.group, "g", "groupName", "consumer group name")
	stringOpt(fs, &o.consumeEnable, "s", "consumeEnable", "consume enable")
	stringOpt(fs, &o.fromMin, "m", "consumeFromMinEnable", "from min offset")
	stringOpt(fs, &o.broadcast, "d", "consumeBroadcastEnable", "broadcast")
	stringOpt(fs, &o.orderly, "o", "consumeMessageOrderly", "consume message orderly")
	stringOpt(fs, &o.retryQueues, "q", "retryQueueNums", "retry queue nums")
	stringOpt(fs, &o.retryMax, "r", "retryMaxTimes", "retry max times")
	stringOpt(fs, &o.policy, "p", "groupRetryPolicy", `the json string of retry policy ( exp: {"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}} {"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}} )`)
	stringOpt(fs, &o.brokerID, "i", "brokerId", "consumer from which broker id")
	stringOpt(fs, &o.slowBroker, "w", "whichBrokerWhenConsumeSlowly", "which broker id when consume slowly")
	stringOpt(fs, &o.notify, "a", "notifyConsumerIdsChanged", "notify consumerId changed")
	stringOpt(fs, &o.attributes, "", "attributes", "attribute(+a=b,+c=d,-e)")
	markRequired(c, "groupName")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.updateSubGroup(cmd, o) })
	return c
}

// javaLongOpt is javaLong with the updateSubGroup and queryMsgTraceById
// wording of a bad value.
func javaLongOpt(flag, s string) (int64, error) {
	return parseOptInt(flag, s, 64, "not a number")
}

// clusterMastersJava is the master addresses of cluster in the order of the
// Java tool's HashSet of them.
func clusterMastersJava(ctx context.Context, c *admin.Client, cluster string) ([]string, error) {
	masters, err := c.ClusterMasters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	return javaHashOrder(masters, hashMapDefault, false), nil
}

// parseRetryPolicy is ParseGroupRetryPolicy of a -p value, its error a
// usage error.
func parseRetryPolicy(_, s string) (admin.GroupRetryPolicy, error) {
	p, err := admin.ParseGroupRetryPolicy(strings.TrimSpace(s))
	if err != nil {
		return p, usagef("%v", err)
	}
	return p, nil
}

// subGroupConfigString is SubscriptionGroupConfig.toString (Guava's
// toStringHelper); attrOrder lists the attribute keys in print order.
func subGroupConfigString(g admin.SubscriptionGroupConfig, attrOrder []string) string {
	return fmt.Sprintf("SubscriptionGroupConfig{groupName=%s, consumeEnable=%t, consumeFromMinEnable=%t, consumeBroadcastEnable=%t, "+
		"consumeMessageOrderly=%t, retryQueueNums=%d, retryMaxTimes=%d, groupRetryPolicy=%s, brokerId=%d, whichBrokerWhenConsumeSlowly=%d, "+
		"notifyConsumerIdsChangedEnable=%t, groupSysFlag=%d, consumeTimeoutMinute=%d, subscriptionDataSet=null, attributes=%s}",
		g.GroupName, g.ConsumeEnable, g.ConsumeFromMinEnable, g.ConsumeBroadcastEnable, g.ConsumeMessageOrderly, g.RetryQueueNums,
		g.RetryMaxTimes, g.GroupRetryPolicy, g.BrokerID, g.WhichBrokerWhenConsumeSlowly, g.NotifyConsumerIdsChangedEnable,
		g.GroupSysFlag, g.ConsumeTimeoutMinute, javaStringMap(g.Attributes, attrOrder))
}

func (a *app) updateSubGroup(cmd *cobra.Command, o updateSubGroupOpts) error {
	changed := cmd.Flags().Changed
	g := admin.NewSubscriptionGroupConfig(strings.TrimSpace(o.group))
	// The Java tool starts from a config with these two off.
	g.ConsumeBroadcastEnable, g.ConsumeFromMinEnable = false, false
	bools := []struct {
		flag string
		val  string
		dst  *bool
	}{
		{"consumeEnable", o.consumeEnable, &g.ConsumeEnable},
		{"consumeFromMinEnable", o.fromMin, &g.ConsumeFromMinEnable},
		{"consumeBroadcastEnable", o.broadcast, &g.ConsumeBroadcastEnable},
		{"consumeMessageOrderly", o.orderly, &g.ConsumeMessageOrderly},
		{"notifyConsumerIdsChanged", o.notify, &g.NotifyConsumerIdsChangedEnable},
	}
	for _, b := range bools {
		if changed(b.flag) {
			*b.dst = javaBool(b.val)
		}
	}
	err := parseChanged(changed,
		parsedOpt("retryQueueNums", "q", o.retryQueues, javaInt, &g.RetryQueueNums),
		parsedOpt("retryMaxTimes", "r", o.retryMax, javaInt, &g.RetryMaxTimes),
		parsedOpt("groupRetryPolicy", "p", o.policy, parseRetryPolicy, &g.GroupRetryPolicy),
		parsedOpt("brokerId", "i", o.brokerID, javaLongOpt, &g.BrokerID),
		parsedOpt("whichBrokerWhenConsumeSlowly", "w", o.slowBroker, javaLongOpt, &g.WhichBrokerWhenConsumeSlowly),
	)
	if err != nil {
		return err
	}
	var attrOrder []string
	if changed("attributes") {
		if g.Attributes, attrOrder, _, err = parseAttributes(o.attributes); err != nil {
			return err
		}
	}
	w := a.env.Stdout
	return a.withClient(func(c *admin.Client) error {
		ctx := cmd.Context()
		var done []string
		failed := 0
		if changed("brokerAddr") {
			addr := strings.TrimSpace(o.broker)
			if err := c.CreateSubscriptionGroup(ctx, addr, g); err != nil {
				return err
			}
			done = append(done, addr)
			if !a.json() {
				fmt.Fprintf(w, "create subscription group to %s success.\n", addr)
			}
		} else {
			masters, err := clusterMastersJava(ctx, c, strings.TrimSpace(o.cluster))
			if err != nil {
				return err
			}
			for _, addr := range masters {
				if err := c.CreateSubscriptionGroup(ctx, addr, g); err != nil {
					failed++ // Java prints it and goes on
					a.warn("updateSubGroup: %v", err)
					continue
				}
				done = append(done, addr)
				if !a.json() {
					fmt.Fprintf(w, "create subscription group to %s success.\n", addr)
				}
			}
		}
		if a.json() {
			if done == nil {
				done = []string{}
			}
			if err := writeJSON(w, struct {
				Config    admin.SubscriptionGroupConfig `json:"config"`
				CreatedOn []string                      `json:"createdOn"`
			}{g, done}); err != nil {
				return err
			}
		} else {
			// Java prints the config without a newline.
			fmt.Fprintf(w, "%s", subGroupConfigString(g, attrOrder))
		}
		if failed > 0 {
			return &partialError{n: failed}
		}
		return nil
	})
}

// ---- deleteSubGroup ----

func newDeleteSubGroup(a *app) *cobra.Command {
	var broker, cluster, group, removeOffset string
	c := newCmd("deleteSubGroup", "Delete subscription group from broker.")
	fs := c.Flags()
	stringOpt(fs, &broker, "b", "brokerAddr", "delete subscription group from which broker")
	stringOpt(fs, &cluster, "c", "clusterName", "delete subscription group from which cluster")
	stringOpt(fs, &group, "g", "groupName", "subscription group name")
	stringOpt(fs, &removeOffset, "r", "removeOffset", "remove offset")
	markRequired(c, "groupName")
	c.MarkFlagsOneRequired("brokerAddr", "clusterName")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		group := strings.TrimSpace(group)
		clean := javaBool(removeOffset)
		w := a.env.Stdout
		return a.withClient(func(c *admin.Client) error {
			ctx := cmd.Context()
			if cmd.Flags().Changed("brokerAddr") {
				addr := strings.TrimSpace(broker)
				if err := c.DeleteSubscriptionGroup(ctx, addr, group, clean); err != nil {
					return err
				}
				if a.json() {
					return writeJSON(w, struct {
						Group   string   `json:"group"`
						Brokers []string `json:"brokers"`
					}{group, []string{addr}})
				}
				fmt.Fprintf(w, "delete subscription group [%s] from broker [%s] success.\n", group, addr)
				return nil
			}
			cluster := strings.TrimSpace(cluster)
			masters, err := clusterMastersJava(ctx, c, cluster)
			if err != nil {
				return err
			}
			for _, addr := range masters {
				if err := c.DeleteSubscriptionGroup(ctx, addr, group, clean); err != nil {
					return err
				}
				if !a.json() {
					fmt.Fprintf(w, "delete subscription group [%s] from broker [%s] in cluster [%s] success.\n", group, addr, cluster)
				}
			}
			// Then its retry and dead-letter topics; failures are reported
			// but do not fail the command (Java prints them).
			failed := 0
			for _, t := range []string{protocol.RetryTopic(group), protocol.DLQTopic(group)} {
				if _, err := c.DeleteTopic(ctx, cluster, t); err != nil {
					failed++
					a.warn("deleteSubGroup: delete topic %s: %v", t, err)
					break // Java stops at the first failure
				}
			}
			if a.json() {
				if err := writeJSON(w, struct {
					Group   string   `json:"group"`
					Cluster string   `json:"cluster"`
					Brokers []string `json:"brokers"`
				}{group, cluster, masters}); err != nil {
					return err
				}
			}
			if failed > 0 {
				return &partialError{n: failed}
			}
			return nil
		})
	})
	return c
}
