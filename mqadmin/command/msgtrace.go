package command

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/mqadmin/internal/figures"
	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- queryMsgTraceById ----

type queryMsgTraceOpts struct {
	msgID, traceTopic, begin, end, maxNum string
}

func newQueryMsgTraceByID(a *app) *cobra.Command {
	var o queryMsgTraceOpts
	c := newCmd("queryMsgTraceById", "Query a message trace.")
	c.Aliases = []string{"QueryMsgTraceById"}
	fs := c.Flags()
	stringOpt(fs, &o.msgID, "i", "msgId", "Message Id")
	stringOpt(fs, &o.traceTopic, "t", "traceTopic", "The name value of message trace topic")
	stringOpt(fs, &o.begin, "b", "beginTimestamp", "Begin timestamp(ms). default:0, eg:1676730526212")
	stringOpt(fs, &o.end, "e", "endTimestamp", "End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212")
	stringOpt(fs, &o.maxNum, "c", "maxNum", "The maximum number of messages returned by the query, default:64")
	markRequired(c, "msgId")
	c.RunE = a.run(func(cmd *cobra.Command) error {
		changed := cmd.Flags().Changed
		req := admin.QueryMessageRequest{Topic: protocol.TraceTopic, Key: strings.TrimSpace(o.msgID), MaxNum: 64, End: math.MaxInt64}
		if changed("traceTopic") {
			req.Topic = strings.TrimSpace(o.traceTopic)
		}
		if err := parseQueryLimits(changed, &req, javaLongOpt, o.begin, o.end, o.maxNum, "c"); err != nil {
			return err
		}
		return a.withClient(func(c *admin.Client) error {
			res, err := c.QueryMessage(cmd.Context(), req)
			if err != nil {
				return err
			}
			var views []traceView
			for _, m := range res.Messages {
				vs, err := figures.DecodeTraceViews(req.Key, string(m.Body), m.BornHost.Addr().String(), a.env.Now())
				if err != nil {
					return fmt.Errorf("decode trace message %s: %w", m.OffsetMsgID(), err)
				}
				views = append(views, vs...)
			}
			if a.json() {
				if views == nil {
					views = []traceView{}
				}
				return writeJSON(a.env.Stdout, struct {
					Traces []traceView `json:"traces"`
				}{views})
			}
			a.printMessageTrace(views)
			return nil
		})
	})
	return c
}

type traceView = figures.TraceView

// printMessageTrace is the Java command's printMessageTrace: every Pub
// record, then the SubAfter records per consumer group (HashMap order).
func (a *app) printMessageTrace(views []traceView) {
	w := a.env.Stdout
	const format = "%-10s %-20s %-20s %-20s %-10s %-10s\n"
	groups := map[string][]traceView{}
	var order []string
	for _, v := range views {
		switch v.MsgType {
		case "Pub":
			fmt.Fprintf(w, format, "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status")
			fmt.Fprintf(w, format, "Pub", v.GroupName, v.ClientHost, javaDateTime(v.TimeStamp, a.env.Location), strconv.Itoa(v.CostTime)+"ms", v.Status)
			fmt.Fprintf(w, "\n")
		case "SubAfter":
			if _, ok := groups[v.GroupName]; !ok {
				order = append(order, v.GroupName)
			}
			groups[v.GroupName] = append(groups[v.GroupName], v)
		}
	}
	for _, k := range javaHashOrder(order, hashMapDefault, false) {
		fmt.Fprintf(w, format, "#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")
		for _, v := range groups[k] {
			fmt.Fprintf(w, format, "Sub", v.GroupName, v.ClientHost, javaDateTime(v.TimeStamp, a.env.Location), strconv.Itoa(v.CostTime)+"ms", v.Status)
		}
		fmt.Fprintf(w, "\n")
	}
}
