package command

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/admin"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// ---- queryMsgTraceById ----

// Trace data separators (Java's TraceConstants).
const (
	traceContentSep = "\x01"
	traceFieldSep   = "\x02"
)

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
				vs, err := decodeTraceViews(req.Key, string(m.Body), m.BornHost.Addr().String(), a.env.Now())
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

// traceView is Java's TraceView: one trace record of the message.
type traceView struct {
	MsgType    string `json:"msgType"` // Pub, SubBefore, SubAfter, EndTransaction, Recall
	GroupName  string `json:"groupName"`
	ClientHost string `json:"clientHost"`
	TimeStamp  int64  `json:"timeStamp"`
	CostTime   int    `json:"costTime"`
	Status     string `json:"status"` // success, failed
}

// javaSplit is String.split with a literal separator: trailing empty
// strings are removed.
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// decodeTraceViews is TraceView.decodeFromTraceTransData over Java's
// TraceDataEncoder format: the records of body about msgID. Fields an old
// client's record lacks keep TraceContext's defaults: group "", time now.
func decodeTraceViews(msgID, body, bornHost string, now time.Time) ([]traceView, error) {
	var out []traceView
	for _, ctx := range javaSplit(body, traceFieldSep) {
		line := javaSplit(ctx, traceContentSep)
		if len(line) == 0 {
			continue
		}
		r := traceRecord{line: line}
		v := traceView{MsgType: line[0], ClientHost: bornHost, Status: "success", TimeStamp: now.UnixMilli()}
		var id string
		switch line[0] {
		case "Pub":
			v.TimeStamp, v.GroupName, id = r.num(1), r.field(3), r.field(5)
			v.CostTime = int(r.num(10))
			switch {
			case len(line) == 13:
				v.Status = traceStatus(line[12])
			case len(line) >= 14:
				v.Status = traceStatus(line[13])
			}
		case "SubBefore":
			v.TimeStamp, v.GroupName, id = r.num(1), r.field(3), r.field(5)
			v.CostTime = 0
		case "SubAfter":
			id = r.field(2)
			v.CostTime = int(r.num(3))
			v.Status = traceStatus(r.field(4))
			if len(line) >= 9 {
				v.TimeStamp, v.GroupName = r.num(7), line[8]
			}
		case "EndTransaction", "Recall":
			v.TimeStamp, v.GroupName, id = r.num(1), r.field(3), r.field(5)
			if line[0] == "Recall" {
				v.Status = traceStatus(r.field(6))
			}
		default:
			continue
		}
		if r.err != nil {
			return nil, r.err
		}
		if id != msgID {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// traceRecord reads the fields of one trace record; the first missing or
// non-numeric field it is asked for is its err, and later reads return
// zero values.
type traceRecord struct {
	line []string
	err  error
}

func (r *traceRecord) field(i int) string {
	if r.err != nil {
		return ""
	}
	if i >= len(r.line) {
		r.err = fmt.Errorf("%s trace record has %d fields", r.line[0], len(r.line))
		return ""
	}
	return r.line[i]
}

func (r *traceRecord) num(i int) int64 {
	f := r.field(i)
	if r.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		r.err = err
	}
	return n
}

func traceStatus(s string) string {
	if javaBool(s) {
		return "success"
	}
	return "failed"
}

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
