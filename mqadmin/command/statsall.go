package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- statsAll ----

func newStatsAll(a *app) *cobra.Command {
	var active bool
	var topic string
	c := newCmd("statsAll", "Topic and Consumer tps stats.")
	boolOpt(c.Flags(), &active, "a", "activeTopic", "print active topic only")
	stringOpt(c.Flags(), &topic, "t", "topic", "print select topic only")
	c.RunE = a.runWithClient(func(cmd *cobra.Command, c *admin.Client) error {
		return a.statsAll(cmd.Context(), c, active, topic)
	})
	return c
}

// statsRow is one line of statsAll: a topic and one of its consumer groups
// (Group "" and NoConsumer when it has none).
type statsRow struct {
	Topic        string  `json:"topic"`
	Group        string  `json:"group,omitempty"`
	NoConsumer   bool    `json:"noConsumer,omitempty"`
	Accumulation int64   `json:"accumulation"`
	InTPS        float64 `json:"inTps"`
	OutTPS       float64 `json:"outTps"`
	InMsg24Hour  int64   `json:"inMsg24Hour"`
	OutMsg24Hour int64   `json:"outMsg24Hour"`
}

// statsAll is StatsAllSubCommand: for every topic of the nameserver (in
// HashSet order; no %RETRY% or %DLQ% topics; only -t's), its put tps and
// 24-hour count summed over the masters of its route (315
// TOPIC_PUT_NUMS), and per consumer group (300 to its first broker) the
// get tps and count (315 GROUP_GET_NUMS, key topic@group) and the
// accumulation (consume stats, 208). As in Java a statistic a broker does
// not have counts 0, and a topic whose route or groups cannot be read is
// left out; -a leaves out topics and groups without traffic in 24 hours.
func (a *app) statsAll(ctx context.Context, c *admin.Client, active bool, only string) error {
	tl, err := c.GetAllTopicList(ctx)
	if err != nil {
		return err
	}
	w := a.env.Stdout
	if !a.json() {
		fmt.Fprintf(w, "%-64s  %-64s %12s %11s %11s %14s %14s\n",
			"#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
	}
	rows := []statsRow{}
	for _, topic := range javaHashOrder(tl.TopicList, hashMapDefault, false) {
		if strings.HasPrefix(topic, protocol.RetryGroupTopicPrefix) || strings.HasPrefix(topic, protocol.DLQGroupTopicPrefix) {
			continue
		}
		if only != "" && topic != only {
			continue
		}
		route, err := c.GetTopicRoute(ctx, topic)
		if err != nil {
			a.env.Log.Debug("statsAll: route", "topic", topic, "err", err)
			continue
		}
		groups, err := c.QueryTopicConsumeByWhoRoute(ctx, topic)
		if err != nil {
			a.env.Log.Debug("statsAll: consumer groups", "topic", topic, "err", err)
			continue
		}
		// sum adds one statistic over the masters of the route.
		sum := func(name, key string) (tps float64, day int64) {
			for _, bd := range route.BrokerDatas {
				addr, ok := bd.BrokerAddrs[protocol.MasterID]
				if !ok {
					continue
				}
				d, err := c.ViewBrokerStatsData(ctx, addr, name, key)
				if err != nil {
					continue
				}
				tps += d.StatsMinute.Tps
				day += d.Sum24Hours()
			}
			return tps, day
		}
		inTPS, inDay := sum(admin.StatsTopicPutNums, topic)
		if len(groups) == 0 {
			if !active || inDay > 0 {
				rows = append(rows, statsRow{Topic: topic, NoConsumer: true, InTPS: inTPS, InMsg24Hour: inDay})
				if !a.json() {
					fmt.Fprintf(w, "%-64s  %-64s %12d %11s %11s %14d %14s\n",
						frontStringAtLeast(topic, 64), "", 0, javaFixed(inTPS, 2), "", inDay, "NO_CONSUMER")
				}
			}
			continue
		}
		for _, g := range javaHashOrder(groups, hashMapDefault, false) {
			outTPS, outDay := sum(admin.StatsGroupGetNums, topic+"@"+g)
			var acc int64
			if st, err := c.ExamineConsumeStats(ctx, "", g, topic); err == nil {
				for _, ow := range st.OffsetTable {
					acc += ow.BrokerOffset - ow.ConsumerOffset
				}
				acc = max(acc, 0)
			}
			if active && inDay <= 0 && outDay <= 0 {
				continue
			}
			rows = append(rows, statsRow{Topic: topic, Group: g, Accumulation: acc, InTPS: inTPS, OutTPS: outTPS, InMsg24Hour: inDay, OutMsg24Hour: outDay})
			if !a.json() {
				fmt.Fprintf(w, "%-64s  %-64s %12d %11s %11s %14d %14d\n",
					frontStringAtLeast(topic, 64), frontStringAtLeast(g, 64), acc, javaFixed(inTPS, 2), javaFixed(outTPS, 2), inDay, outDay)
			}
		}
	}
	if a.json() {
		return writeJSONField(w, "stats", rows)
	}
	return nil
}
